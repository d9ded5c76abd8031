//===- capi_checks.cpp - the C API's argument checks ----------------------===//
//
// What every C API call checks before any kernel runs (capi_internal.h):
// tensors against the kind (dtype, rank, shape, contiguity, extents),
// outputs against inputs (overlap), lengths, paged caches and the pages
// they use; the last error of each thread; and guardCall, which keeps
// every exception on this side of the C boundary.
//
//===----------------------------------------------------------------------===//

#include "capi_internal.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace attn_rt {

/// The sinks attn_kind_set_sinks gave kind `kind` of `model` (null: none
/// set); for attn_decode_paged_mpi (mpi.cpp).
const std::vector<float> *modelSinks(const attn_model *model, int32_t kind) {
  if (!model || kind < 0 || size_t(kind) >= model->sinks.size() ||
      model->sinks[kind].empty())
    return nullptr;
  return &model->sinks[kind];
}

void setLastError(std::string msg) { capi::lastError() = std::move(msg); }

} // namespace attn_rt

namespace attn_rt::capi {

std::string &lastError() {
  thread_local std::string message;
  return message;
}


/// Records `msg` as this thread's last error and returns `status`.
attn_status failWith(attn_status status, std::string msg) {
  lastError() = std::move(msg);
  return status;
}

const char *dtypeName(attn_dtype t) {
  switch (t) {
  case ATTN_F32:
    return "f32";
  case ATTN_BF16:
    return "bf16";
  case ATTN_F16:
    return "f16";
  case ATTN_I64:
    return "i64";
  case ATTN_I32:
    return "i32";
  }
  return "unknown";
}

std::string shapeOf(const attn_tensor &t) {
  std::string s = "[";
  for (int32_t i = 0; i < t.rank && i < ATTN_MAX_RANK; ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

std::string dimsStr(std::initializer_list<int64_t> want,
                    std::initializer_list<const char *> names) {
  std::string s = "[";
  for (size_t i = 0; i < want.size(); ++i)
    s += (i ? ", " : "") + (want.begin()[i] < 0 && i < names.size()
                                ? std::string(names.begin()[i])
                                : std::to_string(want.begin()[i]));
  return s + "]";
}

/// The element type of a kind's paged cache.
attn_dtype kvDtype(const attn_rt_kind &k) {
  return k.kv_dtype == ATTN_RT_KV_BF16  ? ATTN_BF16
         : k.kv_dtype == ATTN_RT_KV_F16 ? ATTN_F16
                                        : ATTN_F32;
}

int64_t elementBytes(attn_dtype t) {
  return t == ATTN_I64 ? 8 : t == ATTN_BF16 || t == ATTN_F16 ? 2 : 4;
}



int64_t numelOf(const attn_tensor &t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i)
    n *= t.shape[i];
  return n;
}

int64_t spanOf(const attn_tensor &t) {
  if (numelOf(t) == 0)
    return 0;
  int64_t span = 1;
  for (int32_t i = 0; i < t.rank; ++i)
    span += t.strides[i] * (t.shape[i] - 1);
  return span;
}

/// True when the byte spans of `a` and `b` (checked tensors) overlap.
bool overlaps(const attn_tensor &a, const attn_tensor &b) {
  auto lo = [](const attn_tensor &t) {
    return reinterpret_cast<uintptr_t>(t.data);
  };
  int64_t na = spanOf(a) * elementBytes(a.dtype),
          nb = spanOf(b) * elementBytes(b.dtype);
  return na && nb && lo(a) < lo(b) + uintptr_t(nb) &&
         lo(b) < lo(a) + uintptr_t(na);
}

bool poolsApart(const attn_tensor &a, const attn_tensor &b) {
  if (!overlaps(a, b))
    return true;
  if (a.dtype != b.dtype || a.rank != b.rank || a.rank < 1)
    return false;
  TensorCheck::Dim dims[TensorCheck::kMaxDims];
  int n = 0;
  for (int32_t i = 0; i < a.rank; ++i) {
    if (a.shape[i] != b.shape[i] ||
        (a.shape[i] > 1 && a.strides[i] != b.strides[i]))
      return false;
    if (i + 1 < a.rank)
      dims[n++] = {a.shape[i], a.strides[i]};
  }
  int64_t eb = elementBytes(a.dtype);
  intptr_t gap =
      reinterpret_cast<intptr_t>(b.data) - reinterpret_cast<intptr_t>(a.data);
  if (gap == 0 || gap % eb != 0)
    return false;
  dims[n++] = {2, std::abs(int64_t(gap / eb))};
  return TensorCheck::nestedApart(dims, n, a.shape[a.rank - 1]);
}

/// Fails with "CALL: OUT overlaps IN" when it does.
bool noOverlap(
    TensorCheck &check, const attn_tensor &out, const char *outName,
    std::initializer_list<std::pair<const attn_tensor *, const char *>>
        inputs) {
  for (auto [in, name] : inputs)
    if (in && overlaps(out, *in))
      return check.fail(ATTN_ERR_LAYOUT,
                        std::string(check.call) + ": " + outName +
                            " overlaps " + name +
                            "; outputs must not share memory with inputs");
  return check.status == ATTN_OK;
}

/// Lengths in [0, limit], one per batch row.
bool checkLengths(TensorCheck &check, const int64_t *lengths, int64_t b,
                  int64_t limit, const char *name, const char *limitName) {
  for (int64_t i = 0; lengths && i < b; ++i)
    if (lengths[i] < 0 || lengths[i] > limit)
      return check.fail(ATTN_ERR_VALUE,
                        std::string(check.call) + ": " + name + "[" +
                            std::to_string(i) + "] = " +
                            std::to_string(lengths[i]) + " is outside [0, " +
                            limitName + " = " + std::to_string(limit) + "]");
  return true;
}

attn_status getKind(const attn_model *model, int32_t kind, const char *call,
                    int op, const attn_rt_kind *&out) {
  if (!model)
    return failWith(ATTN_ERR_ARGUMENT, std::string(call) + ": model is NULL");
  if (kind < 0 || kind >= model->table->num_kinds)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": kind " + std::to_string(kind) +
                        " is outside [0, " +
                        std::to_string(model->table->num_kinds) + ")");
  out = &model->table->kinds[kind];
  if (out->op != op)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind " + std::to_string(kind) +
                        " ('" + out->name + "') is " +
                        (out->op == ATTN_RT_OP_SDPA
                             ? "softmax attention: use attn_sdpa"
                             : "Gated DeltaNet: use attn_gated_delta"));
  return ATTN_OK;
}

