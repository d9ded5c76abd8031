//===- safetensors.cpp - reading .safetensors checkpoints -----------------===//
//
// This file implements SafeTensors.
//
//===----------------------------------------------------------------------===//

#include "safetensors.h"
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
  json h = json::parse(header, nullptr, /*allow_exceptions=*/false);
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
  size_t elem = e.dtype == "F32" ? 4 : (e.dtype == "BF16" || e.dtype == "F16") ? 2 : 0;
  if (!elem) {
    error = path + ": tensor '" + name + "' has dtype " + e.dtype +
            "; accepted: F32, BF16, F16";
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
  return true;
}
