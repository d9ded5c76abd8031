//===- AttnTiling.cpp - TilingInterface of the attn ops that tile ---------===//
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
#include "dialects/Attn/IR/AttnTilingUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include <limits>

using namespace mlir;
using namespace mlir::attn;

SmallVector<utils::IteratorType> SDPAOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel);
}

SmallVector<Range> SDPAOp::getIterationDomain(OpBuilder &b) {
  return resultDomain(b, getLoc(), getInit());
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
  FailureOr<int64_t> kvHeads = kvHeadsOfTile(*this, group, sizes[1]);
  if (failed(kvHeads))
    return failure();
  AffineExpr d0 = b.getAffineDimExpr(0);
  OpFoldResult kvHead0 = affine::makeComposedFoldedAffineApply(
      b, loc, d0.floorDiv(group), {offsets[1]});
  OpFoldResult zero = b.getIndexAttr(0);
  Slicer slice{b, loc, {}};
  auto size = [&](Value t, int64_t i) {
    return tensor::getMixedSize(b, loc, t, i);
  };
  OpFoldResult kvLen = size(getKey(), 2);
  OpFoldResult kvHeadsAttr = b.getIndexAttr(*kvHeads);
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
  return TilingResult{{tiled}, {tiled.getResult()}, slice.slices};
}

FailureOr<TilingResult>
SDPAOp::generateResultTileValue(OpBuilder &b, unsigned,
                                ArrayRef<OpFoldResult> offsets,
                                ArrayRef<OpFoldResult> sizes) {
  return getTiledImplementation(b, offsets, sizes);
}

//===----------------------------------------------------------------------===//
// attn.online_attention
//===----------------------------------------------------------------------===//
//
// The iteration domain is the query's leading dims and rows (parallel),
// then the keys (a reduction): [lead..., M, N]. The op folds its keys into
// its destinations (acc, max, sum), so a loop over key tiles that carries
// them (scf::tileUsingSCF's reduction tiling, `tile_using_for` on the last
// dim) is FlashAttention's online softmax. A tile of rows [m0, m0 + tm)
// sits at q_pos + m0, of keys [n0, n0 + tn) at kv_pos + n0; with a bias
// table the leading dim's tile starts at head head_offset + h0. A paged tile
// keeps the pools and starts its page list at the page of kv_pos + n0.

SmallVector<utils::IteratorType> OnlineAttentionOp::getLoopIteratorTypes() {
  int64_t r = cast<ShapedType>(getQuery().getType()).getRank();
  SmallVector<utils::IteratorType> types(r - 1, utils::IteratorType::parallel);
  types.push_back(utils::IteratorType::reduction);
  return types;
}

SmallVector<Range> OnlineAttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  int64_t r = cast<ShapedType>(getQuery().getType()).getRank();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t i = 0; i < r - 1; ++i)
    domain.push_back(Range{zero, mixedSize(b, loc, getQuery(), i), one});
  OpFoldResult keys =
      isPaged() ? OpFoldResult(getNumKeys()) : mixedSize(b, loc, getKey(), 0);
  domain.push_back(Range{zero, keys, one});
  return domain;
}

/// The value dim (dv) of an online_attention's accumulator, read from its
/// values: upstream tiling may ask a clone whose destinations are already
/// tiles or partial states.
static OpFoldResult valueDim(OpBuilder &b, OnlineAttentionOp op) {
  Value v = op.getValue();
  return mixedSize(b, op.getLoc(), v,
                   cast<ShapedType>(v.getType()).getRank() - 1);
}

/// Where result `resultNumber` of the tile [offsets, offsets + sizes) sits
/// in the state: the tile's rows [lead..., M], and for the accumulator
/// every value dim. None depends on the key tile.
static void statePosition(OpBuilder &b, OnlineAttentionOp op,
                          unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
                          ArrayRef<OpFoldResult> sizes,
                          SmallVector<OpFoldResult> &resultOffsets,
                          SmallVector<OpFoldResult> &resultSizes) {
  size_t rows = offsets.size() - 1;
  resultOffsets.append(offsets.begin(), offsets.begin() + rows);
  resultSizes.append(sizes.begin(), sizes.begin() + rows);
  if (resultNumber == 0) {
    resultOffsets.push_back(b.getIndexAttr(0));
    resultSizes.push_back(valueDim(b, op));
  }
}

