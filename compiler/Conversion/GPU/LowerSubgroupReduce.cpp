//===- LowerSubgroupReduce.cpp - gpu.subgroup_reduce -> shuffles ----------===//
//
// This file implements attn-gpu-lower-subgroup-reduce with upstream's
// patterns (populateGpuLowerSubgroupReduceToShufflePatterns and its
// clustered counterpart) for 32-lane warps.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_GPULOWERSUBGROUPREDUCEPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {

constexpr unsigned kWarpSize = 32;

struct GPULowerSubgroupReducePass
    : attn::impl::GPULowerSubgroupReducePassBase<GPULowerSubgroupReducePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, kWarpSize);
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(patterns,
                                                             kWarpSize);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // A reduction the patterns could not take (not 32-bit scalars) would
    // reach the NVVM lowering, which has no lowering for it: say so here.
    WalkResult r = getOperation().walk([](gpu::SubgroupReduceOp op) {
      op.emitOpError("could not be lowered to warp shuffles");
      return WalkResult::interrupt();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
