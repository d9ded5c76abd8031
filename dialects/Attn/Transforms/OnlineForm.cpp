//===- OnlineForm.cpp - an attention tile as online_attention + finalize --===//
//
// The online form of one tile of attn.sdpa or attn.paged_sdpa (the tile
// attn-tile-attention's forall gives each iteration: one batch row, the
// query heads of one KV head): one attn.online_attention folding the row's
// keys into an online-softmax state, then attn.online_finalize. What the
// tile reads per row (its key length, its query position, its chunks'
// origin) is read from its operands, which tiling has cut to the row.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/OnlineForm.h"

#include "dialects/Attn/IR/AttnTilingUtils.h"
#include "dialects/Attn/Transforms/TileLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Element `idx` of a 1-D integer tensor as an index, read through the
/// slices and tensor.generate that tiling wraps a row's values in (the
/// value of the untiled tensor, not a copy of it).
Value elementAt(OpBuilder &b, Location loc, Value t, Value idx) {
  if (auto s = t.getDefiningOp<tensor::ExtractSliceOp>();
      s && s.getSourceType().getRank() == 1 && s.getType().getRank() == 1 &&
      s.hasUnitStride()) {
    Value off = getValueOrCreateConstantIndexOp(b, loc, s.getMixedOffsets()[0]);
    return elementAt(b, loc, s.getSource(),
                     b.createOrFold<arith::AddIOp>(loc, off, idx));
  }
  if (auto g = t.getDefiningOp<tensor::GenerateOp>();
      g && g.getType().getRank() == 1) {
    Block &body = g.getBody().front();
    IRMapping map;
    map.map(body.getArgument(0), idx);
    for (Operation &o : body.without_terminator()) {
      auto e = dyn_cast<tensor::ExtractOp>(o);
      if (e && e.getIndices().size() == 1 &&
          !g->isProperAncestor(e.getTensor().getParentBlock()->getParentOp())) {
        Value v = elementAt(b, loc, e.getTensor(),
                            map.lookupOrDefault(e.getIndices()[0]));
        if (!e.getType().isIndex())
          v = arith::IndexCastOp::create(b, loc, e.getType(), v);
        map.map(e.getResult(), v);
        continue;
      }
      b.clone(o, map);
    }
    Value v = map.lookupOrDefault(body.getTerminator()->getOperand(0));
    if (!v.getType().isIndex())
      v = arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
    return v;
  }
  Value v = tensor::ExtractOp::create(b, loc, t, ValueRange{idx});
  if (!v.getType().isIndex())
    v = arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  return v;
}

/// What the online form reads of attn.sdpa or attn.paged_sdpa.
struct TileOperands {
  Value query, key, value, lengths, sinks, biasTable, qPos, blockTable, rowQPos,
      rangeStart;
  FloatAttr scale, softcap;
  IntegerAttr window;
  MaskKind mask;
  RelativeBiasAttr relativeBias;
  CausalAlignment align = CausalAlignment::bottom_right;

  explicit TileOperands(SDPAOp s)
      : query(s.getQuery()), key(s.getKey()), value(s.getValue()),
        lengths(s.getKvLengths()), sinks(s.getSinks()),
        biasTable(s.getBiasTable()), qPos(s.getQPos()), scale(s.getScaleAttr()),
        softcap(s.getSoftcapAttr()), window(s.getWindowAttr()),
        mask(s.getMask()), relativeBias(s.getRelativeBiasAttr()),
        align(s.getAlign()) {}
  explicit TileOperands(PagedSDPAOp s)
      : query(s.getQuery()), key(s.getKeyCache()), value(s.getValueCache()),
        lengths(s.getKvLengths()), sinks(s.getSinks()),
        blockTable(s.getBlockTable()), rowQPos(s.getQPos()),
        rangeStart(s.getRangeStart()), scale(s.getScaleAttr()),
        softcap(s.getSoftcapAttr()), window(s.getWindowAttr()),
        mask(s.getMask()) {}
  bool paged() const { return blockTable != Value(); }
};

