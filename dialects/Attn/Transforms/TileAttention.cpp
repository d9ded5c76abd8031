//===- TileAttention.cpp - attn.sdpa -> online-softmax loops --------------===//
//
// This file implements attn-tile-attention. Each attn.sdpa becomes an
// scf.forall over (batch, KV head, query block). A query tile holds the rows
// of all G = Hq/Hkv query heads of one KV head ([G, rows, d]), so each K/V
// tile is extracted once per group and folded into the online-softmax state
// of every head of the group by attn.online_attention. attn.paged_sdpa is
// tiled the same way, its tiles reading the KV head's page pools through
// the row's block table (attn.online_attention's pages(...): a tile spans
// pages) and its offset per row (kv_lengths[b] - q_len).
//
// The key range of a query block [q0, q0 + qn) is derived from positions
// (offset = kv_len - q_len for bottom-right alignment, 0 for top-left, q_pos
// when the op has one; a
// query row i sees key j iff j <= i + offset, and with a window W also
// j > i + offset - W):
//
//   hi     = min(kvLimit, q0 + qn + offset)   causal: last row's end
//   lo     = max(0, q0 + offset - W + 1)       window: first row's start
//   fullHi = min(hi, q0 + offset + 1)          visible to the first row
//   fullLo = max(lo, q0 + qn + offset - W)     visible to the last row
//
// Keys outside [lo, hi) are never visited. [fullLo, fullHi) is visible to
// every row of the block and is folded with mask = none; [lo, fullLo) and
// [fullHi, hi) with the position mask. All bounds are clamped so the three
// ranges partition [lo, hi) even for tiny or empty blocks. Each range is
// one attn.online_attention; upstream tiling (scf::tileUsingSCF, through
// the op's TilingInterface) cuts its keys into the kv-block loop that
// carries the online-softmax state. The GPU target keeps the untiled ops:
// convert-attn-to-gpu reads their ranges and builds its own loop.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/TileAttention.h"

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "dialects/Attn/Transforms/TileLoops.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_TILEATTENTIONPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

using namespace mlir::attn::tiling;

