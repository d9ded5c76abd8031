//===- FenceStreamingStores.cpp - fences after non-temporal stores --------===//
//
// This file implements attn-fence-streaming-stores.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_FENCESTREAMINGSTORESPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct FenceStreamingStoresPass
    : attn::impl::FenceStreamingStoresPassBase<FenceStreamingStoresPass> {
  void runOnOperation() override {
    // Where the stores must be ordered: after the op of a parallel region
    // that holds a streaming tile's call (its worksharing loop, or the loop
    // over runs attn-dynamic-schedule makes of it: every thread of the team
    // runs what follows in the region), or after a call that runs alone.
    // One fence per thread and loop: an sfence per call (per value head)
    // cost a decode step 5-8%.
    SetVector<Operation *> after;
    getOperation().walk([&](func::CallOp call) {
      if (!call->hasAttr(attn::kStreamingStoresAttr))
        return;
      Operation *op = call;
      while (op->getParentOp() && !isa<omp::ParallelOp>(op->getParentOp()) &&
             !isa<FunctionOpInterface>(op->getParentOp()))
        op = op->getParentOp();
      after.insert(isa_and_nonnull<omp::ParallelOp>(op->getParentOp()) ? op
                                                                       : call);
    });
    for (Operation *op : after) {
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      LLVM::CallIntrinsicOp::create(b, op->getLoc(),
                                    b.getStringAttr("llvm.x86.sse.sfence"),
                                    ValueRange{});
    }
  }
};
} // namespace