/// The initial max and sum [G, rows] of the online-softmax state: -inf and
/// 0, or with sinks (where `counts`) each head's sink and 1 (0 for a sink
/// of -inf): the sink is one more key, of value 0.
std::pair<Value, Value> initialRowState(OpBuilder &b, Location loc,
                                        Type accType, Value sinks, Value counts,
                                        int64_t heads, Value rows) {
  double inf = std::numeric_limits<double>::infinity();
  auto splat = [&](double v) -> Value {
    Value c =
        arith::ConstantOp::create(b, loc, accType, b.getFloatAttr(accType, v));
    return tensor::SplatOp::create(
        b, loc, RankedTensorType::get({heads, ShapedType::kDynamic}, accType),
        c, ValueRange{rows});
  };
  Value max0 = splat(-inf), sum0 = splat(0.0);
  if (!sinks)
    return {max0, sum0};
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
                       arith::ConstantOp::create(nb, l, accType,
                                                 nb.getFloatAttr(accType, 0.0)),
                       arith::ConstantOp::create(
                           nb, l, accType, nb.getFloatAttr(accType, 1.0)));
                 }
                 linalg::YieldOp::create(
                     nb, l,
                     Value(arith::SelectOp::create(nb, l, counts, v, a[1])));
               })
        .getResult(0);
  };
  return {generic(max0, true), generic(sum0, false)};
}

} // namespace

