//===- LatentBench.cpp - attn-bench --mla: multi-head latent attention ---===//
//
// DeepSeek-V3's attention shapes (128 heads, the latent row kv_lora_rank 512
// + rope 64, nope 128, v 128), in one run next to the FMA peak the harness
// measures: the absorbed form's decode over a bf16 latent cache (every head
// over the 576-wide rows, the values their first 512 features) at 4k and
// 32k cached tokens, batch 1 and 8, contiguous and in pages of 64; the
// expanded form on the same step (the attention kernel over a bf16 MHA
// cache of the expanded keys and values, D = 192, Dv = 128: the cache such
// a model would keep without the latent); OpenBLAS's unfused absorbed
// attention (two sgemm per batch row and a softmax, over the cache widened
// to f32 once, outside the timing); and the expanded form's prefill (D =
// 192, Dv = 128, causal, S = 4096; 16 heads: the per-head work is the
// model's).
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"

#include "flops.h"
#include "narrow.h"

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <fstream>

namespace attn_bench {

namespace {

constexpr int64_t kHeads = 128, kRank = 512, kRope = 64, kNope = 128,
                  kV = 128, kRow = kRank + kRope;
constexpr double kScale = 0.1352337788608801;

/// A one-layer DeepSeek-V3 config with `heads` heads (its dense layer: the
/// attention kernels are all that is timed).
std::string latentConfig(int64_t heads) {
  return "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 7168, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": " +
         std::to_string(heads) + ", \"num_key_value_heads\": " +
         std::to_string(heads) +
         ", \"first_k_dense_replace\": 1, \"intermediate_size\": 256}";
}

struct Decode {
  const char *name;
  int64_t batch, kv;
};

/// bf16 bits of `n` normal-ish values.
attn_rt::Buf<uint16_t> bf16Values(std::mt19937 &rng, size_t n) {
  std::normal_distribution<float> dist(0.f, 1.f);
  attn_rt::Buf<uint16_t> v(n);
  for (uint16_t &x : v)
    x = attn_rt::narrowBits(dist(rng), /*half=*/false);
  return v;
}

/// OpenBLAS's unfused absorbed attention of one batch row: S = Q·Kᵀ
/// [H, Skv], softmax by rows, O = P·V [H, r] (V the rows' first r
/// features: lda = row).
void unfusedAbsorbed(const float *q, const float *cache, int64_t skv,
                     float *scores, float *out) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(kHeads), int(skv),
              int(kRow), float(kScale), q, int(kRow), cache, int(kRow), 0.f,
              scores, int(skv));
#pragma omp parallel for
  for (int64_t h = 0; h < kHeads; ++h) {
    float *s = scores + h * skv, m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < skv; ++j)
      m = std::max(m, s[j]);
    for (int64_t j = 0; j < skv; ++j)
      sum += (s[j] = std::exp(s[j] - m));
    float inv = 1.f / sum;
    for (int64_t j = 0; j < skv; ++j)
      s[j] *= inv;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(kHeads),
              int(kRank), int(skv), 1.f, scores, int(skv), cache, int(kRow),
              0.f, out, int(kRank));
}

} // namespace

