//===- CeilingBench.cpp - attn-bench --ceiling: the register tiles' limit -===//
//
// What the micro-kernel's inner loops can reach on this core when every
// operand is in L1: the prefill scores' register tile (RV vectors of query
// rows × KB keys: per d step RV loads of the packed Qᵀ, KB broadcasts of
// K, RV·KB FMAs) and P·V's (R rows × CV vectors of dv: per key CV loads of
// V, R broadcasts of p, R·CV FMAs), written here with intrinsics, as % of
// a loop of FMAs alone on the same thread. The shipped tiles (2 × 8 and
// 4 × 4) and neighbours with fewer loads per FMA. A core whose loads
// compete with its FMAs shows it here, apart from the kernels' cache
// misses and bookkeeping (docs/benchmarks.md, "Prefill on a core with two
// 512-bit FMA pipes").
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"

#include <immintrin.h>

namespace attn_bench {
namespace {

constexpr int64_t kD = 128, kKeys = 64, kRows = 48, kDv = 128;

/// Scores of RV·16 rows (at most 64) × KB keys over d: Qt [d, RV·16] (one
/// block, as the micro-kernel packs it), K rows kD apart.
template <int RV, int KB>
__attribute__((target("avx512f"), noinline)) void
scoresTile(const float *qt, const float *k, float *out) {
  __m512 a[RV * KB];
  for (int i = 0; i < RV * KB; ++i)
    a[i] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < kD; ++kk) {
    __m512 q[RV];
    for (int r = 0; r < RV; ++r)
      q[r] = _mm512_load_ps(qt + kk * RV * 16 + 16 * r);
    for (int j = 0; j < KB; ++j) {
      __m512 kb = _mm512_set1_ps(k[j * kD + kk]);
      for (int r = 0; r < RV; ++r)
        a[RV * j + r] = _mm512_fmadd_ps(q[r], kb, a[RV * j + r]);
    }
  }
  for (int i = 0; i < RV * KB; ++i)
    _mm512_store_ps(out + 16 * i, a[i]);
}

/// acc[R rows, CV vectors from c0] += P[n, R] · V[n, ...] over kKeys keys.
template <int R, int CV>
__attribute__((target("avx512f"), noinline)) void
pvTile(const float *p, const float *v, float *acc, int64_t c0) {
  __m512 a[R * CV];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < CV; ++c)
      a[r * CV + c] = _mm512_load_ps(acc + r * kDv + c0 + 16 * c);
  for (int64_t n = 0; n < kKeys; ++n) {
    __m512 vv[CV];
    for (int c = 0; c < CV; ++c)
      vv[c] = _mm512_load_ps(v + n * kDv + c0 + 16 * c);
    for (int r = 0; r < R; ++r) {
      __m512 pb = _mm512_set1_ps(p[n * kRows + r]);
      for (int c = 0; c < CV; ++c)
        a[r * CV + c] = _mm512_fmadd_ps(pb, vv[c], a[r * CV + c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < CV; ++c)
      _mm512_store_ps(acc + r * kDv + c0 + 16 * c, a[r * CV + c]);
}

struct Operands {
  attn_rt::Buf<float> qt = attn_rt::Buf<float>(kD * 64, 0.001f),
                      k = attn_rt::Buf<float>(kKeys * kD, 0.002f),
                      v = attn_rt::Buf<float>(kKeys * kDv, 0.003f),
                      p = attn_rt::Buf<float>(kKeys * kRows, 0.01f),
                      acc = attn_rt::Buf<float>(kRows * kDv, 0.0f),
                      out = attn_rt::Buf<float>(64 * 16, 0.0f);
};

/// GFLOP/s of `body` (doing `flop` FLOPs per call) over ~0.2 s, best of 5.
template <typename F> double rate(double flop, F body) {
  int64_t calls = 1;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = nowMs();
    for (int64_t i = 0; i < calls; ++i)
      body();
    double ms = nowMs() - t0;
    if (ms < 50) { // too short to time: grow, then count from scratch
      calls *= 4;
      --rep;
      continue;
    }
    best = std::max(best, flop * double(calls) / ms / 1e6);
  }
  return best;
}

template <int RV, int KB> double scoresRate(Operands &x) {
  constexpr int64_t groups = kKeys / KB;
  return rate(2.0 * RV * 16 * KB * kD * groups, [&] {
    for (int64_t g = 0; g < groups; ++g)
      scoresTile<RV, KB>(x.qt.data(), x.k.data() + g * KB * kD, x.out.data());
  });
}

template <int R, int CV> double pvRate(Operands &x) {
  constexpr int64_t blocks = kRows / R, cols = kDv / (16 * CV);
  return rate(2.0 * R * 16 * CV * kKeys * blocks * cols, [&] {
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t c = 0; c < cols; ++c)
        pvTile<R, CV>(x.p.data() + b * R, x.v.data(),
                      x.acc.data() + b * R * kDv, c * 16 * CV);
  });
}

} // namespace