namespace mlir::attn::tiling {

OnlineAttentionOp SDPATiler::foldTile(OpBuilder &b, Location loc, Value kt,
                                      Value vt, Value kb, bool masked,
                                      ValueRange iter, Value qTile, Value gIdx,
                                      Value qPos, Value origin, Value pages,
                                      Value numKeys) {
  IndexMath n{b, loc};
  Value headOffset;
  if (op.biasTable)
    headOffset = n.mul(gIdx, n.c(groupSize));
  MLIRContext *ctx = b.getContext();
  return OnlineAttentionOp::create(
      b, loc, iter.getTypes(), qTile, kt, vt, iter[0], iter[1], iter[2], qPos,
      kb, op.biasTable, headOffset, pages, numKeys,
      masked && op.mask == MaskKind::chunked ? origin : Value(), op.scale,
      op.relativeBias,
      MaskKindAttr::get(ctx, masked ? op.mask : MaskKind::none),
      masked ? op.window : IntegerAttr(), op.softcap);
}

SmallVector<Value> SDPATiler::keyLoop(OpBuilder &b, Location loc, Value start,
                                      Value end, Value step, bool masked,
                                      ValueRange state, Value qTile,
                                      Value bIdx, Value gIdx, Value qPos,
                                      Value origin) {
  // One attn.online_attention folds the keys [start, end) into the state;
  // upstream tiling (scf::tileUsingSCF, through the op's TilingInterface)
  // then cuts its keys into tiles of `step`: the scf.for that carries the
  // state is the online softmax. The GPU backend reads the untiled op (its
  // key range, mask and pages) and builds its own key loop.
  IndexMath m{b, loc};
  Value count = m.sub(end, start);
  OnlineAttentionOp whole;
  if (!op.paged()) {
    // Keys [start, end) of K/V at batch row bIdx, KV head gIdx.
    auto rows = [&](Value src, int64_t d) -> Value {
      SmallVector<OpFoldResult> offs = {bIdx, gIdx, start, b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                         count, b.getIndexAttr(d)};
      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({kDyn, d}, kvElt), src, offs, sizes,
          strides);
    };
    Value kt = rows(op.key, headDim);
    Value vt = rows(op.value, headDimV);
    whole = foldTile(b, loc, kt, vt, start, masked, state, qTile, gIdx, qPos,
                     origin);
  } else {
    // Paged: the KV head's page pools, read through the row's block table
    // from page start / P (the page holding key `start`) to the range's
    // last page (an empty range lists none); a tile spans pages (a page of
    // 16 keys per tile made the per-tile softmax and rescale 1.5x the
    // contiguous kernel's time), and the pages listed past a tile's end are
    // the ones the kernel prefetches from.
    Value pageSize = m.dim(op.key, 2), zero = m.c(0);
    Value any =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, start, end);
    Value pagesEnd =
        arith::SelectOp::create(b, loc, any, m.ceilDiv(end, pageSize), zero);
    Value first = arith::SelectOp::create(
        b, loc, any, arith::DivSIOp::create(b, loc, start, pageSize), zero);
    auto pool = [&](Value src, int64_t d) -> Value {
      SmallVector<OpFoldResult> offs = {b.getIndexAttr(0), gIdx,
                                        b.getIndexAttr(0), b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {m.dim(src, 0), b.getIndexAttr(1),
                                         pageSize, b.getIndexAttr(d)};
      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({kDyn, kDyn, d}, kvElt), src, offs,
          sizes, strides);
    };
    Value kPool = pool(op.key, headDim), vPool = pool(op.value, headDimV);
    Type tableElt = cast<ShapedType>(op.blockTable.getType()).getElementType();
    SmallVector<OpFoldResult> offs = {bIdx, first};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                       m.sub(pagesEnd, first)};
    SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
    Value pages = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({kDyn}, tableElt), op.blockTable, offs,
        sizes, strides);
    whole = foldTile(b, loc, kPool, vPool, start, masked, state, qTile, gIdx,
                     qPos, origin, pages, count);
  }
  if (sizes.gridMapping)
    return SmallVector<Value>(whole.getResults());
  FailureOr<Operation *> loop =
      tileIntoLoops(b, cast<TilingInterface>(whole.getOperation()),
                    {b.getIndexAttr(0), b.getIndexAttr(0), step});
  if (failed(loop)) {
    op.op->emitOpError("attn-tile-attention could not tile the keys of its "
                       "attn.online_attention");
    tilingFailed = true;
    return SmallVector<Value>(whole.getResults());
  }
  return SmallVector<Value>((*loop)->getResults());
}

