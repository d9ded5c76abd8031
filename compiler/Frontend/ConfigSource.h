//===- ConfigSource.h - a config.json with positions and typed reads -*- C++ -*-===//
//
// This file declares ConfigSource, the parsed `config.json` of a checkpoint
// together with the file position of every value, and FieldReader, typed
// reads of its fields that report errors as MLIR diagnostics located at
// config.json:line:col, naming the field, what was found and what is accepted.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_FRONTEND_CONFIGSOURCE_H
#define ATTN_COMPILER_FRONTEND_CONFIGSOURCE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/SourceMgr.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace attn {

/// The deepest nesting of objects and arrays a config may have (real ones
/// have 3 or 4 levels); deeper input is refused where the excess starts.
constexpr size_t kMaxConfigDepth = 64;

/// A parsed config.json: the DOM, the text, and the byte offset of every value
/// keyed by JSON pointer ("/text_config/num_attention_heads").
class ConfigSource {
public:
  /// Reads and parses `path`. The file's buffer is added to `srcMgr` so that
  /// diagnostics can quote the offending line. On failure an error located in
  /// the file has been emitted and nullptr is returned.
  static std::unique_ptr<ConfigSource> load(llvm::StringRef path,
                                            llvm::SourceMgr &srcMgr,
                                            MLIRContext *ctx);
  /// The same on text already read (`name` is what locations show); the
  /// fuzz target of the front end feeds it bytes.
  static std::unique_ptr<ConfigSource> parse(llvm::StringRef name,
                                             std::string text,
                                             llvm::SourceMgr &srcMgr,
                                             MLIRContext *ctx);

  const nlohmann::json &root() const { return rootValue; }
  llvm::StringRef filename() const { return file; }
  MLIRContext *getContext() const { return ctx; }

  /// The location of the value at `pointer` (or of the nearest enclosing
  /// value that has one).
  Location loc(llvm::StringRef pointer) const;

  /// Location of a byte offset in the file.
  Location locOfOffset(size_t offset) const;

private:
  ConfigSource(std::string file, std::string text, MLIRContext *ctx)
      : file(std::move(file)), text(std::move(text)), ctx(ctx) {}

  std::string file;
  std::string text;
  MLIRContext *ctx;
  nlohmann::json rootValue;
  llvm::StringMap<size_t> offsets;
  std::vector<size_t> lineStarts;
};

/// A view of one JSON object of the config, with typed field reads. Every
/// read that fails emits one error and marks the reader (and its parent) as
/// failed; later reads are no-ops, so callers check `failed()` once.
class FieldReader {
public:
  /// Reads the object at `pointer` (the root is ""). `display` is the
  /// dotted name used in messages ("text_config").
  FieldReader(const ConfigSource &src, std::string pointer,
              std::string display, bool *failedFlag);

  bool failed() const { return *failedFlag; }
  bool has(llvm::StringRef key) const;
  /// True if present and not null.
  bool present(llvm::StringRef key) const;
  const nlohmann::json *get(llvm::StringRef key) const;

  /// The first of `keys` that is present (not null), or nullopt.
  std::optional<std::string> firstPresent(llvm::ArrayRef<llvm::StringRef> keys) const;

  /// Integer field in [lo, hi]. `keys` are aliases, the first present wins.
  /// Absent or null: `dflt` (nullopt with no default).
  std::optional<int64_t> optInt(llvm::ArrayRef<llvm::StringRef> keys,
                                int64_t lo, int64_t hi,
                                std::optional<int64_t> dflt = std::nullopt);
  /// Like optInt but an absent field is an error saying what it means.
  int64_t reqInt(llvm::ArrayRef<llvm::StringRef> keys, int64_t lo, int64_t hi,
                 llvm::StringRef meaning);
  /// Number field in [lo, hi] (integers accepted).
  std::optional<double> optNum(llvm::ArrayRef<llvm::StringRef> keys,
                               double lo, double hi,
                               std::optional<double> dflt = std::nullopt);
  std::optional<bool> optBool(llvm::ArrayRef<llvm::StringRef> keys,
                              std::optional<bool> dflt = std::nullopt);
  std::optional<std::string>
  optString(llvm::ArrayRef<llvm::StringRef> keys,
            std::optional<std::string> dflt = std::nullopt);
  /// A string field restricted to `accepted`.
  std::optional<std::string> optEnum(llvm::StringRef key,
                                     llvm::ArrayRef<llvm::StringRef> accepted,
                                     std::optional<std::string> dflt);
  /// A nested object, if present and an object (error if present and not).
  std::optional<FieldReader> optObject(llvm::StringRef key);
  /// An array of numbers (error if present and not).
  std::optional<std::vector<double>> optNumArray(llvm::StringRef key);
  /// An array of strings restricted to `accepted`, of exactly `size` entries.
  std::optional<std::vector<std::string>>
  optEnumArray(llvm::StringRef key, llvm::ArrayRef<llvm::StringRef> accepted,
               size_t size);

  /// Emits an error at `key` (or at this object when the key is absent).
  InFlightDiagnostic error(llvm::StringRef key);
  /// Emits an error at this object.
  InFlightDiagnostic errorHere();
  /// Dotted name of `key` for messages ("text_config.head_dim").
  std::string name(llvm::StringRef key) const;
  const std::string &pointer() const { return ptr; }
  const ConfigSource &source() const { return *src; }

private:
  std::string childPointer(llvm::StringRef key) const;
  /// The first present (non-null) value of `keys`, its name in `key`;
  /// nullptr when none is present or the reader has already failed.
  const nlohmann::json *lookup(llvm::ArrayRef<llvm::StringRef> keys,
                               std::string &key) const;
  const nlohmann::json &obj() const;

  const ConfigSource *src;
  std::string ptr;
  std::string display;
  bool *failedFlag;
};

/// A number for messages: integers without a fraction, others shortest.
std::string formatNumber(double v);

/// A string from a config, quoted for an error message; past 60 bytes cut,
/// with its length ("\"abc...\" (52428800 bytes)"), so that a huge value is
/// never echoed whole.
std::string quoteForError(const std::string &s);

/// Describes a JSON value's type for messages ("a string", "null", ...).
std::string describeJsonValue(const nlohmann::json &v);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_FRONTEND_CONFIGSOURCE_H
