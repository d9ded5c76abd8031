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

#include "buffer.h"
#include "capi_internal.h"
#include "resources.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

using namespace attn_rt::capi;
using attn_rt::guardCall;

/// The C API function `name` of the library attn_model_open loaded for
/// `model` (each library keeps its own heap), or null where that is this
/// library (`self`) or `model` is the caller's own.
template <typename Fn>
static Fn *otherLibrary(const attn_model *model, const char *name, Fn *self) {
  if (!model || !model->library)
    return nullptr;
  auto *fn = reinterpret_cast<Fn *>(dlsym(model->library, name));
  return fn == self ? nullptr : fn;
}

extern "C" {

int32_t attn_api_version(void) { return ATTN_API_VERSION; }

const char *attn_last_error(void) { return lastError().c_str(); }

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
  *info = attn_kind_info{
      k.name,          k.op,         k.num_heads,        k.num_kv_heads,
      k.head_dim,      k.head_dim_v, k.causal,           k.window,
      k.bias_buckets,  k.scale,      k.softcap,          k.num_layers,
      k.layers,        kvDtype(k),   k.paged != nullptr, k.kv_lora_rank,
      k.rope_head_dim, k.chunk,      k.no_delta,         k.channel_gate,
      qoDtype(k)};
  return ATTN_OK;
});
}

void attn_set_num_threads(int32_t threads) {
  static const int defaultThreads =
      omp_get_max_threads ? omp_get_max_threads() : 1;
  if (omp_set_num_threads)
    omp_set_num_threads(threads > 0 ? threads : defaultThreads);
}

attn_status attn_workspace_get_info(const attn_model *model,
                                    attn_workspace_info *info) {
  return guardCall("attn_workspace_get_info", [&]() -> attn_status {
    if (!model)
      return failWith(ATTN_ERR_ARGUMENT,
                      "attn_workspace_get_info: model is NULL");
    if (!info)
      return failWith(ATTN_ERR_ARGUMENT,
                      "attn_workspace_get_info: info is NULL");
    // A handle of that library's own model for its function.
    attn_model own{model->table, nullptr};
    if (auto *fn = otherLibrary(model, "attn_workspace_get_info",
                                &attn_workspace_get_info))
      return fn(&own, info);
    attn_rt_workspace_info w;
    attn_rt_workspace_stats(&w);
    *info = attn_workspace_info{w.held_bytes, w.in_use_bytes, w.peak_bytes,
                                w.grows, w.threads};
    return ATTN_OK;
  });
}

namespace {
/// attn_buffer_alloc's live buffers and their sizes (what freeBuffer
/// needs); few and long-lived (caches), so a map under a lock.
std::mutex gBuffersLock;
std::unordered_map<void *, std::size_t> gBuffers;
} // namespace

attn_status attn_buffer_alloc(int64_t bytes, void **out) {
  return guardCall("attn_buffer_alloc", [&]() -> attn_status {
    if (!out)
      return failWith(ATTN_ERR_ARGUMENT, "attn_buffer_alloc: out is NULL");
    *out = nullptr;
    if (bytes < 1)
      return failWith(ATTN_ERR_ARGUMENT, "attn_buffer_alloc: bytes is " +
                                             std::to_string(bytes) +
                                             "; it must be at least 1");
    // Past the machine's memory budget: refused by name, before any
    // allocator sees it (AddressSanitizer's aborts on such sizes).
    std::string error;
    if (!attn_rt::fitsInMemory(bytes, "attn_buffer_alloc: the buffer", error))
      return failWith(ATTN_ERR_MEMORY, error);
    void *p = attn_rt::allocateBuffer(std::size_t(bytes));
    try {
      std::lock_guard<std::mutex> hold(gBuffersLock);
      gBuffers.emplace(p, std::size_t(bytes));
    } catch (...) {
      attn_rt::freeBuffer(p, std::size_t(bytes));
      throw;
    }
    *out = p;
    return ATTN_OK;
  });
}

attn_status attn_buffer_free(void *buffer) {
  return guardCall("attn_buffer_free", [&]() -> attn_status {
    if (!buffer)
      return ATTN_OK;
    std::size_t bytes;
    {
      std::lock_guard<std::mutex> hold(gBuffersLock);
      auto it = gBuffers.find(buffer);
      if (it == gBuffers.end())
        return failWith(ATTN_ERR_ARGUMENT,
                        "attn_buffer_free: the pointer is not a live buffer "
                        "of attn_buffer_alloc");
      bytes = it->second;
      gBuffers.erase(it);
    }
    attn_rt::freeBuffer(buffer, bytes);
    return ATTN_OK;
  });
}

