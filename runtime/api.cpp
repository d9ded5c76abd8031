//===- api.cpp - the attn C API (attn.h) ------------------------------------===//
//
// This file implements attn.h over the model table and the kernels'
// memref-descriptor entry points (attn_runtime.h): it checks every argument
// (pointers, dtypes, ranks, shapes against the kind, contiguity, lengths,
// overlap of outputs with inputs) and only then builds descriptors over the
// caller's buffers and calls the fused kernel. Nothing is copied, except a
// state updated in place (state_out == state_in), which the kernel would
// otherwise read while writing it.
//
//===----------------------------------------------------------------------===//

#include "attn.h"
#include "attn_runtime.h"
#include "cli.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <tuple>
#include <vector>

struct attn_model {
  const attn_rt_model *table;
  void *library; // dlopen handle, or NULL for the caller's own library
  /// Each kind's attention sinks (attn_kind_set_sinks; empty: not set).
  std::vector<std::vector<float>> sinks = {};
};

namespace attn_rt {
/// The sinks attn_kind_set_sinks gave kind `kind` of `model` (null: none
/// set); for attn_decode_paged_mpi (mpi.cpp).
const std::vector<float> *modelSinks(const attn_model *model, int32_t kind) {
  if (!model || kind < 0 || size_t(kind) >= model->sinks.size() ||
      model->sinks[kind].empty())
    return nullptr;
  return &model->sinks[kind];
}
} // namespace attn_rt
using attn_rt::guardCall;

