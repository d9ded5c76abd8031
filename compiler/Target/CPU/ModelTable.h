//===- ModelTable.h - the model table as LLVM globals -------------*- C++ -*-===//
//
// This file declares the model table of compiled executables and libraries:
// what runtime/abi/attn_runtime.h's attn_rt_get_model returns, built as constant
// LLVM globals in the kernels' module (no generated source).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_TARGET_CPU_MODELTABLE_H
#define ATTN_COMPILER_TARGET_CPU_MODELTABLE_H

#include "compiler/Frontend/ModelSpec.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace attn {

/// The kernel entries of one layer kind, the one list the model table's
/// slots and the --emit header's declarations are made from: each entry's
/// slot, its symbol (`_mlir_ciface_<kind><suffix>`) and its function type
/// in runtime/abi/attn_runtime.h (attn_rt_<entry>_t).
struct KernelEntry {
  enum Slot {
    Fused,
    Reference,
    Paged,
    PagedPart,
    Mla,
    MlaReference,
    MlaPaged,
    MlaPagedPart
  };
  Slot slot;
  std::string symbol;
  const char *abiType;
};
/// The entries the kernels' module holds for `kind` (of `spec`, first
/// layer `l`): the fused kernel always, the others as spec.entries and the
/// kind's features say (`cuda`: the reference and blocks are cleared by
/// attn-compile, so the same rule gives the GPU's).
std::vector<KernelEntry> kernelEntries(const ModelSpec &spec,
                                       const std::string &kindName,
                                       const LayerSpec &l, bool linear,
                                       bool cuda);

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
