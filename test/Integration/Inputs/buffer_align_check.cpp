// The runtime's buffers (attn_rt::Buf) start on a 64-byte boundary, small
// and large, float and 16-bit, and so do the arrays readNpy returns (what
// the executables hand to the kernels). glibc's malloc puts large blocks 16
// bytes past a cache line, so a plain std::vector fails the large cases.
// Buffers of kHugeFrom bytes or more start on a 2 MiB boundary, and where
// the kernel's transparent huge pages are enabled ("always" or "madvise")
// a large buffer, once touched, is backed by huge pages (/proc/self/smaps).
#include "buffer.h"
#include "npy.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

static int failures = 0;

static void check(const void *p, const char *what, size_t n, size_t elemBytes) {
  size_t align = attn_rt::bufferAlign(n * elemBytes);
  if (reinterpret_cast<uintptr_t>(p) % align) {
    std::printf("misaligned: %s of %zu elements at offset %zu of %zu\n", what,
                n, size_t(reinterpret_cast<uintptr_t>(p) % align), align);
    ++failures;
  }
}

// kB of huge pages in the mapping of /proc/self/smaps that holds p.
static long hugeKb(const void *p) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  auto at = reinterpret_cast<uintptr_t>(p);
  while (std::getline(f, line)) {
    unsigned long lo, hi;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 &&
        line.find(':') > line.find('-')) {
      inside = lo <= at && at < hi;
      continue;
    }
    long kb;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %ld kB", &kb) == 1)
      return kb;
  }
  return -1;
}

// A version-1.0 .npy of `n` elements of dtype `descr` (4 or 2 bytes each).
static std::string npy(const char *descr, size_t n, size_t elemBytes) {
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': (" +
                       std::to_string(n) + ",), }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string s("\x93NUMPY\x01\x00", 8);
  s += char(header.size() & 0xff);
  s += char(header.size() >> 8);
  return s + header + std::string(n * elemBytes, '\0');
}

int main() {
  int cases = 0;
  // The .npy arrays first: once a large block is freed, glibc serves the
  // next large ones from its heap, where their offset is left to chance.
  for (size_t n : {size_t(5), size_t(3000000)}) {
    for (auto [descr, bytes] :
         {std::pair<const char *, size_t>{"<f4", 4}, {"<u2", 2}}) {
      std::istringstream in(npy(descr, n, bytes));
      attn_rt::NpyArray a;
      std::string error;
      if (!attn_rt::readNpy(in, "test.npy", a, error)) {
        std::printf("readNpy failed: %s\n", error.c_str());
        return 1;
      }
      check(bytes == 4 ? static_cast<const void *>(a.f32.data())
                       : static_cast<const void *>(a.u16.data()),
            descr, n, bytes);
      ++cases;
    }
  }
  for (size_t n : {size_t(1), size_t(17), size_t(1000), size_t(1) << 20,
                   size_t(10000000)}) {
    attn_rt::Buf<float> f(n, 1.0f);
    attn_rt::Buf<uint16_t> h(n);
    check(f.data(), "Buf<float>", n, 4);
    check(h.data(), "Buf<uint16_t>", n, 2);
    f.resize(2 * n + 3); // reallocation keeps the alignment
    check(f.data(), "Buf<float> after resize", f.size(), 4);
    cases += 3;
  }
  // 16 MiB, touched: huge pages where THP is on, although the buffers above
  // raised glibc's mmap threshold past 16 MiB. (Not under AddressSanitizer:
  // there the buffers come from its allocator.)
  std::string mode = attn_rt::thpMode();
  attn_rt::Buf<float> big(size_t(4) << 20, 1.0f);
  long kb = hugeKb(big.data());
  const char *why = "";
#ifdef ATTN_RT_ASAN
  mode = "";
  why = ": AddressSanitizer's allocator";
#endif
  if (mode == "always" || mode == "madvise") {
    if (kb < 2048) {
      std::printf("THP \"%s\": a 16 MiB buffer has %ld kB of huge pages\n",
                  mode.c_str(), kb);
      ++failures;
    }
    std::printf("huge pages: checked\n");
  } else {
    std::printf("huge pages: not checked (THP \"%s\"%s)\n", mode.c_str(), why);
  }
  if (failures)
    return 1;
  std::printf("ok %d cases aligned to %zu bytes (%zu from %zu bytes)\n", cases,
              attn_rt::kBufferAlign, attn_rt::kHugePage, attn_rt::kHugeFrom);
  return 0;
}
