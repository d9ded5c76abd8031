//===- npy.cpp - .npy float32/int64 arrays --------------------------------===//
//
// This file implements .npy reading and writing.
//
//===----------------------------------------------------------------------===//

#include "npy.h"
#include "resources.h"

#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace attn_rt;

int64_t NpyArray::numelOf(const std::vector<int64_t> &shape) {
  // A zero dim makes the array empty whatever the others are (2^40 x 2^40 x
  // 0 must not read as an overflow: the fuzzer found that one).
  for (int64_t d : shape)
    if (d == 0)
      return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

std::string attn_rt::shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += std::to_string(s[i]) + (i + 1 < s.size() ? ", " : "");
  return r + "]";
}

namespace {

/// The header dict of a .npy file, parsed strictly: `{'descr': '<f4',
/// 'fortran_order': False, 'shape': (2, 3), }` (keys in any order, each
/// once, single or double quotes, an optional trailing comma), then spaces
/// and one newline. Anything else is an error naming the offset.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &h) : h(h) {}

  bool parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape,
             std::string &error) {
    bool seenDescr = false, seenFortran = false, seenShape = false;
    skip();
    if (!expect('{', error))
      return false;
    skip();
    while (peek() != '}') {
      std::string key;
      if (!quoted(key, error))
        return false;
      skip();
      if (!expect(':', error))
        return false;
      skip();
      bool *seen = key == "descr"           ? &seenDescr
                   : key == "fortran_order" ? &seenFortran
                   : key == "shape"         ? &seenShape
                                            : nullptr;
      if (!seen)
        return fail("unknown key '" + key +
                        "' (accepted: descr, fortran_order, shape)",
                    error);
      if (*seen)
        return fail("key '" + key + "' given twice", error);
      *seen = true;
      bool ok = key == "descr"           ? quoted(descr, error)
                : key == "fortran_order" ? boolean(fortran, error)
                                         : tuple(shape, error);
      if (!ok)
        return false;
      skip();
      if (peek() == ',') {
        ++at;
        skip();
      } else if (peek() != '}') {
        return fail("expected ',' or '}'", error);
      }
    }
    ++at;
    while (peek() == ' ')
      ++at;
    if (peek() == '\n')
      ++at;
    if (at != h.size())
      return fail("unexpected text after the header dict", error);
    if (!seenDescr || !seenFortran || !seenShape) {
      error = std::string("missing key '") +
              (!seenDescr     ? "descr"
               : !seenFortran ? "fortran_order"
                              : "shape") +
              "'";
      return false;
    }
    return true;
  }

private:
  char peek() const { return at < h.size() ? h[at] : '\0'; }
  void skip() {
    while (peek() == ' ')
      ++at;
  }
  bool fail(const std::string &what, std::string &error) {
    error = what + " at offset " + std::to_string(at) + " of the header";
    return false;
  }
  bool expect(char c, std::string &error) {
    if (peek() != c)
      return fail(std::string("expected '") + c + "'", error);
    ++at;
    return true;
  }
  bool quoted(std::string &out, std::string &error) {
    char q = peek();
    if (q != '\'' && q != '"')
      return fail("expected a quoted string", error);
    size_t end = h.find(q, at + 1);
    if (end == std::string::npos)
      return fail("unterminated string", error);
    out = h.substr(at + 1, end - at - 1);
    at = end + 1;
    return true;
  }
  bool boolean(bool &out, std::string &error) {
    for (auto [word, value] : {std::pair<const char *, bool>{"True", true},
                               {"False", false}}) {
      size_t n = std::strlen(word);
      if (h.compare(at, n, word) == 0) {
        at += n;
        out = value;
        return true;
      }
    }
    return fail("expected True or False", error);
  }
  /// `(d0, d1, ...)`: non-negative decimal integers of at most 2^40.
  bool tuple(std::vector<int64_t> &out, std::string &error) {
    if (!expect('(', error))
      return false;
    out.clear();
    skip();
    while (peek() != ')') {
      if (!(peek() >= '0' && peek() <= '9'))
        return fail("expected a dimension (a non-negative integer)", error);
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        v = v * 10 + (peek() - '0');
        if (v > (int64_t(1) << 40))
          return fail("dimension larger than 2^40", error);
        ++at;
      }
      out.push_back(v);
      skip();
      if (peek() == ',') {
        ++at;
        skip();
      } else if (peek() != ')') {
        return fail("expected ',' or ')' in the shape", error);
      }
    }
    ++at;
    return true;
  }

  const std::string &h;
  size_t at = 0;
};

} // namespace

bool attn_rt::isDirectory(const std::string &path, const char *expected,
                          std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return false;
  error = path + ": is a directory; " + expected + " is expected";
  return true;
}

bool attn_rt::readNpy(const std::string &path, NpyArray &out,
                      std::string &error) {
  if (isDirectory(path, "a .npy file", error))
    return false;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = path + ": cannot open (" + std::strerror(errno) + ")";
    return false;
  }
  return readNpy(file, path, out, error);
}

