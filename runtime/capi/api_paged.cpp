//===- api_paged.cpp - the C API over a paged KV cache ---------------------===//
//
// attn_decode_paged, attn_decode_paged_part and attn_append_kv (attn.h):
// every argument checked against the kind (capi_internal.h) before the
// kind's paged kernel runs over the caller's pools and block table.
//
//===----------------------------------------------------------------------===//

#include "capi_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <tuple>
#include <vector>

using namespace attn_rt::capi;
using attn_rt::guardCall;

namespace {

/// A pool's descriptor with the caller's strides (checked by
/// TensorCheck::pool: rows contiguous, elements apart). A bf16/f16 pool's
/// holds the same addresses and counts 2-byte elements.
attn_rt_memref_f32_4 poolView(const attn_tensor &t) {
  attn_rt_memref_f32_4 d = attn_rt::view4(f32(t), t.shape);
  for (int i = 0; i < 4; ++i)
    if (t.shape[i] > 1)
      d.strides[i] = t.strides[i];
  return d;
}

} // namespace

extern "C" {

/// attn_decode_paged and, with `q_pos` and `stats` (and `range_start`),
/// attn_decode_paged_part.
attn_status decodePaged(const attn_model *model, int32_t kind,
                               const char *call, const attn_tensor *q,
                               const attn_tensor *k_cache,
                               const attn_tensor *v_cache,
                               const attn_tensor *block_table,
                               const int64_t *kv_lengths,
                               const int64_t *q_pos,
                               const int64_t *range_start, attn_tensor *out,
                               attn_tensor *stats) {
  const attn_rt_kind *kd = nullptr;
  bool part = stats != nullptr || q_pos != nullptr;
  if (attn_status s = getKind(model, kind, call, ATTN_RT_OP_SDPA, kd))
    return s;
  if (!kd->paged && kd->kv_lora_rank > 0)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind '" + kd->name +
                        "' is multi-head latent attention, whose paged cache "
                        "holds latent rows: use attn_decode_latent");
  if (!kd->paged)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind '" + kd->name +
                        "' has no paged kernel (T5's relative bias, a GPU "
                        "library, or one compiled with --entries without "
                        "paged)");
  if (part && !kd->paged_part)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind '" + kd->name +
                        "' has no partial paged kernel: compile the model "
                        "with attn-compile --distributed=mpi");
  // The partial kernel takes one rank's share of the heads
  // (--tensor-parallel).
  int64_t tp = part && kd->tensor_parallel > 1 ? kd->tensor_parallel : 1;
  int64_t hq = kd->num_heads / tp, hkv = kd->num_kv_heads / tp;
  TensorCheck check{
      call, kd, describeKind,
      tp > 1 ? ", each rank its " + std::to_string(hq) + " query and " +
                   std::to_string(hkv) +
                   " KV heads (--tensor-parallel=" + std::to_string(tp) + ")"
             : std::string()};
  attn_dtype qo = qoDtype(*kd);
  if (!checkQODtype(check, *kd, {{q, "q"}, {out, "out"}}) ||
      !check(q, "q", {-1, hq, -1, kd->head_dim}, {"B", "", "Sq", ""}, qo))
    return check.status;
  int64_t b = q->shape[0], sq = q->shape[2], pages, pageSize, maxPages;
  if (!checkPaged(check, kd, k_cache, v_cache, block_table, b, pages, pageSize,
                  maxPages, hkv) ||
      !check(out, "out", {b, hq, sq, kd->head_dim_v}, {}, qo) ||
      (part && !check(stats, "stats", {b, hq, sq, 2}, {})))
    return check.status;
  if (attn_status s =
          checkPagedDecode(check, kv_lengths, q_pos, part, *out, stats,
                           {{q, "q"},
                            {k_cache, "k_cache"},
                            {v_cache, "v_cache"},
                            {block_table, "block_table"}},
                           block_table, b, pages, pageSize))
    return s;
  // Only the chunked mask depends on where the range starts in its
  // sequence: without range_start its chunks would be cut at the range's
  // own positions, silently wrong on every range but the first.
  if (part && !range_start && kd->chunk > 0 && b > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": kind '" + kd->name +
                        "' has chunked attention (chunks of " +
                        std::to_string(kd->chunk) +
                        " tokens) and range_start is NULL; pass each "
                        "sequence's position of the range's first key");
  if (numelOf(*out) == 0)
    return ATTN_OK;
  using attn_rt::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), out->shape),
                       dq = view4(f32(*q), q->shape), dk = poolView(*k_cache),
                       dv = poolView(*v_cache);
  auto *t = static_cast<int32_t *>(block_table->data);
  attn_rt_memref_i32_2 dt{t, t, 0, {b, maxPages}, {maxPages, 1}};
  // The lengths and positions read once, before anything is written (into
  // this thread's reused buffers).
  int64_t *lens = attn_rt::callScratchI64(0, size_t(b));
  std::copy(kv_lengths, kv_lengths + b, lens);
  int64_t *pos = nullptr, *start = nullptr;
  if (part) {
    pos = attn_rt::callScratchI64(1, size_t(b));
    start = attn_rt::callScratchI64(2, size_t(b));
    std::copy(q_pos, q_pos + b, pos);
    if (range_start)
      std::copy(range_start, range_start + b, start);
    else
      std::fill(start, start + b, int64_t(0));
  }
  attn_rt_memref_i64_1 dl{lens, lens, 0, {b}, {1}};
  // The whole-cache call counts the kind's sinks; a partial one none
  // (they are folded in once, after the ranges merge).
  const float *sinks = nullptr;
  if (kd->has_sinks && !part)
    if (attn_status s = kindSinks(model, kind, *kd, call, hq, sinks))
      return s;
  if (!part && sinks) {
    auto *sp = const_cast<float *>(sinks);
    attn_rt_memref_f32_1 dsk{sp, sp, 0, {hq}, {1}};
    reinterpret_cast<attn_rt_paged_sinks_fn>(
        reinterpret_cast<void (*)(void)>(kd->paged))(&dout, &dq, &dk, &dv,
                                                        &dt, &dl, &dsk);
    return ATTN_OK;
  }
  if (!part) {
    kd->paged(&dout, &dq, &dk, &dv, &dt, &dl);
    return ATTN_OK;
  }
  attn_rt_memref_f32_4 ds = view4(f32(*stats), stats->shape);
  attn_rt_memref_i64_1 dp{pos, pos, 0, {b}, {1}},
      dr{start, start, 0, {b}, {1}};
  if (kd->has_sinks) {
    float *none = attn_rt::callScratchF32(0, size_t(hq));
    std::fill(none, none + hq, -INFINITY);
    attn_rt_memref_f32_1 dn{none, none, 0, {hq}, {1}};
    reinterpret_cast<attn_rt_paged_part_sinks_fn>(
        reinterpret_cast<void (*)(void)>(kd->paged_part))(
        &dout, &ds, &dq, &dk, &dv, &dt, &dl, &dp, &dr, &dn);
    return ATTN_OK;
  }
  kd->paged_part(&dout, &ds, &dq, &dk, &dv, &dt, &dl, &dp, &dr);
  return ATTN_OK;
}

