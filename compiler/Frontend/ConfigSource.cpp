//===- ConfigSource.cpp - a config.json with positions and typed reads ----===//
//
// This file implements ConfigSource and FieldReader. nlohmann/json parses the
// file twice: once through a SAX handler fed by a counting iterator, which
// records the byte offset where every value starts (the DOM keeps none), and
// once into the DOM. Parse errors come back through the SAX handler with
// their offset, so every diagnostic is located at config.json:line:col.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/ConfigSource.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <iterator>

using namespace mlir;
using namespace mlir::attn;
using json = nlohmann::json;

namespace {

/// Escapes a key for a JSON pointer (RFC 6901).
std::string escapePointerToken(llvm::StringRef key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

/// A character iterator that publishes how many characters the parser has
/// consumed, so the SAX handler knows where each token ended.
struct CountingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char *;
  using reference = const char &;

  const char *p = nullptr;
  const char *base = nullptr;
  size_t *consumed = nullptr;

  reference operator*() const { return *p; }
  CountingIterator &operator++() {
    ++p;
    *consumed = static_cast<size_t>(p - base);
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator &o) const { return p == o.p; }
  bool operator!=(const CountingIterator &o) const { return p != o.p; }
};

/// Records the start offset of every value by JSON pointer.
class PositionSax {
public:
  PositionSax(const std::string &text, const size_t &consumed,
              llvm::StringMap<size_t> &offsets)
      : text(text), consumed(consumed), offsets(offsets) {}

  bool null() { return scalar(consumed - 4); }
  bool boolean(bool v) { return scalar(consumed - (v ? 4 : 5)); }
  bool number_integer(json::number_integer_t) { return number(); }
  bool number_unsigned(json::number_unsigned_t) { return number(); }
  bool number_float(json::number_float_t, const std::string &) {
    return number();
  }
  bool string(std::string &) { return scalar(openingQuote(consumed - 1)); }
  bool binary(json::binary_t &) { return scalar(consumed); }

  bool start_object(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(true); }
  bool end_array() { return close(); }
  bool key(std::string &k) {
    // A key given twice in one object: JSON leaves the meaning open
    // (nlohmann keeps the last, Python's json too, other readers the
    // first), so the config is refused rather than read one way.
    size_t at = openingQuote(consumed - 1);
    auto [it, inserted] = stack.back().keyOffsets.try_emplace(k, at);
    if (!inserted) {
      errorOffset = at;
      firstCopy = it->second;
      errorPrefix = "";
      errorMessage = "key \"" + k +
                     "\" appears twice in one object of the config; JSON "
                     "readers differ on which one counts: keep one";
      return false;
    }
    stack.back().key = k;
    return true;
  }

  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &ex) {
    errorOffset = position > 0 ? position - 1 : 0;
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line
    // 1, column 2: " prefix: the diagnostic carries the location itself.
    std::string what = ex.what();
    size_t colon = what.find(": ");
    errorMessage = colon == std::string::npos ? what : what.substr(colon + 2);
    return false;
  }

  std::optional<size_t> errorOffset;
  std::string errorPrefix = "malformed JSON in config file: ";
  /// A duplicated key's first copy (the error is at the second).
  std::optional<size_t> firstCopy;
  std::string errorMessage;

private:
  struct Frame {
    bool isArray;
    size_t index = 0;
    std::string key;
    std::string pointer;
    llvm::StringMap<size_t> keyOffsets;
  };

  std::string currentPointer() const {
    if (stack.empty())
      return "";
    const Frame &f = stack.back();
    if (f.isArray)
      return f.pointer + "/" + std::to_string(f.index);
    return f.pointer + "/" + escapePointerToken(f.key);
  }

  void advance() {
    if (!stack.empty() && stack.back().isArray)
      ++stack.back().index;
  }

  bool scalar(size_t start) {
    offsets[currentPointer()] = std::min(start, text.size());
    advance();
    return true;
  }

  bool number() {
    // The lexer reads one character past a number (unless at the end).
    size_t end = consumed;
    auto isNumChar = [](char c) {
      return llvm::isDigit(c) || c == '-' || c == '+' || c == '.' ||
             c == 'e' || c == 'E';
    };
    if (end > 0 && end <= text.size() && !isNumChar(text[end - 1]))
      --end;
    size_t start = end;
    while (start > 0 && isNumChar(text[start - 1]))
      --start;
    return scalar(start);
  }

