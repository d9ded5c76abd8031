//===- buffer.h - 64-byte aligned buffers for the runtime ----------------===//
//
// The buffers the runtime hands to kernels (Q, K/V caches, outputs, weights
// read from .npy and safetensors files) start on a cache line. glibc's
// malloc puts large blocks 16 bytes past a line, so a plain std::vector's
// 512-bit row loads each span two lines: measured on the seed model's f32
// decode (65,536 keys, docs/c-api-python.md, "Align K/V caches to 64 bytes"),
// `bench` took 23.49 ms with such buffers and 20.55 ms with aligned ones.
//
// Buffers of 4 MiB or more (K/V caches, weights) start on a 2 MiB boundary
// and ask the kernel for transparent huge pages (madvise MADV_HUGEPAGE,
// which Debian's default THP mode "madvise" honours): a decode step reads
// its cache in one pass, and with 4 KiB pages every 4 KiB of it costs a
// TLB miss and a page walk the hardware prefetchers do not cross. The
// seed's f32 decode over 65,536 keys on a Zen 4, alternated medians:
// 26.4 -> 24.8 ms and 26.2 -> 25.2 ms (docs/benchmarks.md, "Huge pages").
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_BUFFER_H
#define ATTN_RUNTIME_BUFFER_H

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace attn_rt {

inline constexpr std::size_t kBufferAlign = 64;
inline constexpr std::size_t kHugePage = std::size_t(2) << 20;
/// From this size on a buffer is aligned to kHugePage and advised.
inline constexpr std::size_t kHugeFrom = std::size_t(4) << 20;

/// Asks for transparent huge pages over the 2 MiB-aligned part of
/// [p, p + bytes). Advice only: where THP is off ("never") or the kernel
/// has none, the pages stay 4 KiB and nothing fails. Returns whether the
/// kernel took the advice.
inline bool adviseHugePages(void *p, std::size_t bytes) {
#ifdef MADV_HUGEPAGE
  std::uintptr_t lo =
      (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  std::uintptr_t hi =
      (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHugePage - 1);
  return hi > lo &&
         madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_HUGEPAGE) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

/// The alignment the runtime gives a buffer of `bytes`.
inline constexpr std::size_t bufferAlign(std::size_t bytes) {
  return bytes >= kHugeFrom ? kHugePage : kBufferAlign;
}

#if defined(__SANITIZE_ADDRESS__)
#define ATTN_RT_BUFFER_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_RT_BUFFER_SANITIZED 1
#endif
#endif

/// The bytes a large buffer maps: whole 4 KiB pages.
inline std::size_t mappedBytes(std::size_t bytes) {
  return (bytes + 4095) & ~std::size_t(4095);
}

/// A buffer of `bytes` on bufferAlign(bytes); throws std::bad_alloc. Free
/// with freeBuffer(p, bytes). A large one is a fresh mapping of its own
/// (not from malloc: glibc raises its mmap threshold as large blocks are
/// freed and then serves them from its heap, whose pages were already
/// faulted in 4 KiB and stay so), trimmed to a 2 MiB boundary, with huge
/// pages advised. (Under AddressSanitizer, through its allocator, so that
/// it still sees overflows.)
inline void *allocateBuffer(std::size_t bytes) {
#ifndef ATTN_RT_BUFFER_SANITIZED
  if (bytes >= kHugeFrom) {
    std::size_t keep = mappedBytes(bytes);
    if (keep > static_cast<std::size_t>(-1) - kHugePage)
      throw std::bad_alloc();
    std::size_t total = keep + kHugePage;
    void *m = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
      throw std::bad_alloc();
    auto base = reinterpret_cast<std::uintptr_t>(m);
    std::uintptr_t at = (base + kHugePage - 1) & ~(kHugePage - 1);
    std::size_t head = at - base, tail = total - head - keep;
    if (head)
      munmap(m, head);
    if (tail)
      munmap(reinterpret_cast<void *>(at + keep), tail);
    adviseHugePages(reinterpret_cast<void *>(at), keep);
    return reinterpret_cast<void *>(at);
  }
#endif
  return ::operator new(bytes, std::align_val_t(bufferAlign(bytes)));
}

inline void freeBuffer(void *p, std::size_t bytes) noexcept {
#ifndef ATTN_RT_BUFFER_SANITIZED
  if (bytes >= kHugeFrom) {
    munmap(p, mappedBytes(bytes));
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