bool attn_rt::readNpy(std::istream &in, const std::string &path,
                      NpyArray &out, std::string &error) {
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
  std::string descr, why;
  bool fortran = false;
  if (!HeaderParser(header).parse(descr, fortran, out.shape, why)) {
    error = path + ": malformed .npy header: " + why;
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < out.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(out.shape[i]);
  shape += ")";
  if (descr == "<f4" || descr == "=f4")
    out.dtype = "f4";
  else if (descr == "<i8" || descr == "=i8")
    out.dtype = "i8";
  else if (descr == "<f2" || descr == "=f2")
    out.dtype = "f2";
  else if (descr == "<u2" || descr == "=u2")
    out.dtype = "u2";
  else {
    error = path + ": dtype '" + descr +
            "' is not supported (the .npy reader takes float32 '<f4', "
            "int64 '<i8', float16 '<f2', uint16 '<u2' (bfloat16 bits))";
    // NumPy's default float type: the usual mistake.
    if (descr == "<f8" || descr == "=f8")
      error += "; a float64 array: save it with .astype(numpy.float32)";
    return false;
  }
  int64_t elemBytes = out.dtype == "f4" ? 4 : out.dtype == "i8" ? 8 : 2;
  if (fortran) {
    error = path + ": Fortran-order arrays are not supported (save with "
                   "C order)";
    return false;
  }
  // Check the size against the file before allocating: a header may claim
  // any shape.
  std::streampos dataStart = in.tellg();
  in.seekg(0, std::ios::end);
  uint64_t available = uint64_t(in.tellg() - dataStart);
  in.seekg(dataStart);
  unsigned __int128 need = elemBytes;
  for (int64_t d : out.shape)
    need = need * uint64_t(d) > (unsigned __int128)UINT64_MAX
               ? (unsigned __int128)UINT64_MAX
               : need * uint64_t(d);
  if (need > available) {
    error = path + ": truncated data: shape " + shape + " needs " +
            (need == (unsigned __int128)UINT64_MAX
                 ? std::string("more than 2^64")
                 : std::to_string(uint64_t(need))) +
            " bytes, the file has " + std::to_string(available);
    return false;
  }
  // A sparse file may hold any size: check the memory before allocating.
  if (!fitsInMemory(need, path + ": shape " + shape, error))
    return false;
  int64_t n = out.numel();
  size_t bytes = size_t(n) * elemBytes;
  char *dst;
  if (out.dtype == "f4") {
    out.f32.resize(n);
    dst = reinterpret_cast<char *>(out.f32.data());
  } else if (out.dtype == "i8") {
    out.i64.resize(n);
    dst = reinterpret_cast<char *>(out.i64.data());
  } else {
    out.u16.resize(n);
    dst = reinterpret_cast<char *>(out.u16.data());
  }
  in.read(dst, bytes);
  if (size_t(in.gcount()) != bytes) {
    error = path + ": truncated data: shape " + shape + " needs " +
            std::to_string(bytes) + " bytes, the file has " +
            std::to_string(in.gcount());
    return false;
  }
  return true;
}

std::string NpyArray::dtypeName() const {
  return dtype == "f4"   ? "float32"
         : dtype == "i8" ? "int64"
         : dtype == "f2" ? "float16"
                         : "uint16";
}

namespace {

/// Where a file written to `path` goes: through a symbolic link to its
/// target (the link is kept), onto a regular file (or a new one) by a
/// unique temporary in the same directory renamed over it, or straight
/// into a character device or FIFO (/dev/null, a pipe): never replacing a
/// non-regular file. False with `error` for a directory or a dangling link.
struct OutputTarget {
  std::string path;   ///< the file to replace (symlinks resolved)
  bool direct = false; ///< write through: a device or FIFO
};

bool resolveOutput(const std::string &path, OutputTarget &t,
                   std::string &error) {
  t.path = path;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0)
    return true; // a new file
  if (S_ISLNK(st.st_mode)) {
    if (char *real = realpath(path.c_str(), nullptr)) {
      t.path = real;
      std::free(real);
    } else {
      // A link to a file not written yet: its target, relative to the
      // link's directory.
      char buf[4096];
      ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
      if (n <= 0) {
        error = path + ": cannot write through the symbolic link (" +
                std::strerror(errno) + ")";
        return false;
      }
      t.path.assign(buf, size_t(n));
      size_t slash = path.rfind('/');
      if (t.path[0] != '/' && slash != std::string::npos)
        t.path = path.substr(0, slash + 1) + t.path;
    }
    if (stat(t.path.c_str(), &st) != 0)
      return true;
  }
  if (S_ISDIR(st.st_mode)) {
    error = path + ": is a directory; --out needs a file name";
    return false;
  }
  t.direct = !S_ISREG(st.st_mode);
  return true;
}

} // namespace