  /// The opening quote of the string whose closing quote is at `close`.
  size_t openingQuote(size_t close) const {
    size_t i = close;
    while (i > 0) {
      --i;
      if (text[i] != '"')
        continue;
      size_t slashes = 0;
      while (i >= slashes + 1 && text[i - slashes - 1] == '\\')
        ++slashes;
      if (slashes % 2 == 0)
        return i;
    }
    return 0;
  }

  bool open(bool isArray) {
    // Deeper nesting than any config needs is refused where it starts: the
    // frames (and nlohmann's recursive destruction of the DOM) grow with it.
    if (stack.size() >= kMaxConfigDepth) {
      errorOffset = consumed > 0 ? consumed - 1 : 0;
      errorMessage = "nesting deeper than " + std::to_string(kMaxConfigDepth) +
                     " levels of objects and arrays; a model config needs a "
                     "handful";
      return false;
    }
    std::string p = currentPointer();
    offsets[p] = consumed > 0 ? consumed - 1 : 0;
    stack.push_back(Frame{isArray, 0, "", p, {}});
    return true;
  }

  bool close() {
    stack.pop_back();
    advance();
    return true;
  }

  const std::string &text;
  const size_t &consumed;
  llvm::StringMap<size_t> &offsets;
  std::vector<Frame> stack;
};

} // namespace

std::string mlir::attn::formatNumber(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return std::to_string(static_cast<int64_t>(v));
  return json(v).dump();
}

std::string mlir::attn::quoteForError(const std::string &s) {
  if (s.size() <= 60)
    return "\"" + s + "\"";
  return "\"" + s.substr(0, 57) + "...\" (" + std::to_string(s.size()) +
         " bytes)";
}

std::string mlir::attn::describeJsonValue(const json &v) {
  switch (v.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return v.get<bool>() ? "true" : "false";
  case json::value_t::string: {
    std::string s = v.get<std::string>();
    // What a bare Infinity becomes (withInfinityAsStrings).
    if (s == "+Inf" || s == "-Inf")
      return std::string(s[0] == '-' ? "-" : "") +
             "Infinity (not a finite number)";
    if (s.size() > 60)
      s = s.substr(0, 57) + "...";
    return "the string \"" + s + "\"";
  }
  case json::value_t::number_integer:
    return std::to_string(v.get<int64_t>());
  case json::value_t::number_unsigned:
    return std::to_string(v.get<uint64_t>());
  case json::value_t::number_float: {
    std::string s = v.dump();
    return s;
  }
  case json::value_t::object:
    return "an object";
  case json::value_t::array:
    return "an array";
  default:
    return "a value of an unexpected kind";
  }
}

//===----------------------------------------------------------------------===//
// ConfigSource
//===----------------------------------------------------------------------===//

namespace {

constexpr size_t kMaxConfigBytes = 64u << 20;

/// Reads at most kMaxConfigBytes + 1 bytes of `path` into `text` (so that
/// /dev/zero or a huge file is refused without reading it all). Opened
/// non-blocking: a FIFO without a writer reads as empty instead of hanging
/// in open(). False with an error emitted at `loc`.
bool readConfigText(llvm::StringRef path, std::string &text, Location loc) {
  std::string p = path.str();
  int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    emitError(loc) << "cannot read config file '" << path
                   << "': " << std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    emitError(loc) << "cannot read config file '" << path
                   << "': it is a directory";
    return false;
  }
  // Back to blocking reads: a pipe with a writer delivers all its data.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  char buf[1 << 16];
  while (text.size() <= kMaxConfigBytes) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      emitError(loc) << "cannot read config file '" << path
                     << "': " << std::strerror(err);
      return false;
    }
    if (n == 0)
      break;
    text.append(buf, size_t(n));
  }
  ::close(fd);
  if (text.size() > kMaxConfigBytes) {
    emitError(loc) << "config file '" << path << "' is more than "
                   << kMaxConfigBytes
                   << " bytes; a model config.json is at most "
                   << kMaxConfigBytes << " bytes (is this a weights file?)";
    return false;
  }
  return true;
}

