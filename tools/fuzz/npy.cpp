//===- npy.cpp - libFuzzer target: the .npy reader and writer -------------===//
//
// Bytes as a .npy file: read it; what reads back must write and read again
// to the same shape and values.
//
//===----------------------------------------------------------------------===//

#include "npy.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::string dir = [] {
    char tmpl[] = "/tmp/attn-fuzz-npy-XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  std::string out = dir + "/out.npy";
  // Read from memory (fast); what reads is written to a file and read back.
  std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
  attn_rt::NpyArray a;
  std::string error;
  if (!attn_rt::readNpy(in, "in.npy", a, error)) {
    if (error.empty())
      std::abort(); // a refusal always says why
    return 0;
  }
  if (a.dtype != "f4")
    return 0;
  if (!attn_rt::writeNpyF32(out, a.shape, a.f32.data(), error))
    return 0;
  attn_rt::NpyArray b;
  // Bit patterns, not values: NaNs must come back as they were.
  if (!attn_rt::readNpy(out, b, error) || b.shape != a.shape ||
      b.f32.size() != a.f32.size() ||
      (!a.f32.empty() &&
       std::memcmp(b.f32.data(), a.f32.data(), a.f32.size() * 4) != 0))
    std::abort();
  return 0;
}