KeyRange SDPATiler::keyRange(OpBuilder &b, Location loc, Value bIdx, Value q0,
                             Value qn) {
  IndexMath n{b, loc};
  Value zero = n.c(0);
  // Keys visible at all: padding limit (paged: the row's length, at most
  // its block table's pages), then the causal/window cut.
  Value kvLimit = kvLen;
  if (Value lens = op.kvLengths) {
    Value len = tensor::ExtractOp::create(b, loc, lens, ValueRange{bIdx});
    if (!len.getType().isIndex())
      len = arith::IndexCastOp::create(b, loc, b.getIndexType(), len);
    kvLimit = n.clamp(len, zero, kvLen);
  }
  // Paged: the query is the row's last q_len tokens, or at q_pos[b].
  Value offset = this->offset;
  if (op.rowQPos) {
    offset = tensor::ExtractOp::create(b, loc, op.rowQPos, ValueRange{bIdx});
    if (!offset.getType().isIndex())
      offset = arith::IndexCastOp::create(b, loc, b.getIndexType(), offset);
  } else if (op.paged()) {
    offset = n.sub(kvLimit, qLen);
  }
  KeyRange r{zero, zero, kvLimit, kvLimit, offset, Value()};
  if (op.mask != MaskKind::none) {
    r.hi = n.clamp(n.add(n.add(q0, qn), offset), zero, kvLimit);
    Value firstPos = n.add(q0, offset);
    r.fullHi = n.clamp(n.add(firstPos, n.c(1)), zero, r.hi);
  }
  if (op.mask == MaskKind::chunked) {
    // Chunked local attention: the rows see keys from their chunk's start.
    // Rows of one chunk share [start, first row's position] (unmasked);
    // a block spanning a chunk boundary masks all of [first row's start,
    // hi).
    // With range_start, key 0 is the sequence's token `origin` and the
    // chunks are multiples of the window in the sequence's positions.
    Value c = n.c(op.window.getInt());
    if (op.rowRangeStart) {
      r.origin = tensor::ExtractOp::create(b, loc, op.rowRangeStart,
                                           ValueRange{bIdx});
      if (!r.origin.getType().isIndex())
        r.origin =
            arith::IndexCastOp::create(b, loc, b.getIndexType(), r.origin);
    }
    auto chunkStart = [&](Value pos) {
      Value abs = r.origin ? n.add(pos, r.origin) : pos;
      Value rem = arith::RemSIOp::create(b, loc, abs, c);
      Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        rem, zero);
      rem = arith::SelectOp::create(b, loc, neg, n.add(rem, c), rem);
      return n.sub(pos, rem);
    };
    Value firstPos = n.add(q0, offset);
    Value lastPos = n.add(firstPos, n.sub(qn, n.c(1)));
    Value firstStart = chunkStart(firstPos);
    Value lastStart = chunkStart(lastPos);
    r.lo = n.clamp(firstStart, zero, r.hi);
    r.fullLo = r.lo;
    Value oneChunk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           firstStart, lastStart);
    r.fullHi = arith::SelectOp::create(b, loc, oneChunk,
                                       n.clamp(r.fullHi, r.lo, r.hi), r.lo);
    return r;
  }
  if (op.window) {
    Value w = n.c(op.window.getInt());
    Value firstPos = n.add(q0, offset);
    Value beforeWindow = n.sub(firstPos, w);
    r.lo = n.clamp(n.add(beforeWindow, n.c(1)), zero, r.hi);
    r.fullLo = n.clamp(n.sub(n.add(n.add(q0, qn), offset), w), r.lo, r.hi);
    // Partition [lo, hi) into [lo, fullLo) [fullLo, fullHi) [fullHi, hi)
    // (fullLo may pass fullHi when the block is taller than the window).
    r.fullHi = n.clamp(r.fullHi, r.fullLo, r.hi);
  }
  return r;
}

Value SDPATiler::splat(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       double v, ValueRange dyn) {
  auto ty = RankedTensorType::get(shape, accType);
  Value c =
      arith::ConstantOp::create(b, loc, accType, b.getFloatAttr(accType, v));
  return tensor::SplatOp::create(b, loc, ty, c, dyn);
}

SmallVector<Value> SDPATiler::foldKeys(OpBuilder &b, Location loc, Value bIdx,
                                       Value gIdx, Value q0, Value qn,
                                       KeyRange range, Value clipLo,
                                       Value clipHi, Value part) {
  IndexMath n{b, loc};
  Value h0 = n.mul(gIdx, n.c(groupSize));
  // The query tile of the whole group: [G, qn, d].
  SmallVector<OpFoldResult> qOffs = {bIdx, h0, q0, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> qSizes = {b.getIndexAttr(1),
                                      b.getIndexAttr(groupSize), qn,
                                      b.getIndexAttr(headDim)};
  SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
  Value qTile = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({groupSize, kDyn, headDim}, elt),
      op.query, qOffs, qSizes, ones);
  if (clipLo) {
    range.lo = n.clamp(range.lo, clipLo, clipHi);
    range.fullLo = n.clamp(range.fullLo, clipLo, clipHi);
    range.fullHi = n.clamp(range.fullHi, clipLo, clipHi);
    range.hi = n.clamp(range.hi, clipLo, clipHi);
  }
  // Few rows per tile (decode, up to 16: one row per head of a group of 16
  // query heads per KV head): longer key tiles, so that the kernel can
  // stream K and V ahead of its use inside one tile.
  Value step = n.c(sizes.kvBlock);
  if (sizes.decodeKvBlock != sizes.kvBlock) {
    Value rows = n.mul(qn, n.c(groupSize));
    Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rows,
                                      n.c(17));
    step = arith::SelectOp::create(b, loc, few, n.c(sizes.decodeKvBlock), step);
  }
  // Initial state: acc = 0, max = -inf, sum = 0 (with sinks: the sink as
  // one more key of value 0, in one part only).
  Value counts;
  if (op.sinks)
    counts = part ? arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          part, n.c(0))
                        .getResult()
                  : arith::ConstantIntOp::create(b, loc, 1, 1).getResult();
  auto [max0, sum0] = initialRowState(b, loc, gIdx, qn, counts);
  SmallVector<Value> state = {
      splat(b, loc, {groupSize, kDyn, headDimV}, 0.0, qn), max0, sum0};
  Value qPos = n.add(q0, range.offset);
  if (op.window)
    state = keyLoop(b, loc, range.lo, range.fullLo, step, /*masked=*/true,
                    state, qTile, bIdx, gIdx, qPos, range.origin);
  state = keyLoop(b, loc, range.fullLo, range.fullHi, step, /*masked=*/false,
                  state, qTile, bIdx, gIdx, qPos, range.origin);
  if (op.mask != MaskKind::none)
    state = keyLoop(b, loc, range.fullHi, range.hi, step, /*masked=*/true,
                    state, qTile, bIdx, gIdx, qPos, range.origin);
  return state;
}

