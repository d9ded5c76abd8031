//===- buffer.h - 64-byte aligned buffers for the runtime ----------------===//
//
// The buffers the runtime hands to kernels (Q, K/V caches, outputs, weights
// read from .npy and safetensors files) start on a cache line. glibc's
// malloc puts large blocks 16 bytes past a line, so a plain std::vector's
// 512-bit row loads each span two lines: measured on the seed model's f32
// decode (65,536 keys, docs/c-api-python.md, "Align K/V caches to 64 bytes"),
// `bench` took 23.49 ms with such buffers and 20.55 ms with aligned ones.
//
// Buffers of 4 MiB or more (K/V caches, weights) are mappings of their own
// on a 2 MiB boundary with transparent huge pages advised (huge_pages.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_BUFFER_H
#define ATTN_RUNTIME_BUFFER_H

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "huge_pages.h"

namespace attn_rt {

/// A buffer of `bytes` on bufferAlign(bytes) (huge_pages.h's
/// tryAllocateBuffer: a mapping of its own on huge pages from kHugeFrom
/// bytes on); throws std::bad_alloc. Free with freeBuffer(p, bytes).
inline void *allocateBuffer(std::size_t bytes) {
  if (void *p = tryAllocateBuffer(bytes))
    return p;
  throw std::bad_alloc();
}

inline void freeBuffer(void *p, std::size_t bytes) noexcept {
  releaseBuffer(p, bytes);
}

template <class T> struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() noexcept = default;
  template <class U> AlignedAllocator(const AlignedAllocator<U> &) noexcept {}
  T *allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T))
      throw std::bad_array_new_length();
    return static_cast<T *>(allocateBuffer(n * sizeof(T)));
  }
  void deallocate(T *p, std::size_t n) noexcept {
    freeBuffer(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const AlignedAllocator<U> &) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const AlignedAllocator<U> &) const noexcept {
    return false;
  }
};

/// A std::vector whose data starts on a 64-byte boundary (2 MiB from
/// kHugeFrom bytes on, huge pages advised).
template <class T> using Buf = std::vector<T, AlignedAllocator<T>>;

} // namespace attn_rt

#endif // ATTN_RUNTIME_BUFFER_H
