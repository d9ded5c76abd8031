//===- LayerBench.cpp - attn-bench --layers: whole transformer layers -----===//
//
// This file implements attn-bench --layers: for a dense model (Llama 3.2
// 1B's layer) and a hybrid mixture-of-experts one (Qwen3-Next-80B's linear
// and full-attention layers) it compiles the config, fills each layer
// kind's weights with random values (shapes from the model table) and
// measures, in the same run as the machine's FMA peak and read bandwidth:
//
//   - prefill (S = --seq, default 512) and decode (one token) of the whole
//     layer (`<kind>_layer`), of its attention block alone (`<kind>_block`)
//     and of the attention kernel alone (`<kind>_sdpa` / the Gated DeltaNet
//     kernel): attention = the kernel, projections = block - kernel (with
//     the norm, RoPE, head layout, convolution and gates), feed-forward =
//     layer - block (with its norm and residual);
//   - the projections' and the network's GEMM FLOPs per second as % of the
//     FMA peak (decode: their weights' bytes per second as % of the read
//     bandwidth), next to OpenBLAS sgemm at the same shapes: each nn.Linear
//     weight as x·Wᵀ, each expert's three matrices on its share of the
//     routed tokens (S·top_k/E each: balanced routing).
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"

#include <cblas.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

namespace attn_bench {
namespace {

struct LayerModel {
  std::string name, note, json;
  int64_t topK; ///< routed experts per token (0: dense network)
};

const LayerModel kLayerModels[] = {
    {"llama-3.2-1b", "dense SwiGLU",
     R"({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
 "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
 "num_hidden_layers": 1, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
 "max_position_embeddings": 131072, "hidden_act": "silu"})",
     0},
    {"qwen3-next-80b",
     "mixture of experts with 128 of its 512 experts (10 routed + 1 shared "
     "per token: the same work per token, weights that fit in memory)",
     R"({"model_type": "qwen3_next", "hidden_size": 2048,
 "num_hidden_layers": 4, "full_attention_interval": 4,
 "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
 "linear_num_key_heads": 16, "linear_num_value_heads": 32,
 "linear_key_head_dim": 128, "linear_value_head_dim": 128,
 "linear_conv_kernel_dim": 4, "num_experts": 128, "num_experts_per_tok": 10,
 "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
 "norm_topk_prob": true, "decoder_sparse_step": 1,
 "intermediate_size": 5120, "partial_rotary_factor": 0.25,
 "rope_theta": 10000000, "hidden_act": "silu", "rms_norm_eps": 1e-6})",
     10},
};

int64_t elements(const attn_rt_weight &w) {
  int64_t n = 1;
  for (int64_t i = 0; i < w.rank; ++i)
    n *= w.shape[i];
  return n;
}

/// A kind's layer weights: random values of each weight's shape (rank 1:
/// ones, as norm scales; otherwise uniform in ±1/sqrt(fan-in)), and the
/// descriptors the block entries take.
struct Weights {
  std::vector<std::unique_ptr<float[]>> data;
  std::vector<attn_rt_memref_f32_1> d1;
  std::vector<attn_rt_memref_f32_2> d2;
  std::vector<attn_rt_memref_f32_3> d3;
  std::vector<attn_rt_memref_f32_4> d4;
  std::vector<void *> ptrs;

  explicit Weights(const attn_rt_kind &k) {
    int64_t n = k.num_layer_weights;
    d1.reserve(n);
    d2.reserve(n);
    d3.reserve(n);
    d4.reserve(n);
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < n; ++i) {
      const attn_rt_weight &w = k.weights[i];
      int64_t count = elements(w);
      data.emplace_back(new float[count]);
      float *p = data.back().get();
      float scale =
          w.rank == 1 ? 0.f : float(1 / std::sqrt(double(w.shape[w.rank - 1])));
      for (int64_t j = 0; j < count; ++j) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        float u = float(state >> 40) / float(1 << 24) * 2 - 1;
        p[j] = w.rank == 1 ? 1.f : u * scale;
      }
      const int64_t *s = w.shape;
      if (w.rank == 1) {
        d1.push_back({p, p, 0, {s[0]}, {1}});
        ptrs.push_back(&d1.back());
      } else if (w.rank == 2) {
        d2.push_back({p, p, 0, {s[0], s[1]}, {s[1], 1}});
        ptrs.push_back(&d2.back());
      } else if (w.rank == 3) {
        d3.push_back({p, p, 0, {s[0], s[1], s[2]}, {s[1] * s[2], s[2], 1}});
        ptrs.push_back(&d3.back());
      } else {
        d4.push_back({p,
                      p,
                      0,
                      {s[0], s[1], s[2], s[3]},
                      {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1}});
        ptrs.push_back(&d4.back());
      }
    }
  }
};