std::pair<Value, Value> SDPATiler::initialRowState(OpBuilder &b,
                                                   Location loc, Value gIdx,
                                                   Value qn, Value counts) {
  double inf = std::numeric_limits<double>::infinity();
  Value max0 = splat(b, loc, {groupSize, kDyn}, -inf, qn);
  Value sum0 = splat(b, loc, {groupSize, kDyn}, 0.0, qn);
  if (!op.sinks)
    return {max0, sum0};
  IndexMath n{b, loc};
  SmallVector<OpFoldResult> offs = {n.mul(gIdx, n.c(groupSize))};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(groupSize)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1)};
  Type sinkElt = cast<ShapedType>(op.sinks.getType()).getElementType();
  Value sinks = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({groupSize}, sinkElt), op.sinks, offs,
      sizes, strides);
  MLIRContext *ctx = b.getContext();
  AffineMap head = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
  using IT = utils::IteratorType;
  auto generic = [&](Value init, bool isMax) {
    return linalg::GenericOp::create(
               b, loc, init.getType(), ValueRange{sinks}, ValueRange{init},
               ArrayRef<AffineMap>{head, id},
               ArrayRef<IT>{IT::parallel, IT::parallel},
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value s = a[0];
                 if (s.getType() != accType)
                   s = arith::ExtFOp::create(nb, l, accType, s);
                 Value v = s;
                 if (!isMax) {
                   // exp(sink - max) with max = sink: 1, or 0 for -inf.
                   Value ninf = arith::ConstantOp::create(
                       nb, l, accType, nb.getFloatAttr(accType, -inf));
                   Value none = arith::CmpFOp::create(
                       nb, l, arith::CmpFPredicate::OEQ, s, ninf);
                   v = arith::SelectOp::create(
                       nb, l, none,
                       arith::ConstantOp::create(
                           nb, l, accType, nb.getFloatAttr(accType, 0.0)),
                       arith::ConstantOp::create(
                           nb, l, accType, nb.getFloatAttr(accType, 1.0)));
                 }
                 linalg::YieldOp::create(
                     nb, l, Value(arith::SelectOp::create(nb, l, counts, v,
                                                          a[1])));
               })
        .getResult(0);
  };
  return {generic(max0, true), generic(sum0, false)};
}