/// The sinks of a kind with attention sinks for a call on `heads` query
/// heads: refused until attn_kind_set_sinks gave them, or for another head
/// count.
attn_status kindSinks(const attn_model *model, int32_t kind,
                      const attn_rt_kind &kd, const char *call, int64_t heads,
                      const float *&out) {
  const std::vector<float> *s = attn_rt::modelSinks(model, kind);
  if (!s)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": kind '" + kd.name +
                        "' has attention sinks (one learned logit per query "
                        "head): give them first with attn_kind_set_sinks "
                        "(the checkpoint's self_attn.sinks)");
  if (int64_t(s->size()) != heads)
    return failWith(ATTN_ERR_SHAPE,
                    std::string(call) + ": the sinks set for kind '" +
                        kd.name + "' are " + std::to_string(s->size()) +
                        " values, this call has " + std::to_string(heads) +
                        " query heads");
  out = s->data();
  return ATTN_OK;
}


std::string describeKind(const attn_rt_kind &k) {
  return std::string(" for kind '") + k.name + "' (" +
         (k.op == ATTN_RT_OP_SDPA ? "Hq="
          : k.no_delta            ? "Mamba2 SSD, Hv="
          : k.channel_gate        ? "Kimi Delta Attention, Hv="
                                  : "Gated DeltaNet, Hv=") +
         std::to_string(k.num_heads) +
         (k.op == ATTN_RT_OP_SDPA ? ", Hkv=" : ", Hk=") +
         std::to_string(k.num_kv_heads) +
         (k.op == ATTN_RT_OP_SDPA ? ", D=" : ", dk=") +
         std::to_string(k.head_dim) +
         (k.op == ATTN_RT_OP_SDPA ? ", Dv=" : ", dv=") +
         std::to_string(k.head_dim_v) + ")";
}