/// The GEMMs of weights [first, last): rank 2 an nn.Linear over every
/// token, rank 3 [E, a, b] in the network (not the block's convolution)
/// the experts' matrices, each over its S·top_k/E tokens.
struct Gemms {
  double flops = 0, bytes = 0; ///< bytes: the weights a step reads
  /// (rows, out, in, weight) for OpenBLAS.
  struct Call {
    int64_t m, n, k;
    const float *w;
  };
  std::vector<Call> calls;

  Gemms(const attn_rt_kind &k, const Weights &ws, int64_t first, int64_t last,
        int64_t s, int64_t topK) {
    for (int64_t i = first; i < last; ++i) {
      const attn_rt_weight &w = k.weights[i];
      const float *p = ws.data[i].get();
      if (w.rank == 2) {
        flops += 2.0 * s * w.shape[0] * w.shape[1];
        bytes += 4.0 * w.shape[0] * w.shape[1];
        calls.push_back({s, w.shape[0], w.shape[1], p});
      } else if (w.rank == 3 && topK > 0 && first >= k.num_weights) {
        int64_t e = w.shape[0], a = w.shape[1], b = w.shape[2];
        flops += 2.0 * s * topK * a * b;
        // Decode reads top_k experts' matrices; prefill all of them.
        bytes += 4.0 * std::min(e, s * topK) * a * b;
        int64_t rows = std::max<int64_t>(1, s * topK / e);
        for (int64_t x = 0; x < std::min(e, s * topK); ++x)
          calls.push_back({rows, a, b, p + x * a * b});
      } else {
        bytes += 4.0 * elements(w);
      }
    }
  }
  /// The same products by OpenBLAS: y[m, n] = x[m, k] · Wᵀ.
  void runOpenBLAS(const attn_rt::Buf<float> &x, attn_rt::Buf<float> &y) const {
    for (const Call &c : calls)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(c.m),
                  int(c.n), int(c.k), 1.f, x.data(), int(c.k), c.w, int(c.k),
                  0.f, y.data(), int(c.n));
  }
  size_t largestX() const {
    size_t n = 0;
    for (const Call &c : calls)
      n = std::max(n, size_t(c.m * c.k));
    return n;
  }
  size_t largestY() const {
    size_t n = 0;
    for (const Call &c : calls)
      n = std::max(n, size_t(c.m * c.n));
    return n;
  }
};

/// One kind's entries at S tokens (batch 1).
struct LayerCall {
  const attn_rt_kind &k;
  int64_t s, hidden;
  attn_rt::Buf<float> x, y, convIn, convOut, stIn, stOut;
  std::vector<int64_t> pos;
  int64_t len;

  LayerCall(const attn_rt_kind &k, int64_t s, int64_t hidden,
            std::mt19937 &rng)
      : k(k), s(s), hidden(hidden), len(s) {
    x = normal(rng, size_t(s * hidden));
    y.resize(x.size());
    for (int64_t i = 0; i < s; ++i)
      pos.push_back(i);
    if (k.op == ATTN_RT_OP_GATED_DELTA) {
      convIn.assign(size_t(channels() * (k.conv_kernel - 1)), 0.f);
      convOut.resize(convIn.size());
      stIn.assign(size_t(k.num_heads * k.head_dim * k.head_dim_v), 0.f);
      stOut.resize(stIn.size());
    }
  }
  /// The linear layer's convolution channels 2·Hk·dk + Hv·dv.
  int64_t channels() const {
    return 2 * k.num_kv_heads * k.head_dim + k.num_heads * k.head_dim_v;
  }
  void run(bool whole, const Weights &w) {
    attn_rt_memref_f32_3 dx = view3(x.data(), 1, s, hidden),
                         dy = view3(y.data(), 1, s, hidden);
    if (k.op == ATTN_RT_OP_GATED_DELTA) {
      int64_t c = channels(), kk = k.conv_kernel - 1;
      attn_rt_memref_f32_3 ci = view3(convIn.data(), 1, c, kk),
                           co = view3(convOut.data(), 1, c, kk);
      attn_rt_memref_f32_4 si = view4(stIn.data(), 1, k.num_heads,
                                      k.head_dim, k.head_dim_v),
                           so = view4(stOut.data(), 1, k.num_heads,
                                      k.head_dim, k.head_dim_v);
      (whole ? k.linear_layer : k.linear_block)(&dy, &co, &so, &dx, &ci, &si,
                                                w.ptrs.data());
      return;
    }
    attn_rt_memref_f32_3 dm{};
    attn_rt_memref_i64_2 dp{pos.data(), pos.data(), 0, {1, s}, {s, 1}};
    attn_rt_memref_i64_1 dl{&len, &len, 0, {1}, {1}};
    (whole ? k.layer : k.block)(&dy, &dx, &dm, &dp, &dl, w.ptrs.data());
  }
};

