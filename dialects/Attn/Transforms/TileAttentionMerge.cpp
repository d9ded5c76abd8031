//===- TileAttentionMerge.cpp - split-K merge of the attention tiler ------===//
//
// The merge of attn-tile-attention's split-K parts (one query block, its
// key range in parts computed in parallel): each part's (acc, max, sum)
// from the workspace merged by log-sum-exp into the output, and the row
// statistics of the partial form (attn.paged_sdpa with a stats
// destination).
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/TileAttention.h"

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::tiling {

void SDPATiler::insertStats(OpBuilder &b, Location loc, Value max, Value sum,
                            Value dest, Value bIdx, Value h0, OpFoldResult q0,
                            Value rows) {
  OpFoldResult one = b.getIndexAttr(1);
  Value parts[2] = {max, sum};
  for (int64_t i = 0; i < 2; ++i) {
    Value v = parts[i];
    SmallVector<OpFoldResult> offs = {bIdx, h0, q0, b.getIndexAttr(i)};
    SmallVector<OpFoldResult> sizes = {one, b.getIndexAttr(groupSize), rows,
                                       one};
    SmallVector<OpFoldResult> strides(4, one);
    tensor::ParallelInsertSliceOp::create(b, loc, v, dest, offs, sizes,
                                          strides);
  }
}

SmallVector<Value> SDPATiler::mergeForall(OpBuilder &b, Location loc,
                                          ValueRange parts, Value stats,
                                          Value split, Value nSplit) {
  IndexMath m{b, loc};
  MLIRContext *ctx = b.getContext();
  // Merge per (batch, KV head): M = max_s m_s, w_s = exp(m_s - M) (0 for a
  // part that saw no key), O = Σ w_s acc_s / Σ w_s l_s (0 for a row that saw
  // no key at all).
  // No iteration without split: the output passes through.
  Value mergeBatch = arith::SelectOp::create(b, loc, split, batch, m.c(0));
  SmallVector<OpFoldResult> mubs = {mergeBatch, b.getIndexAttr(hkv)};
  SmallVector<Value> mergeOuts = {parts[0]};
  if (stats)
    mergeOuts.push_back(stats);
  auto merge = scf::ForallOp::create(b, loc, mubs, mergeOuts,
                                     /*mapping=*/std::nullopt);
  merge->setAttr("attn.split_k_merge", b.getUnitAttr());
  OpBuilder::InsertionGuard g(b);
  Block *body = merge.getBody();
  b.setInsertionPoint(body->getTerminator());
  Value bIdx = body->getArgument(0), gIdx = body->getArgument(1);
  IndexMath n{b, loc};
  OpFoldResult one = b.getIndexAttr(1), z = b.getIndexAttr(0),
               G = b.getIndexAttr(groupSize);
  auto part = [&](Value ws, bool isAcc) -> Value {
    SmallVector<OpFoldResult> offs = {bIdx, gIdx, z, z, z};
    SmallVector<OpFoldResult> sz = {one, one, nSplit, G, qLen};
    SmallVector<int64_t> shape = {kDyn, groupSize, kDyn};
    if (isAcc) {
      offs.push_back(z);
      sz.push_back(b.getIndexAttr(headDimV));
      shape.push_back(headDimV);
    }
    SmallVector<OpFoldResult> strides(offs.size(), one);
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, accType), ws, offs, sz, strides);
  };
  Value accP = part(parts[1], true);
  Value maxP = part(parts[2], false);
  Value sumP = part(parts[3], false);

  auto map = [&](ArrayRef<unsigned> dims, unsigned rank) {
    SmallVector<AffineExpr> e;
    for (unsigned d : dims)
      e.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(rank, 0, e, ctx);
  };
  using IT = utils::IteratorType;
  auto fconst = [&](OpBuilder &nb, Location l, double v) -> Value {
    return arith::ConstantOp::create(nb, l, accType,
                                     nb.getFloatAttr(accType, v));
  };
  double inf = std::numeric_limits<double>::infinity();
  // Row state [G, q_len] and row output [G, q_len, dv].
  Value rowMax = splat(b, loc, {groupSize, kDyn}, -inf, qLen);
  Value mx =
      linalg::GenericOp::create(
          b, loc, rowMax.getType(), ValueRange{maxP}, ValueRange{rowMax},
          ArrayRef<AffineMap>{map({0, 1, 2}, 3), map({1, 2}, 3)},
          ArrayRef<IT>{IT::reduction, IT::parallel, IT::parallel},
          [&](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(
                nb, l, Value(arith::MaximumFOp::create(nb, l, a[0], a[1])));
          })
          .getResult(0);
  auto weight = [&](OpBuilder &nb, Location l, Value ms, Value M) -> Value {
    Value none = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, ms,
                                       fconst(nb, l, -inf));
    Value w = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, ms, M));
    return arith::SelectOp::create(nb, l, none, fconst(nb, l, 0.0), w);
  };
  // Σ_s w_s · x_s over the parts for x = the sums (L) and the accumulators
  // (O); maps: max, x, M, the result.
  auto weightedSum = [&](Value x, Value init, ArrayRef<AffineMap> maps,
                         ArrayRef<IT> iterators) -> Value {
    return linalg::GenericOp::create(
               b, loc, init.getType(), ValueRange{maxP, x, mx},
               ValueRange{init}, maps, iterators,
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value w = weight(nb, l, a[0], a[2]);
                 linalg::YieldOp::create(
                     nb, l,
                     Value(arith::AddFOp::create(
                         nb, l, a[3], arith::MulFOp::create(nb, l, w, a[1]))));
               })
        .getResult(0);
  };
  Value L = weightedSum(
      sumP, splat(b, loc, {groupSize, kDyn}, 0.0, qLen),
      {map({0, 1, 2}, 3), map({0, 1, 2}, 3), map({1, 2}, 3), map({1, 2}, 3)},
      {IT::reduction, IT::parallel, IT::parallel});
  Value O = weightedSum(
      accP, splat(b, loc, {groupSize, kDyn, headDimV}, 0.0, qLen),
      {map({0, 1, 2}, 4), map({0, 1, 2, 3}, 4), map({1, 2}, 4),
       map({1, 2, 3}, 4)},
      {IT::reduction, IT::parallel, IT::parallel, IT::parallel});
  // acc / sum with the finalize op's rule (a row with sum 0 gives 0).
  Value mergedOut = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{groupSize, kDyn, headDimV}, elt,
      ValueRange{qLen});
  Value result =
      OnlineFinalizeOp::create(b, loc, mergedOut.getType(), O, L, mergedOut);
  Value h0 = n.mul(gIdx, n.c(groupSize));
  b.setInsertionPointToStart(merge.getTerminator().getBody());
  SmallVector<OpFoldResult> oOffs = {bIdx, h0, z, z};
  SmallVector<OpFoldResult> oSizes = {one, G, qLen,
                                      b.getIndexAttr(headDimV)};
  SmallVector<OpFoldResult> ones(4, one);
  tensor::ParallelInsertSliceOp::create(b, loc, result, body->getArgument(2),
                                        oOffs, oSizes, ones);
  if (stats)
    insertStats(b, loc, mx, L, body->getArgument(3), bIdx, h0, z, qLen);
  return SmallVector<Value>(merge.getResults());
}

} // namespace mlir::attn::tiling
