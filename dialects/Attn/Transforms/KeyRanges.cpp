//===- KeyRanges.cpp - cutting an online_attention's keys by position ----===//
//
// This file implements cutKeyRange and keySubrange (OnlineForm.h) and the
// pass attn-cut-key-ranges that applies the first to every masked
// attn.online_attention.
//
// Query row m of an op sits at position p + m (p = q_pos), key n at
// k0 + n (k0 = kv_pos); row i sees key j iff j <= i, and with a window W
// also j > i - W (a chunk of W: j in i's chunk). For rows [p, p + M) and
// keys [k0, k1):
//
//   hi     = clamp(p + M, k0, k1)           causal: the last row's end
//   lo     = clamp(p - W + 1, k0, hi)       window: the first row's start
//   fullHi = clamp(p + 1, fullLo, hi)       visible to the first row
//   fullLo = clamp(p + M - W, lo, hi)       visible to the last row
//
// Chunks: lo = fullLo = the first row's chunk start; fullHi as causal's
// when every row is in one chunk, else lo (a block spanning a chunk
// boundary masks all of [lo, hi)). Each piece is the op's tile of those
// keys (its TilingInterface), the middle one with mask = none.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/OnlineForm.h"

#include "dialects/Attn/IR/AttnTilingUtils.h"
#include "dialects/Attn/Transforms/Passes.h"
#include "dialects/Attn/Transforms/TileLoops.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CUTKEYRANGESPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

std::pair<Value, Value> mlir::attn::keyBounds(OpBuilder &b,
                                              OnlineAttentionOp op) {
  Location loc = op.getLoc();
  Value count = op.isPaged() ? op.getNumKeys()
                             : getValueOrCreateConstantIndexOp(
                                   b, loc, mixedSize(b, loc, op.getKey(), 0));
  return {op.getKvPos(),
          b.createOrFold<arith::AddIOp>(loc, op.getKvPos(), count)};
}

/// The tile of `op` folding the keys [lo, hi) (within its own) into
/// `state` (its destinations when empty), with mask `mask`: every row, so
/// the state's tiles are the whole state.
static FailureOr<OnlineAttentionOp> keyTile(RewriterBase &rewriter,
                                            OnlineAttentionOp op, Value lo,
                                            Value hi, ValueRange state,
                                            MaskKind mask) {
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  auto tiling = cast<TilingInterface>(op.getOperation());
  SmallVector<Range> domain = tiling.getIterationDomain(b);
  SmallVector<OpFoldResult> offsets, sizes;
  for (const Range &r : ArrayRef(domain).drop_back()) {
    offsets.push_back(r.offset);
    sizes.push_back(r.size);
  }
  offsets.push_back(b.createOrFold<arith::SubIOp>(loc, lo, op.getKvPos()));
  sizes.push_back(b.createOrFold<arith::SubIOp>(loc, hi, lo));
  FailureOr<TilingResult> tiled =
      tiling.getTiledImplementation(b, offsets, sizes);
  if (failed(tiled))
    return failure();
  auto piece = cast<OnlineAttentionOp>(tiled->tiledOps.back());
  // The piece folds into `state` (the op's own destinations for the
  // first): the tile's slices of every row of them go unused.
  if (state.empty())
    state = {op.getAcc(), op.getMax(), op.getSum()};
  piece.getAccMutable().assign(state[0]);
  piece.getMaxMutable().assign(state[1]);
  piece.getSumMutable().assign(state[2]);
  for (Operation *slice : llvm::reverse(tiled->generatedSlices))
    if (slice->use_empty())
      rewriter.eraseOp(slice);
  if (mask != piece.getMask()) {
    piece.setMask(mask);
    if (mask == MaskKind::none) {
      piece.removeWindowAttr();
      piece.getRangeStartMutable().clear();
    }
  }
  return piece;
}