/// Median ms of `body` over `repeats` runs in a child process, each after
/// reading `evict` (larger than the last-level cache) when it is not empty:
/// decode's weights then come from memory, as in a model whose other
/// layers ran in between.
double timed(int repeats, const attn_rt::Buf<float> &evict,
             const std::function<void()> &body) {
  return valueInChild([&] {
    body(); // warm-up
    std::vector<double> ms;
    volatile float sink = 0;
    for (int r = 0; r < repeats; ++r) {
      if (!evict.empty())
        sink = sink + sumFloats256(evict.data(), int64_t(evict.size()));
      double t0 = nowMs();
      body();
      ms.push_back(nowMs() - t0);
    }
    return median(ms);
  });
}

struct Split {
  double layer = 0, block = 0, kernel = 0, blasProj = 0, blasFfn = 0;
  long rssKb = 0;
};

/// Times the kind's layer, block and attention kernel at S tokens, and
/// OpenBLAS on the two groups of GEMMs.
Split measure(const attn_rt_kind &k, const Weights &w, const Gemms &proj,
              const Gemms &ffn, int64_t s, int64_t hidden, const Options &o) {
  std::mt19937 rng(11);
  LayerCall call(k, s, hidden, rng);
  Split r;
  // Decode reads each weight once: from memory, not from the cache the
  // previous repetition filled (512 MiB read between repetitions).
  attn_rt::Buf<float> evict(s == 1 ? size_t(128) << 20 : 0, 1.f);
  Result layer = inChild(1, [&] { call.run(true, w); });
  r.rssKb = layer.rssKb;
  r.layer = timed(o.repeats, evict, [&] { call.run(true, w); });
  r.block = timed(o.repeats, evict, [&] { call.run(false, w); });
  LinearModel shape{k.name,         k.num_kv_heads, k.num_heads,
                    k.head_dim,     k.head_dim_v,   k.num_heads,
                    k.num_kv_heads, k.head_dim,     hidden,
                    0};
  if (k.op == ATTN_RT_OP_GATED_DELTA) {
    GdnCall g(shape, s, rng);
    attn_rt::Buf<float> s0(call.stIn.size(), 0.f), s1(s0.size());
    r.kernel = timed(o.repeats, evict, [&] {
      g.run(k.fused, shape, s0.data(), s1.data());
    });
  } else {
    SdpaCall a(shape, s, s, rng);
    r.kernel = timed(o.repeats, evict, [&] { a.run(k.fused, shape); });
  }
  for (const Gemms *g : {&proj, &ffn}) {
    attn_rt::Buf<float> x = normal(rng, g->largestX()), y(g->largestY());
    double ms = timed(o.repeats, evict, [&] { g->runOpenBLAS(x, y); });
    (g == &proj ? r.blasProj : r.blasFfn) = ms;
  }
  return r;
}

} // namespace

bool readLayerConfig(Options &o, std::string &error) {
  std::ifstream in(o.layerConfig);
  if (!in) {
    error = "--config " + o.layerConfig + ": cannot read it";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "--config " + o.layerConfig + ": not a JSON object";
    return false;
  }
  // Routed experts per token (0: a dense network), where transformers'
  // configs keep it.
  const auto &c = j.contains("text_config") && j["text_config"].is_object()
                      ? j["text_config"]
                      : j;
  o.layerTopK = 0;
  if (c.contains("num_experts_per_tok")) {
    const auto &k = c["num_experts_per_tok"];
    if (!k.is_number_integer() || k.get<int64_t>() < 0) {
      error = "--config " + o.layerConfig +
              ": num_experts_per_tok must be a non-negative integer";
      return false;
    }
    o.layerTopK = k.get<int64_t>();
  }
  o.layerConfigText = text.str();
  return true;
}

