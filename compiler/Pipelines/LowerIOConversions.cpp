//===- LowerIOConversions.cpp - 16-bit q and output on the CPU ------------===//
//
// attn-lower-io-conversions: a --qo-dtype entry's arith.extf/truncf on whole
// tensors as linalg.generic, and each arith.truncf to bf16 as integer
// operations (upstream's bf16 expansion, applied to the truncations only),
// so that no target without AVX512-BF16 calls __truncsfbf2.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_LOWERIOCONVERSIONSPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Applies `populate`'s patterns to the ops `select` picks, and only to
/// them (the ops they create are not rewritten again).
template <typename Select>
LogicalResult rewriteOnly(Operation *root,
                          void (*populate)(RewritePatternSet &),
                          Select select) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (select(op))
      ops.push_back(op);
  });
  if (ops.empty())
    return success();
  RewritePatternSet patterns(root->getContext());
  populate(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingOps);
  return applyOpPatternsGreedily(ops, std::move(patterns), config);
}

struct LowerIOConversionsPassImpl
    : attn::impl::LowerIOConversionsPassBase<LowerIOConversionsPassImpl> {
  void runOnOperation() override {
    Operation *fn = getOperation();
    auto onTensor = [](Operation *op) {
      return isa<arith::ExtFOp, arith::TruncFOp>(op) &&
             isa<RankedTensorType>(op->getResult(0).getType());
    };
    auto toBF16 = [](Operation *op) {
      auto trunc = dyn_cast<arith::TruncFOp>(op);
      return trunc && getElementTypeOrSelf(trunc.getType()).isBF16();
    };
    if (failed(rewriteOnly(
            fn, linalg::populateElementwiseToLinalgConversionPatterns,
            onTensor)) ||
        failed(rewriteOnly(fn, arith::populateExpandBFloat16Patterns, toBF16)))
      signalPassFailure();
  }
};

} // namespace