/// Python's json.dump writes float('inf') as the bare word Infinity (and
/// -Infinity), which is not JSON; transformers' configs carry it (Mamba2's
/// time_step_limit [0.0, Infinity]). The text nlohmann parses has each such
/// word outside strings replaced by a string of the same length ("+Inf"
/// padded with spaces), so every offset, and every diagnostic's
/// line:col, stays the file's; FieldReader's number readers then name the
/// field and refuse a string, and the fields that take infinity (e.g.
/// time_step_limit) accept "+Inf"/"-Inf".
std::string withInfinityAsStrings(const std::string &text) {
  std::string out = text;
  static const llvm::StringLiteral kWord = "Infinity";
  bool inString = false;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
      continue;
    }
    if (!llvm::StringRef(out).substr(i).starts_with(kWord))
      continue;
    size_t end = i + kWord.size();
    auto isWordChar = [](char ch) { return llvm::isAlnum(ch) || ch == '_'; };
    if ((i > 0 && isWordChar(out[i - 1]) && out[i - 1] != '-') ||
        (end < out.size() && isWordChar(out[end])))
      continue;
    bool neg = i > 0 && out[i - 1] == '-';
    size_t from = neg ? i - 1 : i;
    std::string repl = neg ? "\"-Inf\"" : "\"+Inf\"";
    repl.append(end - from - repl.size(), ' ');
    out.replace(from, end - from, repl);
    i = end - 1;
  }
  return out;
}

} // namespace

std::unique_ptr<ConfigSource> ConfigSource::load(llvm::StringRef path,
                                                 llvm::SourceMgr &srcMgr,
                                                 MLIRContext *ctx) {
  std::string text;
  if (!readConfigText(path, text, UnknownLoc::get(ctx)))
    return nullptr;
  return parse(path, std::move(text), srcMgr, ctx);
}

std::unique_ptr<ConfigSource> ConfigSource::parse(llvm::StringRef path,
                                                  std::string text,
                                                  llvm::SourceMgr &srcMgr,
                                                  MLIRContext *ctx) {
  Location fileLoc = UnknownLoc::get(ctx);
  if (text.size() > kMaxConfigBytes) {
    emitError(fileLoc) << "config '" << path << "' is more than "
                       << kMaxConfigBytes << " bytes";
    return nullptr;
  }
  srcMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path),
                            llvm::SMLoc());

  std::unique_ptr<ConfigSource> src(new ConfigSource(path.str(), text, ctx));
  src->lineStarts.push_back(0);
  for (size_t i = 0; i < src->text.size(); ++i)
    if (src->text[i] == '\n')
      src->lineStarts.push_back(i + 1);

  size_t consumed = 0;
  std::string parsed = withInfinityAsStrings(src->text);
  const char *base = parsed.data();
  CountingIterator first{base, base, &consumed};
  CountingIterator last{base + parsed.size(), base, &consumed};
  PositionSax sax(parsed, consumed, src->offsets);
  bool ok = json::sax_parse(first, last, &sax, json::input_format_t::json,
                            /*strict=*/true);
  if (!ok) {
    // At the end of the input, point at the last token rather than past it.
    size_t at = sax.errorOffset.value_or(0);
    if (at >= src->text.size()) {
      at = src->text.size();
      while (at > 0 && llvm::isSpace(src->text[at - 1]))
        --at;
      at = at > 0 ? at - 1 : 0;
    }
    InFlightDiagnostic diag = emitError(src->locOfOffset(at));
    diag << sax.errorPrefix << sax.errorMessage;
    if (sax.firstCopy)
      diag.attachNote(src->locOfOffset(*sax.firstCopy))
          << "its first copy is here";
    return nullptr;
  }
  src->rootValue = json::parse(parsed, nullptr, /*allow_exceptions=*/false);
  if (src->rootValue.is_discarded()) {
    emitError(fileLoc) << "malformed JSON in config file '" << path << "'";
    return nullptr;
  }
  if (!src->rootValue.is_object()) {
    emitError(src->loc("")) << "a model config must be a JSON object "
                               "({ \"model_type\": ..., ... }), found "
                            << describeJsonValue(src->rootValue);
    return nullptr;
  }
  return src;
}

Location ConfigSource::locOfOffset(size_t offset) const {
  auto it = std::upper_bound(lineStarts.begin(), lineStarts.end(), offset);
  size_t line = static_cast<size_t>(it - lineStarts.begin());
  size_t col = offset - lineStarts[line - 1] + 1;
  return FileLineColLoc::get(ctx, file, line, col);
}