bool benchLatent(const Options &o, const Machine &mc, const std::string &dir) {
  // Long: one benchmark table, rows measured in the order they print.
  std::string csvPath =
      o.csv == Options().csv ? std::string("attn-bench-mla.csv") : o.csv;
  CsvFile csv(csvPath,
              "shape,batch,kv_len,method,ms,gflops,pct_peak,vs_absorbed,"
              "peak_rss_mb",
              mc, o.threads);
  std::string lib = compileConfig(dir, "deepseek_v3_mla",
                                  latentConfig(kHeads),
                                  {"--kv-dtype=bf16", "--entries=paged"});
  void *h = nullptr;
  const attn_rt_model *m = loadModel(lib, h);
  if (!m)
    return false;
  const attn_rt_kind &kind = m->kinds[0];
  if (!kind.mla || !kind.mla_paged) {
    std::fprintf(stderr, "attn-bench: error: %s has no absorbed kernels\n",
                 lib.c_str());
    return false;
  }
  std::printf("\nDeepSeek-V3 multi-head latent attention: %lld heads, "
              "latent %lld + rope %lld (cache rows of %lld bf16), nope %lld, "
              "v %lld; FLOPs 2*H*(%lld + %lld) per cached token and batch "
              "row (absorbed), 2*H*(%lld + %lld) (expanded attention)\n",
              (long long)kHeads, (long long)kRank, (long long)kRope,
              (long long)kRow, (long long)kNope, (long long)kV,
              (long long)kRow, (long long)kRank, (long long)(kNope + kRope),
              (long long)kV);
  std::printf("%-6s %5s %7s %-34s %10s %10s %7s %11s %9s\n", "shape", "batch",
              "kv_len", "method", "ms", "GFLOP/s", "%peak", "vs absorbed",
              "RSS MB");
  auto row = [&](const char *shape, int64_t b, int64_t kv,
                 const std::string &method, Result r, double flops,
                 double absorbedMs) {
    double gf = flops / r.ms / 1e6;
    double ratio = r.ms / absorbedMs;
    std::printf("%-6s %5lld %7lld %-34s %10.3f %10.1f %6.1f%% %10.2fx "
                "%9.1f\n",
                shape, (long long)b, (long long)kv, method.c_str(), r.ms, gf,
                100 * gf / mc.peak, ratio, r.rssKb / 1024.0);
    csv.row() << shape << "," << b << "," << kv << ",\"" << method << "\"," << r.ms
        << "," << gf << "," << 100 * gf / mc.peak << "," << ratio << ","
        << r.rssKb / 1024.0 << "\n";
  };
  const Decode shapes[] = {{"M1", 1, 4096},
                           {"M2", 1, 32768},
                           {"M3", 8, 4096},
                           {"M4", 8, 32768}};
  for (const Decode &s : shapes) {
    if (!o.only.empty() && o.only != s.name)
      continue;
    std::mt19937 rng(3);
    int64_t b = s.batch, kv = s.kv;
    attn_rt::Buf<float> q = normal(rng, size_t(b * kHeads * kRow));
    attn_rt::Buf<uint16_t> cache = bf16Values(rng, size_t(b * kv * kRow));
    attn_rt::Buf<float> out(size_t(b * kHeads * kRank));
    std::vector<int64_t> lens(b, kv);
    auto *cp = reinterpret_cast<float *>(cache.data());
    attn_rt_memref_f32_4 dout = {out.data(), out.data(), 0,
                                 {b, kHeads, 1, kRank},
                                 {kHeads * kRank, kRank, kRank, 1}},
                         dq = {q.data(), q.data(), 0, {b, kHeads, 1, kRow},
                               {kHeads * kRow, kRow, kRow, 1}};
    attn_rt_memref_f32_3 dc = {cp, cp, 0, {b, kv, kRow}, {kv * kRow, kRow, 1}};
    attn_rt_memref_i64_1 dl = {lens.data(), lens.data(), 0, {b}, {1}};
    double flops = 2.0 * kHeads * double(kRow + kRank) * double(kv) * b;
    Result ra = inChild(o.repeats, [&] { kind.mla(&dout, &dq, &dc, &dl); });
    row(s.name, b, kv, "absorbed, bf16 latent cache", ra, flops, ra.ms);
    // Pages of 64 rows (FlashMLA's), shuffled over the pool.
    {
      const int64_t page = 64;
      int64_t perSeq = (kv + page - 1) / page, pages = b * perSeq;
      std::vector<int32_t> table(pages);
      for (int64_t p = 0; p < pages; ++p)
        table[p] = int32_t(p);
      std::shuffle(table.begin(), table.end(), std::mt19937(11));
      attn_rt::Buf<uint16_t> pool(size_t(pages * page * kRow));
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t j = 0; j < kv; ++j)
          std::memcpy(&pool[(table[bi * perSeq + j / page] * page + j % page) *
                            kRow],
                      &cache[(bi * kv + j) * kRow], kRow * 2);
      auto *pp = reinterpret_cast<float *>(pool.data());
      attn_rt_memref_f32_3 dp = {pp, pp, 0, {pages, page, kRow},
                                 {page * kRow, kRow, 1}};
      attn_rt_memref_i32_2 dt = {table.data(), table.data(), 0, {b, perSeq},
                                 {perSeq, 1}};
      Result rp = inChild(o.repeats, [&] {
        kind.mla_paged(&dout, &dq, &dp, &dt, &dl);
      });
      row(s.name, b, kv, "absorbed, bf16 pages of 64", rp, flops, ra.ms);
    }
    // OpenBLAS unfused, over the cache widened to f32.
    {
      attn_rt::Buf<float> c32(cache.size());
      for (size_t i = 0; i < cache.size(); ++i)
        c32[i] = attn_rt::widenBits(cache[i], false);
      attn_rt::Buf<float> scores(size_t(kHeads * kv));
      Result ru = inChild(o.repeats, [&] {
        for (int64_t bi = 0; bi < b; ++bi)
          unfusedAbsorbed(&q[bi * kHeads * kRow], &c32[bi * kv * kRow], kv,
                          scores.data(), &out[bi * kHeads * kRank]);
      });
      row(s.name, b, kv, "OpenBLAS unfused absorbed, f32", ru, flops, ra.ms);
    }
    // The expanded form on the same step: attention over an MHA cache of
    // the expanded keys and values (bf16), where it fits in half the
    // memory.
    double expBytes = double(b) * kv * kHeads * (kNope + kRope + kV) * 2;
    double physical =
        double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    if (expBytes < 0.5 * physical) {
      int64_t d = kNope + kRope;
      attn_rt::Buf<float> eq = normal(rng, size_t(b * kHeads * d));
      attn_rt::Buf<uint16_t> ek = bf16Values(rng, size_t(b * kHeads * kv * d)),
                             ev = bf16Values(rng, size_t(b * kHeads * kv * kV));
      attn_rt::Buf<float> eo(size_t(b * kHeads * kV));
      auto *kp = reinterpret_cast<float *>(ek.data());
      auto *vp = reinterpret_cast<float *>(ev.data());
      attn_rt_memref_f32_4 o4 = {eo.data(), eo.data(), 0, {b, kHeads, 1, kV},
                                 {kHeads * kV, kV, kV, 1}},
                           q4 = {eq.data(), eq.data(), 0, {b, kHeads, 1, d},
                                 {kHeads * d, d, d, 1}},
                           k4 = {kp, kp, 0, {b, kHeads, kv, d},
                                 {kHeads * kv * d, kv * d, d, 1}},
                           v4 = {vp, vp, 0, {b, kHeads, kv, kV},
                                 {kHeads * kv * kV, kv * kV, kV, 1}};
      auto fused = reinterpret_cast<attn_rt_sdpa_fn>(kind.fused);
      Result re = inChild(o.repeats, [&] { fused(&o4, &q4, &k4, &v4, &dl); });
      double ef = 2.0 * kHeads * double(d + kV) * double(kv) * b;
      row(s.name, b, kv, "expanded, bf16 MHA cache", re, ef, ra.ms);
    }
  }
  // Prefill: the expanded form, causal, S = 4096, 16 heads.
  if (o.only.empty() || o.only == "MP") {
    const int64_t heads = 16, s = 4096, d = kNope + kRope;
    std::string plib = compileConfig(dir, "deepseek_v3_mla16",
                                     latentConfig(heads), {"--entries=sdpa"});
    void *ph = nullptr;
    const attn_rt_model *pm = loadModel(plib, ph);
    if (!pm)
      return false;
    auto fused = reinterpret_cast<attn_rt_sdpa_fn>(pm->kinds[0].fused);
    std::mt19937 rng(5);
    attn_rt::Buf<float> q = normal(rng, size_t(heads * s * d)),
                        k = normal(rng, size_t(heads * s * d)),
                        v = normal(rng, size_t(heads * s * kV)),
                        out(size_t(heads * s * kV));
    int64_t len = s;
    attn_rt_memref_f32_4 o4 = {out.data(), out.data(), 0, {1, heads, s, kV},
                               {heads * s * kV, s * kV, kV, 1}},
                         q4 = {q.data(), q.data(), 0, {1, heads, s, d},
                               {heads * s * d, s * d, d, 1}},
                         k4 = {k.data(), k.data(), 0, {1, heads, s, d},
                               {heads * s * d, s * d, d, 1}},
                         v4 = {v.data(), v.data(), 0, {1, heads, s, kV},
                               {heads * s * kV, s * kV, kV, 1}};
    attn_rt_memref_i64_1 dl = {&len, &len, 0, {1}, {1}};
    Result r = inChild(o.repeats, [&] { fused(&o4, &q4, &k4, &v4, &dl); });
    double flops =
        attn_rt_attention_flops(1, heads, s, s, d, kV, true, /*window=*/0);
    row("MP", 1, s, "expanded prefill, f32, 16 heads", r, flops, r.ms);
  }
  std::printf("CSV: %s\n", csvPath.c_str());
  return true;
}

} // namespace attn_bench
