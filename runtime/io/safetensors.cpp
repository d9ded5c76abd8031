//===- safetensors.cpp - reading .safetensors checkpoints -----------------===//
//
// This file implements SafeTensors.
//
//===----------------------------------------------------------------------===//

#include "safetensors.h"

#include <array>
#include <cmath>
#include <limits>
#include "resources.h"
#include "narrow.h"
#include "npy.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>

using namespace attn_rt;
using json = nlohmann::json;

bool SafeTensors::open(const std::string &p, std::string &error) {
  if (isDirectory(p, "a .safetensors file", error))
    return false;
  auto in = std::make_unique<std::ifstream>(p, std::ios::binary);
  if (!*in) {
    error = p + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  return open(std::move(in), p, error);
}

bool SafeTensors::open(std::unique_ptr<std::istream> stream,
                       const std::string &name, std::string &error) {
  path = name;
  file = std::move(stream);
  std::istream &in = *file;
  unsigned char lenBytes[8];
  if (!in.read(reinterpret_cast<char *>(lenBytes), 8)) {
    error = path + ": not a safetensors file (shorter than 8 bytes)";
    return false;
  }
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen > (100u << 20)) {
    error = path + ": implausible safetensors header length " +
            std::to_string(headerLen);
    return false;
  }
  // The header is allocated only when the file holds it: an 8-byte file
  // announcing 100 MB of header must not cost 100 MB.
  in.seekg(0, std::ios::end);
  uint64_t fileSize = uint64_t(in.tellg());
  in.seekg(8);
  if (!in || fileSize < 8 || headerLen > fileSize - 8) {
    error = path + ": truncated safetensors header (" +
            std::to_string(headerLen) + " bytes announced, " +
            std::to_string(fileSize < 8 ? 0 : fileSize - 8) + " in the file)";
    return false;
  }
  std::string header(headerLen, '\0');
  if (!in.read(&header[0], std::streamsize(headerLen))) {
    error = path + ": truncated safetensors header";
    return false;
  }
  // The header is {name: {dtype, shape: [...], data_offsets: [a, b]},
  // __metadata__: {key: value}}: three levels. Anything deeper is refused
  // as it is parsed, never stored (a header of nested objects would
  // otherwise cost ~30x its size in memory before its error).
  constexpr int kMaxHeaderDepth = 3;
  bool tooDeep = false;
  json::parser_callback_t limitDepth = [&](int depth, json::parse_event_t,
                                           json &) {
    if (depth > kMaxHeaderDepth)
      tooDeep = true;
    return !tooDeep;
  };
  json h = json::parse(header, limitDepth, /*allow_exceptions=*/false);
  if (tooDeep) {
    error = path + ": the safetensors header nests deeper than " +
            std::to_string(kMaxHeaderDepth) +
            " levels; accepted: {name: {dtype, shape, data_offsets}}";
    return false;
  }
  if (h.is_discarded() || !h.is_object()) {
    error = path + ": the safetensors header is not a JSON object";
    return false;
  }
  dataStart = 8 + headerLen;
  dataSize = fileSize > dataStart ? fileSize - dataStart : 0;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    const json &e = it.value();
    if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string() ||
        !e.contains("shape") || !e["shape"].is_array() ||
        !e.contains("data_offsets") || !e["data_offsets"].is_array() ||
        e["data_offsets"].size() != 2) {
      error = path + ": malformed header entry for tensor '" + it.key() + "'";
      return false;
    }
    Entry entry;
    entry.dtype = e["dtype"].get<std::string>();
    for (const json &d : e["shape"]) {
      if (!d.is_number_unsigned()) {
        error = path + ": bad shape for tensor '" + it.key() + "'";
        return false;
      }
      entry.shape.push_back(int64_t(d.get<uint64_t>()));
    }
    const json &off = e["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      error = path + ": bad data_offsets for tensor '" + it.key() + "'";
      return false;
    }
    entry.begin = off[0].get<uint64_t>();
    entry.end = off[1].get<uint64_t>();
    if (entry.begin > entry.end || entry.end > dataSize) {
      error = path + ": tensor '" + it.key() + "' lies outside the file (" +
              std::to_string(entry.end) + " > " + std::to_string(dataSize) +
              " data bytes): truncated?";
      return false;
    }
    entries[it.key()] = std::move(entry);
  }
  return true;
}

