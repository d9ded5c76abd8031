//===- check.cpp - the `check` command of compiled executables ------------===//
//
// This file implements `check`: every kind's fused kernel against its
// compiled reference (or the float64 one) over odd shapes, NaN inputs, the
// paged kernel over shuffled pools of each layout, and the linear and
// latent kinds' checks (linear.cpp, latent.cpp).
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"
#include "cli.h"
#include "narrow.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace attn_rt;
using namespace attn_rt::cli;

namespace {

/// check: the kind's paged kernel (<kind>_paged) against the float64
/// reference on the same rounded K/V laid out contiguously. Each sequence's
/// pages sit at shuffled places of a pool that also holds pages no sequence
/// lists (random values: a read of the wrong page shows); lengths 0, 1,
/// P - 1, P, P + 1 and longer, one query row (decode) and several
/// (speculative decoding, chunked prefill: bottom-right causal, rows before
/// the first key 0). On the CPU each case runs over pools of each layout
/// bench --pool-layout takes (HND, vLLM's NHD, head-major: the kernels
/// read the pools' strides); on the GPU over HND pools, device buffers
/// like the table and lengths.
bool checkPagedKind(const attn_rt_kind &kind, std::mt19937 &rng) {
  struct Case {
    int64_t page, sq;
    std::vector<int64_t> lens;
  };
  std::vector<Case> cases = {{16, 1, {15, 17, 0, 1}},
                             {16, 4, {16, 33, 3}},
                             {5, 1, {1, 5, 6, 70}},
                             {16, 1, {1000}},
                             {64, 7, {200, 64}}};
  // On the GPU, caches long enough for split-K (parts of at least 512
  // keys of the table's capacity): a sequence of 1 key beside one of
  // 3,000 (parts that see no key), several rows.
  if (gCuda)
    cases.insert(cases.end(), {{16, 1, {3000, 1}}, {64, 3, {2600, 700}}});
  bool allOk = true, narrow = kind.kv_dtype != ATTN_RT_KV_F32;
  int64_t hq = kind.num_heads, hkv = kind.num_kv_heads, d = kind.head_dim,
          dv = kind.head_dim_v;
  std::vector<std::string> layouts = {"hnd"};
  if (!gCuda)
    layouts = {"hnd", "nhd", "head-major"};
  for (const Case &c : cases) {
    int64_t b = int64_t(c.lens.size()), page = c.page, sq = c.sq;
    int64_t maxLen =
        std::max<int64_t>(1, *std::max_element(c.lens.begin(), c.lens.end()));
    int64_t perSeq = (maxLen + page - 1) / page, pages = b * perSeq + 3;
    std::vector<int64_t> qs = {b, hq, sq, d}, ks = {b, hkv, maxLen, d},
                         vs = {b, hkv, maxLen, dv};
    auto q = randomVec(rng, b * hq * sq * d, 1);
    auto k = randomVec(rng, b * hkv * maxLen * d, 1);
    auto v = randomVec(rng, b * hkv * maxLen * dv, 1);
    roundToKV(kind, k);
    roundToKV(kind, v);
    roundToQO(kind, q);
    std::vector<int32_t> table = shuffledTable(rng, pages, b * perSeq);
    // The pools' other elements: random (rounded) values, the same for
    // every layout.
    auto kNoise = randomVec(rng, pages * hkv * page * d, 1);
    auto vNoise = randomVec(rng, pages * hkv * page * dv, 1);
    roundToKV(kind, kNoise);
    roundToKV(kind, vNoise);
    std::vector<int64_t> lens = c.lens;
    Buf<float> sinks =
        kind.has_sinks ? randomExtraInput(kind, rng) : Buf<float>();
    // The reference, once per case: row i of sequence b sits at key
    // position lens[b] - sq + i.
    Buf<float> ref;
    std::vector<int64_t> qStart(b);
    for (int64_t bi = 0; bi < b; ++bi)
      qStart[bi] = c.lens[bi] - sq;
    referenceF64(kind, q, qs, k, ks, v, vs, c.lens, kind.scale, kind.softcap,
                 ref, &qStart, kind.has_sinks ? &sinks : nullptr);
    // --qo-dtype: q and the output in 16 bits (the descriptors' untyped
    // pointers).
    bool narrowQ = qoNarrow(kind);
    Buf<uint16_t> q16 = narrowQ ? narrowToQO(kind, q) : Buf<uint16_t>();
    int64_t qb = narrowQ ? 2 : 4;
    void *qHost = narrowQ ? (void *)q16.data() : (void *)q.data();
    std::string lensText;
    for (int64_t l : c.lens)
      lensText += (lensText.empty() ? "" : ",") + std::to_string(l);
    for (const std::string &layout : layouts) {
      // Pools [pages, Hkv, P, D] with the layout's strides: the noise, then
      // each sequence's rows where its table puts them.
      auto kStrides = poolStrides(layout, pages, hkv, page, d),
           vStrides = poolStrides(layout, pages, hkv, page, dv);
      Buf<float> kPool(kNoise.size()), vPool(vNoise.size());
      std::copy(kNoise.begin(), kNoise.end(), kPool.begin());
      std::copy(vNoise.begin(), vNoise.end(), vPool.begin());
      auto at = [&](const std::array<int64_t, 4> &st, int64_t pg, int64_t h,
                    int64_t row) {
        return pg * st[0] + h * st[1] + row * st[2];
      };
      for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t h = 0; h < hkv; ++h)
          for (int64_t j = 0; j < c.lens[bi]; ++j) {
            int64_t pg = table[bi * perSeq + j / page];
            std::copy_n(&k[((bi * hkv + h) * maxLen + j) * d], d,
                        &kPool[at(kStrides, pg, h, j % page)]);
            std::copy_n(&v[((bi * hkv + h) * maxLen + j) * dv], dv,
                        &vPool[at(vStrides, pg, h, j % page)]);
          }
      Buf<uint16_t> k16, v16;
      if (narrow) {
        k16 = narrowToKV(kind, kPool);
        v16 = narrowToKV(kind, vPool);
      }
      int64_t eb = narrow ? 2 : 4;
      void *kHost = narrow ? (void *)k16.data() : (void *)kPool.data();
      void *vHost = narrow ? (void *)v16.data() : (void *)vPool.data();
      Buf<float> out(b * hq * sq * dv);
      Buf<uint16_t> out16(narrowQ ? out.size() : 0);
      void *outHost = narrowQ ? (void *)out16.data() : (void *)out.data();
      std::vector<int64_t> os = {b, hq, sq, dv}, kps = {pages, hkv, page, d},
                           vps = {pages, hkv, page, dv};
      auto call = [&](void *po, void *pq, void *pk, void *pv, int32_t *pt,
                      int64_t *pl) {
        attn_rt_memref_f32_4 dout = view4(static_cast<float *>(po), os),
                             dq = view4(static_cast<float *>(pq), qs),
                             dk = view4(static_cast<float *>(pk), kps),
                             dvv = view4(static_cast<float *>(pv), vps);
        std::copy(kStrides.begin(), kStrides.end(), dk.strides);
        std::copy(vStrides.begin(), vStrides.end(), dvv.strides);
        attn_rt_memref_i32_2 dt{pt, pt, 0, {b, perSeq}, {perSeq, 1}};
        attn_rt_memref_i64_1 dl{pl, pl, 0, {b}, {1}};
        if (kind.has_sinks) {
          attn_rt_memref_f32_1 ds{sinks.data(), sinks.data(), 0, {hq}, {1}};
          reinterpret_cast<attn_rt_paged_sinks_fn>(
              reinterpret_cast<void (*)(void)>(kind.paged))(
              &dout, &dq, &dk, &dvv, &dt, &dl, &ds);
        } else {
          kind.paged(&dout, &dq, &dk, &dvv, &dt, &dl);
        }
      };
      if (gCuda) {
        DeviceBuffer gOut(nullptr, qb * int64_t(out.size())),
            gq(qHost, qb * int64_t(q.size())),
            gk(kHost, eb * int64_t(kPool.size())),
            gv(vHost, eb * int64_t(vPool.size())),
            gt(table.data(), 4 * int64_t(table.size())), gl(lens.data(), 8 * b);
        call(gOut.ptr, gq.ptr, gk.ptr, gv.ptr, static_cast<int32_t *>(gt.ptr),
             static_cast<int64_t *>(gl.ptr));
        attn_rt_cuda_to_host(outHost, gOut.ptr, gOut.bytes);
      } else {
        call(outHost, qHost, kHost, vHost, table.data(), lens.data());
      }
      if (narrowQ)
        widenFromQO(kind, out16, out);
      MaxError err;
      err.add(out, ref);
      bool ok = err.ok(kind.tolerance);
      allOk = allOk && ok;
      std::printf("%-4s %-32s paged page=%-3lld B=%lld Sq=%lld lens=%s "
                  "max_abs_err=%.3e max_rel_err=%.3e%s\n",
                  ok ? "ok" : "FAIL", kind.name, (long long)page, (long long)b,
                  (long long)sq, lensText.c_str(), err.maxAbs, err.rel(),
                  layout == "hnd" ? "" : (" pool=" + layout).c_str());
    }
  }
  return allOk;
}

