//===- safetensors.h - reading .safetensors checkpoints ------------*- C++ -*-===//
//
// This file declares a reader of the safetensors format: an 8-byte
// little-endian header length, a JSON header (parsed with nlohmann/json)
// mapping tensor names to dtype, shape and byte offsets, then the data.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_SAFETENSORS_H
#define ATTN_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <fstream>
#include <istream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "buffer.h"

namespace attn_rt {

/// The value of an OCP FP8 E4M3 ("e4m3fn") byte: exact in float32 (NaN
/// for S.1111.111; the format has no infinities).
float e4m3Value(uint8_t bits);

class SafeTensors {
public:
  /// Opens `path` and parses its header; false with a message on failure.
  bool open(const std::string &path, std::string &error);
  /// The same on any seekable stream (the fuzz target reads from memory);
  /// `name` stands for the file in messages.
  bool open(std::unique_ptr<std::istream> stream, const std::string &name,
            std::string &error);

  /// Reads tensor `name` as float32 (F32, BF16 and F16 are converted; a
  /// 2-D F8_E4M3 weight is dequantized by the 128x128 blocks of
  /// '<name>_scale_inv', as DeepSeek-V3's checkpoints store it), checking
  /// its shape; false with a message naming the file, the tensor,
  /// what was found and what is expected.
  bool readF32(const std::string &name, const std::vector<int64_t> &shape,
               Buf<float> &out, std::string &error) const;
  /// The raw bytes of a U8 tensor of `shape`.
  bool readU8(const std::string &name, const std::vector<int64_t> &shape,
              std::vector<uint8_t> &out, std::string &error) const;
  /// True if the file holds tensor `name`.
  bool has(const std::string &name) const { return entries.count(name); }
  /// Reads an MXFP4 tensor stored as '<name>_blocks' (U8 [..., G, 16]: 32
  /// FP4 E2M1 values per block, the low nibble first) and '<name>_scales'
  /// (U8 [..., G]: each block's E8M0 exponent, 2^(s - 127)), as gpt-oss's
  /// checkpoints store their experts, into float32 of `shape` ([..., 32 G]);
  /// false with a message naming the file, the tensors and what is expected.
  bool readMXFP4(const std::string &name, const std::vector<int64_t> &shape,
                 Buf<float> &out, std::string &error) const;
  /// Every tensor's name and shape, as the header lists them.
  std::vector<std::pair<std::string, std::vector<int64_t>>>
  tensorShapes() const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> out;
    for (const auto &[name, e] : entries)
      out.push_back({name, e.shape});
    return out;
  }

private:
  struct Entry {
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
  };
  std::string path;
  /// Where the tensors' bytes start in the file and how many there are:
  /// readF32 reads only the tensor asked for.
  uint64_t dataStart = 0, dataSize = 0;
  /// The file, open from open() on (one open for all the tensors read).
  mutable std::unique_ptr<std::istream> file;
  std::map<std::string, Entry> entries;
};

} // namespace attn_rt

#endif // ATTN_RUNTIME_SAFETENSORS_H
