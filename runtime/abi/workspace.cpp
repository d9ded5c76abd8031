//===- workspace.cpp - the generated code's heap: per-thread workspaces ---===//
//
// This file implements the heap of the generated code (memref.alloc through
// finalize-memref-to-llvm's generic functions, attn-compile's runtime-alloc):
// every buffer a kernel allocates (the micro-kernels' packed tiles, split-K
// partial rows, a layer's [tokens, intermediate] activations) comes from the
// workspace of the thread that allocates it. A workspace is a stack of
// chunks the runtime keeps for the thread: buffers are handed out from the
// top chunk and given back when the buffer on top is freed (one freed out of
// order waits until the ones above it are). A call whose buffers fit in what
// the workspace holds makes no malloc and touches no fresh page; the first
// call at a larger shape grows it by one chunk, and when the workspace is
// next idle its chunks become one of their total size. Through malloc a
// decode step made hundreds of allocations (the seed's 65,536-key step:
// 556), and a prefill took fresh pages from the kernel at every call (4,000
// page faults per 16 MB buffer, half of a Llama-1B layer's prefill time).
//
// The sanitizer build keeps one malloc block per buffer, freed at once, so
// that AddressSanitizer sees every overflow and use after free (and its
// statistics stay 0).
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"
#include "huge_pages.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include <pthread.h>

namespace {

/// Statistics of every workspace of this executable or library.
std::atomic<int64_t> gHeld{0}, gInUse{0}, gPeak{0}, gGrows{0}, gThreads{0};

#ifndef ATTN_RT_ASAN

void addInUse(int64_t bytes) {
  int64_t now = gInUse.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = gPeak.load(std::memory_order_relaxed);
  while (now > peak &&
         !gPeak.compare_exchange_weak(peak, now, std::memory_order_relaxed))
    ;
}

/// Chunks smaller than this are not worth a malloc of their own.
constexpr size_t kMinChunk = size_t(1) << 20;

struct Chunk {
  char *base;
  size_t capacity;
  size_t top; ///< bytes handed out from base
  Chunk *below;
};

struct Workspace;

/// Kept before each buffer.
struct Header {
  Workspace *owner;
  Chunk *chunk;
  size_t start; ///< the chunk's top before this buffer
  std::atomic<bool> freed;
};

struct Workspace {
  Chunk *chunk = nullptr;   ///< the top chunk
  Header **stack = nullptr; ///< the live buffers, oldest first
  size_t depth = 0, room = 0;

  /// A chunk of at least `need` bytes on top (tryAllocateBuffer: from 4 MiB
  /// on, a layer's activations or a large split-K or packed tile, a mapping
  /// of its own on huge pages); null when the system has no memory.
  Chunk *grow(size_t need) {
    size_t capacity =
        std::max({need, kMinChunk, chunk ? 2 * chunk->capacity : size_t(0)});
    auto *c = static_cast<Chunk *>(std::malloc(sizeof(Chunk)));
    char *base =
        c ? static_cast<char *>(attn_rt::tryAllocateBuffer(capacity)) : nullptr;
    if (!base) {
      std::free(c);
      return nullptr;
    }
    *c = Chunk{base, capacity, 0, chunk};
    chunk = c;
    gHeld.fetch_add(int64_t(capacity), std::memory_order_relaxed);
    gGrows.fetch_add(1, std::memory_order_relaxed);
    return c;
  }

  void release(Chunk *c) {
    gHeld.fetch_sub(int64_t(c->capacity), std::memory_order_relaxed);
    attn_rt::releaseBuffer(c->base, c->capacity);
    std::free(c);
  }

  /// Frees every chunk (the workspace must be idle).
  void clear() {
    while (chunk) {
      Chunk *below = chunk->below;
      release(chunk);
      chunk = below;
    }
  }