/// K and V (or their caches) of the kind's --kv-dtype, else an error that
/// says which element type this library's kernels read.
bool
checkKVDtype(TensorCheck &check, const attn_rt_kind &kd,
             std::initializer_list<std::pair<const attn_tensor *, const char *>>
                 tensors) {
  attn_dtype dt = kvDtype(kd);
  for (auto [t, name] : tensors)
    if (t && t->dtype != dt)
      return check.fail(
          ATTN_ERR_DTYPE,
          std::string(check.call) + ": " + name + " has dtype " +
              dtypeName(t->dtype) + "; this library's kernels read K/V as " +
              dtypeName(dt) + " (attn-compile --kv-dtype=" + dtypeName(dt) +
              "), q and out as " + dtypeName(qoDtype(kd)));
  return true;
}

attn_dtype qoDtype(const attn_rt_kind &k) {
  return k.qo_dtype == ATTN_RT_KV_BF16  ? ATTN_BF16
         : k.qo_dtype == ATTN_RT_KV_F16 ? ATTN_F16
                                        : ATTN_F32;
}

bool checkQODtype(
    TensorCheck &check, const attn_rt_kind &kd,
    std::initializer_list<std::pair<const attn_tensor *, const char *>>
        tensors) {
  attn_dtype dt = qoDtype(kd);
  if (dt == ATTN_F32) // the shape check's own message
    return true;
  for (auto [t, name] : tensors)
    if (t && t->dtype != dt)
      return check.fail(ATTN_ERR_DTYPE,
                        std::string(check.call) + ": " + name + " has dtype " +
                            dtypeName(t->dtype) +
                            "; this library's kernels take q and out " + "as " +
                            dtypeName(dt) +
                            " (attn-compile --qo-dtype=" + dtypeName(dt) +
                            "), K/V as " + dtypeName(kvDtype(kd)));
  return true;
}

/// Checks a paged cache's pools (of the kind's kv_dtype) and block table
/// for `kd`; sets `pages`, `pageSize` and `maxPages`.
bool checkPaged(TensorCheck &check, const attn_rt_kind *kd,
                       const attn_tensor *kCache, const attn_tensor *vCache,
                       const attn_tensor *table, int64_t batch,
                       int64_t &pages, int64_t &pageSize, int64_t &maxPages,
                       int64_t hkv) {
  if (hkv < 0)
    hkv = kd->num_kv_heads;
  attn_dtype dt = kvDtype(*kd);
  if (!checkKVDtype(check, *kd, {{kCache, "k_cache"}, {vCache, "v_cache"}}))
    return false;
  if (!check.pool(kCache, "k_cache", {-1, hkv, -1, kd->head_dim},
                  {"num_pages", "", "page_size", ""}, dt))
    return false;
  pages = kCache->shape[0];
  pageSize = kCache->shape[2];
  if (pageSize == 0)
    return check.fail(ATTN_ERR_SHAPE, std::string(check.call) +
                                          ": k_cache has page_size 0");
  if (!check.pool(vCache, "v_cache", {pages, hkv, pageSize, kd->head_dim_v}, {},
                  dt) ||
      !check(table, "block_table", {batch, -1}, {"", "max_pages"}, ATTN_I32))
    return false;
  maxPages = table->shape[1];
  return true;
}

/// The tokens a block table can hold, max_pages · page_size (saturated: the
/// shapes of hostile input may multiply past int64).
int64_t capacity(int64_t maxPages, int64_t pageSize) {
  __int128 c = (__int128)maxPages * pageSize;
  return c > INT64_MAX ? INT64_MAX : int64_t(c);
}

