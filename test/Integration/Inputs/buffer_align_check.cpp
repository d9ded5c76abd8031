// The runtime's buffers (attn_rt::Buf) start on a 64-byte boundary, small
// and large, float and 16-bit, and so do the arrays readNpy returns (what
// the executables hand to the kernels). glibc's malloc puts large blocks 16
// bytes past a cache line, so a plain std::vector fails the large cases.
#include "buffer.h"
#include "npy.h"

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

static int failures = 0;

static void check(const void *p, const char *what, size_t n) {
  if (reinterpret_cast<uintptr_t>(p) % attn_rt::kBufferAlign) {
    std::printf("misaligned: %s of %zu elements at offset %zu\n", what, n,
                size_t(reinterpret_cast<uintptr_t>(p) % 64));
    ++failures;
  }
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
            descr, n);
      ++cases;
    }
  }
  for (size_t n : {size_t(1), size_t(17), size_t(1000), size_t(1) << 20,
                   size_t(10000000)}) {
    attn_rt::Buf<float> f(n, 1.0f);
    attn_rt::Buf<uint16_t> h(n);
    check(f.data(), "Buf<float>", n);
    check(h.data(), "Buf<uint16_t>", n);
    f.resize(2 * n + 3); // reallocation keeps the alignment
    check(f.data(), "Buf<float> after resize", f.size());
    cases += 3;
  }
  if (failures)
    return 1;
  std::printf("ok %d cases aligned to %zu bytes\n", cases,
              attn_rt::kBufferAlign);
  return 0;
}