namespace {

thread_local std::string lastError;

/// Records `msg` as this thread's last error and returns `status`.
attn_status failWith(attn_status status, std::string msg) {
  lastError = std::move(msg);
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

std::string dimsStr(const std::vector<int64_t> &want,
                    const std::vector<const char *> &names) {
  std::string s = "[";
  for (size_t i = 0; i < want.size(); ++i)
    s += (i ? ", " : "") +
         (want[i] < 0 && i < names.size() ? std::string(names[i]) : std::to_string(want[i]));
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

/// Checks one tensor argument: present, of `dtype` (f32 unless said), rank
/// and shape as `want` (-1: any size, named by `names`), row-major
/// contiguous, data present unless empty.
struct TensorCheck {
  const char *call;
  std::string kindDesc;
  attn_status status = ATTN_OK;

  bool operator()(const attn_tensor *t, const char *name,
                  const std::vector<int64_t> &want,
                  const std::vector<const char *> &names,
                  attn_dtype dtype = ATTN_F32) {
    if (status != ATTN_OK)
      return false;
    std::string at = std::string(call) + ": " + name;
    if (!t)
      return fail(ATTN_ERR_ARGUMENT, at + " is NULL");
    if (t->dtype != dtype)
      return fail(ATTN_ERR_DTYPE,
                  at + " has dtype " + dtypeName(t->dtype) + "; " +
                      (dtype == ATTN_F32
                           ? "this kind's kernels take f32 (ATTN_F32)"
                           : std::string("it must be ") + dtypeName(dtype)));
    int32_t rank = int32_t(want.size());
    if (t->rank != rank)
      return fail(ATTN_ERR_SHAPE, at + " has rank " + std::to_string(t->rank) +
                                      "; it must be " +
                                      dimsStr(want, names) + kindDesc);
    // The element count, and the product of the dims counting an empty
    // one as 1 (an empty tensor's other dims size the loops and buffers
    // around it): both at most 2^60, checked before any product can wrap.
    const int64_t limit = int64_t(1) << 60;
    int64_t numel = 1, extent = 1;
    for (int32_t i = 0; i < rank; ++i) {
      if (t->shape[i] < 0 || (want[i] >= 0 && t->shape[i] != want[i]))
        return fail(ATTN_ERR_SHAPE, at + " has shape " + shapeOf(*t) +
                                        "; it must be " +
                                        dimsStr(want, names) + kindDesc);
      int64_t d = std::max<int64_t>(t->shape[i], 1);
      if (d > limit / extent)
        return fail(ATTN_ERR_SHAPE,
                    at + " has shape " + shapeOf(*t) +
                        ": more elements than any machine's memory (at "
                        "most 2^60, counting an empty dim as 1)");
      extent *= d;
      numel *= t->shape[i];
    }
    // (An empty tensor has no element to place: any strides.)
    int64_t stride = 1;
    for (int32_t i = rank - 1; i >= 0 && numel != 0; --i) {
      if (t->shape[i] != 1 && t->strides[i] != stride)
        return fail(ATTN_ERR_LAYOUT,
                    at + " has strides [" + stridesOf(*t) +
                        "] (elements) for shape " + shapeOf(*t) +
                        "; the kernels take row-major contiguous tensors "
                        "(strides [" + contiguousStrides(*t) + "])");
      stride *= t->shape[i];
    }
    if (!t->data && numel != 0)
      return fail(ATTN_ERR_ARGUMENT, at + " has a NULL data pointer");
    return true;
  }

  bool fail(attn_status s, const std::string &msg) {
    status = failWith(s, msg);
    return false;
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

int64_t numelOf(const attn_tensor &t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.rank; ++i)
    n *= t.shape[i];
  return n;
}

/// True when the bytes of `a` and `b` overlap (both checked contiguous).
bool overlaps(const attn_tensor &a, const attn_tensor &b) {
  auto lo = [](const attn_tensor &t) {
    return reinterpret_cast<uintptr_t>(t.data);
  };
  int64_t na = numelOf(a) * elementBytes(a.dtype),
          nb = numelOf(b) * elementBytes(b.dtype);
  return na && nb && lo(a) < lo(b) + uintptr_t(nb) &&
         lo(b) < lo(a) + uintptr_t(na);
}

/// Fails with "CALL: OUT overlaps IN" when it does.
bool noOverlap(TensorCheck &check, const attn_tensor &out, const char *outName,
               const std::vector<std::pair<const attn_tensor *, const char *>>
                   &inputs) {
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

std::vector<int64_t> dims(const attn_tensor &t) {
  return std::vector<int64_t>(t.shape, t.shape + t.rank);
}

float *f32(const attn_tensor &t) { return static_cast<float *>(t.data); }

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

} // namespace

/// Runs the body of C entry point `call`: no exception crosses the C
/// boundary (out of memory is ATTN_ERR_MEMORY, anything else
/// ATTN_ERR_ARGUMENT), each with its message.
attn_status attn_rt::guardCall(const char *call,
                               const std::function<attn_status()> &body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    lastError.clear();
    try {
      lastError = std::string(call) + ": out of memory";
    } catch (...) {
    }
    return ATTN_ERR_MEMORY;
  } catch (const std::exception &e) {
    try {
      lastError = std::string(call) + ": " + e.what();
    } catch (...) {
    }
    return ATTN_ERR_ARGUMENT;
  } catch (...) {
    try {
      lastError = std::string(call) + ": an internal error";
    } catch (...) {
    }
    return ATTN_ERR_ARGUMENT;
  }
}

attn_status attn_rt::sinksForCall(const attn_model *model, int32_t kind,
                                  const char *call, int64_t heads,
                                  const float *&out) {
  out = nullptr;
  if (!model || kind < 0 || kind >= model->table->num_kinds ||
      !model->table->kinds[kind].has_sinks)
    return ATTN_OK;
  return kindSinks(model, kind, model->table->kinds[kind], call, heads, out);
}

namespace {

std::string describeKind(const attn_rt_kind &k) {
  return std::string(" for kind '") + k.name + "' (" +
         (k.op == ATTN_RT_OP_SDPA ? "Hq=" : "Gated DeltaNet, Hv=") +
         std::to_string(k.num_heads) +
         (k.op == ATTN_RT_OP_SDPA ? ", Hkv=" : ", Hk=") +
         std::to_string(k.num_kv_heads) +
         (k.op == ATTN_RT_OP_SDPA ? ", D=" : ", dk=") +
         std::to_string(k.head_dim) +
         (k.op == ATTN_RT_OP_SDPA ? ", Dv=" : ", dv=") +
         std::to_string(k.head_dim_v) + ")";
}

} // namespace

extern "C" {

int32_t attn_api_version(void) { return ATTN_API_VERSION; }

const char *attn_last_error(void) { return lastError.c_str(); }

attn_status attn_model_open(const char *path, attn_model **model) {
  return guardCall("attn_model_open", [&]() -> attn_status {
  if (!model)
    return failWith(ATTN_ERR_ARGUMENT, "attn_model_open: model is NULL");
  *model = nullptr;
  const attn_rt_model *table = nullptr;
  void *library = nullptr;
  if (path && !*path)
    return failWith(ATTN_ERR_ARGUMENT,
                    "attn_model_open: path is empty; pass a library's path, "
                    "or NULL for the model compiled into the calling "
                    "library");
  if (!path) {
    table = attn_rt_get_model();
  } else {
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library)
      return failWith(ATTN_ERR_OPEN, std::string("attn_model_open: cannot "
                                                 "load '") +
                                         path + "': " + dlerror());
    using GetModel = const attn_rt_model *(*)();
    auto get = reinterpret_cast<GetModel>(dlsym(library, "attn_rt_get_model"));
    if (!get) {
      dlclose(library);
      return failWith(ATTN_ERR_OPEN,
                      std::string("attn_model_open: '") + path +
                          "' has no model table (attn_rt_get_model): it is "
                          "not a library built with attn-compile "
                          "--emit=shared");
    }
    table = get();
  }
  auto closeOnError = [&](std::string msg) {
    if (library)
      dlclose(library);
    return failWith(ATTN_ERR_OPEN, "attn_model_open: " +
                                       std::string(path ? path : "(self)") +
                                       ": " + msg);
  };
  if (!table || table->abi_version != ATTN_RT_ABI_VERSION)
    return closeOnError(
        "its kernels use runtime ABI version " +
        std::to_string(table ? table->abi_version : -1) +
        "; this library reads version " +
        std::to_string(ATTN_RT_ABI_VERSION) +
        ": rebuild it with the same attn-compile");
  if (table->device != 0)
    return closeOnError("its kernels run on a GPU (--target=cuda); the C "
                        "API serves CPU libraries (--emit=shared)");
  attn_model *m = nullptr;
  try {
    m = new attn_model{table, library,
                       std::vector<std::vector<float>>(table->num_kinds)};
  } catch (const std::bad_alloc &) {
    return closeOnError("out of memory");
  }
  *model = m;
  return ATTN_OK;
});
}

void attn_model_close(attn_model *model) {
  if (!model)
    return;
  if (model->library)
    dlclose(model->library);
  delete model;
}

attn_status attn_kind_set_sinks(attn_model *model, int32_t kind,
                                const attn_tensor *sinks) {
  return guardCall("attn_kind_set_sinks", [&]() -> attn_status {
  const attn_rt_kind *kd = nullptr;
  const char *call = "attn_kind_set_sinks";
  if (attn_status s = getKind(model, kind, call, ATTN_RT_OP_SDPA, kd))
    return s;
  if (!kd->has_sinks)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    std::string(call) + ": kind '" + kd->name +
                        "' has no attention sinks");
  if (!sinks || !sinks->data)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": sinks " +
                        (sinks ? "has no data" : "is NULL"));
  int64_t tp = std::max<int64_t>(1, kd->tensor_parallel);
  int64_t n = sinks->rank == 1 ? sinks->shape[0] : -1;
  if (sinks->dtype != ATTN_F32 || sinks->rank != 1 ||
      (n != kd->num_heads && (tp == 1 || n != kd->num_heads / tp)))
    return failWith(
        ATTN_ERR_SHAPE,
        std::string(call) + ": sinks must be ATTN_F32 [" +
            std::to_string(kd->num_heads) + "] (one logit per query head" +
            (tp > 1 ? ", or this rank's " + std::to_string(kd->num_heads / tp) +
                          " with --tensor-parallel=" + std::to_string(tp)
                    : std::string()) +
            "), got " + dtypeName(sinks->dtype) +
            (sinks->rank == 1 ? " [" + std::to_string(n) + "]"
                              : " of rank " + std::to_string(sinks->rank)));
  if (n > 1 && sinks->strides[0] != 1)
    return failWith(ATTN_ERR_LAYOUT,
                    std::string(call) + ": sinks must be contiguous (stride "
                                        "1), got stride " +
                        std::to_string(sinks->strides[0]));
  const float *src = static_cast<const float *>(sinks->data);
  for (int64_t h = 0; h < n; ++h)
    if (std::isnan(src[h]) || src[h] == INFINITY)
      return failWith(ATTN_ERR_VALUE,
                      std::string(call) + ": sinks[" + std::to_string(h) +
                          "] is " + (std::isnan(src[h]) ? "NaN" : "+inf") +
                          "; accepted: finite logits or -inf (no sink)");
  try {
    model->sinks[kind].assign(src, src + n);
  } catch (const std::bad_alloc &) {
    return failWith(ATTN_ERR_MEMORY, std::string(call) + ": out of memory");
  }
  return ATTN_OK;
});
}

attn_status attn_model_get_info(const attn_model *model,
                                attn_model_info *info) {
  return guardCall("attn_model_get_info", [&]() -> attn_status {
  if (!model || !info)
    return failWith(ATTN_ERR_ARGUMENT, std::string("attn_model_get_info: ") +
                                           (model ? "info" : "model") +
                                           " is NULL");
  const attn_rt_model *t = model->table;
  *info = attn_model_info{t->family, t->num_layers, int32_t(t->num_kinds),
                          t->hidden_size, t->describe_json};
  return ATTN_OK;
});
}

attn_status attn_kind_by_layer(const attn_model *model, int64_t layer,
                               int32_t *kind) {
  return guardCall("attn_kind_by_layer", [&]() -> attn_status {
  if (!model || !kind)
    return failWith(ATTN_ERR_ARGUMENT, std::string("attn_kind_by_layer: ") +
                                           (model ? "kind" : "model") +
                                           " is NULL");
  const attn_rt_model *t = model->table;
  if (layer < 0 || layer >= t->num_layers)
    return failWith(ATTN_ERR_ARGUMENT,
                    "attn_kind_by_layer: layer " + std::to_string(layer) +
                        " is outside [0, " + std::to_string(t->num_layers) +
                        ") (" + t->family + ")");
  if (t->layer_kind[layer] < 0)
    return failWith(ATTN_ERR_UNSUPPORTED,
                    "attn_kind_by_layer: layer " + std::to_string(layer) +
                        " is not compiled in this library");
  *kind = int32_t(t->layer_kind[layer]);
  return ATTN_OK;
});
}

attn_status attn_kind_get_info(const attn_model *model, int32_t kind,
                               attn_kind_info *info) {
  return guardCall("attn_kind_get_info", [&]() -> attn_status {
  if (!model || !info)
    return failWith(ATTN_ERR_ARGUMENT, std::string("attn_kind_get_info: ") +
                                           (model ? "info" : "model") +
                                           " is NULL");
  if (kind < 0 || kind >= model->table->num_kinds)
    return failWith(ATTN_ERR_ARGUMENT,
                    "attn_kind_get_info: kind " + std::to_string(kind) +
                        " is outside [0, " +
                        std::to_string(model->table->num_kinds) + ")");
  const attn_rt_kind &k = model->table->kinds[kind];
  *info = attn_kind_info{k.name,         k.op,           k.num_heads,
                         k.num_kv_heads, k.head_dim,     k.head_dim_v,
                         k.causal,       k.window,       k.bias_buckets,
                         k.scale,        k.softcap,      k.num_layers,
                         k.layers,       kvDtype(k),     k.paged != nullptr,
                         k.kv_lora_rank, k.rope_head_dim, k.chunk};
  return ATTN_OK;
});
}

void attn_set_num_threads(int32_t threads) {
  static const int defaultThreads =
      omp_get_max_threads ? omp_get_max_threads() : 1;
  if (omp_set_num_threads)
    omp_set_num_threads(threads > 0 ? threads : defaultThreads);
}

/// K and V (or their caches) of the kind's --kv-dtype, else an error that
/// says which element type this library's kernels read.
static bool
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
              "), q and out as f32");
  return true;
}