LogicalResult OnlineAttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets.clear();
  resultSizes.clear();
  statePosition(b, *this, resultNumber, offsets, sizes, resultOffsets,
                resultSizes);
  return success();
}

/// The tile [offsets, offsets + sizes) of `op`'s domain: its destinations
/// the slices of acc, max and sum of the tile's rows, or `inits` when given
/// (a split's partial state).
static FailureOr<TilingResult> tileOnline(OnlineAttentionOp op, OpBuilder &b,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes,
                                          ValueRange inits = {}) {
  if (op.isBufferForm())
    return op.emitOpError("is tiled on tensors (before bufferization) only");
  Location loc = op.getLoc();
  int64_t r = cast<ShapedType>(op.getQuery().getType()).getRank();
  OpFoldResult zero = b.getIndexAttr(0);
  Slicer slice{b, loc, {}};
  // x + offset, folded where both are constants.
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  auto shifted = [&](Value x, OpFoldResult offset) -> Value {
    return getValueOrCreateConstantIndexOp(
        b, loc,
        affine::makeComposedFoldedAffineApply(b, loc, d0 + d1, {x, offset}));
  };
  ArrayRef<OpFoldResult> rowOffs = offsets.take_front(r - 1),
                         rowSizes = sizes.take_front(r - 1);
  OpFoldResult keyOff = offsets[r - 1], keySize = sizes[r - 1];
  // The query and accumulator tiles [lead..., M, d]; max and sum [lead..., M].
  auto rowsWithLast = [&](Value x, bool offsetsOrSizes) {
    SmallVector<OpFoldResult> v(offsetsOrSizes ? rowOffs : rowSizes);
    v.push_back(offsetsOrSizes ? zero : mixedSize(b, loc, x, r - 1));
    return v;
  };
  // A tile of every row (a key loop) reads the query itself: the same
  // value in each key loop of a query block, which lets the CPU
  // micro-kernel share its scratch and packed query rows between them.
  bool everyRow = true;
  for (int64_t i = 0; i < r - 1; ++i)
    everyRow &= isZeroInteger(rowOffs[i]) &&
                isEqualConstantIntOrValue(rowSizes[i],
                                          mixedSize(b, loc, op.getQuery(), i));
  Value q = everyRow ? op.getQuery()
                     : slice(op.getQuery(), rowsWithLast(op.getQuery(), true),
                             rowsWithLast(op.getQuery(), false));
  Value acc, max, sum;
  if (!inits.empty()) {
    acc = inits[0];
    max = inits[1];
    sum = inits[2];
  } else {
    acc = slice(op.getAcc(), rowsWithLast(op.getAcc(), true),
                rowsWithLast(op.getAcc(), false));
    max = slice(op.getMax(), rowOffs, rowSizes);
    sum = slice(op.getSum(), rowOffs, rowSizes);
  }
  Value kvPos = shifted(op.getKvPos(), keyOff);
  Value k = op.getKey(), v = op.getValue(), pages = op.getPages(),
        numKeys = op.getNumKeys();
  if (!op.isPaged()) {
    k = slice(k, {keyOff, zero}, {keySize, mixedSize(b, loc, k, 1)});
    v = slice(v, {keyOff, zero}, {keySize, mixedSize(b, loc, v, 1)});
  } else {
    // The tile's pages start at the one that holds its first key:
    // (kv_pos + n0) / P - kv_pos / P of the list.
    Value pageSize = getValueOrCreateConstantIndexOp(
        b, loc, mixedSize(b, loc, op.getKey(), 1));
    // (One op per statement: argument order would depend on the compiler.)
    Value tilePage = arith::DivSIOp::create(b, loc, kvPos, pageSize);
    Value opPage = arith::DivSIOp::create(b, loc, op.getKvPos(), pageSize);
    Value first = arith::SubIOp::create(b, loc, tilePage, opPage);
    Value listed =
        getValueOrCreateConstantIndexOp(b, loc, mixedSize(b, loc, pages, 0));
    Value rest = arith::SubIOp::create(b, loc, listed, first);
    pages = slice(pages, {OpFoldResult(first)}, {OpFoldResult(rest)});
    numKeys = getValueOrCreateConstantIndexOp(b, loc, keySize);
  }
  Value headOffset = op.getHeadOffset();
  if (headOffset && r > 2)
    headOffset = shifted(headOffset, rowOffs[0]);

  Value qPos = shifted(op.getQPos(), rowOffs[r - 2]);
  // A clone with the tile's operands (the same optional ones present).
  auto tiled = cast<OnlineAttentionOp>(b.clone(*op.getOperation()));
  tiled.getQueryMutable().assign(q);
  tiled.getKeyMutable().assign(k);
  tiled.getValueMutable().assign(v);
  tiled.getAccMutable().assign(acc);
  tiled.getMaxMutable().assign(max);
  tiled.getSumMutable().assign(sum);
  tiled.getQPosMutable().assign(qPos);
  tiled.getKvPosMutable().assign(kvPos);
  if (headOffset)
    tiled.getHeadOffsetMutable().assign(headOffset);
  if (pages) {
    tiled.getPagesMutable().assign(pages);
    tiled.getNumKeysMutable().assign(numKeys);
  }
  Value state[] = {acc, max, sum};
  for (auto [result, dest] : llvm::zip(tiled->getResults(), state))
    result.setType(dest.getType());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slice.slices};
}

