//===- Executable.h - kernels' header and link with the runtime --*- C++ -*-===//
//
// This file declares the last step of `attn-compile -o NAME`: the link of
// the kernels' object (with its model table) and the runtime into an
// executable or library, and the C header of --emit=obj/shared.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_TARGET_CPU_EXECUTABLE_H
#define ATTN_COMPILER_TARGET_CPU_EXECUTABLE_H

#include "compiler/Frontend/ModelSpec.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir {
namespace attn {

/// Writes the C header of the kernels' entry points (self-contained: the
/// memref descriptor types of runtime/abi/attn_runtime.h and one prototype per
/// kernel), for --emit=obj and --emit=shared.
void writeKernelHeader(const ModelSpec &spec, llvm::raw_ostream &os);

/// Links `objectPaths` (the kernels and their model table, see
/// ModelTable.h, in one object or in the parts emitCPUObjects compiled in
/// parallel) with the runtime into `outputPath`
/// (written under a temporary name and renamed on success): an executable,
/// or with `shared` a shared library exporting the kernels and
/// attn_rt_get_model (no main).
/// `hostOnly` (CUDA executables): no OpenMP runtime, libstdc++ and libgcc
/// linked statically, so that the executable runs on a GPU machine with
/// nothing but the driver installed.
/// `mpi` (--distributed=mpi): also the runtime's MPI libraries
/// (libattn_mpi.a: the algorithms and the C API's collectives; for an
/// executable libattn_run_mpi.a, its commands over ranks) and the MPI
/// library; an error when attn-compile was built without MPI.
bool linkExecutable(const std::vector<std::string> &objectPaths,
                    const std::string &outputPath, bool shared,
                    std::string &error, bool hostOnly = false,
                    bool mpi = false);

/// True when attn-compile was built with MPI (--distributed=mpi works).
bool haveMPI();

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_TARGET_CPU_EXECUTABLE_H
