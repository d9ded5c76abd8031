/*===- capi_internal.h - the C API's shared checks ---------------*- C++ -*-===*
 *
 * What the C API's files share (api.cpp: models, kinds, attn_sdpa and
 * attn_gated_delta; api_paged.cpp: the paged KV cache; api_latent.cpp: the
 * latent cache; capi_checks.cpp: the checks themselves) and what the MPI
 * collectives (mpi_api.cpp) use: the opaque model, the last error, the
 * argument checks every call runs before any kernel. Internal to the
 * runtime: not installed. It depends on the ABI and the C API headers
 * alone (not on the executables' commands).
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RT_CAPI_INTERNAL_H
#define ATTN_RT_CAPI_INTERNAL_H

#include "attn.h"
#include "attn_runtime.h"
#include "descriptors.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

struct attn_model {
  const attn_rt_model *table;
  void *library; // dlopen handle, or NULL for the caller's own library
  /// Each kind's attention sinks (attn_kind_set_sinks; empty: not set).
  std::vector<std::vector<float>> sinks = {};
};

namespace attn_rt {

/// The sinks attn_kind_set_sinks gave kind `kind` of `model` (null: none
/// set).
const std::vector<float> *modelSinks(const attn_model *model, int32_t kind);
/// Sets attn_last_error()'s message of this thread.
void setLastError(std::string msg);
/// The sinks of a kind with attention sinks for a C API call on `heads`
/// query heads (null for a kind without; an error until attn_kind_set_sinks
/// gave them).
attn_status sinksForCall(const attn_model *model, int32_t kind,
                         const char *call, int64_t heads, const float *&out);
/// The status and message of the exception being handled in entry point
/// `call` (out of memory: ATTN_ERR_MEMORY, anything else
/// ATTN_ERR_ARGUMENT); only from a catch handler.
attn_status caughtInCall(const char *call);
/// Runs the body of C entry point `call`: no exception crosses the C
/// boundary. A template rather than std::function, which would allocate
/// for a lambda of more than two references on every call.
template <typename Body> attn_status guardCall(const char *call, Body &&body) {
  try {
    return body();
  } catch (...) {
    return caughtInCall(call);
  }
}
/// Per-thread buffers of the C API's calls (the lengths read once before
/// a kernel writes, a state copied for an in-place update, zeros for a
/// missing one): grown when a call needs more, then reused, so that calls
/// at sizes already seen allocate nothing. `slot` (0-3) tells apart the
/// buffers one call uses at once. Throws std::bad_alloc.
int64_t *callScratchI64(int slot, size_t n);
float *callScratchF32(int slot, size_t n);
/// Frees this thread's call buffers (attn_workspace_trim).
void trimCallScratch();

namespace capi {

/// This thread's last error message (attn_last_error).
std::string &lastError();
/// Records `msg` as this thread's last error and returns `status`.
attn_status failWith(attn_status status, std::string msg);
const char *dtypeName(attn_dtype t);
std::string shapeOf(const attn_tensor &t);
std::string dimsStr(std::initializer_list<int64_t> want,
                    std::initializer_list<const char *> names);
/// The element type of a kind's paged cache.
attn_dtype kvDtype(const attn_rt_kind &k);
int64_t elementBytes(attn_dtype t);

/// Checks one tensor argument: present, of `dtype` (f32 unless said), rank
/// and shape as `want` (-1: any size, named by `names`), row-major
/// contiguous, data present unless empty.
struct TensorCheck {
  const char *call;
  /// The kind the messages name (" for kind 'NAME' (...)"), built only
  /// for a message: a call that passes its checks allocates nothing.
  const attn_rt_kind *kind = nullptr;
  std::string (*describe)(const attn_rt_kind &) = nullptr;
  /// What the messages add after the kind.
  std::string extra = {};
  attn_status status = ATTN_OK;

  std::string kindDesc() const {
    return (kind && describe ? describe(*kind) : std::string()) + extra;
  }

  bool operator()(const attn_tensor *t, const char *name,
                  std::initializer_list<int64_t> wantDims,
                  std::initializer_list<const char *> names,
                  attn_dtype dtype = ATTN_F32) {
    return tensor(t, name, wantDims, names, dtype, /*rowsOnly=*/false);
  }

  /// A paged cache's pool [num_pages, Hkv, page_size, D]: as above, but of
  /// any strides whose rows (the last dim) are contiguous and whose
  /// elements are all apart: positive strides, each at least the span of
  /// the dims strided more finely (the C API's [num_pages, Hkv, P, D],
  /// vLLM's [num_pages, P, Hkv, D] seen as [num_pages, Hkv, P, D] through
  /// its strides, head-major pools, padded rows or pages).
  bool pool(const attn_tensor *t, const char *name,
            std::initializer_list<int64_t> wantDims,
            std::initializer_list<const char *> names, attn_dtype dtype) {
    return tensor(t, name, wantDims, names, dtype, /*rowsOnly=*/true);
  }

  bool tensor(const attn_tensor *t, const char *name,
              std::initializer_list<int64_t> wantDims,
              std::initializer_list<const char *> names, attn_dtype dtype,
              bool rowsOnly) {
    if (status != ATTN_OK)
      return false;
    auto at = [&] { return std::string(call) + ": " + name; };
    const int64_t *want = wantDims.begin();
    if (!t)
      return fail(ATTN_ERR_ARGUMENT, at() + " is NULL");
    if (t->dtype != dtype)
      return fail(ATTN_ERR_DTYPE,
                  at() + " has dtype " + dtypeName(t->dtype) + "; " +
                      (dtype == ATTN_F32
                           ? "this kind's kernels take f32 (ATTN_F32)"
                           : std::string("it must be ") + dtypeName(dtype)));
    int32_t rank = int32_t(wantDims.size());
    if (t->rank != rank)
      return fail(ATTN_ERR_SHAPE,
                  at() + " has rank " + std::to_string(t->rank) +
                      "; it must be " + dimsStr(wantDims, names) + kindDesc());
    // The element count, and the product of the dims counting an empty
    // one as 1 (an empty tensor's other dims size the loops and buffers
    // around it): both at most 2^60, checked before any product can wrap.
    const int64_t limit = int64_t(1) << 60;
    int64_t numel = 1, extent = 1;
    for (int32_t i = 0; i < rank; ++i) {
      if (t->shape[i] < 0 || (want[i] >= 0 && t->shape[i] != want[i]))
        return fail(ATTN_ERR_SHAPE, at() + " has shape " + shapeOf(*t) +
                                        "; it must be " +
                                        dimsStr(wantDims, names) + kindDesc());
      int64_t d = std::max<int64_t>(t->shape[i], 1);
      if (d > limit / extent)
        return fail(ATTN_ERR_SHAPE,
                    at() + " has shape " + shapeOf(*t) +
                        ": more elements than any machine's memory (at "
                        "most 2^60, counting an empty dim as 1)");
      extent *= d;
      numel *= t->shape[i];
    }
    // (An empty tensor has no element to place: any strides.)
    if (rowsOnly && numel != 0 && !apartRows(*t))
      return fail(ATTN_ERR_LAYOUT,
                  at() + " has strides [" + stridesOf(*t) +
                      "] (elements) for shape " + shapeOf(*t) +
                      "; a pool's rows must be contiguous (last stride 1) "
                      "and its elements apart (positive strides, each at "
                      "least the span of the dims strided more finely; "
                      "row-major: [" +
                      contiguousStrides(*t) + "])");
    int64_t stride = 1;
    for (int32_t i = rank - 1; i >= 0 && numel != 0 && !rowsOnly; --i) {
      if (t->shape[i] != 1 && t->strides[i] != stride)
        return fail(ATTN_ERR_LAYOUT,
                    at() + " has strides [" + stridesOf(*t) +
                        "] (elements) for shape " + shapeOf(*t) +
                        "; the kernels take row-major contiguous tensors "
                        "(strides [" +
                        contiguousStrides(*t) + "])");
      stride *= t->shape[i];
    }
    if (!t->data && numel != 0)
      return fail(ATTN_ERR_ARGUMENT, at() + " has a NULL data pointer");
    return true;
  }

  bool fail(attn_status s, const std::string &msg) {
    status = failWith(s, msg);
    return false;
  }

  /// A dim's (size, stride), for nestedApart.
  using Dim = std::pair<int64_t, int64_t>;
  /// The most dims nestedApart sorts: a tensor's, and one more.
  static constexpr int kMaxDims = ATTN_MAX_RANK + 1;

  /// The last dim contiguous and the others nested without overlap, in
  /// any order (nestedApart).
  static bool apartRows(const attn_tensor &t) {
    int32_t last = t.rank - 1;
    if (t.shape[last] > 1 && t.strides[last] != 1)
      return false;
    Dim dims[kMaxDims];
    for (int32_t i = 0; i < last; ++i)
      dims[i] = {t.shape[i], t.strides[i]};
    return nestedApart(dims, last, t.shape[last]);
  }

  /// `n` dims (size, stride; sorted here, no allocation: a decode step's
  /// checks allocate nothing) over rows of `row` contiguous elements place
  /// every element apart: by stride, each dim of more than one element
  /// strides at least the span of the ones before it; the whole span at
  /// most 2^60 elements.
  static bool nestedApart(Dim *dims, int n, int64_t row) {
    std::sort(dims, dims + n, [](Dim a, Dim b) { return a.second < b.second; });
    __int128 span = std::max<int64_t>(row, 1);
    for (int i = 0; i < n; ++i) {
      auto [size, stride] = dims[i];
      if (size <= 1)
        continue;
      if (stride < span)
        return false;
      span += (__int128)stride * (size - 1);
      if (span > (__int128(1) << 60))
        return false;
    }
    return true;
  }

  static std::string stridesOf(const attn_tensor &t) {
    std::string s;
    for (int32_t i = 0; i < t.rank; ++i)
      s += (i ? ", " : "") + std::to_string(t.strides[i]);
    return s;
  }
  static std::string contiguousStrides(const attn_tensor &t) {
    std::vector<int64_t> st(t.rank);
    int64_t stride = 1;
    for (int32_t i = t.rank - 1; i >= 0; --i) {
      st[i] = stride;
      stride *= t.shape[i];
    }
    std::string s;
    for (int32_t i = 0; i < t.rank; ++i)
      s += (i ? ", " : "") + std::to_string(st[i]);
    return s;
  }
};

