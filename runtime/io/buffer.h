//===- buffer.h - 64-byte aligned buffers for the runtime ----------------===//
//
// The buffers the runtime hands to kernels (Q, K/V caches, outputs, weights
// read from .npy and safetensors files) start on a cache line. glibc's
// malloc puts large blocks 16 bytes past a line, so a plain std::vector's
// 512-bit row loads each span two lines: measured on the seed model's f32
// decode (65,536 keys, docs/c-api-python.md, "Align K/V caches to 64 bytes"), `bench` took
// 23.49 ms with such buffers and 20.55 ms with aligned ones.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_BUFFER_H
#define ATTN_RUNTIME_BUFFER_H

#include <cstddef>
#include <new>
#include <vector>

namespace attn_rt {

inline constexpr std::size_t kBufferAlign = 64;

template <class T> struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() noexcept = default;
  template <class U> AlignedAllocator(const AlignedAllocator<U> &) noexcept {}
  T *allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T))
      throw std::bad_array_new_length();
    return static_cast<T *>(
        ::operator new(n * sizeof(T), std::align_val_t(kBufferAlign)));
  }
  void deallocate(T *p, std::size_t) noexcept {
    ::operator delete(p, std::align_val_t(kBufferAlign));
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

/// A std::vector whose data starts on a 64-byte boundary.
template <class T> using Buf = std::vector<T, AlignedAllocator<T>>;

} // namespace attn_rt

#endif // ATTN_RUNTIME_BUFFER_H
