//===- NameConstantGlobals.cpp - attn-name-constant-globals ---------------===//
//
// Name bufferization's constant globals by first use, in that order
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_NAMECONSTANTGLOBALSPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Names the constant globals bufferization creates (`__constant_*`) by
/// their first use in module order, and places them in that order. One-Shot
/// Module Bufferize visits functions that do not call each other in the
/// iteration order of a pointer-keyed map, so two constants of one type
/// (Gemma 3's local and global RoPE frequencies) got their names and places
/// in an order that changed from run to run and between host compilers.
struct NameConstantGlobalsPassImpl
    : attn::impl::NameConstantGlobalsPassBase<NameConstantGlobalsPassImpl> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable table(module);
    SmallVector<memref::GlobalOp> order;
    llvm::DenseSet<Operation *> seen;
    module.walk([&](memref::GetGlobalOp get) {
      auto global = table.lookup<memref::GlobalOp>(get.getName());
      if (global && global.getSymName().starts_with("__constant_") &&
          seen.insert(global).second)
        order.push_back(global);
    });
    // Temporary names first: a final name may be another's current one.
    for (auto [i, global] : llvm::enumerate(order))
      if (failed(table.rename(global, "__attn_renaming_" + std::to_string(i))))
        return signalPassFailure();
    for (auto [i, global] : llvm::enumerate(order))
      if (failed(table.rename(global, "__constant_" + std::to_string(i))))
        return signalPassFailure();
    for (memref::GlobalOp global : llvm::reverse(order))
      global->moveBefore(&module.getBody()->front());
  }
};

} // namespace