Location ConfigSource::loc(llvm::StringRef pointer) const {
  std::string p = pointer.str();
  while (true) {
    auto it = offsets.find(p);
    if (it != offsets.end())
      return locOfOffset(it->second);
    if (p.empty())
      return FileLineColLoc::get(ctx, file, 1, 1);
    p = p.substr(0, p.rfind('/'));
  }
}

//===----------------------------------------------------------------------===//
// FieldReader
//===----------------------------------------------------------------------===//

FieldReader::FieldReader(const ConfigSource &src, std::string pointer,
                         std::string display, bool *failedFlag)
    : src(&src), ptr(std::move(pointer)), display(std::move(display)),
      failedFlag(failedFlag) {}

const json &FieldReader::obj() const {
  const json *node = &src->root();
  if (!ptr.empty())
    node = &src->root().at(json::json_pointer(ptr));
  return *node;
}

std::string FieldReader::childPointer(llvm::StringRef key) const {
  return ptr + "/" + escapePointerToken(key);
}

std::string FieldReader::name(llvm::StringRef key) const {
  return display.empty() ? key.str() : display + "." + key.str();
}

bool FieldReader::has(llvm::StringRef key) const {
  return obj().contains(key.str());
}

bool FieldReader::present(llvm::StringRef key) const {
  const json *v = get(key);
  return v && !v->is_null();
}

const json *FieldReader::get(llvm::StringRef key) const {
  const json &o = obj();
  auto it = o.find(key.str());
  return it == o.end() ? nullptr : &*it;
}

std::optional<std::string>
FieldReader::firstPresent(llvm::ArrayRef<llvm::StringRef> keys) const {
  for (llvm::StringRef k : keys)
    if (present(k))
      return k.str();
  return std::nullopt;
}

InFlightDiagnostic FieldReader::error(llvm::StringRef key) {
  *failedFlag = true;
  return emitError(src->loc(has(key) ? childPointer(key) : ptr));
}

InFlightDiagnostic FieldReader::errorHere() {
  *failedFlag = true;
  return emitError(src->loc(ptr));
}

const json *FieldReader::lookup(llvm::ArrayRef<llvm::StringRef> keys,
                                std::string &key) const {
  if (failed())
    return nullptr;
  std::optional<std::string> found = firstPresent(keys);
  if (!found)
    return nullptr;
  key = *found;
  return get(key);
}

