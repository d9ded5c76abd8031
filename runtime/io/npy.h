//===- npy.h - .npy float32/int64 arrays ---------------------------*- C++ -*-===//
//
// This file declares reading and writing of NumPy .npy files (format 1.0 to
// 3.0, little-endian float32, int64, float16 or uint16, C order; written as
// float32).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_NPY_H
#define ATTN_RUNTIME_NPY_H

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "buffer.h"

namespace attn_rt {

struct NpyArray {
  std::string dtype; ///< "f4", "i8", "f2" (IEEE half) or "u2"
  std::vector<int64_t> shape;
  Buf<float> f32;
  std::vector<int64_t> i64;
  /// The 16-bit elements of "f2" and "u2" (a bf16 K/V cache travels as
  /// `<u2`: NumPy has no bfloat16), as stored.
  Buf<uint16_t> u16;
  /// "float32", "int64", "float16" or "uint16", for messages.
  std::string dtypeName() const;
  int64_t numel() const { return numelOf(shape); }
  /// Elements of `shape`: 0 with a zero dim, -1 past int64 or for a
  /// negative dim.
  static int64_t numelOf(const std::vector<int64_t> &shape);
};

/// `[d0, d1, ...]`, for error messages.
std::string shapeStr(const std::vector<int64_t> &shape);

/// True, with "PATH: is a directory; EXPECTED is expected" in `error`, when
/// `path` names a directory (which an ifstream opens without an error).
bool isDirectory(const std::string &path, const char *expected,
                 std::string &error);
/// Reads `path`; on failure returns false and says why in `error` (file,
/// what was found, what is accepted).
bool readNpy(const std::string &path, NpyArray &out, std::string &error);
/// The same from a seekable stream; `name` is what errors call it.
bool readNpy(std::istream &in, const std::string &name, NpyArray &out,
             std::string &error);

/// Writes a float32 array to `path` atomically (a unique temporary file in
/// the same directory renamed on success), so that no partial file is left
/// behind; through a symbolic link to its target (the link stays); straight
/// into a character device or FIFO (/dev/null), never replacing it; a
/// directory is an error.
bool writeNpyF32(const std::string &path, const std::vector<int64_t> &shape,
                 const float *data, std::string &error);

/// A command's float32 outputs, written together: `commit` refuses an
/// output that is one of `inputs` (the same file) or named twice, writes
/// every output to its temporary, and renames them all only when all are
/// written; on failure none is left (an earlier output included). The data
/// must stay alive until commit.
class NpyOutputs {
public:
  void add(const std::string &path, std::vector<int64_t> shape,
           const float *data);
  /// A 16-bit output: IEEE half ('<f2', `half`) or bfloat16 as its bits
  /// ('<u2', as the bf16 inputs travel).
  void add(const std::string &path, std::vector<int64_t> shape,
           const uint16_t *data, bool half);
  bool commit(const std::vector<std::string> &inputs, std::string &error);

private:
  struct Item {
    std::string path;
    std::vector<int64_t> shape;
    const void *data;
    const char *descr; ///< "<f4", "<f2" or "<u2"
    size_t elementBytes;
  };
  std::vector<Item> items;
};

} // namespace attn_rt

#endif // ATTN_RUNTIME_NPY_H
