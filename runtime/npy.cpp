//===- npy.cpp - .npy float32/int64 arrays --------------------------------===//
//
// This file implements .npy reading and writing.
//
//===----------------------------------------------------------------------===//

#include "npy.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace attn_rt;

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

/// Value of `'key': <value>` in the header dict, up to the next ',' or '}'
/// (or the closing ')' of a tuple).
bool headerField(const std::string &h, const std::string &key,
                 std::string &value) {
  size_t at = h.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  at = h.find(':', at);
  if (at == std::string::npos)
    return false;
  ++at;
  while (at < h.size() && h[at] == ' ')
    ++at;
  size_t end;
  if (at < h.size() && h[at] == '(')
    end = h.find(')', at) + 1;
  else
    end = h.find_first_of(",}", at);
  if (end == std::string::npos || end == 0)
    return false;
  value = h.substr(at, end - at);
  return true;
}

} // namespace

bool attn_rt::readNpy(const std::string &path, NpyArray &out,
                      std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = path + ": not a .npy file (no \\x93NUMPY magic)";
    return false;
  }
  int major = static_cast<unsigned char>(magic[6]);
  uint32_t headerLen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char *>(b), 2)) {
      error = path + ": truncated .npy header";
      return false;
    }
    headerLen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char *>(b), 4)) {
      error = path + ": truncated .npy header";
      return false;
    }
    headerLen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  } else {
    error = path + ": .npy format version " + std::to_string(major) +
            " is not supported (accepted: 1, 2, 3)";
    return false;
  }
  if (headerLen > (1u << 20)) {
    error = path + ": .npy header of " + std::to_string(headerLen) +
            " bytes is implausible";
    return false;
  }
  std::string header(headerLen, '\0');
  if (!in.read(&header[0], headerLen)) {
    error = path + ": truncated .npy header";
    return false;
  }
  std::string descr, fortran, shape;
  if (!headerField(header, "descr", descr) ||
      !headerField(header, "fortran_order", fortran) ||
      !headerField(header, "shape", shape)) {
    error = path + ": malformed .npy header '" + header + "'";
    return false;
  }
  if (descr == "'<f4'" || descr == "'=f4'")
    out.dtype = "f4";
  else if (descr == "'<i8'" || descr == "'=i8'")
    out.dtype = "i8";
  else {
    error = path + ": dtype " + descr +
            " is not supported (accepted: float32 '<f4', int64 '<i8')";
    return false;
  }
  if (fortran.find("False") == std::string::npos) {
    error = path + ": Fortran-order arrays are not supported (save with "
                   "C order)";
    return false;
  }
  out.shape.clear();
  std::string dims = shape.substr(1, shape.size() - 2);
  std::stringstream ss(dims);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    size_t b = tok.find_first_not_of(' ');
    if (b == std::string::npos)
      continue;
    char *end = nullptr;
    long long v = std::strtoll(tok.c_str() + b, &end, 10);
    if (v < 0 || v > (1ll << 40)) {
      error = path + ": bad dimension '" + tok + "' in shape " + shape;
      return false;
    }
    out.shape.push_back(v);
  }
  // Check the size against the file before allocating: a header may claim
  // any shape.
  std::streampos dataStart = in.tellg();
  in.seekg(0, std::ios::end);
  uint64_t available = uint64_t(in.tellg() - dataStart);
  in.seekg(dataStart);
  unsigned __int128 need = out.dtype == "f4" ? 4 : 8;
  for (int64_t d : out.shape)
    need = need * uint64_t(d) > (unsigned __int128)UINT64_MAX
               ? (unsigned __int128)UINT64_MAX
               : need * uint64_t(d);
  if (need > available) {
    error = path + ": truncated data: shape " + shape + " needs " +
            std::to_string(uint64_t(need)) + " bytes, the file has " +
            std::to_string(available);
    return false;
  }
  int64_t n = out.numel();
  size_t bytes = size_t(n) * (out.dtype == "f4" ? 4 : 8);
  if (out.dtype == "f4") {
    out.f32.resize(n);
    in.read(reinterpret_cast<char *>(out.f32.data()), bytes);
  } else {
    out.i64.resize(n);
    in.read(reinterpret_cast<char *>(out.i64.data()), bytes);
  }
  if (size_t(in.gcount()) != bytes) {
    error = path + ": truncated data: shape " + shape + " needs " +
            std::to_string(bytes) + " bytes, the file has " +
            std::to_string(in.gcount());
    return false;
  }
  return true;
}

bool attn_rt::writeNpyF32(const std::string &path,
                          const std::vector<int64_t> &shape, const float *data,
                          std::string &error) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
  dict += "), }";
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict += std::string(pad, ' ') + "\n";
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    error = path + ": cannot write (" + std::strerror(errno) + ")";
    return false;
  }
  unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                            (unsigned char)(dict.size() & 0xff),
                            (unsigned char)(dict.size() >> 8)};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  bool ok = std::fwrite(head, 1, 10, f) == 10 &&
            std::fwrite(dict.data(), 1, dict.size(), f) == dict.size() &&
            std::fwrite(data, 4, size_t(n), f) == size_t(n);
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    error = path + ": write failed (" + std::strerror(errno) + ")";
    return false;
  }
  return true;
}
