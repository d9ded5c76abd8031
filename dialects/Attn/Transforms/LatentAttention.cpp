//===- LatentAttention.cpp - attn.latent_attention's two forms ------------===//
//
// This file implements the passes that give attn.latent_attention
// (multi-head latent attention over a cache of latent rows) its compute
// form: expanded (keys and values per head through kv_b_proj, then
// attn.sdpa with D = dn + dr), absorbed (the query into the latent space,
// a multi-query attn.sdpa of all heads over the cache rows with D = r + dr
// whose values are the rows' first r features, read in place, then back
// through W_UV), and the run-time choice between them by the work each does.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_EXPANDLATENTATTENTIONPASS
#define GEN_PASS_DEF_ABSORBLATENTATTENTIONPASS
#define GEN_PASS_DEF_LOWERLATENTATTENTIONPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kDynSize = ShapedType::kDynamic;

/// Tensor plumbing for the two forms, at one op's location.
struct Forms {
  OpBuilder &b;
  LatentAttentionOp op;
  Location loc;
  Type elt;
  int64_t h, dn, dr, r, dv;

  Forms(OpBuilder &b, LatentAttentionOp op)
      : b(b), op(op), loc(op.getLoc()),
        elt(op.getQNope().getType().getElementType()), h(op.getNumHeads()),
        dn(op.getNopeDim()), dr(op.getRopeDim()), r(op.getLatentDim()),
        dv(op.getValueDim()) {}

