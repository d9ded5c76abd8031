//===- AttnToLinalg.cpp - attn tile/score ops -> linalg.generic -----------===//
//
// This file implements convert-attn-to-linalg: a dialect conversion in which
// every attn op is illegal, lowered by the patterns of its family (TiledOps,
// GraphOps, ScoreOps) into linalg.generic ops on tensors. An attn op without
// a pattern is an error at that op ("failed to legalize"), never left
// behind. The one exception: a tile op a target chose for its own kernels
// (attn.kernel, set by attn-cpu-select-kernels) stays; it bufferizes to its
// buffer form, which that target's pass lowers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"
#include "compiler/Conversion/Passes.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOLINALGPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

struct ConvertAttnToLinalgPass
    : attn::impl::ConvertAttnToLinalgPassBase<ConvertAttnToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<AttnDialect>();
    // The tiles a target chose for its kernels stay for it (after
    // bufferization).
    target.addDynamicallyLegalOp<OnlineAttentionOp, GatedDeltaChunkOp>(
        [](Operation *op) {
          return op->hasAttrOfType<CPUKernelAttr>(CPUKernelAttr::kAttrName);
        });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(ctx);
    to_linalg::populateTiledOpPatterns(patterns);
    to_linalg::populateGraphOpPatterns(patterns);
    to_linalg::populateScoreOpPatterns(patterns);
    to_linalg::populateLinearOpPatterns(patterns);
    to_linalg::populateMoEOpPatterns(patterns);
    // The patterns read operands through the ops' accessors: replacements
    // take effect at once, producers before consumers.
    ConversionConfig config;
    config.allowPatternRollback = false;
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
