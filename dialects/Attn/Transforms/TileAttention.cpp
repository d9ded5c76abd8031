//===- TileAttention.cpp - attn.sdpa -> online-softmax loops --------------===//
//
// This file implements attn-tile-attention. Each attn.sdpa becomes an
// scf.forall over (batch, KV head, query block). A query tile holds the rows
// of all G = Hq/Hkv query heads of one KV head ([G, rows, d]), so each K/V
// tile is extracted once per group and folded into the online-softmax state
// of every head of the group by attn.online_attention.
//
// The key range of a query block [q0, q0 + qn) is derived from positions
// (offset = kv_len - q_len for bottom-right alignment, 0 for top-left; a
// query row i sees key j iff j <= i + offset, and with a window W also
// j > i + offset - W):
//
//   hi     = min(kvLimit, q0 + qn + offset)           causal: last row's end
//   lo     = max(0, q0 + offset - W + 1)               window: first row's start
//   fullHi = min(hi, q0 + offset + 1)                  visible to the first row
//   fullLo = max(lo, q0 + qn + offset - W)             visible to the last row
//
// Keys outside [lo, hi) are never visited. [fullLo, fullHi) is visible to
// every row of the block and is tiled with mask = none; [lo, fullLo) and
// [fullHi, hi) are tiled with the position mask. All bounds are clamped so
// the three ranges partition [lo, hi) even for tiny or empty blocks.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_TILEATTENTIONPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// Small arith helpers on index values.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivSIOp::create(b, loc, x, y);
  }
  Value dim(Value t, int64_t i) { return tensor::DimOp::create(b, loc, t, i); }
};

class SDPATiler {
public:
  SDPATiler(SDPAOp op, int64_t qBlock, int64_t kvBlock)
      : op(op), qBlock(qBlock), kvBlock(kvBlock) {}

  void run();

private:
  /// One loop over keys [start, end) in tiles of kvBlock, folding each tile
  /// into the state with the given mask; returns the new state.
  SmallVector<Value> keyLoop(OpBuilder &b, Location loc, Value start,
                             Value end, bool masked, ValueRange state,
                             Value qTile, Value bIdx, Value gIdx, Value qPos);

  SDPAOp op;
  int64_t qBlock, kvBlock;
  int64_t groupSize = 1, headDim = 0, headDimV = 0;
  Type accType;
};

SmallVector<Value> SDPATiler::keyLoop(OpBuilder &b, Location loc, Value start,
                                      Value end, bool masked, ValueRange state,
                                      Value qTile, Value bIdx, Value gIdx,
                                      Value qPos) {
  IndexMath m{b, loc};
  Value step = m.c(kvBlock);
  auto loop = scf::ForOp::create(
      b, loc, start, end, step, state,
      [&](OpBuilder &nb, Location nloc, Value kb, ValueRange iter) {
        IndexMath n{nb, nloc};
        Value kn = n.min(n.c(kvBlock), n.sub(end, kb));
        Type elt = op.getKey().getType().getElementType();
        auto tile = [&](Value src, int64_t d) -> Value {
          SmallVector<OpFoldResult> offs = {bIdx, gIdx, kb, nb.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1),
                                             nb.getIndexAttr(1), kn,
                                             nb.getIndexAttr(d)};
          SmallVector<OpFoldResult> strides(4, nb.getIndexAttr(1));
          return tensor::ExtractSliceOp::create(
              nb, nloc, RankedTensorType::get({kDyn, d}, elt), src, offs,
              sizes, strides);
        };
        Value kt = tile(op.getKey(), headDim);
        Value vt = tile(op.getValue(), headDimV);
        Value headOffset;
        if (op.getBiasTable())
          headOffset = n.mul(gIdx, n.c(groupSize));
        MLIRContext *ctx = nb.getContext();
        auto oa = OnlineAttentionOp::create(
            nb, nloc, iter[0].getType(), iter[1].getType(), iter[2].getType(),
            qTile, kt, vt, iter[0], iter[1], iter[2], qPos, kb,
            /*kv_limit=*/Value(), op.getBiasTable(), headOffset,
            op.getScaleAttr(), op.getRelativeBiasAttr(),
            MaskKindAttr::get(ctx, masked ? op.getMask() : MaskKind::none),
            masked ? op.getWindowAttr() : IntegerAttr(), op.getSoftcapAttr());
        scf::YieldOp::create(nb, nloc, oa.getResults());
      });
  return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
}

