//===- TileLoops.cpp - upstream tiling into scf.for, for the tilers -------===//

#include "dialects/Attn/Transforms/TileLoops.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

FailureOr<Operation *>
mlir::attn::tileIntoLoops(OpBuilder &b, TilingInterface op,
                          ArrayRef<OpFoldResult> tileSizes) {
  IRRewriter rewriter(b);
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions options;
  options.setTileSizes(tileSizes);
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, op, options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  Operation *loop = tiled->loops.front();
  // Not converging only leaves slices unmerged: the IR stays valid.
  RewritePatternSet patterns(b.getContext());
  tensor::populateMergeConsecutiveInsertExtractSlicePatterns(patterns);
  (void)applyPatternsGreedily(loop, std::move(patterns));
  b.setInsertionPointAfter(loop);
  return loop;
}