/// The pages that the tokens [lo, hi) of every row use must be in the
/// pool [0, pages).
bool checkPagesUsed(TensorCheck &check, const attn_tensor *table,
                           const int64_t *lo, const int64_t *hi,
                           int64_t batch, int64_t pages, int64_t pageSize) {
  const int32_t *t = static_cast<const int32_t *>(table->data);
  int64_t maxPages = table->shape[1];
  for (int64_t b = 0; b < batch; ++b) {
    if (hi[b] <= (lo ? lo[b] : 0))
      continue;
    int64_t first = lo ? lo[b] / pageSize : 0,
            last = hi[b] / pageSize + (hi[b] % pageSize != 0);
    for (int64_t p = first; p < last; ++p) {
      int32_t page = t[b * maxPages + p];
      if (page < 0 || page >= pages)
        return check.fail(ATTN_ERR_VALUE,
                          std::string(check.call) + ": block_table[" +
                              std::to_string(b) + ", " + std::to_string(p) +
                              "] = " + std::to_string(page) +
                              " is outside the pool [0, num_pages = " +
                              std::to_string(pages) + ")");
    }
  }
  return true;
}

attn_status checkPagedDecode(
    TensorCheck &check, const int64_t *kvLengths, const int64_t *qPos,
    bool part, const attn_tensor &out, const attn_tensor *stats,
    std::initializer_list<std::pair<const attn_tensor *, const char *>> ins,
    const attn_tensor *table, int64_t batch, int64_t pages, int64_t pageSize) {
  auto call = [&] { return std::string(check.call); };
  if (!kvLengths && batch > 0)
    return failWith(ATTN_ERR_ARGUMENT, call() + ": kv_lengths is NULL; pass "
                                                "each sequence's length in "
                                                "tokens");
  if (part && !qPos && batch > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    call() + ": q_pos is NULL; pass each sequence's position "
                             "of its first query row in the cache's range");
  int64_t maxPages = table->shape[1];
  if (!noOverlap(check, out, "out", ins) ||
      (part && !noOverlap(check, *stats, "stats", ins)) ||
      !checkLengths(check, kvLengths, batch, capacity(maxPages, pageSize),
                    "kv_lengths", "max_pages * page_size") ||
      !checkPagesUsed(check, table, nullptr, kvLengths, batch, pages,
                      pageSize))
    return check.status;
  if (part && overlaps(*stats, out))
    return failWith(ATTN_ERR_LAYOUT, call() + ": stats overlaps out");
  return ATTN_OK;
}

} // namespace attn_rt::capi

attn_status attn_rt::caughtInCall(const char *call) {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    capi::lastError().clear();
    try {
      capi::lastError() = std::string(call) + ": out of memory";
    } catch (...) {
    }
    return ATTN_ERR_MEMORY;
  } catch (const std::exception &e) {
    try {
      capi::lastError() = std::string(call) + ": " + e.what();
    } catch (...) {
    }
    return ATTN_ERR_ARGUMENT;
  } catch (...) {
    try {
      capi::lastError() = std::string(call) + ": an internal error";
    } catch (...) {
    }
    return ATTN_ERR_ARGUMENT;
  }
}

namespace {
struct CallScratch {
  std::vector<int64_t> i64[4];
  std::vector<float> f32[4];
};
CallScratch &callScratch() {
  thread_local CallScratch scratch;
  return scratch;
}
} // namespace

int64_t *attn_rt::callScratchI64(int slot, size_t n) {
  std::vector<int64_t> &v = callScratch().i64[slot];
  if (v.size() < n)
    v.resize(n);
  return v.data();
}

float *attn_rt::callScratchF32(int slot, size_t n) {
  std::vector<float> &v = callScratch().f32[slot];
  if (v.size() < n)
    v.resize(n);
  return v.data();
}

void attn_rt::trimCallScratch() {
  CallScratch &s = callScratch();
  for (auto &v : s.i64)
    std::vector<int64_t>().swap(v);
  for (auto &v : s.f32)
    std::vector<float>().swap(v);
}

attn_status attn_rt::sinksForCall(const attn_model *model, int32_t kind,
                                  const char *call, int64_t heads,
                                  const float *&out) {
  out = nullptr;
  if (!model || kind < 0 || kind >= model->table->num_kinds ||
      !model->table->kinds[kind].has_sinks)
    return ATTN_OK;
  return capi::kindSinks(model, kind, model->table->kinds[kind], call, heads, out);
}
