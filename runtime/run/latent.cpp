//===- latent.cpp - multi-head latent attention in the executables --------===//
//
// This file implements what the executables do for multi-head latent
// attention kinds (DeepSeek-V2/V3, Kimi-K2): the latent cache through
// `block` and `layer` (--cache-in / --cache-out: decode after a prefill),
// the `mla` command (the absorbed form's attention on .npy files), check's
// cases (the absorbed kernel against the reference, contiguous and paged;
// the absorbed and the expanded form against each other through a random
// kv_b_proj) and bench's line for the absorbed kernel next to the expanded
// one on the same step.
//
//===----------------------------------------------------------------------===//

#include "cli.h"
#include "flops.h"
#include "narrow.h"
#include "resources.h"

#include <sys/resource.h>

#include <cstdio>

namespace attn_rt {
namespace cli {

namespace {

int64_t rowOf(const attn_rt_kind &k) {
  return k.kv_lora_rank + k.rope_head_dim;
}
/// The expanded form's per-head nope dim.
int64_t nopeOf(const attn_rt_kind &k) { return k.head_dim - k.rope_head_dim; }

/// The absorbed form's attention as a plain kind: every head over one KV
/// head whose key is the whole latent row, its value the first r features.
attn_rt_kind absorbedView(const attn_rt_kind &k) {
  attn_rt_kind a = k;
  a.num_kv_heads = 1;
  a.head_dim = rowOf(k);
  a.head_dim_v = k.kv_lora_rank;
  return a;
}

/// A cache [B, S, row] as the reference's key [B, 1, S, row] and value
/// [B, 1, S, r] (the first r features).
Buf<float> valuesOf(const Buf<float> &cache, int64_t rows, int64_t row,
                    int64_t r) {
  Buf<float> v(rows * r);
  for (int64_t i = 0; i < rows; ++i)
    std::copy_n(&cache[i * row], r, &v[i * r]);
  return v;
}

/// One attn_rt_mla_fn call on host buffers: q [B, H, Sq, row], the cache
/// [B, Skv, row] (narrowed once to the kind's kv_dtype), lens -> out
/// [B, H, Sq, r].
struct MlaCall {
  Buf<uint16_t> c16;
  /// A --qo-dtype kind's q narrowed once and its 16-bit output (call()
  /// widens it into `out`).
  Buf<uint16_t> q16, out16;
  const attn_rt_kind &kind;
  Buf<float> &out;
  attn_rt_memref_f32_4 dout, dq;
  attn_rt_memref_f32_3 dc;
  attn_rt_memref_i64_1 dl;
  /// On the GPU: q, the cache, the lengths and the output on the device
  /// (the descriptors point there), the output copied back by finish().
  OnDevice dev;
  // The descriptors point into this object's buffers: not copied.
  MlaCall(const MlaCall &) = delete;
  MlaCall &operator=(const MlaCall &) = delete;
  MlaCall(const attn_rt_kind &kind, Buf<float> &q,
          const std::vector<int64_t> &qs, Buf<float> &cache,
          const std::vector<int64_t> &cs, std::vector<int64_t> &lens,
          Buf<float> &out)
      : kind(kind), out(out) {
    float *cp = cache.data();
    if (kind.kv_dtype != ATTN_RT_KV_F32) {
      c16 = narrowToKV(kind, cache);
      cp = reinterpret_cast<float *>(c16.data());
    }
    std::vector<int64_t> os = {qs[0], qs[1], qs[2], kind.kv_lora_rank};
    out.resize(os[0] * os[1] * os[2] * os[3]);
    dout = view4(out.data(), os);
    dq = view4(q.data(), qs);
    if (qoNarrow(kind)) {
      q16 = narrowToQO(kind, q);
      out16.resize(out.size());
      dq = view4(reinterpret_cast<float *>(q16.data()), qs);
      dout = view4(reinterpret_cast<float *>(out16.data()), os);
    }
    dc = view3(cp, cs);
    dl = {lens.data(), lens.data(), 0, {int64_t(lens.size())}, {1}};
    int64_t qo = qoNarrow(kind) ? 2 : 4;
    dev.in(dq, qo);
    dev.in(dc, kvElementBytes(kind));
    dev.in(dl, 8);
    dev.out(dout, qo);
  }
  void call(attn_rt_mla_fn fn) {
    fn(&dout, &dq, &dc, &dl);
    finish();
  }
  /// The paged kernel over `pool` [pages, page, row] (the kind's kv_dtype)
  /// and block table `table` [B, pages per sequence], copied to the device
  /// on the GPU; the caller then calls finish().
  void callPaged(attn_rt_memref_f32_3 pool, attn_rt_memref_i32_2 table) {
    OnDevice pagedDev;
    pagedDev.in(pool, kvElementBytes(kind));
    pagedDev.in(table, 4);
    kind.mla_paged(&dout, &dq, &pool, &table, &dl);
  }
  /// The output copied back from the device (on the GPU) and a 16-bit one
  /// widened into `out` (after a call through dout).
  void finish() {
    dev.back();
    if (qoNarrow(kind))
      widenFromQO(kind, out16, out);
  }
};

/// The float64 reference of the absorbed attention of q over `cache` (its
/// values rounded as the kernel reads them).
void absorbedReference(const attn_rt_kind &kind, const Buf<float> &q,
                       const std::vector<int64_t> &qs, const Buf<float> &cache,
                       int64_t b, int64_t skv, const std::vector<int64_t> &lens,
                       Buf<float> &ref,
                       const std::vector<int64_t> *qStart = nullptr) {
  attn_rt_kind a = absorbedView(kind);
  int64_t row = rowOf(kind), r = kind.kv_lora_rank;
  Buf<float> v = valuesOf(cache, b * skv, row, r);
  referenceF64(a, q, qs, cache, {b, 1, skv, row}, v, {b, 1, skv, r}, lens,
               kind.scale, 0.0, ref, qStart);
}

void report(bool ok, const attn_rt_kind &kind, const char *what,
            const std::string &shape, const MaxError &err) {
  std::printf("%-4s %-32s %s %s max_abs_err=%.3e max_rel_err=%.3e\n",
              ok ? "ok" : "FAIL", kind.name, what, shape.c_str(), err.maxAbs,
              err.rel());
}

std::string joinLengths(const std::vector<int64_t> &lens) {
  std::string t;
  for (int64_t l : lens)
    t += (t.empty() ? "" : ",") + std::to_string(l);
  return t;
}

/// check: `mla` against its unfused reference (or the float64 one).
bool checkAbsorbed(const attn_rt_kind &kind, std::mt19937 &rng) {
  struct Case {
    int64_t b, sq, skv;
  };
  std::vector<Case> cases = {{1, 1, 1},  {2, 1, 37},   {1, 3, 17},
                             {2, 5, 70}, {1, 1, 1000}, {1, 17, 17}};
  // On the GPU also split-K (parts of at least 512 keys): decode against
  // 4,099 keys, a batch whose second sequence has half the keys, 7 causal
  // rows.
  if (gCuda)
    cases.insert(cases.end(), {{1, 1, 4099}, {2, 1, 2500}, {1, 7, 3000}});
  int64_t h = kind.num_heads, row = rowOf(kind);
  bool allOk = true;
  for (const Case &c : cases) {
    std::vector<int64_t> qs = {c.b, h, c.sq, row}, cs = {c.b, c.skv, row};
    auto q = randomVec(rng, c.b * h * c.sq * row, 1);
    auto cache = randomVec(rng, c.b * c.skv * row, 1);
    roundToKV(kind, cache);
    roundToQO(kind, q);
    std::vector<int64_t> lens(c.b, c.skv);
    if (c.b > 1)
      lens[1] = c.skv / 2; // a shorter second sequence
    Buf<float> out, ref;
    MlaCall(kind, q, qs, cache, cs, lens, out).call(kind.mla);
    if (kind.mla_reference)
      MlaCall(kind, q, qs, cache, cs, lens, ref).call(kind.mla_reference);
    else
      absorbedReference(kind, q, qs, cache, c.b, c.skv, lens, ref);
    MaxError err;
    err.add(out, ref);
    // (Against the compiled reference, a 16-bit output's bound doubles:
    // both round.)
    bool ok =
        err.ok(kind.tolerance * (kind.mla_reference && qoNarrow(kind) ? 2 : 1));
    allOk = allOk && ok;
    report(ok, kind, "absorbed",
           "B=" + std::to_string(c.b) + " Sq=" + std::to_string(c.sq) +
               " Skv=" + std::to_string(c.skv),
           err);
  }
  return allOk;
}

/// check: `mla_paged` against the float64 reference over shuffled block
/// tables (pages no sequence lists hold random rows).
bool checkAbsorbedPaged(const attn_rt_kind &kind, std::mt19937 &rng) {
  struct Case {
    int64_t page, sq;
    std::vector<int64_t> lens;
  };
  std::vector<Case> cases = {
      {64, 1, {63, 65, 0, 1}}, {16, 3, {16, 33, 3}}, {64, 1, {1000}}};
  // On the GPU, split-K through the block table: 3,000 keys beside 1.
  if (gCuda)
    cases.push_back({64, 1, {3000, 1}});
  int64_t h = kind.num_heads, row = rowOf(kind);
  bool allOk = true, narrow = kind.kv_dtype != ATTN_RT_KV_F32;
  for (const Case &c : cases) {
    int64_t b = int64_t(c.lens.size()), page = c.page, sq = c.sq;
    int64_t maxLen =
        std::max<int64_t>(1, *std::max_element(c.lens.begin(), c.lens.end()));
    int64_t perSeq = (maxLen + page - 1) / page, pages = b * perSeq + 3;
    std::vector<int64_t> qs = {b, h, sq, row};
    auto q = randomVec(rng, b * h * sq * row, 1);
    auto cache = randomVec(rng, b * maxLen * row, 1);
    roundToKV(kind, cache);
    roundToQO(kind, q);
    std::vector<int32_t> table = shuffledTable(rng, pages, b * perSeq);
    auto pool = randomVec(rng, pages * page * row, 1);
    roundToKV(kind, pool);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t j = 0; j < c.lens[bi]; ++j)
        std::copy_n(&cache[(bi * maxLen + j) * row], row,
                    &pool[(table[bi * perSeq + j / page] * page + j % page) *
                          row]);
    Buf<uint16_t> p16;
    float *pp = pool.data();
    if (narrow) {
      p16 = narrowToKV(kind, pool);
      pp = reinterpret_cast<float *>(p16.data());
    }
    std::vector<int64_t> lens = c.lens;
    Buf<float> out, ref, unusedCache;
    // q, the output and the lengths as the contiguous call describes them
    // (16-bit q and output with --qo-dtype); the pool instead of a cache.
    MlaCall call(kind, q, qs, unusedCache, {b, 0, row}, lens, out);
    attn_rt_memref_f32_3 dp = view3(pp, {pages, page, row});
    attn_rt_memref_i32_2 dt{table.data(), table.data(), 0, {b, perSeq},
                            {perSeq, 1}};
    call.callPaged(dp, dt);
    call.finish();
    std::vector<int64_t> qStart(b);
    for (int64_t bi = 0; bi < b; ++bi)
      qStart[bi] = c.lens[bi] - sq;
    absorbedReference(kind, q, qs, cache, b, maxLen, c.lens, ref, &qStart);
    MaxError err;
    err.add(out, ref);
    bool ok = err.ok(kind.tolerance);
    allOk = allOk && ok;
    report(ok, kind, "absorbed paged",
           "page=" + std::to_string(page) + " B=" + std::to_string(b) +
               " Sq=" + std::to_string(sq) + " lens=" + joinLengths(c.lens),
           err);
  }
  return allOk;
}

/// check: the two forms of the same attention agree. A random kv_b_proj W
/// [H·(dn + dv), r], latent rows and rotary keys, queries: the expanded
/// kernel (`fused`, D = dn + dr, Dv = dv) on keys [W_UK[h]·latent, rope] and
/// values W_UV[h]·latent, against the absorbed kernel (`mla`) on the
/// queries [q_nope·W_UK[h], q_rope], its result through W_UV[h]ᵀ.
bool checkForms(const attn_rt_kind &kind, std::mt19937 &rng) {
  int64_t h = kind.num_heads, r = kind.kv_lora_rank, dr = kind.rope_head_dim,
          dn = nopeOf(kind), dv = kind.head_dim_v, row = rowOf(kind);
  int64_t b = 2, sq = 3, skv = 37;
  std::vector<int64_t> lens = {skv, 20};
  auto w = randomVec(rng, h * (dn + dv) * r, float(1.0 / std::sqrt(double(r))));
  auto cache = randomVec(rng, b * skv * row, 1);
  roundToKV(kind, cache);
  auto qn = randomVec(rng, b * h * sq * dn, 1);
  auto qr = randomVec(rng, b * h * sq * dr, 1);
  // The expanded kernel takes q in its --qo-dtype: both forms see it so.
  roundToQO(kind, qn);
  roundToQO(kind, qr);
  auto wAt = [&](int64_t head, int64_t i, int64_t c) -> double {
    return w[(head * (dn + dv) + i) * r + c];
  };
  // Expanded: K [B, H, Skv, dn + dr], V [B, H, Skv, dv], q [B, H, Sq, dn + dr].
  Buf<float> k(b * h * skv * (dn + dr)), v(b * h * skv * dv),
      q(b * h * sq * (dn + dr));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hh = 0; hh < h; ++hh) {
      for (int64_t j = 0; j < skv; ++j) {
        const float *lat = &cache[(bi * skv + j) * row];
        float *kr = &k[((bi * h + hh) * skv + j) * (dn + dr)];
        float *vr = &v[((bi * h + hh) * skv + j) * dv];
        for (int64_t i = 0; i < dn + dv; ++i) {
          double s = 0;
          for (int64_t c = 0; c < r; ++c)
            s += wAt(hh, i, c) * lat[c];
          (i < dn ? kr[i] : vr[i - dn]) = float(s);
        }
        std::copy_n(lat + r, dr, kr + dn);
      }
      for (int64_t i = 0; i < sq; ++i) {
        float *qrow = &q[((bi * h + hh) * sq + i) * (dn + dr)];
        std::copy_n(&qn[((bi * h + hh) * sq + i) * dn], dn, qrow);
        std::copy_n(&qr[((bi * h + hh) * sq + i) * dr], dr, qrow + dn);
      }
    }
  roundToKV(kind, k);
  roundToKV(kind, v);
  Buf<float> expanded;
  run(kind.fused, kind, q, {b, h, sq, dn + dr}, k, {b, h, skv, dn + dr}, v,
      {b, h, skv, dv}, lens, nullptr, expanded);
  // Absorbed: q' = [q_nope·W_UK[h], q_rope], then ·W_UV[h]ᵀ.
  Buf<float> qa(b * h * sq * row);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t i = 0; i < sq; ++i) {
        int64_t at = (bi * h + hh) * sq + i;
        for (int64_t c = 0; c < r; ++c) {
          double s = 0;
          for (int64_t d = 0; d < dn; ++d)
            s += double(qn[at * dn + d]) * wAt(hh, d, c);
          qa[at * row + c] = float(s);
        }
        std::copy_n(&qr[at * dr], dr, &qa[at * row + r]);
      }
  Buf<float> oLat;
  std::vector<int64_t> lensA = lens;
  MlaCall(kind, qa, {b, h, sq, row}, cache, {b, skv, row}, lensA, oLat)
      .call(kind.mla);
  Buf<float> absorbed(b * h * sq * dv);
  for (int64_t at = 0; at < b * h * sq; ++at) {
    int64_t hh = (at / sq) % h;
    for (int64_t i = 0; i < dv; ++i) {
      double s = 0;
      for (int64_t c = 0; c < r; ++c)
        s += double(oLat[at * r + c]) * wAt(hh, dn + i, c);
      absorbed[at * dv + i] = float(s);
    }
  }
  MaxError err;
  err.add(absorbed, expanded);
  // The forms round differently (a narrow cache: the latent rows against
  // the expanded keys and values), so the bound is the narrow type's.
  double tol = kind.kv_dtype == ATTN_RT_KV_F32 ? 1e-4 : 3e-2;
  bool ok = err.ok(tol);
  report(ok, kind, "absorbed = expanded",
         "B=2 Sq=3 Skv=37 lens=" + joinLengths(lens), err);
  return ok;
}

} // namespace

