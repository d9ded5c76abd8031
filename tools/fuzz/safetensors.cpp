//===- safetensors.cpp - libFuzzer target: the safetensors reader ---------===//
//
// Bytes as a .safetensors file: open it and read every tensor it lists
// (with its own shape) as float32; errors must say why.
//
//===----------------------------------------------------------------------===//

#include "safetensors.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::string path = [] {
    char tmpl[] = "/tmp/attn-fuzz-st-XXXXXX";
    return std::string(mkdtemp(tmpl)) + "/w.safetensors";
  }();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  attn_rt::SafeTensors st;
  std::string error;
  if (!st.open(path, error)) {
    if (error.empty())
      std::abort();
    return 0;
  }
  for (const auto &[name, shape] : st.tensorShapes()) {
    std::vector<float> out;
    if (!st.readF32(name, shape, out, error) && error.empty())
      std::abort();
  }
  return 0;
}
