//===- LinalgBuilder.h - helpers of convert-attn-to-linalg ------*- C++ -*-===//
//
// This file declares what the patterns of convert-attn-to-linalg share: a
// builder of linalg.generic ops, the score transform (scale, softcap, T5
// bias, position mask) and the row/elementwise maps, and the functions that
// add each op family's patterns.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_ATTNTOLINALG_LINALGBUILDER_H
#define ATTN_COMPILER_CONVERSION_ATTNTOLINALG_LINALGBUILDER_H

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>
#include <optional>

namespace mlir {
namespace attn {
namespace to_linalg {

using utils::IteratorType;

inline constexpr IteratorType kPar = IteratorType::parallel;
inline constexpr IteratorType kRed = IteratorType::reduction;

/// Builds linalg.generic ops and the index/float arithmetic in their bodies.
struct GenericBuilder {
  OpBuilder &b;
  Location loc;
  Type acc; ///< the compute type (f32 or f64)

  RankedTensorType tensor(ArrayRef<OpFoldResult> sizes, Type elt) {
    SmallVector<int64_t> shape;
    for (OpFoldResult s : sizes) {
      std::optional<int64_t> c = getConstantIntValue(s);
      shape.push_back(c ? *c : ShapedType::kDynamic);
    }
    return RankedTensorType::get(shape, elt);
  }
  Value empty(ArrayRef<OpFoldResult> sizes, Type elt) {
    return tensor::EmptyOp::create(b, loc, sizes, elt);
  }
  Value fill(ArrayRef<OpFoldResult> sizes, double v) {
    Value c = arith::ConstantOp::create(b, loc, acc, b.getFloatAttr(acc, v));
    return linalg::FillOp::create(b, loc, c, empty(sizes, acc)).getResult(0);
  }
  OpFoldResult dim(Value t, int64_t i) {
    auto ty = cast<RankedTensorType>(t.getType());
    if (!ty.isDynamicDim(i))
      return b.getIndexAttr(ty.getDimSize(i));
    return tensor::DimOp::create(b, loc, t, i).getResult();
  }
  /// All of `t`'s sizes, dim by dim.
  SmallVector<OpFoldResult> sizes(Value t) {
    SmallVector<OpFoldResult> r;
    for (int64_t i = 0, e = cast<RankedTensorType>(t.getType()).getRank();
         i < e; ++i)
      r.push_back(dim(t, i));
    return r;
  }
  /// One linalg.generic with a single result.
  Value generic(ValueRange ins, Value init, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iters,
                function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    auto op = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps, iters,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          linalg::YieldOp::create(nb, nl, body(nb, nl, args));
        });
    return op.getResult(0);
  }
  /// Map from `n` loop dims to the listed dims (-1: the constant 0).
  AffineMap map(unsigned n, ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(n, 0, exprs, b.getContext());
  }
  AffineExpr d(unsigned i) { return b.getAffineDimExpr(i); }
};

/// Extends `v` to the compute type.
inline Value toAcc(OpBuilder &b, Location loc, Value v, Type acc) {
  if (v.getType() == acc)
    return v;
  return arith::ExtFOp::create(b, loc, acc, v);
}

/// Reductions (dot products, row sums) may be reassociated and a * b + c
/// contracted into an FMA, so that LLVM vectorizes them.
inline constexpr arith::FastMathFlags kReduceFlags =
    arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;

inline Value fma(OpBuilder &b, Location loc, Value x, Value y, Value acc) {
  Value prod = arith::MulFOp::create(b, loc, x, y, kReduceFlags);
  return arith::AddFOp::create(b, loc, acc, prod, kReduceFlags);
}

inline Value negInf(OpBuilder &b, Location loc, Type t) {
  return arith::ConstantOp::create(
      b, loc, t,
      b.getFloatAttr(t, -std::numeric_limits<double>::infinity()));
}

inline Value fconst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, v));
}

inline Value iconst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The score transform shared by both paths: scale, softcap, relative bias,
/// then the position mask; `qPos`/`kPos` are positions in key coordinates,
/// `head` indexes the bias table.
struct ScoreMath {
  double scale = 1.0;
  std::optional<double> softcap;
  RelativeBiasAttr rel;
  Value table;
  MaskKind mask = MaskKind::none;
  std::optional<int64_t> window;
  /// The sequence position of key 0 (index), or null: the chunked mask's
  /// chunks are multiples of `window` from there.
  Value origin;

  /// The transformed score `s`; `kvLimit` (optional) hides keys at or past
  /// it.
  Value apply(OpBuilder &b, Location loc, Value s, Value qPos, Value kPos,
              Value head, Value kvLimit) const;
};

/// exp(x - m) with m = 0 when m is -inf (a row with no visible key so far).
Value safeMax(OpBuilder &b, Location loc, Value m);