bool benchLayers(const Options &o, const Machine &mc, const std::string &dir) {
  std::string csvPath =
      o.csv == Options().csv ? std::string("attn-bench-layers.csv") : o.csv;
  CsvFile csv(csvPath,
              "model,kind,phase,tokens,layer_ms,attention_ms,projections_ms,"
              "ffn_ms,projection_gflops,projection_pct_peak,ffn_gflops,"
              "ffn_pct_peak,openblas_projection_ms,openblas_ffn_ms,"
              "projection_gbps,ffn_gbps",
              mc, o.threads);
  std::vector<LayerModel> models;
  if (!o.layerConfig.empty()) {
    // The user's model, read and checked by main (readLayerConfig).
    std::string name = o.layerConfig.substr(o.layerConfig.rfind('/') + 1);
    models.push_back({name.substr(0, name.rfind('.')), "--config",
                      o.layerConfigText, o.layerTopK});
  } else {
    for (const LayerModel &lm : kLayerModels)
      if (o.only.empty() || o.only == lm.name)
        models.push_back(lm);
  }
  for (const LayerModel &lm : models) {
    std::string lib = compileConfig(dir, lm.name, lm.json);
    void *h = nullptr;
    const attn_rt_model *model = loadModel(lib, h);
    if (!model)
      return false;
    std::printf("\n%s (%s), hidden %lld\n", lm.name.c_str(), lm.note.c_str(),
                (long long)model->hidden_size);
    for (int64_t ki = 0; ki < model->num_kinds; ++ki) {
      const attn_rt_kind &k = model->kinds[ki];
      bool linear = k.op == ATTN_RT_OP_GATED_DELTA;
      if (!(linear ? (void *)k.linear_layer : (void *)k.layer)) {
        std::printf("  %s: no compiled layer (%s)\n", k.name,
                    k.layer_note ? k.layer_note : "no feed-forward network");
        continue;
      }
      Weights w(k);
      for (int64_t s : {o.layerSeq, int64_t(1)}) {
        Gemms proj(k, w, 0, k.num_weights, s, lm.topK);
        Gemms ffn(k, w, k.num_weights, k.num_layer_weights, s, lm.topK);
        Split r = measure(k, w, proj, ffn, s, model->hidden_size, o);
        double projMs = r.block - r.kernel, ffnMs = r.layer - r.block;
        bool decode = s == 1;
        const char *phase = decode ? "decode" : "prefill";
        std::printf("  %-18s %-7s S=%-5lld layer %9.3f ms = attention %8.3f "
                    "+ projections %8.3f + feed-forward %8.3f  (peak RSS %.0f "
                    "MB)\n",
                    k.name, phase, (long long)s, r.layer, r.kernel, projMs,
                    ffnMs, r.rssKb / 1024.0);
        auto rate = [&](const char *what, const Gemms &g, double ms,
                        double blasMs) {
          if (decode)
            std::printf("  %-18s %-7s   %-12s weights %7.1f MB: %6.1f GB/s "
                        "(%5.1f%% of %.1f GB/s) | OpenBLAS sgemm %8.3f ms, "
                        "%6.1f GB/s (%5.1f%%)\n",
                        "", "", what, g.bytes / 1e6, g.bytes / ms / 1e6,
                        100 * g.bytes / ms / 1e6 / mc.bandwidth, mc.bandwidth,
                        blasMs, g.bytes / blasMs / 1e6,
                        100 * g.bytes / blasMs / 1e6 / mc.bandwidth);
          else
            std::printf("  %-18s %-7s   %-12s %6.2f GFLOP: %7.1f GFLOP/s "
                        "(%5.1f%% of peak) | OpenBLAS sgemm %8.3f ms, %7.1f "
                        "GFLOP/s (%5.1f%%)\n",
                        "", "", what, g.flops / 1e9, g.flops / ms / 1e6,
                        100 * g.flops / ms / 1e6 / mc.peak, blasMs,
                        g.flops / blasMs / 1e6,
                        100 * g.flops / blasMs / 1e6 / mc.peak);
        };
        rate("projections", proj, projMs, r.blasProj);
        rate("feed-forward", ffn, ffnMs, r.blasFfn);
        csv.row() << lm.name << "," << k.name << "," << phase << "," << s << ","
            << r.layer << "," << r.kernel << "," << projMs << "," << ffnMs
            << "," << proj.flops / projMs / 1e6 << ","
            << 100 * proj.flops / projMs / 1e6 / mc.peak << ","
            << ffn.flops / ffnMs / 1e6 << ","
            << 100 * ffn.flops / ffnMs / 1e6 / mc.peak << "," << r.blasProj
            << "," << r.blasFfn << "," << proj.bytes / projMs / 1e6 << ","
            << ffn.bytes / ffnMs / 1e6 << "\n";
      }
    }
    dlclose(h);
  }
  std::printf("CSV: %s\n", csvPath.c_str());
  return true;
}

} // namespace attn_bench
