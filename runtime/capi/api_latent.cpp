//===- api_latent.cpp - the C API over a paged latent cache ---------------===//
//
// attn_decode_latent, attn_decode_latent_part and attn_append_latent
// (attn.h): multi-head latent attention's absorbed decode over a paged
// cache of latent rows, every argument checked first.
//
//===----------------------------------------------------------------------===//

#include "capi_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

using namespace attn_rt::capi;
using attn_rt::guardCall;

extern "C" {

/// A latent kind (kv_lora_rank > 0) with its absorbed paged kernel.
static attn_status getLatentKind(const attn_model *model, int32_t kind,
                                 const char *call, const attn_rt_kind *&kd) {
  if (attn_status s = getKind(model, kind, call, ATTN_RT_OP_SDPA, kd))
    return s;
  if (kd->kv_lora_rank <= 0)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind '" + kd->name +
                        "' is not multi-head latent attention (its "
                        "latent_rank is 0): use attn_decode_paged");
  if (!kd->mla_paged)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind '" + kd->name +
                        "' has no paged latent kernel (compiled with "
                        "--entries without paged)");
  return ATTN_OK;
}

static std::string describeLatent(const attn_rt_kind &k) {
  return std::string(" for kind '") + k.name + "' (H=" +
         std::to_string(k.num_heads) + ", latent rank " +
         std::to_string(k.kv_lora_rank) + " + rope " +
         std::to_string(k.rope_head_dim) + ")";
}

/// attn_decode_latent and, with `qPos` and `stats`, attn_decode_latent_part.
static attn_status decodeLatent(const attn_model *model, int32_t kind,
                                const char *call, const attn_tensor *q,
                                const attn_tensor *latent_cache,
                                const attn_tensor *block_table,
                                const int64_t *kv_lengths,
                                const int64_t *qPos, attn_tensor *out,
                                attn_tensor *stats) {
  const attn_rt_kind *kd = nullptr;
  bool part = stats != nullptr;
  if (attn_status s = getLatentKind(model, kind, call, kd))
    return s;
  if (part && !kd->mla_paged_part)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind '" + kd->name +
                        "' has no partial latent kernel: compile the model "
                        "with attn-compile --distributed=mpi");
  int64_t h = kd->num_heads, r = kd->kv_lora_rank,
          row = kd->kv_lora_rank + kd->rope_head_dim;
  TensorCheck check{call, kd, describeLatent};
  // q and out of the kind's --qo-dtype (f32 in a library with the partial
  // entries: attn-compile refuses --qo-dtype with --distributed=mpi).
  attn_dtype qo = qoDtype(*kd);
  if (!checkQODtype(check, *kd, {{q, "q"}, {out, "out"}}) ||
      !check(q, "q", {-1, h, -1, row}, {"B", "", "Sq", ""}, qo))
    return check.status;
  int64_t b = q->shape[0], sq = q->shape[2];
  if (!checkKVDtype(check, *kd, {{latent_cache, "latent_cache"}}) ||
      !check(latent_cache, "latent_cache", {-1, -1, row},
             {"num_pages", "page_size", ""}, kvDtype(*kd)))
    return check.status;
  int64_t pages = latent_cache->shape[0], pageSize = latent_cache->shape[1];
  if (pageSize == 0)
    return failWith(ATTN_ERR_SHAPE,
                    std::string(call) + ": latent_cache has page_size 0");
  if (!check(block_table, "block_table", {b, -1}, {"", "max_pages"},
             ATTN_I32) ||
      !check(out, "out", {b, h, sq, r}, {}, qo) ||
      (part && !check(stats, "stats", {b, h, sq, 2}, {})))
    return check.status;
  int64_t maxPages = block_table->shape[1];
  if (attn_status s =
          checkPagedDecode(check, kv_lengths, qPos, part, *out, stats,
                           {{q, "q"},
                            {latent_cache, "latent_cache"},
                            {block_table, "block_table"}},
                           block_table, b, pages, pageSize))
    return s;
  // The lengths and positions, read once: the kernel reads these copies
  // (this thread's reused buffers), so an output that shares their memory
  // cannot change them under it.
  int64_t *lens = attn_rt::callScratchI64(0, size_t(b));
  std::copy(kv_lengths, kv_lengths + b, lens);
  int64_t *pos = attn_rt::callScratchI64(1, size_t(b));
  if (part)
    std::copy(qPos, qPos + b, pos);
  if (numelOf(*out) == 0)
    return ATTN_OK;
  using attn_rt::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), out->shape),
                       dq = view4(f32(*q), q->shape);
  attn_rt_memref_f32_3 dc =
      attn_rt::view3(f32(*latent_cache), latent_cache->shape);
  auto *t = static_cast<int32_t *>(block_table->data);
  attn_rt_memref_i32_2 dt{t, t, 0, {b, maxPages}, {maxPages, 1}};
  attn_rt_memref_i64_1 dl{lens, lens, 0, {b}, {1}};
  if (!part) {
    kd->mla_paged(&dout, &dq, &dc, &dt, &dl);
    return ATTN_OK;
  }
  attn_rt_memref_f32_4 ds = view4(f32(*stats), stats->shape);
  attn_rt_memref_i64_1 dp{pos, pos, 0, {b}, {1}};
  kd->mla_paged_part(&dout, &ds, &dq, &dc, &dt, &dl, &dp);
  return ATTN_OK;
}

