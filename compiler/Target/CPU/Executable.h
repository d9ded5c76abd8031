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
/// `_mlir_ciface_` symbols, layer -> kind, the describe JSON) and a `main`
/// unless ATTN_RT_NO_MAIN is defined when it is compiled.
/// With `cuda`, the kernels are host stubs that launch GPU kernels on
/// device buffers: no reference or block entries, device = 1; `bf16` marks
/// tensor-core kernels (check's tolerance).
void writeModelTable(const ModelSpec &spec, const std::string &describeJson,
                     llvm::raw_ostream &os, bool cuda = false,
                     bool bf16 = false);

/// Writes the C header of the kernels' entry points (self-contained: the
/// memref descriptor types of runtime/attn_runtime.h and one prototype per
/// kernel), for --emit=obj and --emit=shared.
void writeKernelHeader(const ModelSpec &spec, llvm::raw_ostream &os);

/// Links `objectPath` and `tablePath` with the runtime into `outputPath`
/// (written under a temporary name and renamed on success): an executable,
/// or with `shared` a shared library exporting the kernels and
/// attn_rt_get_model (no main).
/// `hostOnly` (CUDA executables): no OpenMP runtime, libstdc++ and libgcc
/// linked statically, so that the executable runs on a GPU machine with
/// nothing but the driver installed.
bool linkExecutable(const std::string &objectPath,
                    const std::string &tablePath,
                    const std::string &outputPath, bool shared,
                    std::string &error, bool hostOnly = false);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_TARGET_CPU_EXECUTABLE_H