bool checkLatentKind(const attn_rt_kind &kind, std::mt19937 &rng) {
  bool ok = checkAbsorbed(kind, rng);
  if (kind.mla_paged)
    ok = checkAbsorbedPaged(kind, rng) && ok;
  return checkForms(kind, rng) && ok;
}

Buf<float> runLatentBlock(const attn_rt_kind &kind,
                          attn_rt_latent_block_fn fn, Args &args,
                          Buf<float> &x, const std::vector<int64_t> &shape,
                          Buf<float> &y, BlockWeights &weights,
                          std::vector<int64_t> &cacheShape) {
  int64_t b = shape[0], s = shape[1], row = rowOf(kind);
  NpyArray in;
  int64_t past = 0;
  std::string err;
  if (args.count("cache-in")) {
    if (!readNpy(args["cache-in"], in, err))
      fail(err);
    if (in.dtype != "f4" || in.shape.size() != 3 || in.shape[0] != b ||
        in.shape[2] != row)
      fail(args["cache-in"] + ": must be float32 [" + std::to_string(b) +
           ", past_tokens, " + std::to_string(row) +
           "] (the latent rows of the tokens before --x: kv_lora_rank " +
           std::to_string(kind.kv_lora_rank) + " + qk_rope_head_dim " +
           std::to_string(kind.rope_head_dim) + " per token)");
    past = in.shape[1];
  }
  cacheShape = {b, past + s, row};
  if (!fitsInMemory((unsigned __int128)4 * b * (past + s) * row,
                    "the latent cache [" + std::to_string(b) + ", " +
                        std::to_string(past + s) + ", " +
                        std::to_string(row) + "]",
                    err))
    fail(err);
  Buf<float> cacheOut(b * (past + s) * row);
  std::vector<int64_t> pos(b * s);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j)
      pos[i * s + j] = past + j;
  attn_rt_memref_f32_3 dx = view3(x.data(), shape);
  attn_rt_memref_f32_3 dy = view3(y.data(), shape);
  attn_rt_memref_f32_3 dco = view3(cacheOut.data(), cacheShape);
  attn_rt_memref_f32_3 dci = view3(in.f32.data(), {b, past, row});
  attn_rt_memref_i64_2 dp{pos.data(), pos.data(), 0, {b, s}, {s, 1}};
  fn(&dy, &dco, &dx, &dp, &dci, weights.ptrs.data());
  return cacheOut;
}