FailureOr<OnlineForm> mlir::attn::buildOnlineForm(RewriterBase &rewriter,
                                                  Operation *tile,
                                                  Value countSinks) {
  std::optional<TileOperands> maybe;
  if (auto s = dyn_cast<SDPAOp>(tile))
    maybe.emplace(s);
  else if (auto p = dyn_cast<PagedSDPAOp>(tile))
    maybe.emplace(p);
  else
    return tile->emitOpError("has no online form (attn.sdpa and "
                             "attn.paged_sdpa have)");
  const TileOperands &op = *maybe;
  auto qTy = cast<RankedTensorType>(op.query.getType());
  auto kTy = cast<RankedTensorType>(op.key.getType());
  auto vTy = cast<RankedTensorType>(op.value.getType());
  if (qTy.getDimSize(0) != 1 || kTy.getDimSize(1) != 1)
    return tile->emitOpError("the online form takes a tile of one batch row "
                             "and the query heads of one KV head, as "
                             "attn-tile-attention tiles; got query ")
           << qTy << " and keys " << kTy;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(tile);
  OpBuilder &b = rewriter;
  Location loc = tile->getLoc();
  IndexMath n{b, loc};
  int64_t heads = qTy.getDimSize(1), d = qTy.getDimSize(3),
          dv = vTy.getDimSize(3);
  constexpr int64_t kDyn = ShapedType::kDynamic;
  Type elt = qTy.getElementType(), kvElt = kTy.getElementType();
  // The state accumulates in f32 at least (bf16/f16 inputs).
  Type accType = elt.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : elt;
  Value zero = n.c(0);
  Value rows =
      getValueOrCreateConstantIndexOp(b, loc, mixedSize(b, loc, op.query, 2));
  // The keys there are (paged: the row's block-table pages), then the
  // row's length.
  // (One op per statement: argument order would depend on the compiler.)
  Value kvLen;
  if (op.paged()) {
    Value maxPages = n.dim(op.blockTable, 1);
    kvLen = n.mul(maxPages, n.dim(op.key, 2));
  } else {
    kvLen =
        getValueOrCreateConstantIndexOp(b, loc, mixedSize(b, loc, op.key, 2));
  }
  Value kvLimit = kvLen;
  if (op.lengths)
    kvLimit = n.clamp(elementAt(b, loc, op.lengths, zero), zero, kvLen);
  // The first row's position in key coordinates: the tile's q_pos (tiling
  // gives one wherever a mask or a bias reads positions), else from the
  // alignment; paged: the row's q_pos, or its last q_len tokens.
  Value qPos;
  if (op.paged())
    qPos =
        op.rowQPos ? elementAt(b, loc, op.rowQPos, zero) : n.sub(kvLimit, rows);
  else if (op.qPos)
    qPos = op.qPos;
  else if ((op.mask != MaskKind::none || op.relativeBias) &&
           op.align == CausalAlignment::bottom_right)
    qPos = n.sub(kvLen, rows);
  else
    qPos = zero;
  Value origin;
  if (op.mask == MaskKind::chunked && op.rangeStart)
    origin = elementAt(b, loc, op.rangeStart, zero);

  SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
  auto slice = [&](Value src, RankedTensorType type,
                   ArrayRef<OpFoldResult> sizes) -> Value {
    SmallVector<OpFoldResult> offs(4, b.getIndexAttr(0));
    return tensor::ExtractSliceOp::create(b, loc, type, src, offs, sizes, ones);
  };
  OpFoldResult one = b.getIndexAttr(1);
  Value qTile = slice(op.query, RankedTensorType::get({heads, kDyn, d}, elt),
                      {one, b.getIndexAttr(heads), rows, b.getIndexAttr(d)});
  Value k, v, pages, numKeys;
  if (!op.paged()) {
    // The row's keys [0, kv_limit) of the KV head.
    k = slice(op.key, RankedTensorType::get({kDyn, d}, kvElt),
              {one, one, kvLimit, b.getIndexAttr(d)});
    v = slice(op.value, RankedTensorType::get({kDyn, dv}, kvElt),
              {one, one, kvLimit, b.getIndexAttr(dv)});
  } else {
    // The KV head's page pools, read through the row's block table: its
    // pages up to the one holding its last key.
    auto pool = [&](Value src, int64_t dim) {
      auto ty = cast<RankedTensorType>(src.getType());
      return slice(src,
                   RankedTensorType::get(
                       {ty.getDimSize(0), ty.getDimSize(2), dim}, kvElt),
                   {mixedSize(b, loc, src, 0), one, mixedSize(b, loc, src, 2),
                    b.getIndexAttr(dim)});
    };
    k = pool(op.key, d);
    v = pool(op.value, dv);
    Type tableElt = cast<ShapedType>(op.blockTable.getType()).getElementType();
    SmallVector<OpFoldResult> offs(2, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {one,
                                       n.ceilDiv(kvLimit, n.dim(op.key, 2))};
    pages = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({kDyn}, tableElt), op.blockTable, offs,
        sizes, SmallVector<OpFoldResult>(2, one));
    numKeys = kvLimit;
  }
  // acc = 0; max, sum from the sinks (with them) or -inf, 0.
  Value c0 =
      arith::ConstantOp::create(b, loc, accType, b.getFloatAttr(accType, 0.0));
  Value acc0 = tensor::SplatOp::create(
      b, loc, RankedTensorType::get({heads, kDyn, dv}, accType), c0,
      ValueRange{rows});
  Value counts = countSinks;
  if (op.sinks && !counts)
    counts = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto [max0, sum0] =
      initialRowState(b, loc, accType, op.sinks, counts, heads, rows);
  // The bias table is the tile's heads' (tiling slices it): its head 0 is
  // the tile's first.
  Value headOffset = op.biasTable ? zero : Value();
  MLIRContext *ctx = b.getContext();
  auto keys = OnlineAttentionOp::create(
      b, loc, TypeRange{acc0.getType(), max0.getType(), sum0.getType()}, qTile,
      k, v, acc0, max0, sum0, qPos, zero, op.biasTable, headOffset, pages,
      numKeys, origin, op.scale, op.relativeBias,
      MaskKindAttr::get(ctx, op.mask), op.window, op.softcap);
  Value dest = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{heads, kDyn, dv}, elt, ValueRange{rows});
  Value result = OnlineFinalizeOp::create(
      b, loc, dest.getType(), keys.getResult(0), keys.getResult(2), dest);
  return OnlineForm{keys, result};
}
