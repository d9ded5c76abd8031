//===- TileGatedDelta.cpp - attn.gated_delta_rule -> chunk loops ----------===//
//
// This file implements attn-tile-gated-delta. Each attn.gated_delta_rule
// becomes an scf.forall over (batch, value head): value head h reads
// query/key head h / (Hv / Hk) (sliced, never copied per value head). Its
// body carries the head's state [d_k, d_v], held in the final-state
// destination, through the sequence:
//
//   - seq > recurrent-max: one attn.gated_delta_chunk in the
//     chunkwise-parallel (WY/UT) form over the sequence, whose tokens
//     upstream tiling (scf::tileUsingSCF, through the op's TilingInterface)
//     cuts into an scf.for over chunks of `chunk` tokens (the last one
//     shorter) that passes the state from chunk to chunk;
//   - seq <= recurrent-max (decode, a few tokens): one
//     attn.gated_delta_chunk {recurrent} over the whole sequence, token by
//     token. A per-channel gate (KDA) takes the same two forms.
//
// The state starts as zeros or as the op's initial state: the recurrent
// form reads it where it is (initial_state: a decode step reads and writes
// the state once), the chunked one copies it into the destination first.
// Outputs are written into the output destination in place. With `lengths`, the
// head runs over its sequence's own tokens only (the length, read as
// `tensor.extract %lengths[b]` and clamped to [0, seq], replaces seq above) and
// the padding rows of its output are filled with 0.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "dialects/Attn/Transforms/TileLoops.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_TILEGATEDDELTAPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

class GatedDeltaTiler {
public:
  GatedDeltaTiler(GatedDeltaRuleOp op, int64_t chunk, int64_t recurrentMax)
      : op(op), b(op), loc(op.getLoc()), chunk(chunk),
        recurrentMax(recurrentMax) {}

  LogicalResult run();

private:
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }
  /// `x[bIdx, head, s0 : s0+n, :]` as [n, d] (rank-reduced), or
  /// `x[bIdx, head, s0 : s0+n]` as [n] for the rank-3 gate and beta.
  Value tokens(Value x, Value bIdx, Value head, Value s0, Value n) {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> offs = {bIdx, head, s0}, sizes = {attr(1),
                                                                attr(1), n};
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    if (t.getRank() == 4) {
      offs.push_back(attr(0));
      sizes.push_back(attr(t.getDimSize(3)));
      shape.push_back(t.getDimSize(3));
    }
    SmallVector<OpFoldResult> strides(t.getRank(), attr(1));
    auto type = RankedTensorType::get(shape, t.getElementType());
    return tensor::ExtractSliceOp::create(b, loc, type, x, offs, sizes,
                                          strides);
  }
  /// `x[bIdx, head, :, :]` of a state [B, Hv, d_k, d_v] as [d_k, d_v].
  Value stateOf(Value x, Value bIdx, Value head) {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> offs = {bIdx, head, attr(0), attr(0)};
    SmallVector<OpFoldResult> sizes = {attr(1), attr(1), attr(dk), attr(dv)};
    SmallVector<OpFoldResult> strides(4, attr(1));
    auto type = RankedTensorType::get({dk, dv}, t.getElementType());
    return tensor::ExtractSliceOp::create(b, loc, type, x, offs, sizes,
                                          strides);
  }
  /// One gated_delta_chunk over tokens [s0, s0 + n) of head (bIdx, h).
  GatedDeltaChunkOp chunkOp(Value bIdx, Value h, Value hk, Value s0, Value n,
                            Value outChunk, Value state, Value init,
                            bool recurrent) {
    // One slice per statement: the IR must not depend on the host
    // compiler's order of evaluating arguments.
    Value q = tokens(op.getQuery(), bIdx, hk, s0, n);
    Value k = tokens(op.getKey(), bIdx, hk, s0, n);
    Value v = tokens(op.getValue(), bIdx, h, s0, n);
    Value g = tokens(op.getGate(), bIdx, h, s0, n);
    Value beta = tokens(op.getBeta(), bIdx, h, s0, n);
    return GatedDeltaChunkOp::create(
        b, loc, TypeRange{outChunk.getType(), state.getType()}, q, k, v, g,
        beta, outChunk, state, init, op.getScaleAttr(),
        recurrent ? b.getUnitAttr() : UnitAttr(), op.getNoDeltaAttr());
  }
  /// `whole`'s tokens in chunks: an scf.for that carries the state
  /// (tileIntoLoops). Returns (outputs, state) after the loop.
  FailureOr<std::pair<Value, Value>> chunkLoop(GatedDeltaChunkOp whole);

  GatedDeltaRuleOp op;
  OpBuilder b;
  Location loc;
  int64_t chunk, recurrentMax;
  int64_t dk = 0, dv = 0;
};

