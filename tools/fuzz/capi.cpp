//===- capi.cpp - libFuzzer target: the C API's entry points --------------===//
//
// Bytes as a sequence of C API calls on a library attn-compile built
// (ATTN_FUZZ_CAPI_LIB; tools/fuzz.sh builds a Qwen3-Next one: a Gated
// DeltaNet kind and a softmax kind with paged kernels): each call gets
// tensors whose shapes, strides, dtypes, NULLs and aliasing come from the
// bytes, with lengths, starts and counts of any value. What must hold:
// every call returns a status (no crash, no exception, no sanitizer
// report), a failed call names what is wrong and writes nothing, and no
// size makes it allocate what the machine cannot hold.
//
// The buffers behind a tensor are what it declares when that is at most
// 2^16 elements; a tensor declaring more gets a small buffer, and so must
// be refused before any element is read: its dims are either absurd (a
// product past 2^60: refused by the shape check) or include a 0 (empty:
// nothing to read).
//
//===----------------------------------------------------------------------===//

#include "attn.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dlfcn.h>

namespace {

/// The library's entry points (dlsym: the library carries its own copy of
/// the runtime).
struct Api {
  decltype(&attn_model_open) open;
  decltype(&attn_sdpa) sdpa;
  decltype(&attn_gated_delta) gdn;
  decltype(&attn_decode_paged) decode;
  decltype(&attn_decode_paged_part) decodePart;
  decltype(&attn_append_kv) append;
  decltype(&attn_kind_set_sinks) setSinks;
  decltype(&attn_kind_get_info) kindInfo;
  decltype(&attn_last_error) lastError;
  attn_model *model = nullptr;
};

Api &api() {
  static Api a = [] {
    Api r{};
    const char *path = std::getenv("ATTN_FUZZ_CAPI_LIB");
    if (!path) {
      std::fprintf(stderr, "attn-fuzz-capi: set ATTN_FUZZ_CAPI_LIB to a "
                           "library built with attn-compile --emit=shared\n");
      std::exit(2);
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::fprintf(stderr, "attn-fuzz-capi: %s\n", dlerror());
      std::exit(2);
    }
    auto sym = [&](const char *n) {
      void *p = dlsym(lib, n);
      if (!p) {
        std::fprintf(stderr, "attn-fuzz-capi: %s has no %s\n", path, n);
        std::exit(2);
      }
      return p;
    };
    r.open = reinterpret_cast<decltype(r.open)>(sym("attn_model_open"));
    r.sdpa = reinterpret_cast<decltype(r.sdpa)>(sym("attn_sdpa"));
    r.gdn = reinterpret_cast<decltype(r.gdn)>(sym("attn_gated_delta"));
    r.decode = reinterpret_cast<decltype(r.decode)>(sym("attn_decode_paged"));
    r.decodePart = reinterpret_cast<decltype(r.decodePart)>(
        sym("attn_decode_paged_part"));
    r.append = reinterpret_cast<decltype(r.append)>(sym("attn_append_kv"));
    r.setSinks =
        reinterpret_cast<decltype(r.setSinks)>(sym("attn_kind_set_sinks"));
    r.kindInfo =
        reinterpret_cast<decltype(r.kindInfo)>(sym("attn_kind_get_info"));
    r.lastError =
        reinterpret_cast<decltype(r.lastError)>(sym("attn_last_error"));
    if (r.open(path, &r.model) != ATTN_OK) {
      std::fprintf(stderr, "attn-fuzz-capi: %s\n", r.lastError());
      std::exit(2);
    }
    return r;
  }();
  return a;
}

constexpr int64_t kMaxElements = int64_t(1) << 16;

/// The buffers of one call; tensors point into them.
struct Arena {
  std::vector<std::unique_ptr<unsigned char[]>> blocks;
  std::vector<size_t> sizes;
  void *get(size_t bytes) {
    blocks.emplace_back(new unsigned char[bytes ? bytes : 1]());
    sizes.push_back(bytes);
    return blocks.back().get();
  }
  /// The bytes of the buffer at `p` (0: not one of ours).
  size_t sizeOf(const void *p) const {
    for (size_t i = 0; i < blocks.size(); ++i)
      if (blocks[i].get() == p)
        return sizes[i];
    return 0;
  }
};

/// ATTN_FUZZ_DEBUG=1: each tensor as it is made (to read a reproducer).
void debugTensor(const attn_tensor &t) {
  static bool on = std::getenv("ATTN_FUZZ_DEBUG");
  if (!on)
    return;
  std::fprintf(stderr, "tensor dtype %d rank %d data %p shape", int(t.dtype),
               int(t.rank), t.data);
  for (int32_t i = 0; i < t.rank; ++i)
    std::fprintf(stderr, " %lld", (long long)t.shape[i]);
  std::fprintf(stderr, " strides");
  for (int32_t i = 0; i < t.rank; ++i)
    std::fprintf(stderr, " %lld", (long long)t.strides[i]);
  std::fprintf(stderr, "\n");
}

/// A dim: mostly what the kinds take (0..80), sometimes absurd.
int64_t fuzzDim(FuzzedDataProvider &in, int64_t typical) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
  case 0:
    return 0;
  case 1:
    return int64_t(1) << in.ConsumeIntegralInRange<int>(20, 62);
  case 2:
    return -in.ConsumeIntegralInRange<int64_t>(1, 3);
  case 3:
    return in.ConsumeIntegralInRange<int64_t>(0, 300);
  default:
    return in.ConsumeBool() ? typical
                            : in.ConsumeIntegralInRange<int64_t>(1, 80);
  }
}

