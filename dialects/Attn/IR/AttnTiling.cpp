//===- AttnTiling.cpp - TilingInterface of attn.sdpa ----------------------===//
//
// This file implements TilingInterface for attn.sdpa, so that upstream
// tiling (scf::tileUsingSCF, transform.structured.tile_using_forall) drives
// it. The iteration domain is the result's: (batch, query heads, query rows,
// value dims), all parallel; the softmax reduction over the keys stays inside
// the op (attn-tile-attention turns it into online-softmax loops).
//
// A tile of query heads [h0, h0 + th) reads the key/value heads of its
// group(s): [h0 / G, h0 / G + th / G) when G divides th, the one head
// h0 / G when th divides G (h0 is then a multiple of th, as tiling makes
// it); other head tiles are refused. A tile of query rows [i0, i0 + ti)
// keeps the positions of its rows through `q_pos` (the position of row i0
// in key coordinates), so causal, window and relative-bias masks stay those
// of the whole query.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::attn;

SmallVector<utils::IteratorType> SDPAOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel);
}

SmallVector<Range> SDPAOp::getIterationDomain(OpBuilder &b) {
  SmallVector<Range> domain;
  for (int64_t i = 0; i < 4; ++i)
    domain.push_back(Range{b.getIndexAttr(0),
                           tensor::getMixedSize(b, getLoc(), getInit(), i),
                           b.getIndexAttr(1)});
  return domain;
}

LogicalResult SDPAOp::getResultTilePosition(
    OpBuilder &, unsigned, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets.assign(offsets.begin(), offsets.end());
  resultSizes.assign(sizes.begin(), sizes.end());
  return success();
}

FailureOr<TilingResult>
SDPAOp::getTiledImplementation(OpBuilder &b, ArrayRef<OpFoldResult> offsets,
                               ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  int64_t group = getGroupSize();
  std::optional<int64_t> headTile = getConstantIntValue(sizes[1]);
  if (!headTile)
    return emitOpError("tiling the query heads needs a static tile size "
                       "(one that divides the head count)");
  int64_t kvHeads;
  if (*headTile % group == 0)
    kvHeads = *headTile / group;
  else if (group % *headTile == 0)
    kvHeads = 1;
  else
    return emitOpError() << "a tile of " << *headTile
                         << " query heads straddles GQA groups of " << group
                         << "; tile the heads by a multiple or a divisor of "
                         << group;
  AffineExpr d0 = b.getAffineDimExpr(0);
  OpFoldResult kvHead0 = affine::makeComposedFoldedAffineApply(
      b, loc, d0.floorDiv(group), {offsets[1]});
  OpFoldResult zero = b.getIndexAttr(0);
  SmallVector<Operation *> slices;
  auto slice = [&](Value source, ArrayRef<OpFoldResult> offs,
                   ArrayRef<OpFoldResult> szs) -> Value {
    SmallVector<OpFoldResult> strides(offs.size(), b.getIndexAttr(1));
    auto op = tensor::ExtractSliceOp::create(b, loc, source, offs, szs,
                                             strides);
    slices.push_back(op);
    return op.getResult();
  };
  auto size = [&](Value t, int64_t i) {
    return tensor::getMixedSize(b, loc, t, i);
  };
  OpFoldResult kvLen = size(getKey(), 2);
  OpFoldResult kvHeadsAttr = b.getIndexAttr(kvHeads);
  Value q = slice(getQuery(), {offsets[0], offsets[1], offsets[2], zero},
                  {sizes[0], sizes[1], sizes[2], size(getQuery(), 3)});
  Value k = slice(getKey(), {offsets[0], kvHead0, zero, zero},
                  {sizes[0], kvHeadsAttr, kvLen, size(getKey(), 3)});
  Value v = slice(getValue(), {offsets[0], kvHead0, zero, offsets[3]},
                  {sizes[0], kvHeadsAttr, kvLen, sizes[3]});
  Value init = slice(getInit(), offsets, sizes);
  Value lengths, table, sinks;
  if (getSinks())
    sinks = slice(getSinks(), {offsets[1]}, {sizes[1]});
  if (getKvLengths())
    lengths = slice(getKvLengths(), {offsets[0]}, {sizes[0]});
  if (getBiasTable())
    table = slice(getBiasTable(), {zero, offsets[1]},
                  {size(getBiasTable(), 0), sizes[1]});
  // The tile's first row, in key coordinates. Only masks and the relative
  // bias read positions; without them the tile needs none.
  Value qPos;
  if (getMask() != MaskKind::none || getRelativeBiasAttr()) {
    OpFoldResult base;
    if (Value given = getQPos())
      base = given;
    else if (getAlign() == CausalAlignment::bottom_right)
      base = affine::makeComposedFoldedAffineApply(
          b, loc, d0 - b.getAffineDimExpr(1),
          {kvLen, size(getQuery(), 2)});
    else
      base = zero;
    qPos = getValueOrCreateConstantIndexOp(
        b, loc,
        affine::makeComposedFoldedAffineApply(
            b, loc, d0 + b.getAffineDimExpr(1), {base, offsets[2]}));
  }
  auto tiled = SDPAOp::create(
      b, loc, init.getType(), q, k, v, lengths, table, qPos, sinks, init,
      getScaleAttr(), getRelativeBiasAttr(), getMaskAttr(), getWindowAttr(),
      getSoftcapAttr(), getAlignAttr());
  return TilingResult{{tiled}, {tiled.getResult()}, slices};
}

FailureOr<TilingResult>
SDPAOp::generateResultTileValue(OpBuilder &b, unsigned,
                                ArrayRef<OpFoldResult> offsets,
                                ArrayRef<OpFoldResult> sizes) {
  return getTiledImplementation(b, offsets, sizes);
}
