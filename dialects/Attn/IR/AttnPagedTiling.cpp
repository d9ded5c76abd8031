//===- AttnPagedTiling.cpp - TilingInterface of attn.paged_sdpa -----------===//
//
// The iteration domain is the result's: (batch, query heads, query rows,
// value dims), all parallel, as attn.sdpa's. The caches stay whole (the
// pool is shared; a tile reads the pages of its rows through its rows of
// the block table): a batch tile takes its rows of the block table,
// kv_lengths, q_pos and range_start; a query-head tile the KV heads of its
// group(s) (a multiple or a divisor of the group size) and its sinks; a
// value tile its value dims. A tile of query rows [i0, i0 + n) keeps the
// rows' positions: q_pos + i0, or kv_lengths - q_len + i0 without q_pos
// (the op's positions are then given explicitly). Row statistics are the
// tile's rows' (every value tile writes the same ones).
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Attn/IR/AttnTilingUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"

using namespace mlir;
using namespace mlir::attn;

SmallVector<utils::IteratorType> PagedSDPAOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel);
}

SmallVector<Range> PagedSDPAOp::getIterationDomain(OpBuilder &b) {
  return resultDomain(b, getLoc(), getInit());
}

LogicalResult PagedSDPAOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets.assign(offsets.begin(), offsets.end());
  resultSizes.assign(sizes.begin(), sizes.end());
  if (resultNumber == 1) {
    // The statistics [batch, heads, rows, 2] of the tile's rows.
    resultOffsets.back() = b.getIndexAttr(0);
    resultSizes.back() = b.getIndexAttr(2);
  }
  return success();
}

FailureOr<TilingResult>
PagedSDPAOp::getTiledImplementation(OpBuilder &b,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  int64_t group = getGroupSize();
  FailureOr<int64_t> kvHeads = kvHeadsOfTile(*this, group, sizes[1]);
  if (failed(kvHeads))
    return failure();
  AffineExpr d0 = b.getAffineDimExpr(0);
  OpFoldResult kvHead0 = affine::makeComposedFoldedAffineApply(
      b, loc, d0.floorDiv(group), {offsets[1]});
  OpFoldResult zero = b.getIndexAttr(0), kvHeadsAttr = b.getIndexAttr(*kvHeads);
  auto size = [&](Value t, int64_t i) { return mixedSize(b, loc, t, i); };
  Slicer slice{b, loc, {}};
  OpFoldResult b0 = offsets[0], bn = sizes[0];
  Value q = slice(getQuery(), {b0, offsets[1], offsets[2], zero},
                  {bn, sizes[1], sizes[2], size(getQuery(), 3)});
  Value kc = slice(getKeyCache(), {zero, kvHead0, zero, zero},
                   {size(getKeyCache(), 0), kvHeadsAttr, size(getKeyCache(), 2),
                    size(getKeyCache(), 3)});
  Value vc = slice(getValueCache(), {zero, kvHead0, zero, offsets[3]},
                   {size(getValueCache(), 0), kvHeadsAttr,
                    size(getValueCache(), 2), sizes[3]});
  Value table =
      slice(getBlockTable(), {b0, zero}, {bn, size(getBlockTable(), 1)});
  Value lengths = slice(getKvLengths(), {b0}, {bn});
  Value qPos = getQPos() ? slice(getQPos(), {b0}, {bn}) : Value();
  Value rangeStart =
      getRangeStart() ? slice(getRangeStart(), {b0}, {bn}) : Value();
  Value sinks =
      getSinks() ? slice(getSinks(), {offsets[1]}, {sizes[1]}) : Value();
  // A tile of some of the rows: each sequence's first row of the tile sits
  // at (q_pos, or kv_lengths - q_len) + i0.
  OpFoldResult qLen = size(getQuery(), 2);
  bool everyRow =
      isZeroInteger(offsets[2]) && isEqualConstantIntOrValue(sizes[2], qLen);
  if (!everyRow) {
    Value base = qPos ? qPos : lengths;
    auto type = cast<RankedTensorType>(base.getType());
    Type elt = type.getElementType();
    Value i0 = getValueOrCreateConstantIndexOp(b, loc, offsets[2]);
    Value rows = getValueOrCreateConstantIndexOp(b, loc, qLen);
    Value shift = qPos ? i0 : arith::SubIOp::create(b, loc, i0, rows);
    Value shiftInt = arith::IndexCastOp::create(b, loc, elt, shift);
    SmallVector<Value> dyn;
    if (type.isDynamicDim(0))
      dyn.push_back(tensor::DimOp::create(b, loc, base, 0));
    qPos = tensor::GenerateOp::create(
        b, loc, type, dyn, [&](OpBuilder &nb, Location l, ValueRange ix) {
          Value x = tensor::ExtractOp::create(nb, l, base, ix);
          tensor::YieldOp::create(
              nb, l, arith::AddIOp::create(nb, l, x, shiftInt).getResult());
        });
  }
  Value init = slice(getInit(), offsets, sizes);
  Value statsInit;
  Type statsType;
  if (getStatsInit()) {
    statsInit = slice(getStatsInit(), {b0, offsets[1], offsets[2], zero},
                      {bn, sizes[1], sizes[2], b.getIndexAttr(2)});
    statsType = statsInit.getType();
  }
  auto tiled = PagedSDPAOp::create(
      b, loc, init.getType(), statsType, q, kc, vc, table, lengths, qPos,
      rangeStart, sinks, init, statsInit, getScaleAttr(), getMaskAttr(),
      getWindowAttr(), getSoftcapAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slice.slices};
}