attn_status attn_workspace_trim(const attn_model *model) {
  return guardCall("attn_workspace_trim", [&]() -> attn_status {
    if (!model)
      return failWith(ATTN_ERR_ARGUMENT, "attn_workspace_trim: model is NULL");
    attn_model own{model->table, nullptr};
    if (auto *fn =
            otherLibrary(model, "attn_workspace_trim", &attn_workspace_trim))
      return fn(&own);
    (void)attn_rt_workspace_trim();
    return ATTN_OK;
  });
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
  TensorCheck check{"attn_sdpa", kd, describeKind};
  attn_dtype qo = qoDtype(*kd);
  if (!checkQODtype(check, *kd, {{q, "q"}, {out, "out"}}) ||
      !check(q, "q", {-1, kd->num_heads, -1, kd->head_dim}, {"B", "", "Sq", ""},
             qo))
    return check.status;
  int64_t b = q->shape[0], sq = q->shape[2];
  attn_dtype dt = kvDtype(*kd);
  if (!checkKVDtype(check, *kd, {{k, "k"}, {v, "v"}}) ||
      !check(k, "k", {b, kd->num_kv_heads, -1, kd->head_dim},
             {"", "", "Skv", ""}, dt))
    return check.status;
  int64_t skv = k->shape[2];
  check(v, "v", {b, kd->num_kv_heads, skv, kd->head_dim_v}, {}, dt);
  check(out, "out", {b, kd->num_heads, sq, kd->head_dim_v}, {}, qo);
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
  using attn_rt::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), out->shape),
                       dq = view4(f32(*q), q->shape),
                       dk = view4(f32(*k), k->shape),
                       dv = view4(f32(*v), v->shape);
  // The lengths read once, before anything is written: an `out` that
  // overlaps the caller's array cannot change them under the kernel (this
  // thread's reused buffer; Skv for every row when NULL).
  int64_t *lens = attn_rt::callScratchI64(0, size_t(b));
  if (kv_lengths)
    std::copy(kv_lengths, kv_lengths + b, lens);
  else
    std::fill(lens, lens + b, skv);
  attn_rt_memref_i64_1 dl{lens, lens, 0, {b}, {1}};
  if (sinks) {
    auto *sp = const_cast<float *>(sinks);
    attn_rt_memref_f32_1 ds{sp, sp, 0, {kd->num_heads}, {1}};
    reinterpret_cast<attn_rt_sdpa_sinks_fn>(kd->fused)(&dout, &dq, &dk, &dv,
                                                       &dl, &ds);
  } else if (bias_table) {
    attn_rt_memref_f32_2 dt =
        attn_rt::view2(f32(*bias_table), bias_table->shape);
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
  TensorCheck check{"attn_gated_delta", kd, describeKind};
  if (!check(q, "q", {-1, kd->num_kv_heads, -1, kd->head_dim},
             {"B", "", "S", ""}))
    return check.status;
  int64_t b = q->shape[0], s = q->shape[2], hv = kd->num_heads;
  const int64_t stateShape[4] = {b, hv, kd->head_dim, kd->head_dim_v};
  check(k, "k", {b, kd->num_kv_heads, s, kd->head_dim}, {});
  check(v, "v", {b, hv, s, kd->head_dim_v}, {});
  if (kd->channel_gate)
    check(g, "g", {b, hv, s, kd->head_dim}, {});
  else
    check(g, "g", {b, hv, s}, {});
  check(beta, "beta", {b, hv, s}, {});
  if (state_in)
    check(state_in, "state_in", {b, hv, kd->head_dim, kd->head_dim_v}, {});
  check(out, "out", {b, hv, s, kd->head_dim_v}, {});
  if (state_out)
    check(state_out, "state_out", {b, hv, kd->head_dim, kd->head_dim_v}, {});
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
  // (This thread's reused buffers: a decode step at a size already seen
  // allocates nothing.)
  int64_t stateElems = b * perRow;
  float *s0 = static_cast<float *>(state_in ? state_in->data : nullptr);
  float *s1 = static_cast<float *>(state_out ? state_out->data : nullptr);
  int64_t *lens = attn_rt::callScratchI64(0, size_t(b));
  try {
    if (!state_in) {
      s0 = attn_rt::callScratchF32(0, size_t(stateElems));
      std::fill(s0, s0 + stateElems, 0.0f);
    } else if (inPlace) {
      float *copy = attn_rt::callScratchF32(0, size_t(stateElems));
      std::copy(s0, s0 + stateElems, copy);
      s0 = copy;
    }
    if (!state_out)
      s1 = attn_rt::callScratchF32(1, size_t(stateElems));
  } catch (const std::exception &) {
    return failWith(ATTN_ERR_MEMORY,
                    "attn_gated_delta: out of memory for a state of " +
                        std::to_string(4 * stateElems) + " bytes");
  }
  // The lengths read once, before anything is written (see attn_sdpa).
  if (lengths)
    std::copy(lengths, lengths + b, lens);
  else
    std::fill(lens, lens + b, s);
  using attn_rt::view4;
  attn_rt_memref_f32_4 dout = view4(f32(*out), out->shape),
                       dq = view4(f32(*q), q->shape),
                       dk = view4(f32(*k), k->shape),
                       dv = view4(f32(*v), v->shape);
  attn_rt_memref_f32_3 db = attn_rt::view3(f32(*beta), beta->shape);
  attn_rt_memref_f32_4 ds0 = view4(s0, stateShape),
                       ds1 = view4(s1, stateShape);
  attn_rt_memref_i64_1 dl{lens, lens, 0, {b}, {1}};
  if (kd->channel_gate) {
    attn_rt_memref_f32_4 dg = view4(f32(*g), g->shape);
    reinterpret_cast<attn_rt_kda_fn>(kd->fused)(&dout, &ds1, &dq, &dk, &dv, &dg,
                                                &db, &ds0, &dl);
    return ATTN_OK;
  }
  attn_rt_memref_f32_3 dg = attn_rt::view3(f32(*g), g->shape);
  reinterpret_cast<attn_rt_gdn_fn>(kd->fused)(&dout, &ds1, &dq, &dk, &dv, &dg,
                                              &db, &ds0, &dl);
  return ATTN_OK;
});
}

} // extern "C"
