//===- safetensors.cpp - libFuzzer target: the safetensors reader ---------===//
//
// Bytes as a .safetensors file, read from memory: open it and read every
// tensor it lists (with its own shape) as float32; errors must say why.
//
//===----------------------------------------------------------------------===//

#include "safetensors.h"

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // From memory, as a file would be read (the reader seeks and reads its
  // stream the same way): no file system in the loop.
  auto in = std::make_unique<std::istringstream>(
      std::string(reinterpret_cast<const char *>(data), size),
      std::ios::binary);
  attn_rt::SafeTensors st;
  std::string error;
  if (!st.open(std::move(in), "fuzz.safetensors", error)) {
    if (error.empty())
      std::abort();
    return 0;
  }
  for (const auto &[name, shape] : st.tensorShapes()) {
    attn_rt::Buf<float> out;
    if (!st.readF32(name, shape, out, error) && error.empty())
      std::abort();
  }
  return 0;
}