  OpFoldResult dim(Value v, int64_t i) {
    return tensor::getMixedSize(b, loc, v, i);
  }
  OpFoldResult index(int64_t v) { return b.getIndexAttr(v); }
  RankedTensorType tensor(ArrayRef<int64_t> shape, Type t = {}) {
    return RankedTensorType::get(shape, t ? t : elt);
  }
  SmallVector<OpFoldResult> ones(size_t n) {
    return SmallVector<OpFoldResult>(n, index(1));
  }
  /// `t` [..., n] -> [..., off : off + size).
  Value sliceLast(Value t, int64_t off, int64_t size) {
    auto ty = cast<RankedTensorType>(t.getType());
    int64_t rank = ty.getRank();
    SmallVector<OpFoldResult> offsets(rank, index(0)), sizes;
    for (int64_t i = 0; i + 1 < rank; ++i)
      sizes.push_back(dim(t, i));
    offsets.back() = index(off);
    sizes.push_back(index(size));
    SmallVector<int64_t> shape(ty.getShape());
    shape.back() = size;
    return tensor::ExtractSliceOp::create(
        b, loc, tensor(shape, ty.getElementType()), t, offsets, sizes,
        ones(rank));
  }
  /// [a | c] along the last dim (both of one element type).
  Value concatLast(Value a, Value c) {
    auto at = cast<RankedTensorType>(a.getType());
    auto ct = cast<RankedTensorType>(c.getType());
    int64_t rank = at.getRank(), na = at.getShape().back(),
            nc = ct.getShape().back();
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i + 1 < rank; ++i)
      sizes.push_back(dim(a, i));
    sizes.push_back(index(na + nc));
    Value out = tensor::EmptyOp::create(b, loc, sizes, at.getElementType());
    SmallVector<OpFoldResult> offsets(rank, index(0));
    sizes.back() = index(na);
    out = tensor::InsertSliceOp::create(b, loc, a, out, offsets, sizes,
                                        ones(rank));
    offsets.back() = index(na);
    sizes.back() = index(nc);
    return tensor::InsertSliceOp::create(b, loc, c, out, offsets, sizes,
                                         ones(rank));
  }
  /// `t` with its dims permuted (linalg.transpose into a new tensor).
  Value transpose(Value t, ArrayRef<int64_t> perm) {
    auto ty = cast<RankedTensorType>(t.getType());
    SmallVector<OpFoldResult> sizes;
    for (int64_t p : perm)
      sizes.push_back(dim(t, p));
    Value init = tensor::EmptyOp::create(b, loc, sizes, ty.getElementType());
    return linalg::TransposeOp::create(b, loc, t, init, perm)->getResult(0);
  }
  /// `t` [B, H, S, n] -> [H, B·S, n] (heads outermost, each head's rows
  /// together: one GEMM per head).
  Value headsMajor(Value t) {
    Value tr = transpose(t, {1, 0, 2, 3});
    auto ty = cast<RankedTensorType>(tr.getType());
    SmallVector<ReassociationIndices> re = {{0}, {1, 2}, {3}};
    return tensor::CollapseShapeOp::create(
        b, loc, tensor({ty.getDimSize(0), kDynSize, ty.getDimSize(3)}), tr, re);
  }
  /// The inverse of headsMajor, with batch and sequence sizes `batch`,
  /// `seq`.
  Value headsMinor(Value t, OpFoldResult batch, OpFoldResult seq) {
    auto ty = cast<RankedTensorType>(t.getType());
    int64_t n = ty.getDimSize(2);
    SmallVector<ReassociationIndices> re = {{0}, {1, 2}, {3}};
    SmallVector<OpFoldResult> shape = {index(h), batch, seq, index(n)};
    Value e = tensor::ExpandShapeOp::create(b, loc, tensor({h, kDynSize, kDynSize, n}),
                                            t, re, shape);
    return transpose(e, {1, 0, 2, 3});
  }
  /// Head by head over `in` [H, M, a]: `body(h, in[h])` gives [M, c]; the
  /// results stacked [H, M, c] (an scf.for: one GEMM per head, each
  /// reading its head's rows of kv_b_proj once for all M rows).
  Value perHead(Value in, int64_t c,
                function_ref<Value(Value, Value)> body) {
    auto ty = cast<RankedTensorType>(in.getType());
    int64_t a = ty.getDimSize(2);
    OpFoldResult m = dim(in, 1);
    Value init = tensor::EmptyOp::create(
        b, loc, SmallVector<OpFoldResult>{index(h), m, index(c)}, elt);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value ch = arith::ConstantIndexOp::create(b, loc, h);
    auto loop = scf::ForOp::create(
        b, loc, c0, ch, c1, ValueRange{init},
        [&](OpBuilder &nb, Location l, Value hv, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(),
                              nb.getInsertionPoint());
          Value row = tensor::ExtractSliceOp::create(
              b, l, tensor({kDynSize, a}), in,
              SmallVector<OpFoldResult>{hv, index(0), index(0)},
              SmallVector<OpFoldResult>{index(1), m, index(a)}, ones(3));
          Value y = body(hv, row);
          Value out = tensor::InsertSliceOp::create(
              b, l, y, iter[0],
              SmallVector<OpFoldResult>{hv, index(0), index(0)},
              SmallVector<OpFoldResult>{index(1), m, index(c)}, ones(3));
          scf::YieldOp::create(b, l, out);
        });
    return loop.getResult(0);
  }
  /// Head `hv`'s `rows` rows of kv_b_proj from row `first` of its block
  /// (0: W_UK[h], dn rows; dn: W_UV[h], dv rows): [rows, r].
  Value weightRows(Value hv, int64_t first, int64_t rows) {
    Value w = op.getKvBWeight();
    Value per = arith::ConstantIndexOp::create(b, loc, dn + dv);
    Value start = arith::MulIOp::create(b, loc, hv, per);
    if (first)
      start = arith::AddIOp::create(
          b, loc, start, arith::ConstantIndexOp::create(b, loc, first));
    return tensor::ExtractSliceOp::create(
        b, loc, tensor({rows, r}), w,
        SmallVector<OpFoldResult>{start, index(0)},
        SmallVector<OpFoldResult>{index(rows), index(r)}, ones(2));
  }
  /// The cache in the query's element type (the expanded form computes on
  /// it; a narrower cache is widened).
  Value cacheAs(Type t) {
    Value c = op.getCache();
    auto ct = cast<RankedTensorType>(c.getType());
    if (ct.getElementType() == t)
      return c;
    SmallVector<OpFoldResult> sizes = {dim(c, 0), dim(c, 1),
                                       index(ct.getDimSize(2))};
    Value init = tensor::EmptyOp::create(b, loc, sizes, t);
    AffineMap id = b.getMultiDimIdentityMap(3);
    return linalg::GenericOp::create(
               b, loc, init.getType(), ValueRange{c}, ValueRange{init},
               ArrayRef<AffineMap>{id, id},
               SmallVector<utils::IteratorType>(3,
                                                utils::IteratorType::parallel),
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Value v = arith::ExtFOp::create(nb, l, t, args[0]);
                 linalg::YieldOp::create(nb, l, v);
               })
        .getResult(0);
  }
  Value sdpa(Value q, Value k, Value v) {
    Value init = SDPAOp::createEmptyInit(b, loc, q, v);
    auto qt = cast<RankedTensorType>(q.getType());
    auto vt = cast<RankedTensorType>(v.getType());
    auto resTy = tensor({qt.getDimSize(0), qt.getDimSize(1), qt.getDimSize(2),
                         vt.getDimSize(3)});
    return SDPAOp::create(
        b, loc, resTy, q, k, v, op.getKvLengths(), Value(), Value(), Value(),
        init,
        op.getScaleAttr(), RelativeBiasAttr(), op.getMaskAttr(),
        IntegerAttr(), FloatAttr(),
        CausalAlignmentAttr::get(b.getContext(),
                                 CausalAlignment::bottom_right));
  }

  /// Keys and values per head, then attention with D = dn + dr, Dv = dv.
  Value expanded() {
    Value cache = cacheAs(elt);
    Value latent = sliceLast(cache, 0, r);   // [B, kv, r]
    Value rope = sliceLast(cache, r, dr);    // [B, kv, dr]
    auto kvTy = tensor({kDynSize, kDynSize, h * (dn + dv)});
    Value kv = LinearOp::create(b, loc, kvTy, latent, op.getKvBWeight(),
                                Value(), UnitAttr());
    Value kvh = SplitHeadsOp::create(b, loc, tensor({kDynSize, h, kDynSize, dn + dv}),
                                     kv);
    Value kNope = sliceLast(kvh, 0, dn);
    Value v = sliceLast(kvh, dn, dv);
    // The shared rotary key, one copy per head.
    SmallVector<OpFoldResult> sizes = {dim(cache, 0), index(h), dim(cache, 1),
                                       index(dr)};
    Value ropeInit = tensor::EmptyOp::create(b, loc, sizes, elt);
    Value ropeH = linalg::BroadcastOp::create(b, loc, rope, ropeInit,
                                              ArrayRef<int64_t>{1})
                      ->getResult(0);
    Value k = concatLast(kNope, ropeH);
    Value q = concatLast(op.getQNope(), op.getQRope());
    return sdpa(q, k, v);
  }

  /// The query into the latent space, all heads over the cache rows (the
  /// values: their first r features, in place), back through W_UV.
  Value absorbed() {
    Value qn = op.getQNope();
    OpFoldResult batch = dim(qn, 0), seq = dim(qn, 2);
    Value qnH = headsMajor(qn); // [H, B·Sq, dn]
    Value qLat = perHead(qnH, r, [&](Value hv, Value rows) -> Value {
      Value wuk = weightRows(hv, 0, dn); // [dn, r] = [in, out]
      return LinearOp::create(b, loc, tensor({kDynSize, r}), rows, wuk, Value(),
                              b.getUnitAttr());
    });
    Value q = concatLast(headsMinor(qLat, batch, seq), op.getQRope());
    Value cache = op.getCache();
    auto ct = cast<RankedTensorType>(cache.getType());
    SmallVector<ReassociationIndices> re = {{0, 1}, {2}, {3}};
    SmallVector<OpFoldResult> shape = {dim(cache, 0), index(1), dim(cache, 1),
                                       index(r + dr)};
    Value k = tensor::ExpandShapeOp::create(
        b, loc, tensor({kDynSize, 1, kDynSize, r + dr}, ct.getElementType()), cache,
        re, shape);
    Value v = sliceLast(k, 0, r);
    Value oLat = sdpa(q, k, v); // [B, H, Sq, r]
    Value oH = perHead(headsMajor(oLat), dv, [&](Value hv, Value rows) {
      Value wuv = weightRows(hv, dn, dv); // [dv, r] = [out, in]
      return LinearOp::create(b, loc, tensor({kDynSize, dv}), rows, wuv, Value(),
                              UnitAttr())
          .getResult();
    });
    return headsMinor(oH, batch, seq);
  }

  /// True when the absorbed form does less work for these lengths:
  /// q_len·(r·(dn+dv) + kv_len·(2r − dn − dv)) < kv_len·r·(dn+dv), in f64.
  Value absorbIsCheaper() {
    Type f64 = b.getF64Type();
    auto asF64 = [&](OpFoldResult v) -> Value {
      Value i = getValueOrCreateConstantIndexOp(b, loc, v);
      Value i64 = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), i);
      return arith::UIToFPOp::create(b, loc, f64, i64);
    };
    auto cst = [&](double v) -> Value {
      return arith::ConstantOp::create(b, loc, f64, b.getF64FloatAttr(v));
    };
    // One op per statement: the IR must not depend on the host compiler's
    // order of argument evaluation.
    Value sq = asF64(dim(op.getQNope(), 2));
    Value skv = asF64(dim(op.getCache(), 1));
    double a = double(r) * double(dn + dv), c = double(2 * r - dn - dv);
    Value ca = cst(a), cc = cst(c);
    Value perKey = arith::MulFOp::create(b, loc, skv, cc);
    Value perRow = arith::AddFOp::create(b, loc, ca, perKey);
    Value lhs = arith::MulFOp::create(b, loc, sq, perRow);
    Value rhs = arith::MulFOp::create(b, loc, skv, ca);
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, lhs, rhs);
  }
};

