//===- huge_pages.h - large buffers on huge pages ---------------*- C++ -*-===//
//
// Large buffers (K/V caches, page pools, weights, the workspaces' chunks)
// as mappings of their own on a 2 MiB boundary with transparent huge pages
// advised (madvise MADV_HUGEPAGE, which Debian's default THP mode "madvise"
// honours). A decode step reads its cache in one pass, and with 4 KiB pages
// every 4 KiB of it costs a TLB miss and a page walk the hardware
// prefetchers do not cross. The seed's f32 decode over 65,536 keys on a
// Zen 4, alternated medians: 26.4 -> 24.8 ms and 26.2 -> 25.2 ms
// (docs/benchmarks.md, "Huge pages"). Not through malloc: glibc raises its
// mmap threshold as large blocks are freed and then serves them from its
// heap, whose pages were already faulted in 4 KiB and stay so.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_HUGE_PAGES_H
#define ATTN_RUNTIME_HUGE_PAGES_H

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <new>
#include <string>

#include <sys/mman.h>

// AddressSanitizer builds keep large buffers and the workspaces' buffers
// in its allocator (buffer.h, workspace.cpp), so that it sees overflows.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTN_RT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ATTN_RT_ASAN 1
#endif

namespace attn_rt {

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

/// The kernel's THP mode, the word in brackets of
/// /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise" or
/// "never"; "" without THP): what becomes of adviseHugePages.
inline std::string thpMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  std::size_t a = s.find('['), b = s.find(']');
  return a == std::string::npos || b == std::string::npos || b < a
             ? ""
             : s.substr(a + 1, b - a - 1);
}

/// The bytes a large buffer maps: whole pages (x86-64's base pages are
/// 4 KiB).
inline std::size_t mappedBytes(std::size_t bytes) {
  return (bytes + 4095) & ~std::size_t(4095);
}

/// `bytes` (at least kHugeFrom) in a fresh mapping trimmed to a 2 MiB
/// boundary, huge pages advised; null when the system has no memory for it.
inline void *tryMapHuge(std::size_t bytes) noexcept {
  std::size_t keep = mappedBytes(bytes);
  if (keep > static_cast<std::size_t>(-1) - kHugePage)
    return nullptr;
  std::size_t total = keep + kHugePage;
  void *m = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return nullptr;
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

/// Unmaps a buffer of tryMapHuge(bytes).
inline void unmapHuge(void *p, std::size_t bytes) noexcept {
  munmap(p, mappedBytes(bytes));
}

inline constexpr std::size_t kBufferAlign = 64;
/// The alignment the runtime gives a buffer of `bytes`.
inline constexpr std::size_t bufferAlign(std::size_t bytes) {
  return bytes >= kHugeFrom ? kHugePage : kBufferAlign;
}

/// The runtime's one rule for its buffers (buffer.h's, attn_buffer_alloc's,
/// the workspaces' chunks): `bytes` on bufferAlign(bytes), from kHugeFrom
/// on a fresh mapping of its own with huge pages advised (tryMapHuge);
/// null when the system has no memory for it. Free with
/// releaseBuffer(p, bytes). (Under AddressSanitizer, through its
/// allocator, so that it still sees overflows.)
inline void *tryAllocateBuffer(std::size_t bytes) noexcept {
#ifndef ATTN_RT_ASAN
  if (bytes >= kHugeFrom)
    return tryMapHuge(bytes);
#endif
  return ::operator new(bytes, std::align_val_t(bufferAlign(bytes)),
                        std::nothrow);
}

inline void releaseBuffer(void *p, std::size_t bytes) noexcept {
#ifndef ATTN_RT_ASAN
  if (bytes >= kHugeFrom) {
    unmapHuge(p, bytes);
    return;
  }
#endif
  ::operator delete(p, std::align_val_t(bufferAlign(bytes)));
}

} // namespace attn_rt

#endif // ATTN_RUNTIME_HUGE_PAGES_H