SmallVector<Value> SDPATiler::partsForall(OpBuilder &b, Location loc,
                                           Value init, Value split,
                                           Value nSplit) {
  IndexMath m{b, loc};
  Value zero = m.c(0);
  Value numQBlocks = m.ceilDiv(qLen, m.c(sizes.qBlock));
  bool maySplit = split != Value();
  SmallVector<Value> outs = {init};
  if (op.statsInit)
    outs.push_back(op.statsInit);
  int64_t wsBase = outs.size();
  SmallVector<OpFoldResult> ubs = {batch, b.getIndexAttr(hkv), numQBlocks};
  if (maySplit) {
    // Workspace of the split parts: per (batch, KV head, part) the
    // unnormalized state of the group's rows, acc [.., G, q_len, dv], max
    // and sum [.., G, q_len]; empty (q_len 0) without split.
    Value wsRows = arith::SelectOp::create(b, loc, split, qLen, zero);
    SmallVector<int64_t> accShape = {kDyn,      hkv,  kDyn,
                                     groupSize, kDyn, headDimV};
    SmallVector<int64_t> rowShape = {kDyn, hkv, kDyn, groupSize, kDyn};
    outs.push_back(tensor::EmptyOp::create(b, loc, accShape, accType,
                                           ValueRange{batch, nSplit, wsRows}));
    for (int i = 0; i < 2; ++i)
      outs.push_back(tensor::EmptyOp::create(
          b, loc, rowShape, accType, ValueRange{batch, nSplit, wsRows}));
    ubs.push_back(nSplit);
  }
  std::optional<ArrayAttr> mapping;
  if (sizes.gridMapping && !maySplit) {
    MLIRContext *ctx = b.getContext();
    mapping = b.getArrayAttr(
        {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ),
         gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY),
         gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
  }
  auto forall = scf::ForallOp::create(b, loc, ubs, outs, mapping);
  // The tiled loop nest carries the sizes it was built with (a target's
  // later lowering, convert-attn-to-gpu, reads them there).
  forall->setAttr(TilesAttr::kAttrName,
                  TilesAttr::get(b.getContext(), sizes.qBlock, sizes.kvBlock,
                                 sizes.decodeKvBlock, sizes.splitTarget,
                                 sizes.splitMinKeys));

  OpBuilder::InsertionGuard g(b);
  Block *body = forall.getBody();
  b.setInsertionPoint(body->getTerminator());
  int64_t nIvs = ubs.size();
  Value bIdx = body->getArgument(0), gIdx = body->getArgument(1),
        qbIdx = body->getArgument(2);
  IndexMath n{b, loc};
  Value q0 = n.mul(qbIdx, n.c(sizes.qBlock));
  Value blockRows = n.c(sizes.qBlock);
  Value qn = n.min(blockRows, n.sub(qLen, q0));
  KeyRange range = keyRange(b, loc, bIdx, q0, qn);
  Value sIdx, sLo, sHi;
  if (maySplit) {
    // Part s takes keys [lo + s·per, lo + (s+1)·per) of [lo, hi) (all of
    // them with one part).
    sIdx = body->getArgument(3);
    Value per = n.ceilDiv(n.sub(range.hi, range.lo), nSplit);
    sLo = n.min(n.add(range.lo, n.mul(sIdx, per)), range.hi);
    sHi = n.min(n.add(sLo, per), range.hi);
  }
  SmallVector<Value> state =
      foldKeys(b, loc, bIdx, gIdx, q0, qn, range, sLo, sHi, sIdx);
  Value blockOut = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{groupSize, kDyn, headDimV}, elt,
      ValueRange{qn});
  Value result = OnlineFinalizeOp::create(b, loc, blockOut.getType(), state[0],
                                          state[2], blockOut);
  Value rowMax = state[1], rowSum = state[2];
  OpFoldResult one = b.getIndexAttr(1), z = b.getIndexAttr(0),
               G = b.getIndexAttr(groupSize), Dv = b.getIndexAttr(headDimV);
  Value outRows = qn, partRows;
  SmallVector<Value> pieces;
  if (maySplit) {
    // Exactly one of the two writes has rows: the normalized block into
    // the output, or the part's state into the workspace.
    outRows = arith::SelectOp::create(b, loc, split, n.c(0), qn);
    partRows = n.sub(qn, outRows);
    auto rows = [&](Value t, Value count, bool withDv) -> Value {
      SmallVector<OpFoldResult> offs = {z, z}, sz = {G, count};
      if (withDv) {
        offs.push_back(z);
        sz.push_back(Dv);
      }
      SmallVector<OpFoldResult> strides(offs.size(), one);
      return tensor::ExtractSliceOp::create(b, loc, t, offs, sz, strides);
    };
    result = rows(result, outRows, true);
    if (op.statsInit) {
      rowMax = rows(rowMax, outRows, false);
      rowSum = rows(rowSum, outRows, false);
    }
    pieces = {rows(state[0], partRows, true), rows(state[1], partRows, false),
              rows(state[2], partRows, false)};
  }
  Value h0 = n.mul(gIdx, n.c(groupSize));

  // Write the group's rows back.
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> oOffs = {bIdx, h0, q0, z};
  SmallVector<OpFoldResult> oSizes = {one, G, outRows, Dv};
  SmallVector<OpFoldResult> ones(4, one);
  tensor::ParallelInsertSliceOp::create(b, loc, result,
                                        body->getArgument(nIvs), oOffs, oSizes,
                                        ones);
  if (op.statsInit)
    insertStats(b, loc, rowMax, rowSum, body->getArgument(nIvs + 1), bIdx, h0,
                q0, outRows);
  for (size_t i = 0; i < pieces.size(); ++i) {
    SmallVector<OpFoldResult> offs = {bIdx, gIdx, sIdx, z, z};
    SmallVector<OpFoldResult> sz = {one, one, one, G, partRows};
    if (i == 0) {
      offs.push_back(z);
      sz.push_back(Dv);
    }
    SmallVector<OpFoldResult> strides(offs.size(), one);
    tensor::ParallelInsertSliceOp::create(b, loc, pieces[i],
                                          body->getArgument(nIvs + wsBase + i),
                                          offs, sz, strides);
  }
  return SmallVector<Value>(forall.getResults());
}

