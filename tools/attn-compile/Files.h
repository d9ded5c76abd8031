//===- Files.h - attn-compile's output files --------------------*- C++ -*-===//
//
// How the driver writes its outputs (and links what it builds) and tells
// two names of one file apart.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_COMPILE_FILES_H
#define ATTN_TOOLS_ATTN_COMPILE_FILES_H

#include "mlir/Support/Timing.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace attn_compile {

/// Writes `path` with `write`, then closes it and checks the stream: an
/// error (at open, or a full disk found at close) sets `error`, naming the
/// file, and returns false.
bool writeFile(const std::string &path,
               llvm::function_ref<void(llvm::raw_ostream &)> write,
               std::string &error);

/// Whether `a` and `b` name one file: the same path, or two names of an
/// existing file (a link, ./x).
bool sameFile(llvm::StringRef a, llvm::StringRef b);

/// Writes the kernels' objects (model table included; the parts of a
/// parallel build, or one) to a temporary directory and links them with
/// the runtime into `outputPath` (an executable, or with `shared` a
/// library; `hostOnly`: host code launching GPU kernels, linked to need
/// only the C library; `mpi`: with the runtime's MPI part), each step timed
/// under `timing`. Returns the exit code, errors printed.
int linkObjects(llvm::ArrayRef<llvm::SmallString<0>> objects,
                const std::string &outputPath, bool shared, bool hostOnly,
                bool mpi, mlir::TimingScope &timing);

} // namespace attn_compile

#endif // ATTN_TOOLS_ATTN_COMPILE_FILES_H