KeyCut mlir::attn::cutKeyRange(RewriterBase &rewriter, OnlineAttentionOp op,
                               Value align) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  OpBuilder &b = rewriter;
  auto [k0, k1] = keyBounds(b, op);
  MaskKind mask = op.getMask();
  if (mask == MaskKind::none || op.isBufferForm())
    return {{op}, k0, k1};
  Location loc = op.getLoc();
  IndexMath n{b, loc};
  int64_t rank = cast<ShapedType>(op.getQuery().getType()).getRank();
  Value rows = getValueOrCreateConstantIndexOp(
      b, loc, mixedSize(b, loc, op.getQuery(), rank - 2));
  Value p = op.getQPos();
  Value lo = k0, fullLo = k0;
  Value hi = n.clamp(n.add(p, rows), k0, k1);
  Value fullHi = n.clamp(n.add(p, n.c(1)), k0, hi);
  std::optional<int64_t> window;
  if (IntegerAttr w = op.getWindowAttr())
    window = w.getInt();
  if (mask == MaskKind::chunked && window) {
    Value c = n.c(*window), zero = n.c(0);
    Value origin = op.getRangeStart();
    // The start of the chunk holding position `pos` (key coordinates; the
    // chunks are multiples of the window from the sequence's token 0).
    auto chunkStart = [&](Value pos) {
      Value abs = origin ? n.add(pos, origin) : pos;
      Value rem = arith::RemSIOp::create(b, loc, abs, c);
      Value neg =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rem, zero);
      rem = arith::SelectOp::create(b, loc, neg, n.add(rem, c), rem);
      return n.sub(pos, rem);
    };
    Value firstStart = chunkStart(p);
    Value lastStart = chunkStart(n.add(p, n.sub(rows, n.c(1))));
    lo = n.clamp(firstStart, k0, hi);
    fullLo = lo;
    Value oneChunk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           firstStart, lastStart);
    fullHi =
        arith::SelectOp::create(b, loc, oneChunk, n.clamp(fullHi, lo, hi), lo);
  } else if (window) {
    Value w = n.c(*window), one = n.c(1);
    lo = n.clamp(n.add(n.sub(p, w), one), k0, hi);
    fullLo = n.clamp(n.sub(n.add(p, rows), w), lo, hi);
    // fullLo may pass fullHi when the rows outnumber the window.
    fullHi = n.clamp(fullHi, fullLo, hi);
  }
  if (align) {
    // fullHi - fullLo ≥ 0 by the clamps: rounded down to a multiple.
    Value len = n.sub(fullHi, fullLo);
    Value whole = arith::DivSIOp::create(b, loc, len, align);
    fullHi = n.add(fullLo, n.mul(whole, align));
  }
  struct Piece {
    Value lo, hi;
    MaskKind mask;
  };
  SmallVector<Piece> plan;
  if (window)
    plan.push_back({lo, fullLo, mask});
  plan.push_back({fullLo, fullHi, MaskKind::none});
  plan.push_back({fullHi, hi, mask});
  SmallVector<OnlineAttentionOp> pieces;
  SmallVector<Value> state;
  for (const Piece &piece : plan) {
    FailureOr<OnlineAttentionOp> t =
        keyTile(rewriter, op, piece.lo, piece.hi, state, piece.mask);
    if (failed(t)) {
      for (OnlineAttentionOp made : llvm::reverse(pieces))
        rewriter.eraseOp(made);
      return {{op}, k0, k1};
    }
    pieces.push_back(*t);
    state.assign(t->getResults().begin(), t->getResults().end());
  }
  rewriter.replaceOp(op, pieces.back()->getResults());
  return {pieces, lo, hi};
}

FailureOr<OnlineAttentionOp> mlir::attn::keySubrange(RewriterBase &rewriter,
                                                     OnlineAttentionOp op,
                                                     Value lo, Value hi) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  IndexMath n{rewriter, op.getLoc()};
  auto [k0, k1] = keyBounds(rewriter, op);
  Value a = n.clamp(lo, k0, k1);
  Value e = n.clamp(hi, a, k1);
  FailureOr<OnlineAttentionOp> piece =
      keyTile(rewriter, op, a, e, {}, op.getMask());
  if (failed(piece))
    return failure();
  rewriter.replaceOp(op, piece->getResults());
  return piece;
}

namespace {

struct CutKeyRangesPass : attn::impl::CutKeyRangesPassBase<CutKeyRangesPass> {
  void runOnOperation() override {
    SmallVector<OnlineAttentionOp> ops;
    getOperation().walk([&](OnlineAttentionOp op) {
      if (op.getMask() != MaskKind::none && !op.isBufferForm())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (OnlineAttentionOp op : ops)
      cutKeyRange(rewriter, op);
  }
};

} // namespace