attn_status attn_sdpa(const attn_model *model, int32_t kind,
                      const attn_tensor *q, const attn_tensor *k,
                      const attn_tensor *v, const int64_t *kv_lengths,
                      const attn_tensor *bias_table, attn_tensor *out) {
  return guardCall("attn_sdpa", [&]() -> attn_status {
  const attn_rt_kind *kd = nullptr;
  if (attn_status s = getKind(model, kind, "attn_sdpa", ATTN_RT_OP_SDPA, kd))
    return s;
  const float *sinks = nullptr;
  if (kd->has_sinks)
    if (attn_status s =
            kindSinks(model, kind, *kd, "attn_sdpa", kd->num_heads, sinks))
      return s;
  TensorCheck check{"attn_sdpa", describeKind(*kd)};
  if (!check(q, "q", {-1, kd->num_heads, -1, kd->head_dim},
             {"B", "", "Sq", ""}))
    return check.status;
  int64_t b = q->shape[0], sq = q->shape[2];
  attn_dtype dt = kvDtype(*kd);
  if (!checkKVDtype(check, *kd, {{k, "k"}, {v, "v"}}) ||
      !check(k, "k", {b, kd->num_kv_heads, -1, kd->head_dim},
             {"", "", "Skv", ""}, dt))
    return check.status;
  int64_t skv = k->shape[2];
  check(v, "v", {b, kd->num_kv_heads, skv, kd->head_dim_v}, {}, dt);
  check(out, "out", {b, kd->num_heads, sq, kd->head_dim_v}, {});
  if (check.status != ATTN_OK)
    return check.status;
  if (kd->bias_buckets > 0 && !bias_table)
    return failWith(ATTN_ERR_ARGUMENT,
                      "attn_sdpa: kind '" + std::string(kd->name) +
                          "' adds T5's relative-position bias: pass its "
                          "table [" + std::to_string(kd->bias_buckets) +
                          ", " + std::to_string(kd->num_heads) + "]");
  if (kd->bias_buckets == 0 && bias_table)
    return failWith(ATTN_ERR_ARGUMENT,
                      "attn_sdpa: kind '" + std::string(kd->name) +
                          "' has no relative-bias table: pass NULL");
  if (bias_table)
    check(bias_table, "bias_table", {kd->bias_buckets, kd->num_heads}, {});
  if (check.status != ATTN_OK ||
      !noOverlap(check, *out, "out",
                 {{q, "q"}, {k, "k"}, {v, "v"}, {bias_table, "bias_table"}}) ||
      !checkLengths(check, kv_lengths, b, skv, "kv_lengths", "Skv"))
    return check.status;
  if (numelOf(*out) == 0)
    return ATTN_OK;
  std::vector<int64_t> full;
  if (!kv_lengths) {
    try {
      full.assign(b, skv);
    } catch (const std::bad_alloc &) {
      return failWith(ATTN_ERR_MEMORY, "attn_sdpa: out of memory");
    }
    kv_lengths = full.data();
  }
  using attn_rt::cli::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), dims(*out)),
                       dq = view4(f32(*q), dims(*q)),
                       dk = view4(f32(*k), dims(*k)),
                       dv = view4(f32(*v), dims(*v));
  // The lengths read once, before anything is written: an `out` that
  // overlaps the caller's array cannot change them under the kernel.
  std::vector<int64_t> lensCopy(kv_lengths, kv_lengths + b);
  int64_t *lens = lensCopy.data();
  attn_rt_memref_i64_1 dl{lens, lens, 0, {b}, {1}};
  if (sinks) {
    auto *sp = const_cast<float *>(sinks);
    attn_rt_memref_f32_1 ds{sp, sp, 0, {kd->num_heads}, {1}};
    reinterpret_cast<attn_rt_sdpa_sinks_fn>(kd->fused)(&dout, &dq, &dk, &dv,
                                                       &dl, &ds);
  } else if (bias_table) {
    attn_rt_memref_f32_2 dt =
        attn_rt::cli::view2(f32(*bias_table), dims(*bias_table));
    reinterpret_cast<attn_rt_sdpa_bias_fn>(kd->fused)(&dout, &dq, &dk, &dv,
                                                      &dl, &dt);
  } else {
    reinterpret_cast<attn_rt_sdpa_fn>(kd->fused)(&dout, &dq, &dk, &dv, &dl);
  }
  return ATTN_OK;
});
}