/// The kind's fused kernel and its reference (the compiled one, else the
/// float64 one) on q, K and V of shapes qs, ks, vs: every sequence with
/// all its keys but the second, which has half (key padding); a random
/// bias table or sinks where the kind takes them.
void fusedAndReference(const attn_rt_kind &kind, std::mt19937 &rng,
                       Buf<float> &q, const std::vector<int64_t> &qs,
                       Buf<float> &k, const std::vector<int64_t> &ks,
                       Buf<float> &v, const std::vector<int64_t> &vs,
                       Buf<float> &fused, Buf<float> &ref) {
  int64_t b = qs[0], skv = ks[2];
  std::vector<int64_t> lens(b, skv);
  if (b > 1)
    lens[1] = skv / 2;
  auto table = randomExtraInput(kind, rng);
  run(kind.fused, kind, q, qs, k, ks, v, vs, lens, &table, fused);
  if (kind.reference)
    run(kind.reference, kind, q, qs, k, ks, v, vs, lens, &table, ref);
  else
    referenceF64(kind, q, qs, k, ks, v, vs, lens, kind.scale, kind.softcap, ref,
                 nullptr, kind.has_sinks ? &table : nullptr);
}

/// check: NaN inputs. A NaN in q or K makes NaN every output row whose
/// scores it enters (the query's row; each row of the key's group that can
/// see the key), as PyTorch's attention does, and leaves every other row
/// as without it: the fused kernel's NaNs must be the float64 reference's,
/// its other values within the tolerance. Decode (one row), a prefill of
/// 33 rows, two sequences with key padding. (A NaN in V reaches the rows
/// that weight its key, and may reach rows of the same block that mask
/// it, 0 · NaN: not checked.)
bool checkNanInputs(const attn_rt_kind &kind, std::mt19937 &rng) {
  struct Shape {
    int64_t b, sq, skv;
  };
  bool allOk = true;
  int64_t hq = kind.num_heads, hkv = kind.num_kv_heads, d = kind.head_dim,
          dv = kind.head_dim_v;
  for (Shape s : {Shape{1, 1, 70}, Shape{1, 33, 33}, Shape{2, 17, 40}}) {
    std::vector<int64_t> qs = {s.b, hq, s.sq, d}, ks = {s.b, hkv, s.skv, d},
                         vs = {s.b, hkv, s.skv, dv};
    auto q = randomVec(rng, s.b * hq * s.sq * d, 1);
    auto k = randomVec(rng, s.b * hkv * s.skv * d, 1);
    auto v = randomVec(rng, s.b * hkv * s.skv * dv, 1);
    roundToKV(kind, k);
    roundToKV(kind, v);
    roundToQO(kind, q);
    // One element of q (head 0, the last row) and of K (the last KV head,
    // the key a third of the way in) NaN.
    q[(s.sq - 1) * d + d / 2] = NAN;
    k[((hkv - 1) * s.skv + s.skv / 3) * d + 1] = NAN;
    Buf<float> fused, ref;
    fusedAndReference(kind, rng, q, qs, k, ks, v, vs, fused, ref);
    int64_t nans = 0, mismatched = 0;
    for (size_t j = 0; j < ref.size(); ++j) {
      bool a = std::isnan(fused[j]), r = std::isnan(ref[j]);
      nans += r;
      mismatched += a != r;
      if (a || r)
        fused[j] = ref[j] = 0;
    }
    MaxError err;
    err.add(fused, ref);
    bool ok = mismatched == 0 && nans > 0 && err.ok(kind.tolerance * 2);
    allOk = allOk && ok;
    std::printf("%-4s %-32s B=%lld Sq=%-3lld Skv=%-3lld nan-inputs nan_outputs"
                "=%lld mismatched=%lld max_abs_err=%.3e\n",
                ok ? "ok" : "FAIL", kind.name, (long long)s.b, (long long)s.sq,
                (long long)s.skv, (long long)nans, (long long)mismatched,
                err.maxAbs);
  }
  return allOk;
}

} // namespace