void SDPATiler::run() {
  OpBuilder b(op);
  Location loc = op.getLoc();
  IndexMath m{b, loc};
  RankedTensorType qTy = op.getQuery().getType(),
                   vTy = op.getValue().getType(), oTy = op.getType();
  int64_t hq = qTy.getDimSize(1);
  int64_t hkv = op.getKey().getType().getDimSize(1);
  groupSize = hq / hkv;
  headDim = qTy.getDimSize(3);
  headDimV = vTy.getDimSize(3);
  // The state accumulates in f32 at least (bf16/f16 inputs).
  Type elt = qTy.getElementType();
  accType = elt.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : elt;

  Value batch = m.dim(op.getQuery(), 0);
  Value qLen = m.dim(op.getQuery(), 2);
  Value kvLen = m.dim(op.getKey(), 2);
  Value zero = m.c(0);
  Value numQBlocks = m.ceilDiv(qLen, m.c(qBlock));
  bool causal = op.getMask() != MaskKind::none;
  std::optional<int64_t> window = op.getWindow();
  // Query positions in key coordinates (the causal bounds and T5's relative
  // positions both use them).
  bool aligned = (causal || op.getRelativeBiasAttr()) &&
                 op.getAlign() == CausalAlignment::bottom_right;
  Value offset = aligned ? m.sub(kvLen, qLen) : zero;

  SmallVector<Value> dynSizes;
  for (int64_t i = 0; i < oTy.getRank(); ++i)
    if (oTy.isDynamicDim(i))
      dynSizes.push_back(m.dim(i == 3 ? op.getValue() : op.getQuery(), i));
  Value init = tensor::EmptyOp::create(b, loc, oTy.getShape(),
                                       oTy.getElementType(), dynSizes);
  SmallVector<OpFoldResult> ubs = {batch, b.getIndexAttr(hkv), numQBlocks};
  auto forall = scf::ForallOp::create(b, loc, ubs, ValueRange{init},
                                      /*mapping=*/std::nullopt);
  forall->setAttr("attn.tiled", b.getUnitAttr());

  Block *body = forall.getBody();
  b.setInsertionPoint(body->getTerminator());
  Value bIdx = body->getArgument(0), gIdx = body->getArgument(1),
        qbIdx = body->getArgument(2), out = body->getArgument(3);
  IndexMath n{b, loc};
  Value q0 = n.mul(qbIdx, n.c(qBlock));
  Value qn = n.min(n.c(qBlock), n.sub(qLen, q0));
  Value h0 = n.mul(gIdx, n.c(groupSize));

  // The query tile of the whole group: [G, qn, d].
  SmallVector<OpFoldResult> qOffs = {bIdx, h0, q0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> qSizes = {b.getIndexAttr(1),
                                      b.getIndexAttr(groupSize), qn,
                                      b.getIndexAttr(headDim)};
  SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
  Value qTile = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({groupSize, kDyn, headDim}, elt),
      op.getQuery(), qOffs, qSizes, ones);

  // Keys visible at all: padding limit, then the causal/window cut.
  Value kvLimit = kvLen;
  if (Value lens = op.getKvLengths()) {
    Value len = tensor::ExtractOp::create(b, loc, lens, ValueRange{bIdx});
    if (!len.getType().isIndex())
      len = arith::IndexCastOp::create(b, loc, b.getIndexType(), len);
    kvLimit = n.clamp(len, zero, kvLen);
  }
  Value hi = kvLimit, lo = zero, fullLo = zero, fullHi = kvLimit;
  if (causal) {
    hi = n.clamp(n.add(n.add(q0, qn), offset), zero, kvLimit);
    fullHi = n.clamp(n.add(n.add(q0, offset), n.c(1)), zero, hi);
  }
  if (window) {
    Value w = n.c(*window);
    lo = n.clamp(n.add(n.sub(n.add(q0, offset), w), n.c(1)), zero, hi);
    fullLo = n.clamp(n.sub(n.add(n.add(q0, qn), offset), w), lo, hi);
    // Partition [lo, hi) into [lo, fullLo) [fullLo, fullHi) [fullHi, hi)
    // (fullLo may pass fullHi when the block is taller than the window).
    fullHi = n.clamp(fullHi, fullLo, hi);
  }

  // Initial state: acc = 0, max = -inf, sum = 0.
  auto splat = [&](ArrayRef<int64_t> shape, double v) -> Value {
    auto ty = RankedTensorType::get(shape, accType);
    Value c = arith::ConstantOp::create(
        b, loc, accType, b.getFloatAttr(accType, v));
    return tensor::SplatOp::create(b, loc, ty, c, ValueRange{qn});
  };
  SmallVector<Value> state = {
      splat({groupSize, kDyn, headDimV}, 0.0),
      splat({groupSize, kDyn}, -std::numeric_limits<double>::infinity()),
      splat({groupSize, kDyn}, 0.0)};
  Value qPos = n.add(q0, offset);
  if (window)
    state = keyLoop(b, loc, lo, fullLo, /*masked=*/true, state, qTile, bIdx,
                    gIdx, qPos);
  state = keyLoop(b, loc, fullLo, fullHi, /*masked=*/false, state, qTile,
                  bIdx, gIdx, qPos);
  if (causal)
    state = keyLoop(b, loc, fullHi, hi, /*masked=*/true, state, qTile, bIdx,
                    gIdx, qPos);
  Value result = OnlineFinalizeOp::create(
      b, loc, RankedTensorType::get({groupSize, kDyn, headDimV}, elt),
      state[0], state[2]);

  // Write the group's rows back.
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> oOffs = {bIdx, h0, q0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> oSizes = {b.getIndexAttr(1),
                                      b.getIndexAttr(groupSize), qn,
                                      b.getIndexAttr(headDimV)};
  tensor::ParallelInsertSliceOp::create(b, loc, result, out, oOffs, oSizes,
                                        ones);

  op.getResult().replaceAllUsesWith(forall.getResult(0));
  op.erase();
}

struct TileAttentionPass
    : attn::impl::TileAttentionPassBase<TileAttentionPass> {
  using TileAttentionPassBase::TileAttentionPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn->hasAttr("attn.reference"))
      return;
    if (target != "cpu" && target != "gpu") {
      fn.emitError() << "attn-tile-attention: unknown target '" << target
                     << "'; accepted: cpu, gpu";
      return signalPassFailure();
    }
    int64_t q = qBlock ? qBlock : (target == "gpu" ? 128 : 64);
    int64_t kv = kvBlock ? kvBlock : 64;
    if (q <= 0 || kv <= 0) {
      fn.emitError() << "attn-tile-attention: tile sizes must be positive, "
                        "got q-block="
                     << q << " kv-block=" << kv;
      return signalPassFailure();
    }
    SmallVector<SDPAOp> ops;
    fn.walk([&](SDPAOp op) { ops.push_back(op); });
    for (SDPAOp op : ops)
      SDPATiler(op, q, kv).run();
  }
};

} // namespace