FailureOr<TilingResult>
OnlineAttentionOp::getTiledImplementation(OpBuilder &b,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes) {
  return tileOnline(*this, b, offsets, sizes);
}

//===----------------------------------------------------------------------===//
// attn.gated_delta_chunk
//===----------------------------------------------------------------------===//
//
// The iteration domain is [n tokens, d_v]: the tokens are a reduction (the
// state carries the recurrence from one to the next, so a loop over token
// tiles that passes the state on is the chunked algorithm), the value dims
// are parallel (each column of the state, the values and the outputs
// evolves on its own). d_v tiles must be static (the op's d_v is): a size
// that divides d_v.

SmallVector<utils::IteratorType> GatedDeltaChunkOp::getLoopIteratorTypes() {
  return {utils::IteratorType::reduction, utils::IteratorType::parallel};
}

SmallVector<Range> GatedDeltaChunkOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return {Range{zero, mixedSize(b, loc, getValue(), 0), one},
          Range{zero, mixedSize(b, loc, getValue(), 1), one}};
}

LogicalResult GatedDeltaChunkOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  // The outputs of the tile's tokens and value dims; the state's value dims
  // (every key dim).
  if (resultNumber == 0) {
    resultOffsets.assign(offsets.begin(), offsets.end());
    resultSizes.assign(sizes.begin(), sizes.end());
    return success();
  }
  resultOffsets = {b.getIndexAttr(0), offsets[1]};
  resultSizes = {mixedSize(b, getLoc(), getState(), 0), sizes[1]};
  return success();
}

