//===- FuseElementwiseKeepMatmuls.cpp - fusion, the GEMMs whole -----------===//
//
// attn-fuse-elementwise-keep-matmuls: linalg-fuse-elementwise-ops that
// leaves linalg.matmul whole.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_FUSEELEMENTWISEKEEPMATMULSPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// linalg-fuse-elementwise-ops with the matmuls left whole: upstream's pass
/// would push the tokens' expand_shape into each projection's matmul (a
/// rank-4 linalg.generic no GEMM kernel recognizes) and may fuse a norm
/// into it (recomputed for every output feature). Elementwise ops still
/// fuse with each other and with the tiles' ops.
struct FuseElementwiseKeepMatmulsPassImpl
    : attn::impl::FuseElementwiseKeepMatmulsPassBase<FuseElementwiseKeepMatmulsPassImpl> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      if (!producer || !producer->hasOneUse())
        return false;
      return !isa<linalg::MatmulOp>(producer) &&
             !isa<linalg::MatmulOp>(fused->getOwner());
    };
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
        patterns);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};

} // namespace