/// T5's _relative_position_bucket(key - query) as index arithmetic.
Value t5Bucket(OpBuilder &b, Location loc, Value rel, RelativeBiasAttr attr);

/// QKᵀ or P·V with grouped heads: out[b,h,i,x] += a[b,h,i,r] * c[b,h/G,.,.]
/// (qk: r = d, c = k[j=x, d]; pv: r = j, c = v[j, x]). The innermost loop
/// walks contiguous memory: d for QKᵀ, x (the value dim) for P·V.
Value groupedContraction(GenericBuilder &g, Value lhs, Value rhs, Value init,
                         bool qk, int64_t group);

/// Applies `fn` elementwise over a [B, H, Sq, Skv] tensor, with the loop
/// indices available.
Value scoresMap(GenericBuilder &g, Value s,
                function_ref<Value(OpBuilder &, Location, Value, ValueRange)>
                    fn);

/// `fn` applied elementwise to same-shaped `ins` (identity maps).
Value elementwise(GenericBuilder &g, ValueRange ins, Type elt,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> fn);

/// Row statistics over the last dim: sum of f(x) into [lead...].
Value rowSum(GenericBuilder &g, Value x,
             function_ref<Value(OpBuilder &, Location, Value)> f);
/// rowSum of x² (the norms' statistic).
Value rowSumOfSquares(GenericBuilder &g, Value x);
/// The map of a rank-`r` loop nest to its row, (d0, ..., d_{r-2}): how a
/// row statistic is read back elementwise.
AffineMap rowMap(GenericBuilder &g, int64_t r);

/// 1 / (1 + e^{-x}).
inline Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = fconst(b, loc, x.getType(), 1.0);
  Value neg = arith::NegFOp::create(b, loc, x);
  Value e = math::ExpOp::create(b, loc, neg);
  Value den = arith::AddFOp::create(b, loc, one, e);
  return arith::DivFOp::create(b, loc, one, den);
}

/// `v` as a value of type `type`: the lowering may know more static sizes
/// than the op it replaces (or fewer); a tensor.cast bridges them.
inline Value castToType(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

/// x [lead..., n] as rows [T, n] (the leading dims collapsed; a rank-1 x is
/// one row); `re` receives the reassociation fromRows undoes (empty for a
/// rank-2 x).
Value asRows(GenericBuilder &g, Value x, SmallVector<ReassociationIndices> &re);
/// `rows` [T, m] back to `like`'s leading dims: [lead..., m].
Value fromRows(GenericBuilder &g, Value rows, Value like,
               ArrayRef<ReassociationIndices> re);

/// x·Wᵀ (+ b) over x's last dim (W [out, in], or [in, out] when
/// `transposed`), as attn.linear lowers (GraphOps.cpp).
Value linearOf(GenericBuilder &g, Value x, Value weight, Value bias,
               bool transposed);
/// The feed-forward activation `act` of the scalar `x` (GraphOps.cpp).
Value activate(OpBuilder &b, Location l, Activation act, Value x);
/// (act(x·W_gateᵀ) ⊙ (x·W_upᵀ))·W_downᵀ (GraphOps.cpp).
Value gatedNetwork(GenericBuilder &g, Value x, Value gate, Value up,
                   Value down, Activation act);

/// Lowers `OpT` through `Value lowerOp(OpT, OpT::Adaptor, GenericBuilder &)`
/// (the family files define those overloads): one linalg-on-tensors value
/// replaces the op's result; a null value is a failure already reported at
/// the op. The overloads build from the adaptor's operands (the values the
/// conversion has already rewritten) and read only types and attributes of
/// the op.
template <typename OpT>
struct LowerToLinalg : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resTy = cast<RankedTensorType>(op->getResult(0).getType());
    GenericBuilder g{rewriter, op.getLoc(), resTy.getElementType()};
    Value result = lowerOp(op, adaptor, g);
    if (!result)
      return failure();
    rewriter.replaceOp(op, castToType(rewriter, op.getLoc(), result, resTy));
    return success();
  }
};

/// attn.online_attention and attn.online_finalize (TiledOps.cpp).
void populateTiledOpPatterns(RewritePatternSet &patterns);
/// Projections, norms, RoPE, head layout, residual, gates (GraphOps.cpp).
void populateGraphOpPatterns(RewritePatternSet &patterns);
/// The unfused reference's score ops: QKᵀ, scale, softcap, T5 bias, mask,
/// softmax, P·V (ScoreOps.cpp).
void populateScoreOpPatterns(RewritePatternSet &patterns);
/// Linear attention: attn.gated_delta_rule as its eager recurrence
/// (LinearOps.cpp).
void populateLinearOpPatterns(RewritePatternSet &patterns);
/// The sparse mixture of experts (MoEOps.cpp).
void populateMoEOpPatterns(RewritePatternSet &patterns);

} // namespace to_linalg
} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_ATTNTOLINALG_LINALGBUILDER_H
