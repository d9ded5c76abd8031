//===- ModelTable.h - the model table as LLVM globals -------------*- C++ -*-===//
//
// This file declares the model table of compiled executables and libraries:
// what runtime/attn_runtime.h's attn_rt_get_model returns, built as constant
// LLVM globals in the kernels' module (no generated source).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_TARGET_CPU_MODELTABLE_H
#define ATTN_COMPILER_TARGET_CPU_MODELTABLE_H

#include "compiler/Frontend/ModelSpec.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace attn {

/// Adds to `m` (the kernels translated to LLVM IR, with their
/// `_mlir_ciface_` entries) the attn_rt_model of `spec`: its kinds, their
/// kernels, block entries and weights, layer -> kind, and the describe JSON;
/// and `attn_rt_get_model` returning it. The entries besides the fused
/// kernels are spec.entries' (NULL where left out). With `cuda`, the kernels
/// are host stubs that launch GPU kernels on device buffers (spec.entries
/// then has none), device = 1; `bf16` marks tensor-core kernels (check's
/// tolerance). Returns false with `error` set when an entry is missing.
bool addModelTable(llvm::Module &m, const ModelSpec &spec,
                   const std::string &describeJson, bool cuda, bool bf16,
                   std::string &error);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_TARGET_CPU_MODELTABLE_H