/// A tensor of `rank` dims near `typical`, or NULL; its buffer when it is
/// small enough to hold (else see the file comment: only refused or empty
/// shapes are passed).
attn_tensor *fuzzTensor(FuzzedDataProvider &in, Arena &arena,
                        std::vector<attn_tensor> &store,
                        std::vector<int64_t> typical, attn_dtype dtype,
                        bool &usable) {
  usable = true;
  if (in.ConsumeIntegralInRange<int>(0, 30) == 0)
    return nullptr;
  attn_tensor t{};
  t.dtype = in.ConsumeIntegralInRange<int>(0, 20) == 0
                ? attn_dtype(in.ConsumeIntegralInRange<int>(0, 5))
                : dtype;
  t.rank = in.ConsumeIntegralInRange<int>(0, 25) == 0
               ? in.ConsumeIntegralInRange<int>(0, 4)
               : int32_t(typical.size());
  unsigned __int128 extent = 1;
  bool anyNegative = false;
  for (int32_t i = 0; i < t.rank; ++i) {
    int64_t want = i < int32_t(typical.size()) ? typical[i] : 1;
    t.shape[i] = in.ConsumeIntegralInRange<int>(0, 3) == 0
                     ? fuzzDim(in, want)
                     : want;
    anyNegative |= t.shape[i] < 0;
    int64_t d = t.shape[i] < 0 ? 1 : t.shape[i];
    extent *= (unsigned __int128)(d > 0 ? d : 1);
    if (extent > ((unsigned __int128)1 << 100))
      extent = (unsigned __int128)1 << 100;
  }
  // Row-major strides (wrapping, as a caller's arithmetic would, for
  // absurd shapes), sometimes not.
  uint64_t stride = 1;
  for (int32_t i = t.rank - 1; i >= 0; --i) {
    t.strides[i] = int64_t(stride);
    stride *= uint64_t(t.shape[i] > 0 ? t.shape[i] : 1);
  }
  // Sometimes the outer dims nested in another order (the last stays
  // contiguous): the strided page pools the paged calls take (vLLM's
  // [pages, P, Hkv, d] as [pages, Hkv, P, d], head-major ones), which the
  // other arguments refuse.
  if (t.rank >= 3 && in.ConsumeIntegralInRange<int>(0, 7) == 0) {
    int32_t order[ATTN_MAX_RANK];
    for (int32_t i = 0; i < t.rank - 1; ++i)
      order[i] = i;
    for (int32_t i = t.rank - 2; i > 0; --i)
      std::swap(order[i], order[in.ConsumeIntegralInRange<int32_t>(0, i)]);
    uint64_t s = uint64_t(t.shape[t.rank - 1] > 0 ? t.shape[t.rank - 1] : 1);
    for (int32_t i = t.rank - 2; i >= 0; --i) {
      t.strides[order[i]] = int64_t(s);
      s *= uint64_t(t.shape[order[i]] > 0 ? t.shape[order[i]] : 1);
    }
  }
  if (t.rank && in.ConsumeIntegralInRange<int>(0, 20) == 0)
    t.strides[in.ConsumeIntegralInRange<int>(0, t.rank - 1)] += 1;
  // The declared bytes; a buffer only for what fits the arena.
  unsigned __int128 declared = 1;
  bool empty = false;
  for (int32_t i = 0; i < t.rank; ++i) {
    if (t.shape[i] <= 0) {
      empty = t.shape[i] == 0 || empty;
      continue;
    }
    declared *= (unsigned __int128)t.shape[i];
    if (declared > ((unsigned __int128)1 << 100))
      declared = (unsigned __int128)1 << 100;
  }
  bool absurd = extent > ((unsigned __int128)1 << 60);
  if (!anyNegative && !empty && !absurd && declared > kMaxElements) {
    // A real size this target cannot back with memory: not passed.
    usable = false;
    return nullptr;
  }
  size_t bytes = (!empty && !absurd && !anyNegative)
                     ? size_t(declared) * 8 + 64
                     : 64;
  t.data = in.ConsumeIntegralInRange<int>(0, 40) == 0 ? nullptr
                                                        : arena.get(bytes);
  debugTensor(t);
  store.push_back(t);
  return &store.back();
}

