//===- Executable.h - model table and linking with the runtime ---*- C++ -*-===//
//
// This file declares the last step of `attn-compile -o NAME`: the generated
// model table (C++ source describing the kernels for the runtime) and the
// link of kernels, table and runtime into an executable.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_TARGET_CPU_EXECUTABLE_H
#define ATTN_COMPILER_TARGET_CPU_EXECUTABLE_H

#include "compiler/Frontend/ModelSpec.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
namespace attn {

/// Writes the C++ model table for `spec` (kinds, their kernels'
/// `_mlir_ciface_` symbols, layer -> kind, the describe JSON) and `main`.
void writeModelTable(const ModelSpec &spec, const std::string &describeJson,
                     llvm::raw_ostream &os);

/// Links `objectPath` and `tablePath` with the runtime into `outputPath`
/// (written under a temporary name and renamed on success).
bool linkExecutable(const std::string &objectPath,
                    const std::string &tablePath,
                    const std::string &outputPath, std::string &error);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_TARGET_CPU_EXECUTABLE_H