bool SafeTensors::readF32(const std::string &name,
                          const std::vector<int64_t> &shape, Buf<float> &out,
                          std::string &error) const {
  auto it = entries.find(name);
  if (it == entries.end()) {
    error = path + ": no tensor '" + name + "' (expected " +
            shapeStr(shape) + ")";
    return false;
  }
  const Entry &e = it->second;
  if (e.shape != shape) {
    error = path + ": tensor '" + name + "' has shape " + shapeStr(e.shape) +
            ", expected " + shapeStr(shape);
    return false;
  }
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
      error = path + ": tensor '" + name + "' has an impossible shape " +
              shapeStr(shape);
      return false;
    }
  bool fp8 = e.dtype == "F8_E4M3";
  size_t elem = e.dtype == "F32"                         ? 4
                : (e.dtype == "BF16" || e.dtype == "F16") ? 2
                : fp8                                     ? 1
                                                          : 0;
  if (!elem) {
    error = path + ": tensor '" + name + "' has dtype " + e.dtype +
            "; accepted: F32, BF16, F16, F8_E4M3 (with its "
            "weight_scale_inv blocks)";
    return false;
  }
  // FP8 checkpoints (DeepSeek-V3, Kimi-K2): each 128x128 block of a 2-D
  // weight is stored as e4m3 values times the block's F32 scale in
  // '<name>_scale_inv' [ceil(rows/128), ceil(cols/128)].
  Buf<float> scales;
  int64_t scaleCols = 0;
  const int64_t block = 128;
  if (fp8) {
    if (shape.size() != 2) {
      error = path + ": tensor '" + name + "' is F8_E4M3 of rank " +
              std::to_string(shape.size()) +
              "; accepted: FP8 weights of rank 2 with 128x128 scale blocks";
      return false;
    }
    std::string scaleName = name + "_scale_inv";
    if (!entries.count(scaleName)) {
      error = path + ": tensor '" + name + "' is F8_E4M3 but the file has "
              "no '" + scaleName + "' (its per-block scales; accepted: "
              "blockwise FP8 as DeepSeek-V3's checkpoints store it)";
      return false;
    }
    int64_t rows = (shape[0] + block - 1) / block;
    scaleCols = (shape[1] + block - 1) / block;
    if (!readF32(scaleName, {rows, scaleCols}, scales, error))
      return false;
  }
  if (e.end - e.begin != uint64_t(n) * elem) {
    error = path + ": tensor '" + name + "' holds " +
            std::to_string(e.end - e.begin) + " bytes, its shape needs " +
            std::to_string(uint64_t(n) * elem);
    return false;
  }
  if (!fitsInMemory((unsigned __int128)n * 4, path + ": tensor '" + name + "'",
                    error))
    return false;
  // Only this tensor's bytes are read (the file may be far larger): F32
  // straight into `out`, 16-bit types through one conversion buffer.
  out.resize(n);
  std::vector<char> raw(elem == 4 ? 0 : e.end - e.begin);
  if (elem == 1 && raw.empty())
    return true;
  char *dst = elem == 4 ? reinterpret_cast<char *>(out.data()) : raw.data();
  std::istream &in = *file;
  in.clear();
  in.seekg(std::streamoff(dataStart + e.begin));
  if (!in || !in.read(dst, std::streamsize(e.end - e.begin))) {
    error = path + ": cannot read tensor '" + name + "' (" +
            std::strerror(errno) + ")";
    return false;
  }
  if (elem == 2)
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, raw.data() + 2 * i, 2);
      out[i] = widenBits(v, /*half=*/e.dtype == "F16");
    }
  if (fp8) {
    static const std::array<float, 256> table = [] {
      std::array<float, 256> t{};
      for (int c = 0; c < 256; ++c)
        t[c] = e4m3Value(uint8_t(c));
      return t;
    }();
    int64_t cols = shape[1];
    for (int64_t i = 0; i < shape[0]; ++i) {
      const float *srow = &scales[(i / block) * scaleCols];
      for (int64_t j = 0; j < cols; ++j)
        out[i * cols + j] =
            table[uint8_t(raw[i * cols + j])] * srow[j / block];
    }
  }
  return true;
}

