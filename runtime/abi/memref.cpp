//===- memref.cpp - memref helpers generated code calls -------------------===//
//
// This file implements memrefCopy, which MLIR's memref-to-LLVM lowering calls
// for copies between strided buffers (the same contract as MLIR's
// CRunnerUtils, written here so executables need no MLIR library), and the
// heap of the generated code (finalize-memref-to-llvm use-generic-functions,
// attn-compile's runtime-alloc): a freed buffer of 1 MiB or more is kept for
// the next allocation of about its size, so that a layer called again finds
// its [tokens, intermediate] buffers mapped. Through malloc each call took
// fresh pages from the kernel: 4,000 page faults per 16 MB buffer, half of a
// Llama-1B layer's prefill time.
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <unistd.h>

namespace {
struct Descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[]; // sizes[rank], then strides[rank]
};
} // namespace

extern "C" void memrefCopy(int64_t elemSize, attn_rt_unranked_memref *src,
                           attn_rt_unranked_memref *dst) {
  int64_t rank = src->rank;
  auto *s = static_cast<Descriptor *>(src->descriptor);
  auto *d = static_cast<Descriptor *>(dst->descriptor);
  const int64_t *sizes = s->sizesAndStrides;
  const int64_t *sStrides = s->sizesAndStrides + rank;
  const int64_t *dStrides = d->sizesAndStrides + rank;
  char *sBase = s->aligned + s->offset * elemSize;
  char *dBase = d->aligned + d->offset * elemSize;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  // The copy's dimensions, outermost first, with the unit ones dropped and
  // neighbours merged where both sides lay them out as one (stride of the
  // outer = size · stride of the inner): a slice [B, S, 16, 128, 1] of a
  // [B, S, 16, 768, 1] buffer is 16·B·S runs of 128 contiguous elements,
  // not 2,048·B·S copies of one.
  std::vector<int64_t> n, ss, ds;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 1)
      continue;
    if (!n.empty() && ss.back() == sizes[i] * sStrides[i] &&
        ds.back() == sizes[i] * dStrides[i]) {
      n.back() *= sizes[i];
      ss.back() = sStrides[i];
      ds.back() = dStrides[i];
      continue;
    }
    n.push_back(sizes[i]);
    ss.push_back(sStrides[i]);
    ds.push_back(dStrides[i]);
  }
  if (n.empty()) {
    std::memcpy(dBase, sBase, elemSize);
    return;
  }
  int64_t inner = int64_t(n.size()) - 1;
  bool contiguous = ss[inner] == 1 && ds[inner] == 1;
  int64_t innerBytes = n[inner] * elemSize;
  // Offsets (in elements) of the current run, advanced like an odometer.
  std::vector<int64_t> idx(n.size(), 0);
  int64_t so = 0, dof = 0;
  while (true) {
    char *dp = dBase + dof * elemSize;
    const char *sp = sBase + so * elemSize;
    if (contiguous) {
      std::memcpy(dp, sp, innerBytes);
    } else {
      for (int64_t j = 0; j < n[inner]; ++j)
        std::memcpy(dp + j * ds[inner] * elemSize,
                    sp + j * ss[inner] * elemSize, elemSize);
    }
    int64_t i = inner - 1;
    for (; i >= 0; --i) {
      so += ss[i];
      dof += ds[i];
      if (++idx[i] < n[i])
        break;
      so -= n[i] * ss[i];
      dof -= n[i] * ds[i];
      idx[i] = 0;
    }
    if (i < 0)
      return;
  }
}

namespace {

/// Kept before each buffer handed out: the malloc block it lies in.
struct BlockHeader {
  void *base;
  size_t capacity;
};

constexpr size_t kCachedMin = size_t(1) << 20;

/// Freed large blocks by capacity, up to a quarter of the machine's memory
/// (at most 8 GiB) in all.
struct BlockCache {
  std::mutex mu;
  std::multimap<size_t, void *> blocks;
  size_t bytes = 0, limit = 0;
  BlockCache() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t physical = pages > 0 && page > 0 ? size_t(pages) * size_t(page)
                                            : size_t(8) << 30;
    limit = std::min(physical / 4, size_t(8) << 30);
  }
  /// A kept block of capacity in [need, 2·need), or null.
  void *take(size_t need, size_t &capacity) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = blocks.lower_bound(need);
    if (it == blocks.end() || it->first >= 2 * need)
      return nullptr;
    capacity = it->first;
    void *base = it->second;
    bytes -= capacity;
    blocks.erase(it);
    return base;
  }
  bool keep(void *base, size_t capacity) {
    std::lock_guard<std::mutex> lock(mu);
    if (bytes + capacity > limit)
      return false;
    blocks.emplace(capacity, base);
    bytes += capacity;
    return true;
  }
};

BlockCache &blockCache() {
  // Never destroyed: generated code may free after static destructors ran.
  static BlockCache *cache = new BlockCache;
  return *cache;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_RT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_RT_ASAN 1
#endif

void *allocateAligned(size_t alignment, size_t size) {
  size_t align = alignment < 64 ? 64 : alignment;
  if (align & (align - 1))
    return nullptr;
#ifdef ATTN_RT_ASAN
  // The sanitizer build keeps one malloc block per buffer, freed at once,
  // so that AddressSanitizer sees every overflow and use after free.
  return std::aligned_alloc(align, (size + align - 1) / align * align);
#else
  size_t need = size + align + sizeof(BlockHeader);
  size_t capacity = need;
  void *base = need >= kCachedMin ? blockCache().take(need, capacity)
                                  : nullptr;
  if (!base) {
    base = std::malloc(need);
    capacity = need;
    if (!base)
      return nullptr;
  }
  uintptr_t user = (uintptr_t(base) + sizeof(BlockHeader) + align - 1) &
                   ~uintptr_t(align - 1);
  auto *h = reinterpret_cast<BlockHeader *>(user) - 1;
  h->base = base;
  h->capacity = capacity;
  return reinterpret_cast<void *>(user);
#endif
}

} // namespace

// Hidden: each executable or library keeps its own heap, whatever else
// the process loads.
extern "C" __attribute__((visibility("hidden"))) void *
_mlir_memref_to_llvm_alloc(uint64_t size) {
  return allocateAligned(64, size);
}

extern "C" __attribute__((visibility("hidden"))) void *
_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) {
  return allocateAligned(alignment, size);
}

extern "C" __attribute__((visibility("hidden"))) void
_mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
#ifdef ATTN_RT_ASAN
  std::free(ptr);
  return;
#endif
  auto *h = static_cast<BlockHeader *>(ptr) - 1;
  if (h->capacity >= kCachedMin && blockCache().keep(h->base, h->capacity))
    return;
  std::free(h->base);
}