bool benchCeiling(const Options &o, const Machine &mc) {
  if (!mc.avx512) {
    std::fprintf(stderr, "attn-bench: error: --ceiling measures the AVX-512 "
                         "register tiles; this CPU has no AVX-512\n");
    return false;
  }
  Operands x;
  // Read through a volatile at every call: the call cannot be hoisted out
  // of the timing loop as invariant.
  volatile int64_t iters = 1'000'000;
  volatile double sink = 0;
  double peak1 = rate(2.0 * 16 * 12 * double(iters),
                      [&] { sink = sink + fmaLoop512(iters); });
  // The rows' machine columns: one thread, its FMAs-alone peak.
  Machine one = mc;
  one.peak = peak1;
  std::string csv =
      o.csv == Options().csv ? std::string("attn-bench-ceiling.csv") : o.csv;
  CsvFile out(csv, "loop,tile,loads_per_fma,gflops,pct_peak", one, 1);
  std::printf("one thread, every operand in L1 (%s)\nFMAs alone: %.1f "
              "GFLOP/s\n%-8s %-8s %14s %10s %12s\n",
              mc.cpu.c_str(), peak1, "loop", "tile", "loads per FMA", "GFLOP/s",
              "% FMAs alone");
  // Per FMA: the scores' RV loads of Qᵀ and KB broadcasts of K for RV·KB
  // FMAs; P·V's CV loads of V and R broadcasts of p for R·CV.
  auto loads = [](int a, int b) { return double(a + b) / (a * b); };
  struct Row {
    const char *loop, *tile;
    double loadsPerFma, gflops;
  };
  Row rows[] = {
      {"Q.K^T", "2x8 *", loads(2, 8), scoresRate<2, 8>(x)},
      {"Q.K^T", "3x8", loads(3, 8), scoresRate<3, 8>(x)},
      {"Q.K^T", "4x6", loads(4, 6), scoresRate<4, 6>(x)},
      {"Q.K^T", "1x16", loads(1, 16), scoresRate<1, 16>(x)},
      {"P.V", "4x4 *", loads(4, 4), pvRate<4, 4>(x)},
      {"P.V", "6x4", loads(6, 4), pvRate<6, 4>(x)},
      {"P.V", "8x2", loads(8, 2), pvRate<8, 2>(x)},
  };
  for (const Row &r : rows) {
    double pct = 100 * r.gflops / peak1;
    std::printf("%-8s %-8s %14.2f %10.1f %11.1f%%\n", r.loop, r.tile,
                r.loadsPerFma, r.gflops, pct);
    char line[128];
    std::snprintf(line, sizeof(line), "%s,%s,%.3f,%.1f,%.1f\n", r.loop, r.tile,
                  r.loadsPerFma, r.gflops, pct);
    out.row() << line;
  }
  std::printf("(* the micro-kernel's tiles; rows x keys for Q.K^T in "
              "vectors x keys, rows x vectors for P.V)\nCSV: %s\n",
              csv.c_str());
  return true;
}

} // namespace attn_bench