bool SafeTensors::readU8(const std::string &name,
                         const std::vector<int64_t> &shape,
                         std::vector<uint8_t> &out, std::string &error) const {
  auto it = entries.find(name);
  if (it == entries.end()) {
    error = path + ": no tensor '" + name + "' (expected U8 " +
            shapeStr(shape) + ")";
    return false;
  }
  const Entry &e = it->second;
  if (e.dtype != "U8" || e.shape != shape) {
    error = path + ": tensor '" + name + "' is " + e.dtype + " " +
            shapeStr(e.shape) + ", expected U8 " + shapeStr(shape);
    return false;
  }
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
      error = path + ": tensor '" + name + "' has an impossible shape " +
              shapeStr(shape);
      return false;
    }
  if (e.end - e.begin != uint64_t(n)) {
    error = path + ": tensor '" + name + "' holds " +
            std::to_string(e.end - e.begin) + " bytes, its shape needs " +
            std::to_string(n);
    return false;
  }
  if (!fitsInMemory((unsigned __int128)n, path + ": tensor '" + name + "'",
                    error))
    return false;
  out.resize(size_t(n));
  if (n == 0)
    return true;
  std::istream &in = *file;
  in.clear();
  in.seekg(std::streamoff(dataStart + e.begin));
  if (!in || !in.read(reinterpret_cast<char *>(out.data()), std::streamsize(n))) {
    error = path + ": cannot read tensor '" + name + "' (" +
            std::strerror(errno) + ")";
    return false;
  }
  return true;
}

bool SafeTensors::readMXFP4(const std::string &name,
                            const std::vector<int64_t> &shape, Buf<float> &out,
                            std::string &error) const {
  if (shape.empty() || shape.back() % 32 != 0) {
    error = path + ": tensor '" + name + "' is MXFP4 but " + shapeStr(shape) +
            " does not end in a multiple of 32 (its blocks)";
    return false;
  }
  std::vector<int64_t> groups(shape.begin(), shape.end() - 1);
  groups.push_back(shape.back() / 32);
  std::vector<int64_t> blockShape = groups;
  blockShape.push_back(16);
  std::vector<uint8_t> blocks, scales;
  if (!readU8(name + "_blocks", blockShape, blocks, error) ||
      !readU8(name + "_scales", groups, scales, error))
    return false;
  if (!fitsInMemory((unsigned __int128)blocks.size() * 8,
                    path + ": tensor '" + name + "' (MXFP4, as float32)",
                    error))
    return false;
  // FP4 E2M1: sign, 2 exponent bits, 1 mantissa bit.
  static const float kFP4[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                 4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                 -2.0f, -3.0f, -4.0f, -6.0f};
  out.resize(blocks.size() * 2);
  for (size_t gi = 0; gi < scales.size(); ++gi) {
    float scale = std::ldexp(1.0f, int(scales[gi]) - 127);
    const uint8_t *blk = &blocks[gi * 16];
    float *dst = &out[gi * 32];
    for (int j = 0; j < 16; ++j) {
      dst[2 * j] = kFP4[blk[j] & 0xf] * scale;
      dst[2 * j + 1] = kFP4[blk[j] >> 4] * scale;
    }
  }
  return true;
}

float attn_rt::e4m3Value(uint8_t bits) {
  // OCP FP8 E4M3 ("e4m3fn"): sign, 4 exponent bits (bias 7), 3 mantissa
  // bits; no infinities, S.1111.111 is NaN; subnormals m/8 · 2^-6.
  int sign = bits >> 7, exp = (bits >> 3) & 0xf, man = bits & 7;
  float v;
  if (exp == 0xf && man == 7)
    v = std::numeric_limits<float>::quiet_NaN();
  else if (exp == 0)
    v = std::ldexp(float(man) / 8.0f, -6);
  else
    v = std::ldexp(1.0f + float(man) / 8.0f, exp - 7);
  return sign ? -v : v;
}
