//===- VariantsBench.cpp - attn-bench --variants: sinks, chunks ----------===//
//
// The attention variants of today's models next to the kernels they vary,
// in one run, alternating, each as % of the FMA peak the harness measures.
// gpt-oss-20b's attention (64 query heads of 64 over 8 KV heads; its
// sliding layers' window of 128 and its full layers) with attention sinks,
// next to the same kernels without them (a llama config of the same heads
// for the full layers, a mistral one with the same window for the sliding
// ones): causal prefill of 4096 tokens, decode over 32k cached tokens
// (batch 1: split-K, whose merge counts the sinks once) and batch 8 over
// 4k. The sinks cost the kernels one initialization of each row's state.
// Llama 4's chunked local attention (chunks of 2048 over 8192 tokens: four
// causal chunks) next to the causal kernel over batch 4 of 2048 tokens,
// the same work. (A NoPE layer's kernel is the causal one: only its block
// differs.)
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"

#include "flops.h"

#include <cstring>
#include <fstream>

namespace attn_bench {

namespace {

constexpr int64_t kHq = 64, kHkv = 8, kD = 64, kWindow = 128;

/// Llama 4's chunked layers at gpt-oss's head shape (a RoPE layer, then a
/// NoPE one).
std::string chunkedConfig() {
  return "{\"model_type\": \"llama4_text\", \"hidden_size\": 2880, "
         "\"num_hidden_layers\": 2, \"num_attention_heads\": 64, "
         "\"num_key_value_heads\": 8, \"head_dim\": 64, "
         "\"attention_chunk_size\": 2048, \"no_rope_layers\": [1, 0]}";
}

std::string sinksConfig() {
  return "{\"model_type\": \"gpt_oss\", \"hidden_size\": 2880, "
         "\"num_hidden_layers\": 2, \"num_attention_heads\": 64, "
         "\"num_key_value_heads\": 8, \"head_dim\": 64, "
         "\"sliding_window\": 128, \"layer_types\": [\"sliding_attention\", "
         "\"full_attention\"]}";
}

/// The same heads without sinks: llama (full) or mistral (every layer
/// sliding with the window).
std::string plainConfig(bool sliding) {
  return std::string("{\"model_type\": \"") +
         (sliding ? "mistral" : "llama") +
         "\", \"hidden_size\": 2880, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 64, \"num_key_value_heads\": 8, "
         "\"head_dim\": 64" +
         (sliding ? ", \"sliding_window\": 128" : "") + "}";
}

struct Case {
  const char *name;
  bool sliding;
  int64_t batch, sq, skv;
};

/// The kind of `m` named `name`.
const attn_rt_kind *kindNamed(const attn_rt_model *m, const char *name) {
  for (int64_t i = 0; i < m->num_kinds; ++i)
    if (!std::strcmp(m->kinds[i].name, name))
      return &m->kinds[i];
  return nullptr;
}

} // namespace

bool benchVariants(const Options &o, const Machine &mc, const std::string &dir) {
  // Long: one benchmark table, rows measured in the order they print.
  if (!o.only.empty() && o.only != "S1" && o.only != "S2" &&
      o.only != "S3" && o.only != "S4" && o.only != "S5" && o.only != "C1") {
    std::fprintf(stderr, "attn-bench: error: --variants --shape %s: "
                         "accepted: S1, S2, S3, S4, S5, C1\n",
                 o.only.c_str());
    return false;
  }
  std::string csvPath =
      o.csv == Options().csv ? std::string("attn-bench-variants.csv") : o.csv;
  CsvFile csv(csvPath,
              "shape,layer,batch,sq,kv_len,method,ms,gflops,pct_peak,"
              "sinks_over_plain",
              mc, o.threads);
  void *h1 = nullptr, *h2 = nullptr, *h3 = nullptr;
  const attn_rt_model *withSinks = loadModel(
      compileConfig(dir, "gpt_oss_sinks", sinksConfig(), {"--entries=sdpa"}),
      h1);
  const attn_rt_model *full = loadModel(
      compileConfig(dir, "plain_full", plainConfig(false), {"--entries=sdpa"}),
      h2);
  const attn_rt_model *sliding = loadModel(
      compileConfig(dir, "plain_sliding", plainConfig(true),
                    {"--entries=sdpa"}),
      h3);
  if (!withSinks || !full || !sliding)
    return false;
  const attn_rt_kind *sinkKinds[2] = {
      kindNamed(withSinks, "full_attention"),
      kindNamed(withSinks, "sliding_attention")};
  const attn_rt_kind *plainKinds[2] = {&full->kinds[0], &sliding->kinds[0]};
  if (!sinkKinds[0] || !sinkKinds[1] || !sinkKinds[0]->has_sinks ||
      plainKinds[0]->has_sinks || plainKinds[1]->window != kWindow) {
    std::fprintf(stderr, "attn-bench: error: the compiled kinds are not "
                         "the ones --sinks compares\n");
    return false;
  }
  std::printf("\ngpt-oss-20b attention with sinks vs the same kernels "
              "without: Hq=%lld Hkv=%lld D=%lld, causal, the sliding layers' "
              "window %lld\n",
              (long long)kHq, (long long)kHkv, (long long)kD,
              (long long)kWindow);
  std::printf("%-6s %-8s %5s %5s %7s %-14s %10s %10s %7s %8s\n", "shape",
              "layer", "batch", "sq", "kv_len", "method", "ms", "GFLOP/s",
              "%peak", "ratio");
  const Case cases[] = {{"S1", false, 1, 4096, 4096},
                        {"S2", true, 1, 4096, 4096},
                        {"S3", false, 1, 1, 32768},
                        {"S4", false, 8, 1, 4096},
                        {"S5", true, 8, 1, 4096}};
  for (const Case &c : cases) {
    if (!o.only.empty() && o.only != c.name)
      continue;
    std::mt19937 rng(11);
    int64_t b = c.batch;
    attn_rt::Buf<float> q = normal(rng, size_t(b * kHq * c.sq * kD));
    attn_rt::Buf<float> k = normal(rng, size_t(b * kHkv * c.skv * kD));
    attn_rt::Buf<float> v = normal(rng, k.size());
    attn_rt::Buf<float> out(q.size());
    attn_rt::Buf<float> sinks = normal(rng, size_t(kHq));
    std::vector<int64_t> lens(b, c.skv);
    attn_rt_memref_f32_4 dOut = view4(out.data(), b, kHq, c.sq, kD),
                         dq = view4(q.data(), b, kHq, c.sq, kD),
                         dk = view4(k.data(), b, kHkv, c.skv, kD),
                         dv = view4(v.data(), b, kHkv, c.skv, kD);
    attn_rt_memref_i64_1 dl{lens.data(), lens.data(), 0, {b}, {1}};
    attn_rt_memref_f32_1 ds{sinks.data(), sinks.data(), 0, {kHq}, {1}};
    const attn_rt_kind &sk = *sinkKinds[c.sliding ? 1 : 0];
    const attn_rt_kind &pk = *plainKinds[c.sliding ? 1 : 0];
    auto withFn = reinterpret_cast<attn_rt_sdpa_sinks_fn>(sk.fused);
    auto plainFn = reinterpret_cast<attn_rt_sdpa_fn>(pk.fused);
    double flops = attn_rt_attention_flops(b, kHq, c.sq, c.skv, kD, kD, 1,
                                           c.sliding ? kWindow : 0);
    // Alternating, three rounds: the medians of each method's rounds.
    std::vector<double> tw, tp;
    for (int round = 0; round < 3; ++round) {
      tp.push_back(inChild(o.repeats, [&] {
                     plainFn(&dOut, &dq, &dk, &dv, &dl);
                   }).ms);
      tw.push_back(inChild(o.repeats, [&] {
                     withFn(&dOut, &dq, &dk, &dv, &dl, &ds);
                   }).ms);
    }
    double mw = median(tw), mp = median(tp);
    auto row = [&](const char *method, double ms) {
      double gf = flops / ms / 1e6;
      std::printf("%-6s %-8s %5lld %5lld %7lld %-14s %10.3f %10.1f %6.1f%% "
                  "%7.3fx\n",
                  c.name, c.sliding ? "sliding" : "full", (long long)b,
                  (long long)c.sq, (long long)c.skv, method, ms, gf,
                  100 * gf / mc.peak, ms / mp);
      csv.row() << c.name << "," << (c.sliding ? "sliding" : "full") << "," << b
          << "," << c.sq << "," << c.skv << "," << method << "," << ms << ","
          << gf << "," << 100 * gf / mc.peak << "," << ms / mp << "\n";
    };
    row("without sinks", mp);
    row("with sinks", mw);
  }
  if (o.only.empty() || o.only == "C1") {
    // Chunked: B=1, 8192 tokens in chunks of 2048 against the causal kernel
    // over B=4 x 2048 (the same visible pairs).
    void *h4 = nullptr;
    const attn_rt_model *chunked = loadModel(
        compileConfig(dir, "llama4_chunked", chunkedConfig(),
                      {"--entries=sdpa"}),
        h4);
    if (!chunked)
      return false;
    const attn_rt_kind *ck = kindNamed(chunked, "chunked_attention");
    if (!ck || ck->chunk != 2048) {
      std::fprintf(stderr, "attn-bench: error: no chunked kind in %s\n",
                   "llama4_chunked");
      return false;
    }
    std::mt19937 rng(13);
    struct Run {
      int64_t b, s;
      attn_rt::Buf<float> q, k, v, out;
      std::vector<int64_t> lens;
    };
    auto make = [&](int64_t b, int64_t s) {
      Run r{b, s, normal(rng, size_t(b * kHq * s * kD)),
            normal(rng, size_t(b * kHkv * s * kD)),
            normal(rng, size_t(b * kHkv * s * kD)),
            attn_rt::Buf<float>(size_t(b * kHq * s * kD)),
            std::vector<int64_t>(b, s)};
      return r;
    };
    Run rc = make(1, 8192), rp = make(4, 2048);
    auto call = [&](Run &r, void (*fn)(void)) {
      attn_rt_memref_f32_4 dOut = view4(r.out.data(), r.b, kHq, r.s, kD),
                           dq = view4(r.q.data(), r.b, kHq, r.s, kD),
                           dk = view4(r.k.data(), r.b, kHkv, r.s, kD),
                           dv = view4(r.v.data(), r.b, kHkv, r.s, kD);
      attn_rt_memref_i64_1 dl{r.lens.data(), r.lens.data(), 0, {r.b}, {1}};
      reinterpret_cast<attn_rt_sdpa_fn>(fn)(&dOut, &dq, &dk, &dv, &dl);
    };
    double flopsC = 2.0 * kHq * (2 * kD) *
                    attn_rt_visible_pairs_chunked(8192, 8192, 2048);
    double flopsP =
        attn_rt_attention_flops(4, kHq, 2048, 2048, kD, kD, 1, 0);
    std::vector<double> tc, tp;
    for (int round = 0; round < 3; ++round) {
      tp.push_back(inChild(o.repeats, [&] {
                     call(rp, plainKinds[0]->fused);
                   }).ms);
      tc.push_back(inChild(o.repeats, [&] { call(rc, ck->fused); }).ms);
    }
    double mc2 = median(tc), mp = median(tp);
    auto row = [&](const char *method, int64_t b, int64_t s, double ms,
                   double flops) {
      double gf = flops / ms / 1e6;
      std::printf("%-6s %-8s %5lld %5lld %7lld %-14s %10.3f %10.1f %6.1f%% "
                  "%7.3fx\n",
                  "C1", "chunked", (long long)b, (long long)s, (long long)s,
                  method, ms, gf, 100 * gf / mc.peak, ms / mp);
      csv.row() << "C1,chunked," << b << "," << s << "," << s << "," << method
          << "," << ms << "," << gf << "," << 100 * gf / mc.peak << ","
          << ms / mp << "\n";
    };
    row("causal B=4x2k", 4, 2048, mp, flopsP);
    row("chunks of 2k", 1, 8192, mc2, flopsC);
  }
  std::printf("CSV: %s\n", csvPath.c_str());
  return true;
}

} // namespace attn_bench