attn_status attn_decode_latent(const attn_model *model, int32_t kind,
                               const attn_tensor *q,
                               const attn_tensor *latent_cache,
                               const attn_tensor *block_table,
                               const int64_t *kv_lengths, attn_tensor *out) {
  return guardCall("attn_decode_latent", [&]() -> attn_status {
  return decodeLatent(model, kind, "attn_decode_latent", q, latent_cache,
                      block_table, kv_lengths, nullptr, out, nullptr);
});
}

attn_status attn_decode_latent_part(const attn_model *model, int32_t kind,
                                    const attn_tensor *q,
                                    const attn_tensor *latent_cache,
                                    const attn_tensor *block_table,
                                    const int64_t *kv_lengths,
                                    const int64_t *q_pos, attn_tensor *out,
                                    attn_tensor *stats) {
  return guardCall("attn_decode_latent_part", [&]() -> attn_status {
  if (!stats)
    return failWith(ATTN_ERR_ARGUMENT,
                    "attn_decode_latent_part: stats is NULL; pass a [B, H, "
                    "Sq, 2] ATTN_F32 tensor for each row's (max, sum)");
  return decodeLatent(model, kind, "attn_decode_latent_part", q,
                      latent_cache, block_table, kv_lengths, q_pos, out,
                      stats);
});
}

attn_status attn_append_latent(const attn_model *model, int32_t kind,
                               attn_tensor *latent_cache,
                               const attn_tensor *block_table,
                               const int64_t *start, const int64_t *counts,
                               const attn_tensor *rows_new) {
  return guardCall("attn_append_latent", [&]() -> attn_status {
  const char *call = "attn_append_latent";
  const attn_rt_kind *kd = nullptr;
  if (attn_status s = getLatentKind(model, kind, call, kd))
    return s;
  int64_t row = kd->kv_lora_rank + kd->rope_head_dim;
  TensorCheck check{call, kd, describeLatent};
  attn_dtype dt = kvDtype(*kd);
  if (!checkKVDtype(check, *kd,
                    {{latent_cache, "latent_cache"}, {rows_new, "rows_new"}}) ||
      !check(rows_new, "rows_new", {-1, -1, row}, {"B", "n", ""}, dt) ||
      !check(latent_cache, "latent_cache", {-1, -1, row},
             {"num_pages", "page_size", ""}, dt))
    return check.status;
  int64_t b = rows_new->shape[0], n = rows_new->shape[1],
          pages = latent_cache->shape[0], pageSize = latent_cache->shape[1];
  if (pageSize == 0)
    return failWith(ATTN_ERR_SHAPE,
                    std::string(call) + ": latent_cache has page_size 0");
  if (!check(block_table, "block_table", {b, -1}, {"", "max_pages"},
             ATTN_I32))
    return check.status;
  int64_t maxPages = block_table->shape[1];
  if (!start && b > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": start is NULL; pass each "
                                        "sequence's position of its first "
                                        "new token");
  // start and counts read once, before the cache is written.
  int64_t *first = attn_rt::callScratchI64(0, size_t(b));
  int64_t *end = attn_rt::callScratchI64(1, size_t(b));
  std::copy(start, start + b, first);
  for (int64_t i = 0; i < b; ++i) {
    int64_t c = counts ? counts[i] : n;
    if (c < 0 || c > n)
      return failWith(ATTN_ERR_VALUE,
                      std::string(call) + ": counts[" + std::to_string(i) +
                          "] = " + std::to_string(c) + " is outside [0, n = " +
                          std::to_string(n) + "]");
    if (first[i] < 0 || first[i] > capacity(maxPages, pageSize) - c)
      return failWith(ATTN_ERR_VALUE,
                      std::string(call) + ": tokens [" +
                          std::to_string(first[i]) + ", " +
                          std::to_string(first[i] + c) + ") of sequence " +
                          std::to_string(i) +
                          " do not fit in its max_pages * page_size = " +
                          std::to_string(capacity(maxPages, pageSize)) +
                          " tokens");
    end[i] = first[i] + c;
  }
  if (!noOverlap(check, *latent_cache, "latent_cache",
                 {{rows_new, "rows_new"}, {block_table, "block_table"}}) ||
      !checkPagesUsed(check, block_table, first, end, b, pages, pageSize))
    return check.status;
  const int32_t *table = static_cast<const int32_t *>(block_table->data);
  int64_t eb = elementBytes(dt);
  char *pool = static_cast<char *>(latent_cache->data);
  const char *in = static_cast<const char *>(rows_new->data);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < end[i] - first[i]; ++t) {
      int64_t pos = first[i] + t;
      int64_t page = table[i * maxPages + pos / pageSize];
      std::memcpy(pool + (page * pageSize + pos % pageSize) * row * eb,
                  in + (i * n + t) * row * eb, row * eb);
    }
  return ATTN_OK;
});
}

} // extern "C"
