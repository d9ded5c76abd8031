//===- MakeReference.cpp - keep an unfused copy of fused functions --------===//
//
// This file implements attn-make-reference: each function with attn.sdpa or
// attn.gated_delta_rule is cloned as <name>_reference, marked
// attn.reference, with its sdpa ops decomposed, so the eager reference
// survives next to the tiled kernel. A gated_delta_rule stays as it is in
// the copy: the tiling passes skip reference functions, and
// convert-attn-to-linalg lowers it to its eager recurrence.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_MAKEREFERENCEPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {
struct MakeReferencePass
    : attn::impl::MakeReferencePassBase<MakeReferencePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> fused;
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn->hasAttr("attn.reference"))
        continue;
      if (fn.walk([](Operation *op) {
              return isa<SDPAOp, GatedDeltaRuleOp>(op)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            }).wasInterrupted())
        fused.push_back(fn);
    }
    OpBuilder b(&getContext());
    for (func::FuncOp fn : fused) {
      std::string name = (fn.getSymName() + "_reference").str();
      if (symbols.lookup(name))
        continue; // already made (the pass is idempotent)
      func::FuncOp ref = fn.clone();
      ref.setSymName(name);
      ref->setAttr("attn.reference", b.getUnitAttr());
      ref->removeAttr("attn.layers");
      b.setInsertionPointAfter(fn);
      b.insert(ref);
      symbols.insert(ref);
      SmallVector<SDPAOp> ops;
      ref.walk([&](SDPAOp op) { ops.push_back(op); });
      for (SDPAOp op : ops)
        decomposeSDPA(op, b);
    }
  }
};
} // namespace