int cmdMla(const attn_rt_model *m, int argc, char **argv) {
  auto args =
      parseArgs(argc, argv, 2, {"layer", "q", "cache", "out", "kv-lengths"});
  for (const char *req : {"layer", "q", "cache", "out"})
    if (!args.count(req))
      fail(std::string("mla needs --") + req);
  int64_t layer = intArg(args, "layer", 0, 0, 1 << 30);
  const attn_rt_kind &kind = kindOfLayer(m, layer);
  if (!kind.mla)
    fail("layer " + std::to_string(layer) + " (kind '" + kind.name +
         "') is not multi-head latent attention: use `sdpa`" +
         (kind.op == ATTN_RT_OP_GATED_DELTA ? " (or `gdn`)" : ""));
  int64_t h = kind.num_heads, row = rowOf(kind), r = kind.kv_lora_rank;
  std::string kvNpy = kind.kv_dtype == ATTN_RT_KV_F32   ? "f4"
                      : kind.kv_dtype == ATTN_RT_KV_F16 ? "f2"
                                                        : "u2";
  NpyArray q, c;
  std::string err;
  if (!readNpy(args["q"], q, err) || !readNpy(args["cache"], c, err))
    fail(err);
  std::string desc = " (layer kind '" + std::string(kind.name) + "': H=" +
                     std::to_string(h) + ", kv_lora_rank " +
                     std::to_string(r) + " + qk_rope_head_dim " +
                     std::to_string(kind.rope_head_dim) + ")";
  // q and the output: float32, or --qo-dtype's 16-bit type (the cache's).
  bool narrowQ = qoNarrow(kind);
  if (q.dtype != (narrowQ ? kvNpy : "f4") || q.shape.size() != 4 ||
      q.shape[1] != h || q.shape[3] != row)
    fail(args["q"] + ": must be " +
         (narrowQ ? std::string(kvNpy == "f2" ? "float16 ('<f2')"
                                              : "bfloat16 bits as uint16 "
                                                "('<u2')") +
                        " (--qo-dtype=" + qoDtypeName(kind) + ")"
                  : std::string("float32")) +
         " [B, " + std::to_string(h) + ", Sq, " + std::to_string(row) +
         "] (the queries in the latent space, then their rotary part)" + desc);
  if (c.dtype != kvNpy || c.shape.size() != 3 || c.shape[0] != q.shape[0] ||
      c.shape[2] != row)
    fail(args["cache"] + ": must be " +
         (kind.kv_dtype == ATTN_RT_KV_F32   ? std::string("float32")
          : kind.kv_dtype == ATTN_RT_KV_F16 ? std::string("float16 ('<f2')")
                                            : std::string("bfloat16 bits "
                                                          "as uint16 "
                                                          "('<u2')")) +
         " [" + std::to_string(q.shape[0]) + ", Skv, " + std::to_string(row) +
         "] (the latent rows: the normed latent, then the rotary key; "
         "--kv-dtype=" + kvDtypeName(kind) + ")" + desc);
  if (q.shape[0] > kMaxBatch)
    fail(args["q"] + ": batch " + std::to_string(q.shape[0]) + " exceeds " +
         std::to_string(kMaxBatch));
  if (!fitsInMemory((unsigned __int128)4 * q.shape[0] * h * q.shape[2] * r,
                    "mla's output for q " + shapeStr(q.shape), err))
    fail(err);
  std::vector<int64_t> lens =
      keyLengths(args, "kv-lengths", q.shape[0], c.shape[1]);
  requireDevice("mla");
  std::vector<int64_t> os = {q.shape[0], h, q.shape[2], r};
  // The files' bits as they are: 16-bit q and output with --qo-dtype.
  Buf<float> out(narrowQ ? 0 : os[0] * os[1] * os[2] * os[3]);
  Buf<uint16_t> out16(narrowQ ? os[0] * os[1] * os[2] * os[3] : 0);
  float *cp = kind.kv_dtype == ATTN_RT_KV_F32
                  ? c.f32.data()
                  : reinterpret_cast<float *>(c.u16.data());
  float *op = narrowQ ? reinterpret_cast<float *>(out16.data()) : out.data();
  float *qp = narrowQ ? reinterpret_cast<float *>(q.u16.data()) : q.f32.data();
  attn_rt_memref_f32_4 dout = view4(op, os), dq = view4(qp, q.shape);
  attn_rt_memref_f32_3 dc = view3(cp, c.shape);
  attn_rt_memref_i64_1 dl{lens.data(), lens.data(), 0, {q.shape[0]}, {1}};
  // (On the GPU through device copies.)
  OnDevice dev;
  dev.in(dq, narrowQ ? 2 : 4);
  dev.in(dc, kvElementBytes(kind));
  dev.in(dl, 8);
  dev.out(dout, narrowQ ? 2 : 4);
  kind.mla(&dout, &dq, &dc, &dl);
  dev.back();
  if (narrowQ)
    writeOut(args, "out", os, out16.data(), kind.qo_dtype == ATTN_RT_KV_F16);
  else
    writeOut(args, "out", os, out.data());
  return 0;
}

