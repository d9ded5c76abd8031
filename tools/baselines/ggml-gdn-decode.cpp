//===- ggml-gdn-decode.cpp - ggml's Gated DeltaNet decode step
//-------------===//
//
// The baseline of attn-bench --linear's decode row: llama.cpp's
// GGML_OP_GATED_DELTA_NET (ggml's CPU recurrence) on one decode token of
// a model's linear layers, each layer with its own fp32 state (so the
// states come from memory, as in serving), one graph of `layers` ops.
// Built and run by tools/ggml-baseline.sh against a ggml checkout.
//
//   ggml-gdn-decode HK HV D LAYERS THREADS REPEATS [ROUNDS]
//
// Prints, per round, the median ms of one step over every layer and the
// state bytes read and written per second (2 · 4 · HV · D² · layers / t).
//
//===----------------------------------------------------------------------===//

#include "ggml-cpu.h"
#include "ggml.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

void fill(ggml_tensor *t, std::mt19937 &rng, float scale) {
  std::normal_distribution<float> dist(0.f, scale);
  auto *p = static_cast<float *>(t->data);
  for (int64_t i = 0, n = ggml_nelements(t); i < n; ++i)
    p[i] = dist(rng);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s HK HV D LAYERS THREADS REPEATS [ROUNDS]\n",
                 argv[0]);
    return 2;
  }
  int64_t hk = std::atoll(argv[1]), hv = std::atoll(argv[2]),
          d = std::atoll(argv[3]), layers = std::atoll(argv[4]);
  int threads = std::atoi(argv[5]), repeats = std::atoi(argv[6]);
  int rounds = argc > 7 ? std::atoi(argv[7]) : 1;
  if (hk <= 0 || hv <= 0 || hv % hk || d <= 0 || layers <= 0 || threads <= 0 ||
      repeats <= 0 || rounds <= 0) {
    std::fprintf(stderr, "%s: positive sizes, HV a multiple of HK\n", argv[0]);
    return 2;
  }
  size_t stateBytes = size_t(4 * d * d * hv);
  size_t mem = size_t(layers) * (2 * stateBytes + 4 * d * hv + 4096) +
               (size_t(4) << 20) + size_t(layers) * 2048;
  ggml_init_params params = {mem, nullptr, false};
  ggml_context *ctx = ggml_init(params);
  if (!ctx) {
    std::fprintf(stderr, "%s: ggml_init failed (%zu bytes)\n", argv[0], mem);
    return 1;
  }
  std::mt19937 rng(11);
  ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, hk, 1, 1);
  ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, hk, 1, 1);
  ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, hv, 1, 1);
  ggml_tensor *g = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, hv, 1, 1);
  ggml_tensor *beta = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, hv, 1, 1);
  fill(q, rng, 0.088f);
  fill(k, rng, 0.088f);
  fill(v, rng, 1.f);
  for (int64_t h = 0; h < hv; ++h) {
    static_cast<float *>(g->data)[h] = -0.3f;
    static_cast<float *>(beta->data)[h] = 0.5f;
  }
  ggml_cgraph *gf = ggml_new_graph_custom(ctx, 4 * layers + 16, false);
  for (int64_t l = 0; l < layers; ++l) {
    ggml_tensor *s = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, d, hv, 1);
    fill(s, rng, 0.1f);
    ggml_build_forward_expand(gf, ggml_gated_delta_net(ctx, q, k, v, g, beta, s,
                                                       /*K=*/1));
  }
  ggml_cplan plan = ggml_graph_plan(gf, threads, nullptr);
  std::vector<uint8_t> work(plan.work_size + 64);
  plan.work_data = work.data();
  double bytes = 2.0 * double(stateBytes) * double(layers);
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> ms;
    ggml_graph_compute(gf, &plan); // warm-up
    for (int i = 0; i < repeats; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      ggml_graph_compute(gf, &plan);
      auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    double med = ms[ms.size() / 2];
    std::printf("ggml gated_delta_net decode: %lld layers %.3f ms (%.4f ms "
                "per layer), state read+written %.1f GB/s\n",
                (long long)layers, med, med / double(layers),
                bytes / med / 1e6);
  }
  ggml_free(ctx);
  return 0;
}
