//===- NarrowAttentionIO.cpp - 16-bit q and output as the op's operands ---===//
//
// This file implements attn-narrow-attention-io: an attn.sdpa or
// attn.paged_sdpa between the `arith.extf` of a 16-bit query and the
// `arith.truncf` of its result takes the 16-bit tensors itself (its kernel
// widens q as it loads it and rounds the output as it stores it).
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_NARROWATTENTIONIOPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Folds the conversions around `op` (query operand `query`, destination
/// `init`, first result the output) when they match; true if it did.
bool narrow(Operation *op, OpOperand &query, OpOperand &init) {
  auto ext = query.get().getDefiningOp<arith::ExtFOp>();
  Value out = op->getResult(0);
  if (!ext || !out.hasOneUse())
    return false;
  auto trunc = dyn_cast<arith::TruncFOp>(*out.getUsers().begin());
  auto narrowQ = cast<RankedTensorType>(ext.getIn().getType());
  Type elt = narrowQ.getElementType();
  if (!trunc || getElementTypeOrSelf(trunc.getType()) != elt)
    return false;
  // The keys (operand 1 of both ops) no wider than the query (their rule).
  Type key = getElementTypeOrSelf(op->getOperand(1).getType());
  if (key.getIntOrFloatBitWidth() > elt.getIntOrFloatBitWidth())
    return false;
  OpBuilder b(op);
  Location loc = op->getLoc();
  // A 16-bit destination of the same sizes (a tensor.empty's own, else
  // read off the old destination).
  auto empty = init.get().getDefiningOp<tensor::EmptyOp>();
  auto wideInit = cast<RankedTensorType>(init.get().getType());
  Value narrowInit =
      empty ? tensor::EmptyOp::create(b, loc, wideInit.clone(elt),
                                      empty.getDynamicSizes())
                  .getResult()
            : tensor::EmptyOp::create(
                  b, loc, tensor::getMixedSizes(b, loc, init.get()), elt)
                  .getResult();
  query.set(ext.getIn());
  init.set(narrowInit);
  if (empty && empty->use_empty())
    empty.erase();
  out.setType(trunc.getType());
  trunc.getResult().replaceAllUsesWith(out);
  trunc.erase();
  // The shapes read off the widened q (the destinations' sizes) are q's.
  ext.getResult().replaceUsesWithIf(ext.getIn(), [](OpOperand &use) {
    return isa<tensor::DimOp>(use.getOwner());
  });
  if (ext->use_empty())
    ext.erase();
  return true;
}

struct NarrowAttentionIOPass
    : attn::impl::NarrowAttentionIOPassBase<NarrowAttentionIOPass> {
  void runOnOperation() override {
    // Collected first: folding erases the conversions around each op.
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<SDPAOp, PagedSDPAOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto sdpa = dyn_cast<SDPAOp>(op))
        narrow(op, sdpa.getQueryMutable(), sdpa.getInitMutable());
      else if (auto paged = dyn_cast<PagedSDPAOp>(op))
        narrow(op, paged.getQueryMutable(), paged.getInitMutable());
    }
  }
};

} // namespace