/// `n` int64 values: plausible ones (0..limit) or any, or NULL.
const int64_t *fuzzInts(FuzzedDataProvider &in, Arena &arena, int64_t n,
                        int64_t limit) {
  if (in.ConsumeIntegralInRange<int>(0, 20) == 0)
    return nullptr;
  n = std::max<int64_t>(0, std::min<int64_t>(n, 4096));
  auto *p = static_cast<int64_t *>(arena.get(size_t(n + 1) * 8));
  for (int64_t i = 0; i < n; ++i)
    p[i] = in.ConsumeIntegralInRange<int>(0, 10) == 0
               ? in.ConsumeIntegral<int64_t>()
               : in.ConsumeIntegralInRange<int64_t>(0, limit);
  return p;
}

/// A failure must say why.
void checkStatus(attn_status s) {
  if (s != ATTN_OK && !*api().lastError())
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Api &a = api();
  FuzzedDataProvider in(data, size);
  Arena arena;
  std::vector<attn_tensor> store;
  store.reserve(32); // tensors are handed out by address
  int32_t kind = in.ConsumeIntegralInRange<int>(0, 9) == 0
                     ? in.ConsumeIntegralInRange<int32_t>(-2, 4)
                     : in.ConsumeIntegralInRange<int32_t>(0, 1);
  attn_kind_info info{};
  int64_t hq = 4, hkv = 2, d = 64, dv = 64;
  if (a.kindInfo(a.model, kind, &info) == ATTN_OK) {
    hq = info.num_heads;
    hkv = info.num_kv_heads;
    d = info.head_dim;
    dv = info.head_dim_v;
  }
  int64_t B = in.ConsumeIntegralInRange<int64_t>(1, 3),
          S = in.ConsumeIntegralInRange<int64_t>(1, 40),
          Sq = in.ConsumeIntegralInRange<int64_t>(1, 8),
          P = in.ConsumeIntegralInRange<int64_t>(1, 16),
          pages = in.ConsumeIntegralInRange<int64_t>(1, 8),
          maxPages = in.ConsumeIntegralInRange<int64_t>(1, 8);
  bool ok = true;
  auto T = [&](std::vector<int64_t> shape, attn_dtype dt = ATTN_F32) {
    bool usable;
    attn_tensor *t = fuzzTensor(in, arena, store, std::move(shape), dt, usable);
    ok = ok && usable;
    return t;
  };
  // Aliasing: out may be one of the inputs' buffers (one that holds all
  // of out: a caller's buffer is as large as the tensor it declares, so an
  // overlap is the API's to refuse).
  auto alias = [&](attn_tensor *out, std::vector<attn_tensor *> others) {
    if (out && in.ConsumeIntegralInRange<int>(0, 8) == 0 && !others.empty()) {
      attn_tensor *o = others[in.ConsumeIntegralInRange<size_t>(
          0, others.size() - 1)];
      if (o && o->data && out->data &&
          arena.sizeOf(o->data) >= arena.sizeOf(out->data))
        out->data = o->data;
    }
  };
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
  case 0: {
    attn_tensor *q = T({B, hq, Sq, d}), *k = T({B, hkv, S, d}),
                *v = T({B, hkv, S, dv}), *o = T({B, hq, Sq, dv});
    const int64_t *lens = fuzzInts(in, arena, B, S);
    alias(o, {q, k, v});
    if (ok)
      checkStatus(a.sdpa(a.model, kind, q, k, v, lens, nullptr, o));
    break;
  }
  case 1: {
    attn_tensor *q = T({B, hkv, S, d}), *k = T({B, hkv, S, d}),
                *v = T({B, hq, S, dv}), *g = T({B, hq, S}),
                *beta = T({B, hq, S}), *o = T({B, hq, S, dv});
    attn_tensor *s0 = in.ConsumeBool() ? T({B, hq, d, dv}) : nullptr;
    attn_tensor *s1 = in.ConsumeBool() ? T({B, hq, d, dv}) : nullptr;
    if (s0 && s1 && in.ConsumeBool())
      s1 = s0; // in place
    const int64_t *lens = fuzzInts(in, arena, B, S);
    alias(o, {q, k, v, g});
    if (ok)
      checkStatus(a.gdn(a.model, kind, q, k, v, g, beta, s0, lens, o, s1));
    break;
  }
  case 2:
  case 3: {
    attn_tensor *q = T({B, hq, Sq, d}), *kc = T({pages, hkv, P, d}),
                *vc = T({pages, hkv, P, dv}),
                *table = T({B, maxPages}, ATTN_I32), *o = T({B, hq, Sq, dv});
    if (table && table->data && ok)
      for (int64_t i = 0; i < B * maxPages && table->rank == 2 &&
                          table->shape[0] == B && table->shape[1] == maxPages;
           ++i)
        static_cast<int32_t *>(table->data)[i] =
            in.ConsumeIntegralInRange<int>(0, 10) == 0
                ? in.ConsumeIntegral<int32_t>()
                : in.ConsumeIntegralInRange<int32_t>(0, int32_t(pages));
    const int64_t *lens = fuzzInts(in, arena, B, maxPages * P + 2);
    alias(o, {q, kc, vc, table});
    if (!ok)
      break;
    if (in.ConsumeBool()) {
      checkStatus(a.decode(a.model, kind, q, kc, vc, table, lens, o));
    } else {
      attn_tensor *st = T({B, hq, Sq, 2});
      const int64_t *pos = fuzzInts(in, arena, B, S);
      const int64_t *start = fuzzInts(in, arena, B, S);
      if (ok)
        checkStatus(a.decodePart(a.model, kind, q, kc, vc, table, lens, pos,
                                 start, o, st));
    }
    break;
  }
  case 4: {
    attn_tensor *kc = T({pages, hkv, P, d}), *vc = T({pages, hkv, P, dv}),
                *table = T({B, maxPages}, ATTN_I32), *kn = T({B, hkv, S, d}),
                *vn = T({B, hkv, S, dv});
    if (table && table->data && ok && table->rank == 2 &&
        table->shape[0] == B && table->shape[1] == maxPages)
      for (int64_t i = 0; i < B * maxPages; ++i)
        static_cast<int32_t *>(table->data)[i] =
            in.ConsumeIntegralInRange<int32_t>(-1, int32_t(pages));
    const int64_t *start = fuzzInts(in, arena, B, maxPages * P);
    const int64_t *counts = in.ConsumeBool() ? fuzzInts(in, arena, B, S)
                                             : nullptr;
    if (ok)
      checkStatus(a.append(a.model, kind, kc, vc, table, start, counts, kn, vn));
    break;
  }
  case 5: {
    attn_tensor *s = T({hq});
    if (ok)
      checkStatus(a.setSinks(a.model, kind, s));
    break;
  }
  }
  return 0;
}
