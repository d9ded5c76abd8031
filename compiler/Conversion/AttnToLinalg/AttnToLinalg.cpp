//===- AttnToLinalg.cpp - attn tile/score ops -> linalg.generic -----------===//
//
// This file implements convert-attn-to-linalg: a dialect conversion in which
// every attn op is illegal, lowered by the patterns of its family (TiledOps,
// GraphOps, ScoreOps) into linalg.generic ops on tensors. An attn op without
// a pattern is an error at that op ("failed to legalize"), never left
// behind. The one exception: with micro-kernel-lanes, the
// attn.online_attention ops the CPU micro-kernel handles stay; they
// bufferize to their buffer form, which attn-cpu-micro-kernel lowers.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"
#include "compiler/Conversion/CPU/MicroKernel.h"
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
    int64_t lanes = microKernelLanes;
    if (lanes != 0 && lanes != 4 && lanes != 8 && lanes != 16) {
      emitError(getOperation().getLoc())
          << "convert-attn-to-linalg: micro-kernel-lanes must be 0, 4, 8 or "
             "16, not "
          << lanes;
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<AttnDialect>();
    // The tiles the micro-kernel takes stay for it (after bufferization).
    target.addDynamicallyLegalOp<OnlineAttentionOp>([&](Operation *op) {
      return lanes > 0 && microKernelHandles(op);
    });
    target.addDynamicallyLegalOp<GatedDeltaChunkOp>([&](Operation *op) {
      return lanes > 0 && gatedDeltaKernelHandles(op);
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