LogicalResult SDPATiler::run() {
  OpBuilder b(op.op);
  Location loc = op.op->getLoc();
  IndexMath m{b, loc};
  auto qTy = cast<RankedTensorType>(op.query.getType()),
       vTy = cast<RankedTensorType>(op.value.getType());
  int64_t hq = qTy.getDimSize(1);
  hkv = cast<RankedTensorType>(op.key.getType()).getDimSize(1);
  groupSize = hq / hkv;
  headDim = qTy.getDimSize(3);
  headDimV = vTy.getDimSize(3);
  if (sizes.blockRows > 0)
    sizes.qBlock = std::max<int64_t>(1, sizes.blockRows / groupSize);
  // The state accumulates in f32 at least (bf16/f16 inputs).
  elt = qTy.getElementType();
  kvElt = cast<RankedTensorType>(op.key.getType()).getElementType();
  accType = elt.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : elt;

  batch = m.dim(op.query, 0);
  qLen = m.dim(op.query, 2);
  // Paged: the most keys a row can have (its block table's pages).
  // (One op per statement: argument order would depend on the compiler.)
  if (op.paged()) {
    Value maxPages = m.dim(op.blockTable, 1);
    Value pageSize = m.dim(op.key, 2);
    kvLen = m.mul(maxPages, pageSize);
  } else {
    kvLen = m.dim(op.key, 2);
  }
  // Query positions in key coordinates (the causal bounds and T5's relative
  // positions both use them).
  // A tile of a longer query (q_pos) keeps the positions of its rows.
  bool aligned = (op.mask != MaskKind::none || op.relativeBias) &&
                 op.align == CausalAlignment::bottom_right;
  if (Value qPos = op.qPos)
    offset = qPos;
  else
    offset = aligned ? m.sub(kvLen, qLen) : m.c(0);
  // Destination-passing style: the blocks are written into the op's
  // destination.
  Value init = op.init;
  // Split-K when the whole query is one block, batch x KV heads gives
  // fewer than split-target parallel iterations and the keys are long
  // enough: parts = min(ceil(target / (B·Hkv)), kv_len / min-keys). One
  // loop nest serves both cases (no branch on the output, so the kernel
  // still writes into the caller's buffer): without split there is one
  // part, the workspace is empty and the merge loop has no iteration.
  Value split, nSplit;
  if (sizes.splitTarget > 1) {
    Value items = m.mul(batch, m.c(hkv));
    items = m.max(items, m.c(1));
    Value byTarget = m.ceilDiv(m.c(sizes.splitTarget), items);
    Value byKeys =
        arith::DivSIOp::create(b, loc, kvLen, m.c(sizes.splitMinKeys));
    Value want = m.min(byTarget, byKeys);
    Value oneBlock = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                           qLen, m.c(sizes.qBlock));
    Value worth = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                        want, m.c(1));
    split = arith::AndIOp::create(b, loc, oneBlock, worth);
    nSplit = arith::SelectOp::create(b, loc, split, want, m.c(1));
  }
  SmallVector<Value> parts = partsForall(b, loc, init, split, nSplit);
  Value stats;
  if (op.statsInit) {
    stats = parts[1];
    parts.erase(parts.begin() + 1);
  }
  SmallVector<Value> results = {parts[0]};
  if (stats)
    results.push_back(stats);
  if (sizes.splitTarget > 1)
    results = mergeForall(b, loc, parts, stats, split, nSplit);
  if (tilingFailed)
    return failure();
  for (auto [i, r] : llvm::enumerate(results))
    op.op->getResult(i).replaceAllUsesWith(r);
  op.op->erase();
  return success();
}

} // namespace mlir::attn::tiling

