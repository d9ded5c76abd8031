//===- DecomposeSDPA.cpp - attn.sdpa -> the unfused chain -----------------===//
//
// This file implements attn-decompose-sdpa and decomposeSDPA, the reference
// path: attn.sdpa expanded into the eager chain whose scores are a
// q_len x kv_len tensor.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_DECOMPOSESDPAPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::decomposeSDPA(SDPAOp op, OpBuilder &b) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  RankedTensorType q = op.getQuery().getType(), k = op.getKey().getType();
  auto scoresTy = RankedTensorType::get(
      {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2), k.getDimSize(2)},
      q.getElementType());
  Value s = QKOp::create(b, loc, scoresTy, op.getQuery(), op.getKey());
  s = b.createOrFold<ScaleOp>(loc, s, op.getScaleAttr());
  if (FloatAttr cap = op.getSoftcapAttr())
    s = SoftcapOp::create(b, loc, s, cap);
  if (RelativeBiasAttr rel = op.getRelativeBiasAttr())
    s = RelativePositionBiasOp::create(
        b, loc, scoresTy, s, op.getBiasTable(), op.getQPos(),
        b.getI64IntegerAttr(rel.getNumBuckets()),
        b.getI64IntegerAttr(rel.getMaxDistance()),
        rel.getBidirectional() ? b.getUnitAttr() : UnitAttr(),
        op.getAlignAttr());
  if (op.getMask() != MaskKind::none || op.getKvLengths())
    s = MaskOp::create(b, loc, scoresTy, s, op.getKvLengths(), op.getQPos(),
                       op.getMaskAttr(), op.getWindowAttr(),
                       op.getAlignAttr());
  Value p = op.getSinks()
                ? SinkSoftmaxOp::create(b, loc, s.getType(), s, op.getSinks())
                      .getResult()
                : SoftmaxOp::create(b, loc, s).getResult();
  Value o = PVOp::create(b, loc, op.getType(), p, op.getValue());
  op.getResult().replaceAllUsesWith(o);
  op.erase();
}

namespace {
struct DecomposeSDPAPass
    : attn::impl::DecomposeSDPAPassBase<DecomposeSDPAPass> {
  void runOnOperation() override {
    SmallVector<SDPAOp> ops;
    getOperation().walk([&](SDPAOp op) { ops.push_back(op); });
    OpBuilder b(&getContext());
    for (SDPAOp op : ops)
      decomposeSDPA(op, b);
  }
};
} // namespace