int64_t numelOf(const attn_tensor &t);
/// The elements from a tensor's first to its last (checked: positive
/// strides on every dim of more than one element), 0 when it is empty.
int64_t spanOf(const attn_tensor &t);
/// True when the byte spans of `a` and `b` (checked tensors) overlap.
bool overlaps(const attn_tensor &a, const attn_tensor &b);
/// True when two pools (checked by TensorCheck::pool) share no element:
/// their spans apart, or interleaved as one pool [2, ...] would be (the
/// same shape, dtype and strides, one's start a whole number of elements
/// from the other's, every element apart: FlashInfer's [num_pages, 2,
/// page_size, Hkv, D] cache seen as its K and V).
bool poolsApart(const attn_tensor &a, const attn_tensor &b);
/// Fails with "CALL: OUT overlaps IN" when it does.
bool noOverlap(
    TensorCheck &check, const attn_tensor &out, const char *outName,
    std::initializer_list<std::pair<const attn_tensor *, const char *>> inputs);
/// Lengths in [0, limit], one per batch row.
bool checkLengths(TensorCheck &check, const int64_t *lengths, int64_t b,
                  int64_t limit, const char *name, const char *limitName);
inline float *f32(const attn_tensor &t) { return static_cast<float *>(t.data); }
/// Kind `kind` of `model`, which must compute `op` (ATTN_RT_OP_*).
attn_status getKind(const attn_model *model, int32_t kind, const char *call,
                    int op, const attn_rt_kind *&out);