attn_status attn_decode_paged(const attn_model *model, int32_t kind,
                              const attn_tensor *q, const attn_tensor *k_cache,
                              const attn_tensor *v_cache,
                              const attn_tensor *block_table,
                              const int64_t *kv_lengths, attn_tensor *out) {
  return guardCall("attn_decode_paged", [&]() -> attn_status {
  return decodePaged(model, kind, "attn_decode_paged", q, k_cache, v_cache,
                     block_table, kv_lengths, nullptr, nullptr, out,
                     nullptr);
});
}

attn_status attn_decode_paged_part(const attn_model *model, int32_t kind,
                                   const attn_tensor *q,
                                   const attn_tensor *k_cache,
                                   const attn_tensor *v_cache,
                                   const attn_tensor *block_table,
                                   const int64_t *kv_lengths,
                                   const int64_t *q_pos,
                                   const int64_t *range_start,
                                   attn_tensor *out, attn_tensor *stats) {
  return guardCall("attn_decode_paged_part", [&]() -> attn_status {
  if (!stats)
    return failWith(ATTN_ERR_ARGUMENT,
                    "attn_decode_paged_part: stats is NULL; pass a [B, Hq, "
                    "Sq, 2] ATTN_F32 tensor for each row's (max, sum)");
  return decodePaged(model, kind, "attn_decode_paged_part", q, k_cache,
                     v_cache, block_table, kv_lengths, q_pos, range_start,
                     out, stats);
});
}