FailureOr<std::pair<Value, Value>>
GatedDeltaTiler::chunkLoop(GatedDeltaChunkOp whole) {
  FailureOr<Operation *> loop =
      tileIntoLoops(b, cast<TilingInterface>(whole.getOperation()),
                    {b.getIndexAttr(chunk), b.getIndexAttr(0)});
  if (failed(loop))
    return failure();
  return std::pair<Value, Value>((*loop)->getResult(0), (*loop)->getResult(1));
}

LogicalResult GatedDeltaTiler::run() {
  RankedTensorType kTy = op.getKey().getType(), vTy = op.getValue().getType();
  int64_t hk = kTy.getDimSize(1), hv = vTy.getDimSize(1), ratio = hv / hk;
  dk = kTy.getDimSize(3);
  dv = vTy.getDimSize(3);
  Type elt = vTy.getElementType();
  Value batch = tensor::DimOp::create(b, loc, op.getValue(), 0);
  Value seq = tensor::DimOp::create(b, loc, op.getValue(), 2);
  SmallVector<OpFoldResult> lbs = {attr(0), attr(0)},
                            ubs = {batch, attr(hv)}, steps = {attr(1),
                                                              attr(1)};
  auto forall = scf::ForallOp::create(
      b, loc, lbs, ubs, steps, ValueRange{op.getOutInit(), op.getStateInit()},
      std::nullopt);
  // convert-attn-to-gpu finds the forall by this mark (its grid).
  forall->setAttr("attn.gated_delta", b.getUnitAttr());
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  Value bIdx = body->getArgument(0), h = body->getArgument(1);
  Value outAll = body->getArgument(2), stateAll = body->getArgument(3);
  Value hkIdx = arith::DivUIOp::create(b, loc, h, c(ratio));
  // The head's state, in its destination: zeros, or the initial state,
  // which the recurrent form reads in place and the chunked one copies.
  Value state = stateOf(stateAll, bIdx, h), init;
  if (Value all = op.getInitialState())
    init = stateOf(all, bIdx, h);
  else
    state = linalg::FillOp::create(
                b, loc,
                ValueRange{arith::ConstantOp::create(
                    b, loc, elt, b.getFloatAttr(elt, 0.0))},
                ValueRange{state})
                .getResult(0);
  // The head's outputs [seq, d_v], and its sequence's length.
  Value zero = c(0);
  Value out = tokens(outAll, bIdx, h, zero, seq);
  Value len = seq;
  if (Value lengths = op.getLengths()) {
    Value raw = tensor::ExtractOp::create(b, loc, lengths, ValueRange{bIdx});
    Value idx = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
    Value low = arith::MaxSIOp::create(b, loc, idx, zero);
    len = arith::MinSIOp::create(b, loc, low, seq);
  }
  // The sequence's own tokens [0, len) of the outputs (all of them without
  // lengths), as one op, and the whole outputs after it.
  SmallVector<OpFoldResult> ownOffs = {attr(0), attr(0)},
                            ownSizes = {len, attr(dv)},
                            ownStrides = {attr(1), attr(1)};
  auto own = [&]() -> Value {
    if (len == seq)
      return out;
    return tensor::ExtractSliceOp::create(b, loc, out, ownOffs, ownSizes,
                                          ownStrides);
  };
  auto whole = [&](Value o) -> Value {
    if (len == seq)
      return o;
    return tensor::InsertSliceOp::create(b, loc, o, out, ownOffs, ownSizes,
                                         ownStrides);
  };
  Value headOut, headState;
  {
    Value isShort = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                          len, c(recurrentMax));
    auto ifOp = scf::IfOp::create(
        b, loc, TypeRange{out.getType(), state.getType()}, isShort,
        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g(b);
    // Token by token (then), or chunked (else).
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    GatedDeltaChunkOp recurrent = chunkOp(bIdx, h, hkIdx, zero, len, own(),
                                          state, init, /*recurrent=*/true);
    Value thenOut = whole(recurrent.getResult(0));
    scf::YieldOp::create(b, loc, ValueRange{thenOut, recurrent.getResult(1)});
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    Value start = state;
    if (init)
      start = linalg::CopyOp::create(b, loc, init, state).getResult(0);
    GatedDeltaChunkOp all = chunkOp(bIdx, h, hkIdx, zero, len, own(), start,
                                    Value(), /*recurrent=*/false);
    FailureOr<std::pair<Value, Value>> chunked = chunkLoop(all);
    if (failed(chunked))
      return op.emitOpError("attn-tile-gated-delta could not tile the "
                            "sequence into chunks");
    Value elseOut = whole(chunked->first);
    scf::YieldOp::create(b, loc, ValueRange{elseOut, chunked->second});
    headOut = ifOp.getResult(0);
    headState = ifOp.getResult(1);
  }
  if (len != seq) {
    // The padding rows [len, seq) of the output are 0.
    Value pad = arith::SubIOp::create(b, loc, seq, len);
    SmallVector<OpFoldResult> offs = {len, attr(0)}, sizes = {pad, attr(dv)},
                              strides = {attr(1), attr(1)};
    Value rows =
        tensor::ExtractSliceOp::create(b, loc, headOut, offs, sizes, strides);
    Value zeroF = arith::ConstantOp::create(b, loc, elt, b.getFloatAttr(elt, 0.0));
    Value zeros = linalg::FillOp::create(b, loc, ValueRange{zeroF},
                                         ValueRange{rows})
                      .getResult(0);
    headOut = tensor::InsertSliceOp::create(b, loc, zeros, headOut, offs,
                                            sizes, strides);
  }
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> ones(4, attr(1));
  tensor::ParallelInsertSliceOp::create(
      b, loc, headOut, outAll,
      ArrayRef<OpFoldResult>{bIdx, h, attr(0), attr(0)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), seq, attr(dv)}, ones);
  tensor::ParallelInsertSliceOp::create(
      b, loc, headState, stateAll,
      ArrayRef<OpFoldResult>{bIdx, h, attr(0), attr(0)},
      ArrayRef<OpFoldResult>{attr(1), attr(1), attr(dk), attr(dv)}, ones);
  op.replaceAllUsesWith(forall.getResults());
  op.erase();
  return success();
}

struct TileGatedDeltaPass
    : attn::impl::TileGatedDeltaPassBase<TileGatedDeltaPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn->hasAttr("attn.reference"))
      return;
    if (chunk <= 0 || recurrentMax < 0) {
      fn.emitError() << "attn-tile-gated-delta: chunk must be positive and "
                        "recurrent-max 0 or more, got chunk="
                     << chunk.getValue()
                     << " recurrent-max=" << recurrentMax.getValue();
      return signalPassFailure();
    }
    SmallVector<GatedDeltaRuleOp> ops;
    fn.walk([&](GatedDeltaRuleOp op) { ops.push_back(op); });
    for (GatedDeltaRuleOp op : ops)
      if (failed(GatedDeltaTiler(op, chunk, recurrentMax).run()))
        return signalPassFailure();
  }
};

} // namespace