/// The sinks of a kind with attention sinks for a call on `heads` query
/// heads: refused until attn_kind_set_sinks gave them, or for another head
/// count.
attn_status kindSinks(const attn_model *model, int32_t kind,
                      const attn_rt_kind &kd, const char *call, int64_t heads,
                      const float *&out);
/// " for kind 'NAME' (Hq=.., Hkv=.., D=.., Dv=..)", for messages.
std::string describeKind(const attn_rt_kind &k);
/// K and V (or their caches) of the kind's --kv-dtype, else an error that
/// says which element type this library's kernels read.
bool checkKVDtype(
    TensorCheck &check, const attn_rt_kind &kd,
    std::initializer_list<std::pair<const attn_tensor *, const char *>>
        tensors);
/// The element type of q and out of the kind's attn_sdpa and
/// attn_decode_paged (attn-compile --qo-dtype).
attn_dtype qoDtype(const attn_rt_kind &k);
/// q and out of the kind's --qo-dtype, else an error that says which
/// element type this library's kernels take.
bool checkQODtype(
    TensorCheck &check, const attn_rt_kind &kd,
    std::initializer_list<std::pair<const attn_tensor *, const char *>>
        tensors);
/// Checks a paged cache's pools (of the kind's kv_dtype) and block table
/// for `kd` (its KV heads, or `hkv`); sets `pages`, `pageSize` and
/// `maxPages`.
bool checkPaged(TensorCheck &check, const attn_rt_kind *kd,
                const attn_tensor *kCache, const attn_tensor *vCache,
                const attn_tensor *table, int64_t batch, int64_t &pages,
                int64_t &pageSize, int64_t &maxPages, int64_t hkv = -1);
/// The tokens a block table can hold, max_pages · page_size (saturated: the
/// shapes of hostile input may multiply past int64).
int64_t capacity(int64_t maxPages, int64_t pageSize);
/// The pages that the tokens [lo, hi) of every row use must be in the
/// pool [0, pages).
bool checkPagesUsed(TensorCheck &check, const attn_tensor *table,
                    const int64_t *lo, const int64_t *hi, int64_t batch,
                    int64_t pages, int64_t pageSize);
/// What a decode over a paged cache (attn_decode_paged, attn_decode_latent
/// and their partial forms) checks once the shapes are right: kv_lengths
/// (and, for a partial call, q_pos) given; `out` (and `stats`) overlapping
/// no input of `ins` nor each other; every length within the table's
/// max_pages · page_size and every page it uses in the pool.
attn_status checkPagedDecode(
    TensorCheck &check, const int64_t *kvLengths, const int64_t *qPos,
    bool part, const attn_tensor &out, const attn_tensor *stats,
    std::initializer_list<std::pair<const attn_tensor *, const char *>> ins,
    const attn_tensor *table, int64_t batch, int64_t pages, int64_t pageSize);

} // namespace capi
} // namespace attn_rt

#endif // ATTN_RT_CAPI_INTERNAL_H
