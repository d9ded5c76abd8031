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

inline constexpr std::size_t kBufferAlign = 64;
/// The alignment the runtime gives a buffer of `bytes`.
inline constexpr std::size_t bufferAlign(std::size_t bytes) {
  return bytes >= kHugeFrom ? kHugePage : kBufferAlign;
}

/// A buffer of `bytes` on bufferAlign(bytes); throws std::bad_alloc. Free
/// with freeBuffer(p, bytes). A large one is a fresh mapping of its own
/// (not from malloc: glibc raises its mmap threshold as large blocks are
/// freed and then serves them from its heap, whose pages were already
/// faulted in 4 KiB and stay so), trimmed to a 2 MiB boundary, with huge
/// pages advised. (Under AddressSanitizer, through its allocator, so that
/// it still sees overflows.)
inline void *allocateBuffer(std::size_t bytes) {
#ifndef ATTN_RT_ASAN
  if (bytes >= kHugeFrom)
    return mapHuge(bytes);
#endif
  return ::operator new(bytes, std::align_val_t(bufferAlign(bytes)));
}

inline void freeBuffer(void *p, std::size_t bytes) noexcept {
#ifndef ATTN_RT_ASAN
  if (bytes >= kHugeFrom) {
    unmapHuge(p, bytes);
    return;
  }
#endif
  ::operator delete(p, std::align_val_t(bufferAlign(bytes)));
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