FailureOr<TilingResult>
GatedDeltaChunkOp::getTiledImplementation(OpBuilder &b,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes) {
  if (isBufferForm())
    return emitOpError("is tiled on tensors (before bufferization) only");
  int64_t dv = cast<ShapedType>(getValue().getType()).getDimSize(1);
  std::optional<int64_t> dvTile = getConstantIntValue(sizes[1]);
  if (!dvTile || *dvTile <= 0 || dv % *dvTile != 0)
    return emitOpError() << "tiles d_v = " << dv
                         << " by a static size that divides it";
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0);
  Slicer slice{b, loc, {}};
  OpFoldResult t0 = offsets[0], tn = sizes[0], v0 = offsets[1], vn = sizes[1];
  Value q =
      slice(getQuery(), {t0, zero}, {tn, mixedSize(b, loc, getQuery(), 1)});
  Value k = slice(getKey(), {t0, zero}, {tn, mixedSize(b, loc, getKey(), 1)});
  Value v = slice(getValue(), {t0, v0}, {tn, vn});
  Value g = hasChannelGate() ? slice(getGate(), {t0, zero},
                                     {tn, mixedSize(b, loc, getGate(), 1)})
                             : slice(getGate(), {t0}, {tn});
  Value beta = slice(getBeta(), {t0}, {tn});
  Value out = slice(getOut(), {t0, v0}, {tn, vn});
  OpFoldResult dk = mixedSize(b, loc, getState(), 0);
  Value state = slice(getState(), {zero, v0}, {dk, vn});
  Value init;
  if (getInitialState()) {
    // Its state is the first token's: a tile of the tokens past the first
    // would start from it again.
    OpFoldResult n = mixedSize(b, loc, getValue(), 0);
    auto dimOf = [](OpFoldResult x) {
      auto v = dyn_cast<Value>(x);
      return v ? v.getDefiningOp<tensor::DimOp>() : tensor::DimOp();
    };
    tensor::DimOp tnDim = dimOf(tn), nDim = dimOf(n);
    bool whole = isEqualConstantIntOrValue(tn, n) ||
                 (tnDim && nDim && tnDim.getSource() == nDim.getSource() &&
                  tnDim.getConstantIndex() == nDim.getConstantIndex());
    if (!isZeroInteger(t0) || !whole)
      return emitOpError("with initial_state tiles its value dims only (the "
                         "first token reads the initial state; copy it into "
                         "the state destination to tile the tokens)");
    init = slice(getInitialState(), {zero, v0}, {dk, vn});
  }
  auto tiled = GatedDeltaChunkOp::create(
      b, loc, TypeRange{out.getType(), state.getType()}, q, k, v, g, beta, out,
      state, init, getScaleAttr(), getRecurrentAttr(), getNoDeltaAttr());
  tiled->setDiscardableAttrs(getOperation()->getDiscardableAttrDictionary());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), slice.slices};
}

//===----------------------------------------------------------------------===//
// attn.online_attention: split-K (PartialReductionOpInterface)
//===----------------------------------------------------------------------===//
//
// Split-K is the outer-parallel partial reduction of the keys: S splits of
// the key range, each folding its keys into its own state from the
// identity (acc 0, max -inf, sum 0), then one log-sum-exp merge of the S
// states and the op's own destinations. The partial states carry the split
// as their first dim, so that each split's state is contiguous (as the CPU
// micro-kernel needs): acc [S, lead..., M, dv], max and sum [S, lead..., M].

/// The one reduction dim (the keys), or failure.
static LogicalResult onlyKeys(OnlineAttentionOp op,
                              const SetVector<unsigned> &reductionDims) {
  int64_t r = cast<ShapedType>(op.getQuery().getType()).getRank();
  if (reductionDims.size() != 1 || reductionDims[0] != unsigned(r - 1))
    return op.emitOpError("splits its key dim (") << r - 1 << ") only";
  return success();
}

FailureOr<SmallVector<Value>>
OnlineAttentionOp::generateInitialTensorForPartialReduction(
    OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
    const SetVector<unsigned> &reductionDims) {
  if (isBufferForm() || failed(onlyKeys(*this, reductionDims)))
    return failure();
  int64_t r = cast<ShapedType>(getQuery().getType()).getRank();
  SmallVector<OpFoldResult> rows(sizes.take_front(r - 1));
  OpFoldResult splits = sizes[r - 1];
  auto filled = [&](SmallVector<OpFoldResult> shape, Value like,
                    double v) -> Value {
    Type elt = cast<ShapedType>(like.getType()).getElementType();
    Value empty = tensor::EmptyOp::create(b, loc, shape, elt);
    Value c = arith::ConstantOp::create(b, loc, elt, b.getFloatAttr(elt, v));
    return linalg::FillOp::create(b, loc, ValueRange{c}, ValueRange{empty})
        .getResult(0);
  };
  SmallVector<OpFoldResult> accShape = {splits}, rowShape = {splits};
  accShape.append(rows.begin(), rows.end());
  accShape.push_back(valueDim(b, *this));
  rowShape.append(rows.begin(), rows.end());
  return SmallVector<Value>{
      filled(accShape, getAcc(), 0.0),
      filled(rowShape, getMax(), -std::numeric_limits<double>::infinity()),
      filled(rowShape, getSum(), 0.0)};
}