std::optional<int64_t> FieldReader::optInt(llvm::ArrayRef<llvm::StringRef> keys,
                                           int64_t lo, int64_t hi,
                                           std::optional<int64_t> dflt) {
  std::string key;
  const json *found = lookup(keys, key);
  if (!found)
    return dflt;
  const json &v = *found;
  std::optional<int64_t> value;
  if (v.is_number_integer() && !v.is_number_unsigned())
    value = v.get<int64_t>();
  else if (v.is_number_unsigned() &&
           v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
    value = static_cast<int64_t>(v.get<uint64_t>());
  if (!value || *value < lo || *value > hi) {
    error(key) << "field '" << name(key) << "' must be an integer in [" << lo
                << ", " << hi << "], found " << describeJsonValue(v);
    return dflt;
  }
  return value;
}

int64_t FieldReader::reqInt(llvm::ArrayRef<llvm::StringRef> keys, int64_t lo,
                            int64_t hi, llvm::StringRef meaning) {
  if (failed())
    return lo;
  if (!firstPresent(keys)) {
    // A required field given as null (transformers' way of writing "not
    // set") is named where it stands, not reported as missing.
    const llvm::StringRef *null = llvm::find_if(
        keys, [&](llvm::StringRef k) { return get(k) != nullptr; });
    auto diag = null != keys.end() ? error(*null) : errorHere();
    if (null != keys.end())
      diag << "field '" << name(*null) << "' is null";
    else
      diag << "missing field '" << name(keys.front()) << "'";
    if (keys.size() > 1) {
      diag << " (or";
      for (llvm::StringRef k : keys.drop_front())
        diag << " '" << k << "'";
      diag << ")";
    }
    diag << ": " << meaning << ", an integer in [" << lo << ", " << hi << "]";
    return lo;
  }
  return optInt(keys, lo, hi).value_or(lo);
}

std::optional<double> FieldReader::optNum(llvm::ArrayRef<llvm::StringRef> keys,
                                          double lo, double hi,
                                          std::optional<double> dflt) {
  std::string key;
  const json *found = lookup(keys, key);
  if (!found)
    return dflt;
  const json &v = *found;
  if (!v.is_number() || !std::isfinite(v.get<double>()) ||
      v.get<double>() < lo || v.get<double>() > hi) {
    error(key) << "field '" << name(key) << "' must be a number in ["
                << formatNumber(lo) << ", " << formatNumber(hi) << "], found "
                << describeJsonValue(v);
    return dflt;
  }
  return v.get<double>();
}

std::optional<bool> FieldReader::optBool(llvm::ArrayRef<llvm::StringRef> keys,
                                         std::optional<bool> dflt) {
  std::string key;
  const json *found = lookup(keys, key);
  if (!found)
    return dflt;
  const json &v = *found;
  if (!v.is_boolean()) {
    error(key) << "field '" << name(key)
                << "' must be true or false, found " << describeJsonValue(v);
    return dflt;
  }
  return v.get<bool>();
}

std::optional<std::string>
FieldReader::optString(llvm::ArrayRef<llvm::StringRef> keys,
                       std::optional<std::string> dflt) {
  std::string key;
  const json *found = lookup(keys, key);
  if (!found)
    return dflt;
  const json &v = *found;
  if (!v.is_string()) {
    error(key) << "field '" << name(key) << "' must be a string, found "
                << describeJsonValue(v);
    return dflt;
  }
  return v.get<std::string>();
}

std::optional<std::string>
FieldReader::optEnum(llvm::StringRef key,
                     llvm::ArrayRef<llvm::StringRef> accepted,
                     std::optional<std::string> dflt) {
  std::optional<std::string> s = optString({key}, std::nullopt);
  if (failed() || !s)
    return dflt;
  if (llvm::is_contained(accepted, *s))
    return s;
  error(key) << "field '" << name(key) << "' is " << quoteForError(*s)
             << "; accepted: " << llvm::join(accepted, ", ");
  return dflt;
}

std::optional<FieldReader> FieldReader::optObject(llvm::StringRef key) {
  if (failed() || !present(key))
    return std::nullopt;
  const json &v = *get(key);
  if (!v.is_object()) {
    error(key) << "field '" << name(key) << "' must be an object, found "
               << describeJsonValue(v);
    return std::nullopt;
  }
  return FieldReader(*src, childPointer(key), name(key), failedFlag);
}

std::optional<std::vector<double>>
FieldReader::optNumArray(llvm::StringRef key) {
  if (failed() || !present(key))
    return std::nullopt;
  const json &v = *get(key);
  if (!v.is_array()) {
    error(key) << "field '" << name(key)
               << "' must be an array of numbers, found "
               << describeJsonValue(v);
    return std::nullopt;
  }
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() || !std::isfinite(v[i].get<double>())) {
      *failedFlag = true;
      emitError(src->loc(childPointer(key) + "/" + std::to_string(i)))
          << "field '" << name(key) << "[" << i
          << "]' must be a finite number, found " << describeJsonValue(v[i]);
      return std::nullopt;
    }
    out.push_back(v[i].get<double>());
  }
  return out;
}

std::optional<std::vector<std::string>>
FieldReader::optEnumArray(llvm::StringRef key,
                          llvm::ArrayRef<llvm::StringRef> accepted,
                          size_t size) {
  if (failed() || !present(key))
    return std::nullopt;
  const json &v = *get(key);
  if (!v.is_array()) {
    error(key) << "field '" << name(key) << "' must be an array of strings, "
               << "found " << describeJsonValue(v);
    return std::nullopt;
  }
  if (v.size() != size) {
    error(key) << "field '" << name(key) << "' lists " << v.size()
               << " entries; it needs one per layer (" << size << ")";
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() ||
        !llvm::is_contained(accepted, v[i].get<std::string>())) {
      *failedFlag = true;
      emitError(src->loc(childPointer(key) + "/" + std::to_string(i)))
          << "field '" << name(key) << "[" << i << "]' is "
          << describeJsonValue(v[i])
          << "; accepted: " << llvm::join(accepted, ", ");
      return std::nullopt;
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}