  /// Gives back the buffers on top that are freed; an idle workspace of
  /// several chunks becomes one chunk of their total size.
  void pop() {
    while (depth > 0 &&
           stack[depth - 1]->freed.load(std::memory_order_acquire)) {
      Header *h = stack[--depth];
      gInUse.fetch_sub(int64_t(h->chunk->top - h->start),
                       std::memory_order_relaxed);
      h->chunk->top = h->start;
    }
    if (depth == 0 && chunk && chunk->below) {
      size_t total = 0;
      for (Chunk *c = chunk; c; c = c->below)
        total += c->capacity;
      clear();
      grow(total);
    }
  }

  bool push(Header *h) {
    if (depth == room) {
      size_t more = room ? 2 * room : 64;
      auto *s =
          static_cast<Header **>(std::realloc(stack, more * sizeof(Header *)));
      if (!s)
        return false;
      gGrows.fetch_add(1, std::memory_order_relaxed);
      stack = s;
      room = more;
    }
    stack[depth++] = h;
    return true;
  }

  void *allocate(size_t align, size_t size) {
    pop();
    size_t need = size + align + sizeof(Header);
    Chunk *c = chunk;
    if (!c || c->capacity - c->top < need)
      c = grow(need);
    if (!c)
      return nullptr;
    uintptr_t at = uintptr_t(c->base) + c->top + sizeof(Header);
    uintptr_t user = (at + align - 1) & ~uintptr_t(align - 1);
    auto *h = new (reinterpret_cast<Header *>(user) - 1)
        Header{this, c, c->top, {false}};
    if (!push(h))
      return nullptr;
    c->top = user + size - uintptr_t(c->base);
    addInUse(int64_t(c->top - h->start));
    return reinterpret_cast<void *>(user);
  }
};

thread_local Workspace *tWorkspace = nullptr;

/// Frees an exiting thread's workspace when it holds no live buffer (one
/// still in use, freed later by another thread, keeps it).
void threadExit(void *p) {
  auto *w = static_cast<Workspace *>(p);
  w->pop();
  if (w->depth != 0)
    return;
  w->clear();
  std::free(w->stack);
  delete w;
  gThreads.fetch_sub(1, std::memory_order_relaxed);
}

pthread_key_t exitKey() {
  static pthread_key_t key = [] {
    pthread_key_t k;
    pthread_key_create(&k, threadExit);
    return k;
  }();
  return key;
}

Workspace *currentWorkspace() {
  if (!tWorkspace) {
    tWorkspace = new (std::nothrow) Workspace;
    if (!tWorkspace)
      return nullptr;
    pthread_setspecific(exitKey(), tWorkspace);
    gThreads.fetch_add(1, std::memory_order_relaxed);
  }
  return tWorkspace;
}

#endif // !ATTN_RT_ASAN

void *allocateAligned(size_t alignment, size_t size) {
  size_t align = alignment < 64 ? 64 : alignment;
  if (align & (align - 1))
    return nullptr;
#ifdef ATTN_RT_ASAN
  size_t rounded = (size + align - 1) / align * align;
  return std::aligned_alloc(align, rounded ? rounded : align);
#else
  Workspace *w = currentWorkspace();
  return w ? w->allocate(align, size) : nullptr;
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
#else
  auto *h = static_cast<Header *>(ptr) - 1;
  Workspace *owner = h->owner;
  h->freed.store(true, std::memory_order_release);
  // Freed by another thread: its owner gives it back at its next call.
  if (owner == tWorkspace)
    owner->pop();
#endif
}

extern "C" __attribute__((visibility("hidden"))) void
attn_rt_workspace_stats(attn_rt_workspace_info *info) {
  info->held_bytes = gHeld.load(std::memory_order_relaxed);
  info->in_use_bytes = gInUse.load(std::memory_order_relaxed);
  info->peak_bytes = gPeak.load(std::memory_order_relaxed);
  info->grows = gGrows.load(std::memory_order_relaxed);
  info->threads = gThreads.load(std::memory_order_relaxed);
}

extern "C" __attribute__((visibility("hidden"))) int
attn_rt_workspace_trim(void) {
#ifdef ATTN_RT_ASAN
  return 1;
#else
  Workspace *w = tWorkspace;
  if (!w)
    return 1;
  w->pop();
  if (w->depth != 0)
    return 0;
  w->clear();
  return 1;
#endif
}