attn_status attn_gated_delta(const attn_model *model, int32_t kind,
                             const attn_tensor *q, const attn_tensor *k,
                             const attn_tensor *v, const attn_tensor *g,
                             const attn_tensor *beta,
                             const attn_tensor *state_in,
                             const int64_t *lengths, attn_tensor *out,
                             attn_tensor *state_out) {
  return guardCall("attn_gated_delta", [&]() -> attn_status {
  const attn_rt_kind *kd = nullptr;
  if (attn_status s =
          getKind(model, kind, "attn_gated_delta", ATTN_RT_OP_GATED_DELTA, kd))
    return s;
  TensorCheck check{"attn_gated_delta", describeKind(*kd)};
  if (!check(q, "q", {-1, kd->num_kv_heads, -1, kd->head_dim},
             {"B", "", "S", ""}))
    return check.status;
  int64_t b = q->shape[0], s = q->shape[2], hv = kd->num_heads;
  std::vector<int64_t> stateShape = {b, hv, kd->head_dim, kd->head_dim_v};
  check(k, "k", {b, kd->num_kv_heads, s, kd->head_dim}, {});
  check(v, "v", {b, hv, s, kd->head_dim_v}, {});
  check(g, "g", {b, hv, s}, {});
  check(beta, "beta", {b, hv, s}, {});
  if (state_in)
    check(state_in, "state_in", stateShape, {});
  check(out, "out", {b, hv, s, kd->head_dim_v}, {});
  if (state_out)
    check(state_out, "state_out", stateShape, {});
  bool inPlace = state_in && state_out && state_in->data == state_out->data;
  if (check.status != ATTN_OK ||
      !noOverlap(check, *out, "out",
                 {{q, "q"}, {k, "k"}, {v, "v"}, {g, "g"}, {beta, "beta"},
                  {state_in, "state_in"}, {state_out, "state_out"}}) ||
      (state_out && !inPlace &&
       !noOverlap(check, *state_out, "state_out",
                  {{q, "q"}, {k, "k"}, {v, "v"}, {g, "g"}, {beta, "beta"},
                   {state_in, "state_in"}})) ||
      !checkLengths(check, lengths, b, s, "lengths", "S"))
    return check.status;
  // No token and no state asked for: nothing to compute.
  if (b == 0 || (s == 0 && !state_out))
    return ATTN_OK;
  // What the caller leaves out: zeros in, a scratch state out, full
  // lengths; a state updated in place is read from a copy. The states of
  // b rows must fit a machine before any is allocated.
  int64_t perRow = hv * kd->head_dim * kd->head_dim_v;
  if (b > (int64_t(1) << 60) / std::max<int64_t>(perRow, 1))
    return failWith(ATTN_ERR_MEMORY,
                    "attn_gated_delta: the states of " + std::to_string(b) +
                        " batch rows (" + std::to_string(perRow) +
                        " floats each) are more than any machine's memory");
  attn_rt::Buf<float> zeros, scratch, copyIn;
  std::vector<int64_t> full;
  int64_t stateElems = b * perRow;
  try {
    if (!state_in)
      zeros.assign(stateElems, 0.0f);
    if (!state_out)
      scratch.resize(stateElems);
    if (inPlace)
      copyIn.assign(static_cast<float *>(state_in->data),
                    static_cast<float *>(state_in->data) + stateElems);
    if (!lengths)
      full.assign(b, s);
  } catch (const std::exception &) {
    return failWith(ATTN_ERR_MEMORY,
                    "attn_gated_delta: out of memory for a state of " +
                        std::to_string(4 * stateElems) + " bytes");
  }
  float *s0 = !state_in ? zeros.data()
              : inPlace ? copyIn.data()
                        : static_cast<float *>(state_in->data);
  float *s1 = state_out ? static_cast<float *>(state_out->data)
                        : scratch.data();
  // The lengths read once, before anything is written (see attn_sdpa).
  std::vector<int64_t> lensCopy;
  if (lengths)
    lensCopy.assign(lengths, lengths + b);
  int64_t *lens = lengths ? lensCopy.data() : full.data();
  using attn_rt::cli::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), dims(*out)),
                       dq = view4(f32(*q), dims(*q)),
                       dk = view4(f32(*k), dims(*k)),
                       dv = view4(f32(*v), dims(*v));
  attn_rt_memref_f32_3 dg = attn_rt::cli::view3(f32(*g), dims(*g)),
                       db = attn_rt::cli::view3(f32(*beta), dims(*beta));
  attn_rt_memref_f32_4 ds0 = view4(s0, stateShape),
                       ds1 = view4(s1, stateShape);
  attn_rt_memref_i64_1 dl{lens, lens, 0, {b}, {1}};
  reinterpret_cast<attn_rt_gdn_fn>(kd->fused)(&dout, &ds1, &dq, &dk, &dv, &dg,
                                              &db, &ds0, &dl);
  return ATTN_OK;
});
}

