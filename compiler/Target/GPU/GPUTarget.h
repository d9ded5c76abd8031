//===- GPUTarget.h - PTX out of the CUDA pipeline -----------------*- C++ -*-===//
//
// This file declares what attn-compile needs for --target=cuda after the
// pipeline: the NVPTX backend's initialization and the PTX of the
// serialized gpu.binary ops.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_TARGET_GPU_GPUTARGET_H
#define ATTN_COMPILER_TARGET_GPU_GPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
namespace attn {

/// Registers the NVPTX target with LLVM (gpu-module-to-binary uses it).
void initializeNVPTXTarget();

/// Writes the PTX text of every gpu.binary of `module` (format isa), each
/// preceded by a comment naming it. Fails when there is none.
LogicalResult writePTX(ModuleOp module, llvm::raw_ostream &os,
                       std::string &error);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_TARGET_GPU_GPUTARGET_H