/// Where split `split`'s state of the tile's rows sits in the partial
/// states: [split, rows..., (dv)], the split's dim of size 1 (dropped from
/// the tile's own type).
static void partialPosition(OpBuilder &b, OnlineAttentionOp op,
                            unsigned resultNumber,
                            ArrayRef<OpFoldResult> offsets,
                            ArrayRef<OpFoldResult> sizes, OpFoldResult split,
                            SmallVector<OpFoldResult> &resultOffsets,
                            SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets = {split};
  resultSizes = {b.getIndexAttr(1)};
  statePosition(b, op, resultNumber, offsets, sizes, resultOffsets,
                resultSizes);
}

LogicalResult OnlineAttentionOp::getPartialResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ReductionTilingStrategy strategy,
    ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
    const SetVector<unsigned> &reductionDims,
    ArrayRef<OpFoldResult> splitReductionIvs,
    SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  if (strategy != ReductionTilingStrategy::PartialReductionOuterParallel ||
      failed(onlyKeys(*this, reductionDims)))
    return failure();
  partialPosition(b, *this, resultNumber, offsets, sizes, splitReductionIvs[0],
                  resultOffsets, resultSizes);
  return success();
}

FailureOr<TilingResult> OnlineAttentionOp::tileToPartialReduction(
    OpBuilder &b, Location loc, ReductionTilingStrategy strategy,
    ValueRange init, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, const SetVector<unsigned> &reductionDims,
    ArrayRef<OpFoldResult> splitReductionIvs) {
  if (strategy != ReductionTilingStrategy::PartialReductionOuterParallel)
    return emitOpError("splits its keys as an outer-parallel partial "
                       "reduction (split-K) only");
  if (failed(onlyKeys(*this, reductionDims)))
    return failure();
  // The split's state of the tile's rows, from the partial states.
  SmallVector<Value> state;
  SmallVector<Operation *> slices;
  for (unsigned i = 0; i < 3; ++i) {
    SmallVector<OpFoldResult> offs, szs;
    partialPosition(b, *this, i, offsets, sizes, splitReductionIvs[0], offs,
                    szs);
    SmallVector<int64_t> shape;
    for (OpFoldResult s : ArrayRef<OpFoldResult>(szs).drop_front())
      shape.push_back(getConstantIntValue(s).value_or(ShapedType::kDynamic));
    auto type = RankedTensorType::get(
        shape, cast<ShapedType>(init[i].getType()).getElementType());
    SmallVector<OpFoldResult> strides(offs.size(), b.getIndexAttr(1));
    auto slice = tensor::ExtractSliceOp::create(b, loc, type, init[i], offs,
                                                szs, strides);
    slices.push_back(slice);
    state.push_back(slice);
  }
  FailureOr<TilingResult> tiled = tileOnline(*this, b, offsets, sizes, state);
  if (failed(tiled))
    return failure();
  tiled->generatedSlices.append(slices.begin(), slices.end());
  return tiled;
}