namespace {

struct TileAttentionPass
    : attn::impl::TileAttentionPassBase<TileAttentionPass> {
  using TileAttentionPassBase::TileAttentionPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn->hasAttr("attn.reference"))
      return;
    bool gpu = target == TileTarget::gpu;
    // The options' sizes (0: the generic defaults, 64 x 64; a target's
    // choice comes on each op as #attn.tiles, from its select-tiles pass).
    TileSizes sizes;
    sizes.qBlock = qBlock ? qBlock : (gpu ? 128 : 64);
    sizes.kvBlock = kvBlock ? kvBlock : 64;
    sizes.decodeKvBlock = decodeKvBlock ? decodeKvBlock : sizes.kvBlock;
    sizes.splitTarget = splitTarget;
    sizes.splitMinKeys = splitMinKeys;
    sizes.blockRows = qBlock ? 0 : blockRows;
    sizes.gridMapping = gpu;
    auto invalid = [](const TileSizes &s) {
      return s.qBlock <= 0 || s.kvBlock <= 0 || s.decodeKvBlock <= 0 ||
             s.splitTarget < 0 || s.splitMinKeys <= 0;
    };
    auto describe = [](InFlightDiagnostic &d, const TileSizes &s) {
      d << "q-block=" << s.qBlock << " kv-block=" << s.kvBlock
        << " decode-kv-block=" << s.decodeKvBlock
        << " split-min-keys=" << s.splitMinKeys << " (split-target "
        << s.splitTarget << ": 0 or more)";
    };
    if (invalid(sizes)) {
      InFlightDiagnostic d = fn.emitError()
                             << "attn-tile-attention: tile sizes must be "
                                "positive, got ";
      describe(d, sizes);
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) {
      if (isa<SDPAOp, PagedSDPAOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      // A target's choice for this op (#attn.tiles) replaces the options.
      TileSizes opSizes = sizes;
      if (auto t = op->getAttrOfType<TilesAttr>(TilesAttr::kAttrName)) {
        opSizes.qBlock = t.getQBlock();
        opSizes.kvBlock = t.getKvBlock();
        opSizes.decodeKvBlock = t.getDecodeKvBlock();
        opSizes.splitTarget = t.getSplitTarget();
        opSizes.splitMinKeys = t.getSplitMinKeys();
        opSizes.blockRows = 0;
        if (invalid(opSizes)) {
          InFlightDiagnostic d = op->emitOpError()
                                 << "has tile sizes (attn.tiles) that are "
                                    "not positive: ";
          describe(d, opSizes);
          return signalPassFailure();
        }
      }
      LogicalResult tiled =
          isa<SDPAOp>(op)
              ? SDPATiler(AttentionOperands(cast<SDPAOp>(op)), opSizes).run()
              : SDPATiler(AttentionOperands(cast<PagedSDPAOp>(op)), opSizes)
                    .run();
      if (failed(tiled))
        return signalPassFailure();
    }
  }
};

} // namespace