attn_status attn_append_kv(const attn_model *model, int32_t kind,
                           attn_tensor *k_cache, attn_tensor *v_cache,
                           const attn_tensor *block_table,
                           const int64_t *start, const int64_t *counts,
                           const attn_tensor *k_new,
                           const attn_tensor *v_new) {
  return guardCall("attn_append_kv", [&]() -> attn_status {
  const attn_rt_kind *kd = nullptr;
  if (attn_status s =
          getKind(model, kind, "attn_append_kv", ATTN_RT_OP_SDPA, kd))
    return s;
  TensorCheck check{"attn_append_kv", kd, describeKind};
  // New rows are stored as they come: of the cache's element type.
  attn_dtype dt = kvDtype(*kd);
  if (!check(k_new, "k_new", {-1, kd->num_kv_heads, -1, kd->head_dim},
             {"B", "", "n", ""}, dt))
    return check.status;
  int64_t b = k_new->shape[0], n = k_new->shape[2], pages, pageSize, maxPages;
  if (!check(v_new, "v_new", {b, kd->num_kv_heads, n, kd->head_dim_v}, {},
             dt) ||
      !checkPaged(check, kd, k_cache, v_cache, block_table, b, pages,
                  pageSize, maxPages))
    return check.status;
  if (!start && b > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    "attn_append_kv: start is NULL; pass each sequence's "
                    "position of its first new token");
  int64_t *end = attn_rt::callScratchI64(0, size_t(b));
  for (int64_t i = 0; i < b; ++i) {
    int64_t c = counts ? counts[i] : n;
    if (c < 0 || c > n)
      return failWith(ATTN_ERR_VALUE,
                        "attn_append_kv: counts[" + std::to_string(i) +
                            "] = " + std::to_string(c) + " is outside [0, n = " +
                            std::to_string(n) + "]");
    if (start[i] < 0 || start[i] > capacity(maxPages, pageSize) - c)
      return failWith(ATTN_ERR_VALUE,
                        "attn_append_kv: " + std::to_string(c) +
                            " tokens from start[" + std::to_string(i) +
                            "] = " + std::to_string(start[i]) +
                            " of sequence " + std::to_string(i) +
                            " do not fit in its max_pages * page_size = " +
                            std::to_string(capacity(maxPages, pageSize)) +
                            " tokens");
    end[i] = start[i] + c;
  }
  for (auto [cache, name] :
       {std::pair<attn_tensor *, const char *>{k_cache, "k_cache"},
        {v_cache, "v_cache"}})
    if (!noOverlap(check, *cache, name,
                   {{k_new, "k_new"}, {v_new, "v_new"},
                    {block_table, "block_table"}}))
      return check.status;
  if (!poolsApart(*k_cache, *v_cache))
    return failWith(ATTN_ERR_LAYOUT,
                    "attn_append_kv: k_cache overlaps v_cache (pools that "
                    "interleave must have the same shape and strides, and "
                    "share no element)");
  if (!checkPagesUsed(check, block_table, start, end, b, pages, pageSize))
    return check.status;
  const int32_t *table = static_cast<const int32_t *>(block_table->data);
  int64_t hkv = kd->num_kv_heads;
  int64_t eb = elementBytes(dt);
  // The starts read once, before the caches are written (a cache that
  // overlaps the caller's array cannot move them).
  int64_t *first = attn_rt::callScratchI64(1, size_t(b));
  std::copy(start, start + b, first);
  for (auto [cache, src, d] :
       {std::tuple<attn_tensor *, const attn_tensor *, int64_t>{
            k_cache, k_new, kd->head_dim},
        {v_cache, v_new, kd->head_dim_v}}) {
    char *pool = static_cast<char *>(cache->data);
    const char *in = static_cast<const char *>(src->data);
    // The pool's strides (rows contiguous, checked), in bytes.
    const int64_t *st = cache->strides;
    for (int64_t i = 0; i < b; ++i)
      for (int64_t h = 0; h < hkv; ++h)
        for (int64_t t = 0; t < end[i] - first[i]; ++t) {
          int64_t pos = first[i] + t;
          int64_t page = table[i * maxPages + pos / pageSize];
          std::memcpy(
              pool + (page * st[0] + h * st[1] + pos % pageSize * st[2]) * eb,
              in + ((i * hkv + h) * n + t) * d * eb, d * eb);
        }
  }
  return ATTN_OK;
});
}

} // extern "C"