enum class Form { Auto, Expanded, Absorbed };

void lower(LatentAttentionOp op, Form form) {
  OpBuilder b(op);
  Forms f(b, op);
  Value result;
  if (form == Form::Expanded) {
    result = f.expanded();
  } else if (form == Form::Absorbed) {
    result = f.absorbed();
  } else {
    Value cheaper = f.absorbIsCheaper();
    auto branch = scf::IfOp::create(b, op.getLoc(), TypeRange{op.getType()},
                                    cheaper, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&branch.getThenRegion().front());
      scf::YieldOp::create(b, op.getLoc(), f.absorbed());
      b.setInsertionPointToStart(&branch.getElseRegion().front());
      scf::YieldOp::create(b, op.getLoc(), f.expanded());
    }
    result = branch.getResult(0);
  }
  // The forms' dims are dynamic where the op's result may be static.
  if (result.getType() != op.getType())
    result = tensor::CastOp::create(b, op.getLoc(), op.getType(), result);
  op.getResult().replaceAllUsesWith(result);
  op.erase();
}

void lowerAll(func::FuncOp fn, Form form) {
  SmallVector<LatentAttentionOp> ops;
  fn.walk([&](LatentAttentionOp op) { ops.push_back(op); });
  for (LatentAttentionOp op : ops)
    lower(op, form);
}

struct ExpandLatentAttentionPass
    : attn::impl::ExpandLatentAttentionPassBase<ExpandLatentAttentionPass> {
  void runOnOperation() override { lowerAll(getOperation(), Form::Expanded); }
};

struct AbsorbLatentAttentionPass
    : attn::impl::AbsorbLatentAttentionPassBase<AbsorbLatentAttentionPass> {
  void runOnOperation() override { lowerAll(getOperation(), Form::Absorbed); }
};

struct LowerLatentAttentionPass
    : attn::impl::LowerLatentAttentionPassBase<LowerLatentAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    Form f = form == "expanded"   ? Form::Expanded
             : form == "absorbed" ? Form::Absorbed
                                  : Form::Auto;
    if (form != "auto" && form != "expanded" && form != "absorbed") {
      getOperation().emitError()
          << "attn-lower-latent-attention: unknown form '" << form
          << "'; accepted: auto, expanded, absorbed";
      return signalPassFailure();
    }
    lowerAll(getOperation(), f);
  }
};

} // namespace