FailureOr<MergeResult>
OnlineAttentionOp::mergeReductions(OpBuilder &b, Location loc,
                                   ValueRange partial,
                                   const SetVector<unsigned> &reductionDims) {
  if (failed(onlyKeys(*this, reductionDims)))
    return failure();
  // Over the rows [lead..., M] (and the acc's dv): M = max(max, max_s...);
  // a state of max m weighs e^(m - M), 0 for m = -inf (it saw no key);
  // sum = Σ weight · sum, acc = Σ weight · acc over the op's own state and
  // the splits'.
  int64_t r = cast<ShapedType>(getQuery().getType()).getRank();
  unsigned rows = r - 1;
  MLIRContext *ctx = b.getContext();
  auto ids = [&](unsigned n, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> e;
    for (unsigned d : dims)
      e.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(n, 0, e, ctx);
  };
  auto range = [](unsigned lo, unsigned hi) {
    SmallVector<unsigned> v;
    for (unsigned i = lo; i < hi; ++i)
      v.push_back(i);
    return v;
  };
  using utils::IteratorType;
  auto weight = [](OpBuilder &nb, Location l, Value m, Value top) -> Value {
    Type t = m.getType();
    Value ninf = arith::ConstantOp::create(
        nb, l, t, nb.getFloatAttr(t, -std::numeric_limits<double>::infinity()));
    Value none =
        arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, m, ninf);
    Value w = math::ExpOp::create(
        nb, l, arith::SubFOp::create(nb, l, m, top).getResult());
    Value zero = arith::ConstantOp::create(nb, l, t, nb.getFloatAttr(t, 0.0));
    return arith::SelectOp::create(nb, l, none, zero, w);
  };
  SmallVector<Operation *> ops;
  // The split's dim `n` first, then the dims 0..n-1 (rows, dv).
  auto splitFirst = [&](unsigned n, unsigned upTo) {
    SmallVector<unsigned> dims = {n};
    dims.append(range(0, upTo));
    return dims;
  };
  // M over the rows (dims 0..rows-1) and the splits (dim rows).
  SmallVector<IteratorType> rowsRed(rows, IteratorType::parallel);
  rowsRed.push_back(IteratorType::reduction);
  auto top = linalg::GenericOp::create(
      b, loc, getMax().getType(), ValueRange{partial[1]}, ValueRange{getMax()},
      SmallVector<AffineMap>{ids(rows + 1, splitFirst(rows, rows)),
                             ids(rows + 1, range(0, rows))},
      rowsRed, [&](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(
            nb, l, ValueRange{arith::MaximumFOp::create(nb, l, a[0], a[1])});
      });
  ops.push_back(top);
  Value newMax = top.getResult(0);
  // Folds `own` (the op's state, weighed by its max) and the splits'
  // `parts` (weighed by theirs) into one value per element; `n` dims, the
  // row dims first, `parts` with the split first.
  auto merged = [&](Value own, Value parts, unsigned n) -> Value {
    SmallVector<IteratorType> par(n, IteratorType::parallel);
    auto scaled = linalg::GenericOp::create(
        b, loc, own.getType(), ValueRange{own, getMax(), newMax},
        ValueRange{tensor::EmptyOp::create(
            b, loc, tensor::getMixedSizes(b, loc, own),
            cast<ShapedType>(own.getType()).getElementType())},
        SmallVector<AffineMap>{ids(n, range(0, n)), ids(n, range(0, rows)),
                               ids(n, range(0, rows)), ids(n, range(0, n))},
        par, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value w = weight(nb, l, a[1], a[2]);
          linalg::YieldOp::create(
              nb, l, ValueRange{arith::MulFOp::create(nb, l, a[0], w)});
        });
    SmallVector<IteratorType> red(par);
    red.push_back(IteratorType::reduction);
    auto sum = linalg::GenericOp::create(
        b, loc, own.getType(), ValueRange{parts, partial[1], newMax},
        ValueRange{scaled.getResult(0)},
        SmallVector<AffineMap>{
            ids(n + 1, splitFirst(n, n)), ids(n + 1, splitFirst(n, rows)),
            ids(n + 1, range(0, rows)), ids(n + 1, range(0, n))},
        red, [&](OpBuilder &nb, Location l, ValueRange a) {
          Value w = weight(nb, l, a[1], a[2]);
          Value x = arith::MulFOp::create(nb, l, a[0], w);
          linalg::YieldOp::create(
              nb, l, ValueRange{arith::AddFOp::create(nb, l, a[3], x)});
        });
    ops.push_back(scaled);
    ops.push_back(sum);
    return sum.getResult(0);
  };
  Value newAcc = merged(getAcc(), partial[0], rows + 1);
  Value newSum = merged(getSum(), partial[2], rows);
  return MergeResult{ops, {newAcc, newMax, newSum}};
}
