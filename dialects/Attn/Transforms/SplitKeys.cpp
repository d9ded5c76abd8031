//===- SplitKeys.cpp - attn-split-keys: split-K of attn.online_attention --===//
//
// This file implements attn-split-keys: each attn.online_attention on
// tensors is tiled by upstream tiling (scf::tileUsingSCF) as an
// outer-parallel partial reduction of its keys, through the op's
// PartialReductionOpInterface (dialects/Attn/IR/AttnTiling.cpp): an
// scf.forall of `splits` parts, then the log-sum-exp merge.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_SPLITKEYSPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

struct SplitKeysPass : attn::impl::SplitKeysPassBase<SplitKeysPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (splits < 2) {
      fn.emitError() << "attn-split-keys: splits must be 2 or more, got "
                     << splits.getValue();
      return signalPassFailure();
    }
    SmallVector<OnlineAttentionOp> ops;
    fn.walk([&](OnlineAttentionOp op) {
      if (!op.isBufferForm())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (OnlineAttentionOp op : ops) {
      unsigned keys = cast<TilingInterface>(op.getOperation())
                          .getLoopIteratorTypes()
                          .size() -
                      1;
      SmallVector<OpFoldResult> threads(keys, rewriter.getIndexAttr(0));
      threads.push_back(rewriter.getIndexAttr(splits));
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
          .setReductionTilingStrategy(
              ReductionTilingStrategy::PartialReductionOuterParallel)
          .setNumThreads(threads)
          .setReductionDims({keys});
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled)) {
        op.emitOpError("attn-split-keys could not split its keys");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, tiled->replacements);
    }
  }
};

} // namespace