/// Checks a paged cache's pools (of the kind's kv_dtype) and block table
/// for `kd`; sets `pages`, `pageSize` and `maxPages`.
static bool checkPaged(TensorCheck &check, const attn_rt_kind *kd,
                       const attn_tensor *kCache, const attn_tensor *vCache,
                       const attn_tensor *table, int64_t batch,
                       int64_t &pages, int64_t &pageSize, int64_t &maxPages,
                       int64_t hkv = -1) {
  if (hkv < 0)
    hkv = kd->num_kv_heads;
  attn_dtype dt = kvDtype(*kd);
  if (!checkKVDtype(check, *kd, {{kCache, "k_cache"}, {vCache, "v_cache"}}))
    return false;
  if (!check(kCache, "k_cache", {-1, hkv, -1, kd->head_dim},
             {"num_pages", "", "page_size", ""}, dt))
    return false;
  pages = kCache->shape[0];
  pageSize = kCache->shape[2];
  if (pageSize == 0)
    return check.fail(ATTN_ERR_SHAPE, std::string(check.call) +
                                          ": k_cache has page_size 0");
  if (!check(vCache, "v_cache", {pages, hkv, pageSize, kd->head_dim_v}, {},
             dt) ||
      !check(table, "block_table", {batch, -1}, {"", "max_pages"}, ATTN_I32))
    return false;
  maxPages = table->shape[1];
  return true;
}

