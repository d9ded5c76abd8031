//===- bench.cpp - the executables' bench command --------------------------===//
//
// This file implements `bench`: the median time of the fused kernel and of
// the unfused reference (or, on a GPU, the fused kernel against the device's
// peaks), with the FLOPs of runtime/flops.h, as text or JSON.
//
//===----------------------------------------------------------------------===//

#include "cli.h"
#include "resources.h"
#include "flops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <unistd.h>

namespace attn_rt {
namespace cli {

namespace {
double flops(const attn_rt_kind &k, int64_t b, int64_t sq, int64_t skv) {
  return attn_rt_attention_flops(b, k.num_heads, sq, skv, k.head_dim,
                                 k.head_dim_v, k.causal, k.window);
}
} // namespace

int cmdBench(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "batch", "seq", "kv-len", "threads",
                         "repeats"},
                        {"json"});
  int64_t b = intArg(args, "batch", 1, 1, 1 << 16);
  int64_t sq = intArg(args, "seq", 512, 1, 1 << 24);
  int64_t skv = intArg(args, "kv-len", sq, 1, 1 << 24);
  int64_t repeats = intArg(args, "repeats", 5, 1, 10000);
  if (args.count("threads"))
    if (omp_set_num_threads)
      omp_set_num_threads(int(intArg(args, "threads", 1, 1, 4096)));
  bool json = args.count("json");
  std::vector<int64_t> kinds;
  if (args.count("layer")) {
    const attn_rt_kind &k =
        kindOfLayer(m, intArg(args, "layer", 0, 0, 1 << 30));
    kinds.push_back(&k - m->kinds);
  } else {
    for (int64_t i = 0; i < m->num_kinds; ++i)
      kinds.push_back(i);
  }
  // Refuse shapes whose buffers cannot fit rather than dying in new[].
  double physical = double(physicalMemory());
  for (int64_t ki : kinds) {
    const attn_rt_kind &k = m->kinds[ki];
    double bytes = 4.0 * b *
                   (2.0 * k.num_heads * sq * std::max(k.head_dim, k.head_dim_v) +
                    2.0 * k.num_kv_heads * skv *
                        std::max(k.head_dim, k.head_dim_v));
    if (bytes > double(memoryBudget()))
      fail("bench: --batch/--seq/--kv-len need " +
           std::to_string(int64_t(bytes / 1e9)) + " GB of tensors; this "
           "machine has " + std::to_string(int64_t(physical / 1e9)) + " GB");
  }
  requireDevice("bench");
  if (gCuda) {
    describeDevice();
    if (!json)
      std::printf("device: %s, %d SMs at %.0f MHz, sm_%d%d: fp32 peak %.1f "
                  "TFLOP/s, dense bf16 tensor peak %.1f TFLOP/s\n",
                  gDevice.name.c_str(), gDevice.sms, gDevice.mhz,
                  gDevice.major, gDevice.minor, gDevice.fp32Tflops,
                  gDevice.tensorTflops);
  }
  std::mt19937 rng(7);
  if (json)
    std::printf("[");
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    const attn_rt_kind &kind = m->kinds[kinds[ki]];
    if (kind.op == ATTN_RT_OP_GATED_DELTA) {
      benchLinearKind(kind, b, sq, repeats, json, ki == 0);
      continue;
    }
    std::vector<int64_t> qs = {b, kind.num_heads, sq, kind.head_dim},
                         ks = {b, kind.num_kv_heads, skv, kind.head_dim},
                         vs = {b, kind.num_kv_heads, skv, kind.head_dim_v};
    auto q = randomVec(rng, b * kind.num_heads * sq * kind.head_dim, 1);
    auto k = randomVec(rng, b * kind.num_kv_heads * skv * kind.head_dim, 1);
    auto v = randomVec(rng, b * kind.num_kv_heads * skv * kind.head_dim_v, 1);
    std::vector<int64_t> lens(b, skv);
    auto table = randomVec(rng, kind.bias_buckets * kind.num_heads, 1);
    std::vector<float> out;
    auto time = [&](void (*fn)(void)) {
      return medianMs(
          repeats,
          [&] { run(fn, kind, q, qs, k, ks, v, vs, lens, &table, out); });
    };
    double f = flops(kind, b, sq, skv);
    if (gCuda) {
      // Device buffers once; each call is the host stub: launch on a
      // stream and wait for it.
      int64_t outElems = b * kind.num_heads * sq * kind.head_dim_v;
      DeviceCall c(q, qs, k, ks, v, vs, lens, outElems);
      double fusedMs = medianMs(repeats, [&] { c.call(kind.fused, kind); });
      double tflops = f / fusedMs / 1e9;
      double pctFp32 = 100 * tflops / gDevice.fp32Tflops;
      double pctTensor = 100 * tflops / gDevice.tensorTflops;
      if (json)
        std::printf("%s\n  {\"kind\": \"%s\", \"device\": \"%s\", "
                    "\"batch\": %lld, \"seq\": %lld, \"kv_len\": %lld, "
                    "\"flops\": %.0f, \"fused_ms\": %.4f, "
                    "\"fused_tflops\": %.3f, \"pct_fp32_peak\": %.2f, "
                    "\"pct_bf16_tensor_peak\": %.2f}",
                    ki ? "," : "", kind.name, gDevice.name.c_str(),
                    (long long)b, (long long)sq, (long long)skv, f, fusedMs,
                    tflops, pctFp32, pctTensor);
      else
        std::printf("%-30s B=%lld Sq=%lld Skv=%lld: fused %9.3f ms %8.3f "
                    "TFLOP/s, %.1f%% of the fp32 peak, %.1f%% of the dense "
                    "bf16 tensor peak\n",
                    kind.name, (long long)b, (long long)sq, (long long)skv,
                    fusedMs, tflops, pctFp32, pctTensor);
      continue;
    }
    double fusedMs = time(kind.fused);
    // The unfused reference holds [B, Hq, Sq, Skv] scores (several copies):
    // skipped past a quarter of the memory.
    double scoreBytes = 4.0 * b * kind.num_heads * double(sq) * double(skv);
    double refMs = scoreBytes * 3 < 0.25 * physical ? time(kind.reference)
                                                    : NAN;
    if (json) {
      // A skipped reference is null, not NaN (which JSON cannot spell).
      auto num = [](double v) {
        char buf[32];
        if (std::isnan(v))
          return std::string("null");
        std::snprintf(buf, sizeof(buf), "%.4f", v);
        return std::string(buf);
      };
      std::printf("%s\n  {\"kind\": \"%s\", \"batch\": %lld, \"seq\": %lld, "
                  "\"kv_len\": %lld, \"threads\": %d, \"flops\": %.0f, "
                  "\"fused_ms\": %s, \"fused_gflops\": %s, "
                  "\"unfused_ms\": %s, \"unfused_gflops\": %s}",
                  ki ? "," : "", kind.name, (long long)b, (long long)sq,
                  (long long)skv, ompThreads(), f,
                  num(fusedMs).c_str(), num(f / fusedMs / 1e6).c_str(),
                  num(refMs).c_str(), num(f / refMs / 1e6).c_str());
    } else {
      std::printf("%-30s B=%lld Sq=%lld Skv=%lld threads=%d: fused %9.3f ms "
                  "%8.2f GFLOP/s | unfused reference %9.3f ms %8.2f GFLOP/s "
                  "| fused/unfused x%.2f\n",
                  kind.name, (long long)b, (long long)sq, (long long)skv,
                  ompThreads(), fusedMs, f / fusedMs / 1e6, refMs,
                  f / refMs / 1e6, refMs / fusedMs);
    }
  }
  if (json)
    std::printf("\n]\n");
  return 0;
}

} // namespace cli
} // namespace attn_rt