namespace {

/// A written output not yet in place: its temporary and where it goes
/// (a device or FIFO was written straight through: nothing to rename).
struct Staged {
  std::string tmp, target;
};

/// Writes the array to a unique temporary next to `path`'s target (or
/// straight into a device or FIFO); `commit` renames it over the target.
bool stageNpy(const std::string &path, const std::vector<int64_t> &shape,
              const void *data, const char *descr, size_t elementBytes,
              Staged &staged, std::string &error) {
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
  dict += "), }";
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  dict += std::string(pad, ' ') + "\n";
  // Format 1.0 stores the header length in two bytes.
  if (dict.size() > 0xffff) {
    error = path + ": shape of " + std::to_string(shape.size()) +
            " dims is too long for a .npy header";
    return false;
  }
  OutputTarget target;
  if (!resolveOutput(path, target, error))
    return false;
  // A unique temporary next to the target: two runs writing one --out never
  // share it, and the rename replaces the target whole or not at all.
  std::string tmp;
  int fd;
  if (target.direct) {
    fd = open(target.path.c_str(), O_WRONLY);
  } else {
    size_t slash = target.path.rfind('/');
    std::string dir =
        slash == std::string::npos ? "." : target.path.substr(0, slash);
    tmp = dir + "/.attn-out-XXXXXX";
    fd = mkstemp(&tmp[0]);
    if (fd >= 0) {
      // mkstemp creates 0600; a new file gets what open() would give it.
      mode_t mask = umask(0);
      umask(mask);
      fchmod(fd, 0666 & ~mask);
    }
  }
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : nullptr;
  if (!f) {
    error = path + ": cannot write (" + std::strerror(errno) + ")";
    if (fd >= 0)
      close(fd);
    if (!tmp.empty())
      std::remove(tmp.c_str());
    return false;
  }
  unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                            (unsigned char)(dict.size() & 0xff),
                            (unsigned char)(dict.size() >> 8)};
  int64_t n = NpyArray::numelOf(shape); // -1 past int64: never for data
                                         // that exists, checked below
  bool ok = n >= 0 && std::fwrite(head, 1, 10, f) == 10 &&
            std::fwrite(dict.data(), 1, dict.size(), f) == dict.size() &&
            std::fwrite(data, elementBytes, size_t(n), f) == size_t(n);
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    if (!tmp.empty())
      std::remove(tmp.c_str());
    error = path + ": write failed (" + std::strerror(errno) + ")";
    return false;
  }
  staged.tmp = tmp;
  staged.target = target.path;
  return true;
}

} // namespace

bool attn_rt::writeNpyF32(const std::string &path,
                          const std::vector<int64_t> &shape, const float *data,
                          std::string &error) {
  NpyOutputs outs;
  outs.add(path, shape, data);
  return outs.commit({}, error);
}

void attn_rt::NpyOutputs::add(const std::string &path,
                              std::vector<int64_t> shape, const float *data) {
  items.push_back({path, std::move(shape), data, "<f4", 4});
}

void attn_rt::NpyOutputs::add(const std::string &path,
                              std::vector<int64_t> shape, const uint16_t *data,
                              bool half) {
  items.push_back({path, std::move(shape), data, half ? "<f2" : "<u2", 2});
}

bool attn_rt::NpyOutputs::commit(const std::vector<std::string> &inputs,
                                 std::string &error) {
  // No output may be an input, nor two outputs one file.
  // One file: the same inode, or (not there yet) the same name in the
  // same directory.
  auto canonical = [](const std::string &p) {
    size_t slash = p.rfind('/');
    std::string dir = slash == std::string::npos ? "." : p.substr(0, slash + 1);
    char buf[PATH_MAX];
    if (!realpath(dir.c_str(), buf))
      return p;
    return std::string(buf) + "/" +
           (slash == std::string::npos ? p : p.substr(slash + 1));
  };
  auto same = [&](const std::string &a, const std::string &b) {
    struct stat sa, sb;
    if (stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0)
      return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev &&
             sa.st_ino == sb.st_ino;
    return a == b || canonical(a) == canonical(b);
  };
  for (size_t i = 0; i < items.size(); ++i) {
    for (const std::string &in : inputs)
      if (same(items[i].path, in)) {
        error = items[i].path + ": is also an input of this command; an "
                "output may not overwrite an input";
        return false;
      }
    for (size_t j = 0; j < i; ++j)
      if (same(items[i].path, items[j].path)) {
        error = items[i].path + ": named for two outputs";
        return false;
      }
  }
  // Every output to its temporary first; all renamed once all are written,
  // none left when one fails.
  std::vector<Staged> staged(items.size());
  auto discard = [&] {
    for (const Staged &st : staged)
      if (!st.tmp.empty())
        std::remove(st.tmp.c_str());
  };
  for (size_t i = 0; i < items.size(); ++i)
    if (!stageNpy(items[i].path, items[i].shape, items[i].data, items[i].descr,
                  items[i].elementBytes, staged[i], error)) {
      discard();
      return false;
    }
  for (size_t i = 0; i < items.size(); ++i)
    if (!staged[i].tmp.empty() &&
        std::rename(staged[i].tmp.c_str(), staged[i].target.c_str()) != 0) {
      error = items[i].path + ": write failed (" + std::strerror(errno) + ")";
      discard();
      return false;
    }
  return true;
}