/// The tokens a block table can hold, max_pages · page_size (saturated: the
/// shapes of hostile input may multiply past int64).
static int64_t capacity(int64_t maxPages, int64_t pageSize) {
  __int128 c = (__int128)maxPages * pageSize;
  return c > INT64_MAX ? INT64_MAX : int64_t(c);
}

/// The pages that the tokens [lo, hi) of every row use must be in the
/// pool [0, pages).
static bool checkPagesUsed(TensorCheck &check, const attn_tensor *table,
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

/// attn_decode_paged and, with `q_pos` and `stats` (and `range_start`),
/// attn_decode_paged_part.
static attn_status decodePaged(const attn_model *model, int32_t kind,
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
  TensorCheck check{call, describeKind(*kd) +
                              (tp > 1 ? ", each rank its " +
                                            std::to_string(hq) + " query and " +
                                            std::to_string(hkv) +
                                            " KV heads (--tensor-parallel=" +
                                            std::to_string(tp) + ")"
                                      : std::string())};
  if (!check(q, "q", {-1, hq, -1, kd->head_dim}, {"B", "", "Sq", ""}))
    return check.status;
  int64_t b = q->shape[0], sq = q->shape[2], pages, pageSize, maxPages;
  if (!checkPaged(check, kd, k_cache, v_cache, block_table, b, pages,
                  pageSize, maxPages, hkv) ||
      !check(out, "out", {b, hq, sq, kd->head_dim_v}, {}) ||
      (part && !check(stats, "stats", {b, hq, sq, 2}, {})))
    return check.status;
  if (!kv_lengths && b > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": kv_lengths is NULL; pass each "
                                        "sequence's length in tokens");
  if (part && !q_pos && b > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": q_pos is NULL; pass each "
                                        "sequence's position of its first "
                                        "query row in the cache's range");
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
  std::vector<std::pair<const attn_tensor *, const char *>> ins = {
      {q, "q"},
      {k_cache, "k_cache"},
      {v_cache, "v_cache"},
      {block_table, "block_table"}};
  if (!noOverlap(check, *out, "out", ins) ||
      (part && !noOverlap(check, *stats, "stats", ins)) ||
      !checkLengths(check, kv_lengths, b, capacity(maxPages, pageSize),
                    "kv_lengths",
                    "max_pages * page_size") ||
      !checkPagesUsed(check, block_table, nullptr, kv_lengths, b, pages,
                      pageSize))
    return check.status;
  if (part && overlaps(*stats, *out))
    return failWith(ATTN_ERR_LAYOUT,
                    std::string(call) + ": stats overlaps out");
  if (numelOf(*out) == 0)
    return ATTN_OK;
  using attn_rt::cli::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), dims(*out)),
                       dq = view4(f32(*q), dims(*q)),
                       dk = view4(f32(*k_cache), dims(*k_cache)),
                       dv = view4(f32(*v_cache), dims(*v_cache));
  // (A bf16/f16 cache's descriptor holds the same addresses; the kernel
  // indexes it by 2-byte elements.)
  auto *t = static_cast<int32_t *>(block_table->data);
  attn_rt_memref_i32_2 dt{t, t, 0, {b, maxPages}, {maxPages, 1}};
  // The lengths and positions read once, before anything is written.
  std::vector<int64_t> lensCopy(kv_lengths, kv_lengths + b), posCopy,
      startCopy(size_t(b), 0);
  if (q_pos)
    posCopy.assign(q_pos, q_pos + b);
  if (range_start)
    startCopy.assign(range_start, range_start + b);
  int64_t *lens = lensCopy.data();
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
  attn_rt_memref_f32_4 ds = view4(f32(*stats), dims(*stats));
  int64_t *pos = posCopy.data(), *start = startCopy.data();
  attn_rt_memref_i64_1 dp{pos, pos, 0, {b}, {1}},
      dr{start, start, 0, {b}, {1}};
  if (kd->has_sinks) {
    std::vector<float> none;
    try {
      none.assign(size_t(hq), -INFINITY);
    } catch (const std::bad_alloc &) {
      return failWith(ATTN_ERR_MEMORY, std::string(call) + ": out of memory");
    }
    attn_rt_memref_f32_1 dn{none.data(), none.data(), 0, {hq}, {1}};
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
  TensorCheck check{"attn_append_kv", describeKind(*kd)};
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
  std::vector<int64_t> end(b);
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
  if (overlaps(*k_cache, *v_cache))
    return failWith(ATTN_ERR_LAYOUT,
                      "attn_append_kv: k_cache overlaps v_cache");
  if (!checkPagesUsed(check, block_table, start, end.data(), b, pages,
                      pageSize))
    return check.status;
  const int32_t *table = static_cast<const int32_t *>(block_table->data);
  int64_t hkv = kd->num_kv_heads;
  int64_t eb = elementBytes(dt);
  // The starts read once, before the caches are written (a cache that
  // overlaps the caller's array cannot move them).
  std::vector<int64_t> first(start, start + b);
  for (auto [cache, src, d] :
       {std::tuple<attn_tensor *, const attn_tensor *, int64_t>{
            k_cache, k_new, kd->head_dim},
        {v_cache, v_new, kd->head_dim_v}}) {
    char *pool = static_cast<char *>(cache->data);
    const char *in = static_cast<const char *>(src->data);
    for (int64_t i = 0; i < b; ++i)
      for (int64_t h = 0; h < hkv; ++h)
        for (int64_t t = 0; t < end[i] - first[i]; ++t) {
          int64_t pos = first[i] + t;
          int64_t page = table[i * maxPages + pos / pageSize];
          std::memcpy(
              pool + ((page * hkv + h) * pageSize + pos % pageSize) * d * eb,
              in + ((i * hkv + h) * n + t) * d * eb, d * eb);
        }
  }
  return ATTN_OK;
});
}

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
                        "' has no paged latent kernel (a GPU library, or "
                        "one compiled with --entries without paged)");
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
  TensorCheck check{call, describeLatent(*kd)};
  if (!check(q, "q", {-1, h, -1, row}, {"B", "", "Sq", ""}))
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
      !check(out, "out", {b, h, sq, r}, {}) ||
      (part && !check(stats, "stats", {b, h, sq, 2}, {})))
    return check.status;
  int64_t maxPages = block_table->shape[1];
  if (!kv_lengths && b > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": kv_lengths is NULL; pass each "
                                        "sequence's length in tokens");
  if (part && !qPos && b > 0)
    return failWith(ATTN_ERR_ARGUMENT,
                    std::string(call) + ": q_pos is NULL; pass each "
                                        "sequence's position of its first "
                                        "query row in the cache's range");
  // The lengths and positions, read once: the kernel reads these copies,
  // so an output that shares their memory cannot change them under it.
  std::vector<int64_t> lens(kv_lengths, kv_lengths + b);
  std::vector<int64_t> pos(part ? qPos : nullptr, part ? qPos + b : nullptr);
  std::vector<std::pair<const attn_tensor *, const char *>> ins = {
      {q, "q"}, {latent_cache, "latent_cache"}, {block_table, "block_table"}};
  if (!noOverlap(check, *out, "out", ins) ||
      (part && !noOverlap(check, *stats, "stats", ins)) ||
      !checkLengths(check, lens.data(), b, capacity(maxPages, pageSize),
                    "kv_lengths", "max_pages * page_size") ||
      !checkPagesUsed(check, block_table, nullptr, lens.data(), b, pages,
                      pageSize))
    return check.status;
  if (part && overlaps(*stats, *out))
    return failWith(ATTN_ERR_LAYOUT,
                    std::string(call) + ": stats overlaps out");
  if (numelOf(*out) == 0)
    return ATTN_OK;
  using attn_rt::cli::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), dims(*out)),
                       dq = view4(f32(*q), dims(*q));
  attn_rt_memref_f32_3 dc = attn_rt::cli::view3(f32(*latent_cache),
                                                dims(*latent_cache));
  auto *t = static_cast<int32_t *>(block_table->data);
  attn_rt_memref_i32_2 dt{t, t, 0, {b, maxPages}, {maxPages, 1}};
  attn_rt_memref_i64_1 dl{lens.data(), lens.data(), 0, {b}, {1}};
  if (!part) {
    kd->mla_paged(&dout, &dq, &dc, &dt, &dl);
    return ATTN_OK;
  }
  attn_rt_memref_f32_4 ds = view4(f32(*stats), dims(*stats));
  attn_rt_memref_i64_1 dp{pos.data(), pos.data(), 0, {b}, {1}};
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
  TensorCheck check{call, describeLatent(*kd)};
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
  std::vector<int64_t> first(start, start + b), end(b);
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
      !checkPagesUsed(check, block_table, first.data(), end.data(), b, pages,
                      pageSize))
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

void attn_rt::setLastError(std::string msg) { lastError = std::move(msg); }