namespace {

/// bench: the expanded form on the same step: the expanded attention kernel
/// over keys and values already expanded per head (a plain MHA cache, D =
/// dn + dr, Dv = dv: the expansion's own 2·r·H·(dn + dv) per token not
/// counted; the caller has judged that they fit).
double expandedFormMs(const attn_rt_kind &kind, int64_t b, int64_t sq,
                      int64_t skv, std::vector<int64_t> &lens, int64_t repeats,
                      std::mt19937 &rng) {
  int64_t h = kind.num_heads;
  auto eq = randomVec(rng, b * h * sq * kind.head_dim, 1);
  auto ek = randomVec(rng, b * h * skv * kind.head_dim, 1);
  auto ev = randomVec(rng, b * h * skv * kind.head_dim_v, 1);
  Buf<float> eout;
  std::vector<int64_t> eqs = {b, h, sq, kind.head_dim},
                       eks = {b, h, skv, kind.head_dim},
                       evs = {b, h, skv, kind.head_dim_v};
  if (gCuda) {
    DeviceCall ecall(kind, eq, eqs, ek, eks, ev, evs, lens,
                     b * h * sq * kind.head_dim_v);
    double wallMs = 0;
    return deviceMedianMs(
        repeats, [&] { ecall.call(kind.fused, kind); }, wallMs);
  }
  HostCall ecall(kind, eq, eqs, ek, eks, ev, evs, lens, nullptr, eout);
  return medianMs(repeats, [&] { ecall.call(kind.fused, kind); });
}

} // namespace