int attn_rt::cli::cmdCheck(const attn_rt_model *m, int argc, char **argv) {
  auto args = parseArgs(argc, argv, 2, {"seed"});
  std::mt19937 rng(uint32_t(intArg(args, "seed", 1, 0, 1ll << 31)));
  struct Shape {
    int64_t b, sq, skv;
  };
  requireDevice("check");
  std::vector<Shape> shapes = {{1, 1, 1},  {2, 3, 3},  {1, 17, 17},
                               {1, 5, 33}, {1, 33, 7}, {2, 70, 70}};
  // On the GPU also several thread blocks and key tiles, decode against a
  // long cache, and more rows than one block; split-K (grids of fewer than
  // 264 blocks, parts of at least 512 keys): decode against 4,099 keys, a
  // batch whose second sequence has half the keys, 7 causal rows.
  if (gCuda)
    shapes.insert(shapes.end(), {{1, 1, 1000},
                                 {2, 130, 130},
                                 {1, 300, 1000},
                                 {1, 1, 4099},
                                 {2, 1, 2500},
                                 {1, 7, 3000}});
  bool allOk = true;
  for (int64_t i = 0; i < m->num_kinds; ++i) {
    const attn_rt_kind &kind = m->kinds[i];
    if (kind.op == ATTN_RT_OP_GATED_DELTA) {
      allOk = checkLinearKind(kind, rng) && allOk;
      continue;
    }
    for (const Shape &s : shapes) {
      std::vector<int64_t> qs = {s.b, kind.num_heads, s.sq, kind.head_dim},
                           ks = {s.b, kind.num_kv_heads, s.skv, kind.head_dim},
                           vs = {s.b, kind.num_kv_heads, s.skv,
                                 kind.head_dim_v};
      auto q = randomVec(rng, s.b * kind.num_heads * s.sq * kind.head_dim, 1);
      auto k =
          randomVec(rng, s.b * kind.num_kv_heads * s.skv * kind.head_dim, 1);
      auto v =
          randomVec(rng, s.b * kind.num_kv_heads * s.skv * kind.head_dim_v, 1);
      // A bf16/f16 K/V kind reads its inputs rounded: so does the reference
      // (and q with --qo-dtype).
      roundToKV(kind, k);
      roundToKV(kind, v);
      roundToQO(kind, q);
      Buf<float> fused, ref;
      fusedAndReference(kind, rng, q, qs, k, ks, v, vs, fused, ref);
      MaxError err;
      err.add(fused, ref);
      // Two 16-bit outputs (--qo-dtype: the compiled reference rounds its
      // own) are one ulp apart at most: twice the bound against float64.
      bool ok =
          err.ok(kind.tolerance * (kind.reference && qoNarrow(kind) ? 2 : 1));
      allOk = allOk && ok;
      std::printf("%-4s %-32s B=%lld Sq=%-3lld Skv=%-3lld max_abs_err=%.3e "
                  "max_rel_err=%.3e\n",
                  ok ? "ok" : "FAIL", kind.name, (long long)s.b,
                  (long long)s.sq, (long long)s.skv, err.maxAbs, err.rel());
    }
    // (The CUDA kernels' NaN handling is not checked: not run on a GPU.)
    if (!gCuda)
      allOk = checkNanInputs(kind, rng) && allOk;
    if (kind.paged)
      allOk = checkPagedKind(kind, rng) && allOk;
    if (kind.mla)
      allOk = checkLatentKind(kind, rng) && allOk;
  }
  if (m->num_kinds == 0)
    std::printf("check: the model has no attention layer kinds to check\n");
  else
    std::printf("check: %s\n",
                allOk ? "all kernels match the reference" : "MISMATCH");
  return allOk ? 0 : 1;
}