void benchLatentKind(const attn_rt_kind &kind, int64_t b, int64_t sq,
                     int64_t skv, int64_t page, int64_t repeats, bool json,
                     bool first, bool expanded) {
  int64_t h = kind.num_heads, row = rowOf(kind), r = kind.kv_lora_rank;
  if (page > 0 && !kind.mla_paged)
    fail(std::string("bench --page-size: kind '") + kind.name +
         "' was compiled without its paged kernel (attn-compile --entries "
         "without paged)");
  int64_t eb = kvElementBytes(kind);
  double cacheBytes = double(b) * skv * row * eb;
  if (cacheBytes + 4.0 * b * h * sq * (row + r) > double(memoryBudget()))
    fail("bench: a latent cache of " + std::to_string(skv) + " tokens x "
         "batch " + std::to_string(b) + " does not fit in this machine's "
         "memory");
  std::mt19937 rng(7);
  std::vector<int64_t> qs = {b, h, sq, row}, cs = {b, skv, row};
  auto q = randomVec(rng, b * h * sq * row, 1);
  auto cache = randomVec(rng, b * skv * row, 1);
  std::vector<int64_t> lens(b, skv);
  Buf<float> out, noCache;
  // (Paged: the contiguous cache is only the pool's source, neither
  // narrowed nor copied to the device for the call.)
  std::vector<int64_t> callCs = page > 0 ? std::vector<int64_t>{b, 0, row} : cs;
  MlaCall call(kind, q, qs, page > 0 ? noCache : cache, callCs, lens, out);
  // Paged: the same rows in pages of `page`, shuffled over the pool.
  int64_t perSeq = page > 0 ? (skv + page - 1) / page : 0;
  std::vector<int32_t> table(b * perSeq);
  Buf<float> pool32;
  Buf<uint16_t> pool16;
  attn_rt_memref_f32_3 dpool{};
  attn_rt_memref_i32_2 dt{};
  if (page > 0) {
    int64_t pages = b * perSeq;
    for (int64_t p = 0; p < pages; ++p)
      table[p] = int32_t(p);
    std::shuffle(table.begin(), table.end(), std::mt19937(11));
    pool32.resize(pages * page * row);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t j = 0; j < skv; ++j)
        std::copy_n(&cache[(bi * skv + j) * row], row,
                    &pool32[(table[bi * perSeq + j / page] * page + j % page) *
                            row]);
    float *pp = pool32.data();
    if (eb == 2) {
      pool16 = narrowToKV(kind, pool32);
      pool32 = Buf<float>();
      pp = reinterpret_cast<float *>(pool16.data());
    }
    dpool = view3(pp, {pages, page, row});
    dt = {table.data(), table.data(), 0, {b, perSeq}, {perSeq, 1}};
  }
  // On the GPU the pool and table on the device once (as the cache, in
  // `call`); CUDA events time the calls.
  OnDevice pagedDev;
  pagedDev.in(dpool, eb);
  pagedDev.in(dt, 4);
  auto step = [&] {
    if (page > 0)
      kind.mla_paged(&call.dout, &call.dq, &dpool, &dt, &call.dl);
    else // the kernel alone (no widening of a 16-bit output)
      kind.mla(&call.dout, &call.dq, &call.dc, &call.dl);
  };
  double wallMs = 0;
  double ms =
      gCuda ? deviceMedianMs(repeats, step, wallMs) : medianMs(repeats, step);
  // FLOPs of the absorbed attention: 2·(row + r) per visible (query, key)
  // pair and head (bottom-right causal: row i sees skv - sq + i + 1 keys).
  double pairs = 0;
  for (int64_t i = 0; i < sq; ++i)
    pairs += double(std::max<int64_t>(0, std::min(skv, skv - sq + i + 1)));
  double flops = 2.0 * b * h * pairs * double(row + r);
  double expMs = page > 0 || !expanded
                     ? NAN
                     : expandedFormMs(kind, b, sq, skv, lens, repeats, rng);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double rssMb = ru.ru_maxrss / 1024.0;
  auto num = [](double v) {
    char buf[32];
    if (std::isnan(v))
      return std::string("null");
    std::snprintf(buf, sizeof(buf), "%.4f", v);
    return std::string(buf);
  };
  // On the GPU: the device, the wall-clock time, and the figures as % of
  // the dense bf16 tensor peak and of the copy bandwidth (the cache read
  // once: what bounds decode).
  std::string gpu, gpuText;
  if (gCuda) {
    double pctTensor = 100 * flops / ms / 1e9 / gDevice.tensorTflops;
    double pctCopy = 100 * cacheBytes / ms / 1e6 / gDevice.copyGbps;
    char text[160];
    std::snprintf(text, sizeof(text),
                  ", %.1f%% of the dense bf16 tensor peak, %.1f%% of the "
                  "copy bandwidth",
                  pctTensor, pctCopy);
    gpuText = text;
    char buf[512];
    std::snprintf(
        buf, sizeof(buf),
        ", \"device\": \"%s\", \"wall_ms\": %.4f, "
        "\"pct_bf16_tensor_peak\": %.2f, \"pct_copy_bandwidth\": %.2f",
        gDevice.name.c_str(), wallMs, pctTensor, pctCopy);
    gpu = buf;
  }
  if (json)
    std::printf("%s\n  {\"kind\": \"%s\", \"form\": \"absorbed\", "
                "\"kv_dtype\": \"%s\", \"qo_dtype\": \"%s\", \"page_size\": "
                "%lld, \"batch\": %lld, "
                "\"seq\": %lld, \"kv_len\": %lld, \"threads\": %d, "
                "\"flops\": %.0f, \"fused_ms\": %.4f, \"fused_gflops\": %.3f, "
                "\"cache_gbps\": %.3f, \"expanded_ms\": %s, "
                "\"peak_rss_mb\": %.1f%s}",
                first ? "" : ",", kind.name, kvDtypeName(kind),
                qoDtypeName(kind), (long long)page, (long long)b, (long long)sq,
                (long long)skv, ompThreads(), flops, ms, flops / ms / 1e6,
                cacheBytes / ms / 1e6, num(expMs).c_str(), rssMb, gpu.c_str());
  else
    std::printf("%-30s B=%lld Sq=%lld Skv=%lld threads=%d absorbed, %s latent "
                "cache%s: %9.3f ms %8.2f GFLOP/s, cache read %.1f GB/s%s | "
                "%s | peak RSS %.1f MB\n",
                kind.name, (long long)b, (long long)sq, (long long)skv,
                ompThreads(), kvDtypeName(kind),
                page > 0 ? (" in pages of " + std::to_string(page)).c_str()
                         : "",
                ms, flops / ms / 1e6, cacheBytes / ms / 1e6, gpuText.c_str(),
                std::isnan(expMs) ? "expanded form not timed"
                                  : ("expanded form over an MHA cache " +
                                     num(expMs) + " ms, x" + num(expMs / ms))
                                        .c_str(),
                rssMb);
}

} // namespace cli
} // namespace attn_rt
