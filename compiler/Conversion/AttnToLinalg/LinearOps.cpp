//===- LinearOps.cpp - linear attention -> linalg -------------------------===//
//
// This file implements the convert-attn-to-linalg patterns of linear
// attention: the graph ops of a Gated DeltaNet layer (the causal depthwise
// convolution with its state, the L2 norm, the gate and beta formulas, the
// gated RMSNorm), each a few linalg.generic ops on tensors, and
// attn.gated_delta_rule as the eager chunked algorithm of transformers'
// torch_chunk_gated_delta_rule, op by op over whole [batch, Hv, ...] tensors.
// That is the unfused reference path of linear attention (the executables'
// `check` and `bench` compare the fused chunk kernel with it; `check` also
// with a float64 recurrence). Per chunk of C = 64 tokens (the last one
// shorter), with r = Hv / Hk (value head h reads query/key head h floordiv r
// through the indexing maps, no copy), γ the gates' running sum inside the
// chunk (in f64: its differences cancel) and S the state [d_k, d_v] carried
// across chunks:
//
//   A   = −(β_i k_i·k_j e^{γ_i−γ_j})_{j<i}, then forward substitution
//         (row i += row i · A, i = 1..C−1): T = I + A = (I − strict)⁻¹
//   U   = T (β v),  W = T (β e^γ k)
//   V'  = U − W S
//   O   = scale (q e^γ) S + (scale q kᵀ ⊙ e^{γ_i−γ_j})_{j≤i} V'
//   S   = e^{γ_last} S + (k e^{γ_last−γ})ᵀ V'
//
// Without the delta correction (`no_delta`, Mamba2's SSD) T = I and W = 0:
// V' = β v.
//
// With a per-channel gate (Kimi Delta Attention, flash-linear-attention's
// naive_chunk_kda) γ is per key channel c, and the decays cannot leave the
// products: A_ij = −β_i Σ_c k_i[c] k_j[c] e^{γ_i[c]−γ_j[c]} (j < i), P_ij =
// scale Σ_c q_i[c] k_j[c] e^{γ_i[c]−γ_j[c]} (j ≤ i), each exponent taken
// only where it is ≤ 0; q e^γ, β e^γ k, e^{γ_last} S and k e^{γ_last−γ}
// scale by channel.
//
// With `lengths`, a padding token's gate and beta are taken as 0 (it adds
// nothing to the state: its rows of W and U are 0) and its output as 0.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::to_linalg;

namespace {

constexpr int64_t kEagerChunk = 64;

struct LowerGatedDeltaRule : OpConversionPattern<GatedDeltaRuleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatedDeltaRuleOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    // Long: transformers' chunked algorithm, step by step in its order.
    // A per-channel gate (KDA) takes flash-linear-attention's
    // naive_chunk_kda: γ per key channel, e^{γ_i−γ_j} inside the products.
    bool ch = op.hasChannelGate();
    Location loc = op.getLoc();
    RankedTensorType kTy = op.getKey().getType(),
                     vTy = op.getValue().getType();
    Type elt = vTy.getElementType();
    GenericBuilder g{rewriter, loc, elt};
    OpBuilder &b = rewriter;
    int64_t hk = kTy.getDimSize(1), hv = vTy.getDimSize(1), r = hv / hk;
    int64_t dk = kTy.getDimSize(3), dv = vTy.getDimSize(3);
    OpFoldResult batch = g.dim(a.getValue(), 0);
    Value seq = tensor::DimOp::create(b, loc, a.getValue(), 2);
    OpFoldResult H = b.getIndexAttr(hv), HK = b.getIndexAttr(hk),
                 DK = b.getIndexAttr(dk), DV = b.getIndexAttr(dv),
                 one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
    SmallVector<OpFoldResult> stateSizes = {batch, H, DK, DV};
    Value state = a.getInitialState();
    if (state)
      state = castToType(b, loc, state, g.tensor(stateSizes, elt));
    else
      state = g.fill(stateSizes, 0.0);
    Value out =
        castToType(b, loc, a.getOutInit(),
                   g.tensor({batch, H, g.dim(a.getValue(), 2), DV}, elt));
    // With lengths, token t of row b is padding when t >= lengths[b]:
    // `x` ([B, Hv, S, ...], t its dim 2) with padding entries 0.
    Value lengths = a.getLengths();
    auto maskPadding = [&](Value x) -> Value {
      if (!lengths)
        return x;
      auto ty = cast<RankedTensorType>(x.getType());
      int64_t rank = ty.getRank();
      AffineMap id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
      return g.generic(
          {x, lengths}, g.empty(g.sizes(x), elt), {id, g.map(rank, {g.d(0)}), id},
          SmallVector<IteratorType>(rank, kPar),
          [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
            Value t = linalg::IndexOp::create(nb, nl, 2);
            Value ti = arith::IndexCastOp::create(nb, nl, a[1].getType(), t);
            Value valid = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::slt, ti, a[1]);
            Value z = fconst(nb, nl, elt, 0.0);
            return arith::SelectOp::create(nb, nl, valid, a[0], z);
          });
    };
    Value gate = maskPadding(a.getGate());
    Value beta = maskPadding(a.getBeta());
    double scale = op.getScale().convertToDouble();

    // One op per statement: the IR must not depend on the host compiler's
    // order of evaluating arguments.
    Value zeroIdx = iconst(b, loc, 0);
    Value chunkIdx = iconst(b, loc, kEagerChunk);
    auto loop = scf::ForOp::create(b, loc, zeroIdx, seq, chunkIdx,
                                   ValueRange{state, out});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value s0 = loop.getInductionVar();
      Value S = loop.getRegionIterArg(0), O = loop.getRegionIterArg(1);
      Value left = arith::SubIOp::create(b, loc, seq, s0);
      Value nv = arith::MinSIOp::create(b, loc, chunkIdx, left);
      OpFoldResult n = nv;
      // Tokens [s0, s0 + n) of a [B, heads, S(, d)] operand.
      auto chunkOf = [&](Value x) {
        auto ty = cast<RankedTensorType>(x.getType());
        OpFoldResult heads = b.getIndexAttr(ty.getDimSize(1));
        SmallVector<OpFoldResult> offs = {zero, zero, s0},
                                  sizes = {batch, heads, n};
        if (ty.getRank() == 4) {
          offs.push_back(zero);
          sizes.push_back(b.getIndexAttr(ty.getDimSize(3)));
        }
        SmallVector<OpFoldResult> strides(ty.getRank(), one);
        return tensor::ExtractSliceOp::create(b, loc, g.tensor(sizes, elt), x,
                                              offs, sizes, strides)
            .getResult();
      };
      Value q = chunkOf(a.getQuery()), k = chunkOf(a.getKey()),
            v = chunkOf(a.getValue()), gt = chunkOf(gate), bt = chunkOf(beta);
      AffineExpr B = g.d(0), Hd = g.d(1), I = g.d(2), J = g.d(3), X = g.d(4);
      AffineExpr Hq = Hd.floorDiv(r);
      SmallVector<IteratorType> par3(3, kPar), par4(4, kPar);
      SmallVector<IteratorType> red4 = {kPar, kPar, kPar, kRed};
      SmallVector<IteratorType> red5 = {kPar, kPar, kPar, kPar, kRed};
      // Products out[i, j] += a[i, x] · c[x, j] loop (b, h, i, x, j): the
      // innermost loop walks j, contiguous in c and out (it vectorizes).
      SmallVector<IteratorType> redMid = {kPar, kPar, kPar, kRed, kPar};
      AffineExpr Xm = g.d(3), Jm = g.d(4);
      SmallVector<OpFoldResult> sq = {batch, H, n, n}, tok = {batch, H, n},
                                vSizes = {batch, H, n, DV},
                                kSizes = {batch, H, n, DK};
      auto idx = [](OpBuilder &nb, Location nl, unsigned d) {
        return linalg::IndexOp::create(nb, nl, d).getResult();
      };
      // e^{x − y} and e^x of running sums (f64) in the element type.
      auto expDiff = [elt](OpBuilder &nb, Location nl, Value x, Value y) {
        Value d = arith::SubFOp::create(nb, nl, x, y);
        Value t = arith::TruncFOp::create(nb, nl, elt, d);
        return math::ExpOp::create(nb, nl, t).getResult();
      };
      auto expOf = [elt](OpBuilder &nb, Location nl, Value x) {
        Value t = arith::TruncFOp::create(nb, nl, elt, x);
        return math::ExpOp::create(nb, nl, t).getResult();
      };
      // γ: the gates' running sum inside the chunk, in f64: γ_i − γ_j
      // cancels (in f32 a reset gate of −60 costs e^{γ_i−γ_j} 4 digits).
      Type f64 = b.getF64Type();
      GenericBuilder g64{b, loc, f64};
      auto cumsum = [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value i = idx(nb, nl, 2), j = idx(nb, nl, 3);
        Value in =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule, j, i);
        Value wide = arith::ExtFOp::create(nb, nl, f64, a[0]);
        Value z = fconst(nb, nl, f64, 0.0);
        Value x = arith::SelectOp::create(nb, nl, in, wide, z);
        return arith::AddFOp::create(nb, nl, a[1], x).getResult();
      };
      // Per channel: loops (b, h, i, j, c), the sum over j ≤ i.
      Value gc =
          ch ? g.generic({gt}, g64.fill(kSizes, 0.0),
                         {g.map(5, {B, Hd, J, X}), g.map(5, {B, Hd, I, X})},
                         {kPar, kPar, kPar, kRed, kPar}, cumsum)
             : g.generic({gt}, g64.fill(tok, 0.0),
                         {g.map(4, {B, Hd, J}), g.map(4, {B, Hd, I})}, red4,
                         cumsum);
      // γ of token `t` (and of channel `c` with a per-channel gate) as a map
      // of an n-dim loop.
      auto gAt = [&](unsigned nd, AffineExpr t, AffineExpr c) {
        return ch ? g.map(nd, {B, Hd, t, c}) : g.map(nd, {B, Hd, t});
      };
      // Per channel: (Σ_c x_i[c] k_j[c] e^{γ_i[c]−γ_j[c]}) over j < i (or
      // j ≤ i with `diag`), [B, Hv, n, n]; e^{…} is only taken there (above
      // it γ_i − γ_j > 0 may overflow).
      auto decayedGram = [&](Value x, bool diag) {
        return g.generic(
            {x, k, gc, gc}, g.fill(sq, 0.0),
            {g.map(5, {B, Hq, I, X}), g.map(5, {B, Hq, J, X}),
             g.map(5, {B, Hd, I, X}), g.map(5, {B, Hd, J, X}),
             g.map(5, {B, Hd, I, J})},
            red5, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
              Value i = idx(nb, nl, 2), j = idx(nb, nl, 3);
              Value in = arith::CmpIOp::create(nb, nl,
                                               diag ? arith::CmpIPredicate::ule
                                                    : arith::CmpIPredicate::ult,
                                               j, i);
              Value z = fconst(nb, nl, f64, 0.0);
              Value gi = arith::SelectOp::create(nb, nl, in, a[2], z);
              Value gj = arith::SelectOp::create(nb, nl, in, a[3], z);
              Value e = expDiff(nb, nl, gi, gj);
              Value x = arith::MulFOp::create(nb, nl, a[0], a[1]);
              Value sum = fma(nb, nl, x, e, a[4]);
              return arith::SelectOp::create(nb, nl, in, sum, a[4]);
            });
      };
      // k_i·k_j per query/key head [B, Hk, n, n], q_i·k_j likewise.
      auto gram = [&](Value x) {
        return g.generic({x, k}, g.fill({batch, HK, n, n}, 0.0),
                         {g.map(5, {B, Hd, I, X}), g.map(5, {B, Hd, J, X}),
                          g.map(5, {B, Hd, I, J})},
                         red5, [&](OpBuilder &nb, Location nl, ValueRange a) {
                           return fma(nb, nl, a[0], a[1], a[2]);
                         });
      };
      // β v; without the delta correction (Mamba2's SSD) it is V'.
      Value vb = g.generic(
          {v, bt}, g.empty(vSizes, elt),
          {g.map(4, {B, Hd, I, J}), g.map(4, {B, Hd, I}),
           g.map(4, {B, Hd, I, J})},
          par4, [&](OpBuilder &nb, Location nl, ValueRange a) {
            return arith::MulFOp::create(nb, nl, a[0], a[1]).getResult();
          });
      Value vNew = vb;
      Value oneIdx = iconst(b, loc, 1);
      Value A;
      if (!op.getNoDelta() && ch) {
        // A = −β_i Σ_c k_i[c] k_j[c] e^{γ_i[c]−γ_j[c]} below the diagonal.
        Value kk = decayedGram(k, /*diag=*/false);
        A = g.generic({kk, bt}, g.empty(sq, elt),
                      {g.map(4, {B, Hd, I, J}), g.map(4, {B, Hd, I}),
                       g.map(4, {B, Hd, I, J})},
                      par4, [&](OpBuilder &nb, Location nl, ValueRange a) {
                        Value x = arith::MulFOp::create(nb, nl, a[0], a[1]);
                        return arith::NegFOp::create(nb, nl, x).getResult();
                      });
      } else if (!op.getNoDelta()) {
        Value kk = gram(k);
        // A = −β_i k_i·k_j e^{γ_i−γ_j} below the diagonal.
        A = g.generic(
            {kk, gc, gc, bt}, g.empty(sq, elt),
            {g.map(4, {B, Hq, I, J}), g.map(4, {B, Hd, I}),
             g.map(4, {B, Hd, J}), g.map(4, {B, Hd, I}),
             g.map(4, {B, Hd, I, J})},
            par4, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
              Value i = idx(nb, nl, 2), j = idx(nb, nl, 3);
              Value below = arith::CmpIOp::create(
                  nb, nl, arith::CmpIPredicate::ult, j, i);
              Value decay = expDiff(nb, nl, a[1], a[2]);
              Value x = arith::MulFOp::create(nb, nl, a[0], decay);
              x = arith::MulFOp::create(nb, nl, x, a[3]);
              x = arith::NegFOp::create(nb, nl, x);
              Value z = fconst(nb, nl, elt, 0.0);
              return arith::SelectOp::create(nb, nl, below, x, z);
            });
      }
      if (!op.getNoDelta()) {
        // Forward substitution: row i += row i · A for i = 1 .. n − 1 (rows
        // above i already final), so that I + A = (I − strict part)⁻¹.
        auto solve =
            scf::ForOp::create(b, loc, oneIdx, nv, oneIdx, ValueRange{A});
        {
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(solve.getBody());
          Value i = solve.getInductionVar();
          Value Acur = solve.getRegionIterArg(0);
          SmallVector<OpFoldResult> offs = {zero, zero, i, zero},
                                    sizes = {batch, H, one, n}, strides(4, one);
          Value row = tensor::ExtractSliceOp::create(
              b, loc, g.tensor(tok, elt), Acur, offs, sizes, strides);
          // Loops (b, h, m, j): out[j] += row[m] · A[m, j], j innermost.
          Value next =
              g.generic({row, Acur}, row,
                        {g.map(4, {B, Hd, I}), g.map(4, {B, Hd, I, J}),
                         g.map(4, {B, Hd, J})},
                        SmallVector<IteratorType>{kPar, kPar, kRed, kPar},
                        [&](OpBuilder &nb, Location nl, ValueRange a) {
                          return fma(nb, nl, a[0], a[1], a[2]);
                        });
          Value updated = tensor::InsertSliceOp::create(b, loc, next, Acur,
                                                        offs, sizes, strides);
          scf::YieldOp::create(b, loc, updated);
        }
        A = solve.getResult(0);
        // x + A·x over the chunk's tokens: T x with T = I + A.
        auto applyT = [&](Value x) {
          return g.generic({A, x}, x,
                           {g.map(5, {B, Hd, I, Xm}), g.map(5, {B, Hd, Xm, Jm}),
                            g.map(5, {B, Hd, I, Jm})},
                           redMid,
                           [&](OpBuilder &nb, Location nl, ValueRange a) {
                             return fma(nb, nl, a[0], a[1], a[2]);
                           });
        };
        // U = T (β v), W = T (β e^γ k).
        Value U = applyT(vb);
        Value kb = g.generic(
            {k, bt, gc}, g.empty(kSizes, elt),
            {g.map(4, {B, Hq, I, J}), g.map(4, {B, Hd, I}), gAt(4, I, J),
             g.map(4, {B, Hd, I, J})},
            par4, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
              Value e = expOf(nb, nl, a[2]);
              Value x = arith::MulFOp::create(nb, nl, a[0], a[1]);
              return arith::MulFOp::create(nb, nl, x, e);
            });
        Value W = applyT(kb);
        // V' = U − W S.
        vNew = g.generic(
            {W, S}, U,
            {g.map(5, {B, Hd, I, Xm}), g.map(5, {B, Hd, Xm, Jm}),
             g.map(5, {B, Hd, I, Jm})},
            redMid, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
              Value p = arith::MulFOp::create(nb, nl, a[0], a[1], kReduceFlags);
              return arith::SubFOp::create(nb, nl, a[2], p, kReduceFlags);
            });
      }
      // O = scale (q e^γ) S + P V', P = (scale q·k e^{γ_i−γ_j})_{j≤i}.
      Value scaleC = fconst(b, loc, elt, scale);
      Value inter = g.generic(
          {q, gc, S}, g.fill(vSizes, 0.0),
          {g.map(5, {B, Hq, I, Xm}), gAt(5, I, Xm), g.map(5, {B, Hd, Xm, Jm}),
           g.map(5, {B, Hd, I, Jm})},
          redMid, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
            Value e = expOf(nb, nl, a[1]);
            Value x = arith::MulFOp::create(nb, nl, a[0], e);
            x = arith::MulFOp::create(nb, nl, x, scaleC);
            return fma(nb, nl, x, a[2], a[3]);
          });
      Value P;
      if (ch) {
        Value qk = decayedGram(q, /*diag=*/true);
        P = elementwise(
            g, {qk}, elt, [&](OpBuilder &nb, Location nl, ValueRange a) {
              return arith::MulFOp::create(nb, nl, a[0], scaleC).getResult();
            });
      } else {
        Value qk = gram(q);
        P = g.generic({qk, gc, gc}, g.empty(sq, elt),
                      {g.map(4, {B, Hq, I, J}), g.map(4, {B, Hd, I}),
                       g.map(4, {B, Hd, J}), g.map(4, {B, Hd, I, J})},
                      par4,
                      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                        Value i = idx(nb, nl, 2), j = idx(nb, nl, 3);
                        Value causal = arith::CmpIOp::create(
                            nb, nl, arith::CmpIPredicate::ule, j, i);
                        Value decay = expDiff(nb, nl, a[1], a[2]);
                        Value x = arith::MulFOp::create(nb, nl, a[0], decay);
                        x = arith::MulFOp::create(nb, nl, x, scaleC);
                        Value z = fconst(nb, nl, elt, 0.0);
                        return arith::SelectOp::create(nb, nl, causal, x, z);
                      });
      }
      Value o = g.generic({P, vNew}, inter,
                          {g.map(5, {B, Hd, I, Xm}), g.map(5, {B, Hd, Xm, Jm}),
                           g.map(5, {B, Hd, I, Jm})},
                          redMid, [&](OpBuilder &nb, Location nl, ValueRange a) {
                            return fma(nb, nl, a[0], a[1], a[2]);
                          });
      // S = e^{γ_last} S + (k e^{γ_last−γ})ᵀ V'.
      Value lastIdx = arith::SubIOp::create(b, loc, nv, oneIdx);
      SmallVector<OpFoldResult> lastOffs = {zero, zero, lastIdx},
                                lastSizes = {batch, H, one};
      SmallVector<OpFoldResult> lastType = {batch, H};
      if (ch) {
        lastOffs.push_back(zero);
        lastSizes.push_back(DK);
        lastType.push_back(DK);
      }
      SmallVector<OpFoldResult> stridesL(lastOffs.size(), one);
      Value gLast = tensor::ExtractSliceOp::create(
          b, loc, g.tensor(lastType, f64), gc, lastOffs, lastSizes, stridesL);
      // γ_last of state row `i` (its key channel with a per-channel gate).
      auto lastAt = [&](unsigned nd, AffineExpr i) {
        return ch ? g.map(nd, {B, Hd, i}) : g.map(nd, {B, Hd});
      };
      Value decayed = g.generic(
          {S, gLast}, g.empty(stateSizes, elt),
          {g.map(4, {B, Hd, I, J}), lastAt(4, I), g.map(4, {B, Hd, I, J})},
          par4, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
            Value e = expOf(nb, nl, a[1]);
            return arith::MulFOp::create(nb, nl, a[0], e);
          });
      // Loop dims (b, h, i = d_k row, x = token, j = d_v column).
      Value S2 = g.generic(
          {k, gc, gLast, vNew}, decayed,
          {g.map(5, {B, Hq, Xm, I}), gAt(5, Xm, I), lastAt(5, I),
           g.map(5, {B, Hd, Xm, Jm}), g.map(5, {B, Hd, I, Jm})},
          redMid, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
            Value e = expDiff(nb, nl, a[2], a[1]);
            Value x = arith::MulFOp::create(nb, nl, a[0], e);
            return fma(nb, nl, x, a[3], a[4]);
          });
      SmallVector<OpFoldResult> offs = {zero, zero, s0, zero},
                                sizes = {batch, H, n, DV}, strides(4, one);
      Value O2 = tensor::InsertSliceOp::create(b, loc, o, O, offs, sizes,
                                               strides);
      scf::YieldOp::create(b, loc, ValueRange{S2, O2});
    }
    Value result = maskPadding(loop.getResult(1));
    rewriter.replaceOp(
        op, {castToType(b, loc, result, op.getOutput().getType()),
             castToType(b, loc, loop.getResult(0),
                        op.getFinalState().getType())});
    return success();
  }
};

/// x / (1 + exp(-x)).
Value silu(OpBuilder &b, Location loc, Value x) {
  Value one = fconst(b, loc, x.getType(), 1.0);
  Value neg = arith::NegFOp::create(b, loc, x);
  Value e = math::ExpOp::create(b, loc, neg);
  Value den = arith::AddFOp::create(b, loc, one, e);
  return arith::DivFOp::create(b, loc, x, den);
}

/// y[b, s, c] = silu(Σ_j w[c, j] · xs[b, s + j, c]) over the padded input
/// xs = stateᵀ ++ x [B, K − 1 + S, C]; the new state is xs's last K − 1
/// rows, transposed back to [B, C, K − 1].
struct LowerCausalConv1d : OpConversionPattern<CausalConv1dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CausalConv1dOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = a.getInput();
    auto xTy = cast<RankedTensorType>(x.getType());
    Type elt = xTy.getElementType();
    GenericBuilder g{rewriter, loc, elt};
    OpBuilder &b = rewriter;
    int64_t c = xTy.getDimSize(2);
    int64_t k = cast<RankedTensorType>(op.getWeight().getType()).getDimSize(1);
    OpFoldResult batch = g.dim(x, 0), C = b.getIndexAttr(c),
                 K1 = b.getIndexAttr(k - 1), zero = b.getIndexAttr(0),
                 one = b.getIndexAttr(1);
    Value seq = tensor::DimOp::create(b, loc, x, 1);
    Value kMinus1 = iconst(b, loc, k - 1);
    Value padded = arith::AddIOp::create(b, loc, seq, kMinus1);
    AffineExpr B = g.d(0), S = g.d(1), Cd = g.d(2), J = g.d(3);
    AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, b.getContext());
    SmallVector<IteratorType> par3(3, kPar);
    // The K − 1 inputs before the sequence, as rows [B, K − 1, C].
    Value head;
    if (Value state = a.getState())
      head = g.generic({state}, g.empty({batch, K1, C}, elt),
                       {g.map(3, {B, Cd, S}), id3}, par3,
                       [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    else
      head = g.fill({batch, K1, C}, 0.0);
    SmallVector<OpFoldResult> strides(3, one);
    Value xs = g.empty({batch, padded, C}, elt);
    xs = tensor::InsertSliceOp::create(b, loc, head, xs,
                                       SmallVector<OpFoldResult>{zero, zero,
                                                                 zero},
                                       SmallVector<OpFoldResult>{batch, K1, C},
                                       strides);
    xs = tensor::InsertSliceOp::create(b, loc, x, xs,
                                       SmallVector<OpFoldResult>{zero, K1,
                                                                 zero},
                                       SmallVector<OpFoldResult>{batch, seq, C},
                                       strides);
    Value acc = g.generic(
        {xs, a.getWeight()}, g.fill({batch, seq, C}, 0.0),
        {g.map(4, {B, S + J, Cd}), g.map(4, {Cd, J}), g.map(4, {B, S, Cd})},
        {kPar, kPar, kPar, kRed}, [](OpBuilder &nb, Location nl, ValueRange a) {
          return fma(nb, nl, a[0], a[1], a[2]);
        });
    Value y;
    if (Value bias = a.getBias()) {
      AffineMap id = AffineMap::getMultiDimIdentityMap(3, b.getContext());
      y = g.generic({acc, bias}, g.empty({batch, seq, C}, elt),
                    {id, g.map(3, {Cd}), id}, par3,
                    [](OpBuilder &nb, Location nl, ValueRange a) {
                      Value s = arith::AddFOp::create(nb, nl, a[0], a[1]);
                      return silu(nb, nl, s);
                    });
    } else {
      y = elementwise(g, {acc}, elt,
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        return silu(nb, nl, a[0]);
                      });
    }
    Value tail = tensor::ExtractSliceOp::create(
        b, loc, g.tensor({batch, K1, C}, elt), xs,
        SmallVector<OpFoldResult>{zero, seq, zero},
        SmallVector<OpFoldResult>{batch, K1, C}, strides);
    Value state = g.generic({tail}, g.empty({batch, C, K1}, elt),
                            {g.map(3, {B, Cd, S}), id3}, par3,
                            [](OpBuilder &, Location, ValueRange a) {
                              return a[0];
                            });
    rewriter.replaceOp(
        op, {castToType(b, loc, y, op.getResult().getType()),
             castToType(b, loc, state, op.getFinalState().getType())});
    return success();
  }
};

/// g[b, h, s] = −exp(A_log[h]) · softplus(a[b, s, h] + dt_bias[h]) and
/// beta[b, h, s] = sigmoid(b[b, s, h]); softplus as torch's (x for x > 20).
/// softplus(x + bias) as torch computes it (x past 20: x itself).
Value softplus(OpBuilder &nb, Location nl, Value x0, Value bias) {
  Type elt = x0.getType();
  Value x = arith::AddFOp::create(nb, nl, x0, bias);
  Value e = math::ExpOp::create(nb, nl, x);
  Value log1p = math::Log1pOp::create(nb, nl, e);
  Value big = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT, x,
                                    fconst(nb, nl, elt, 20.0));
  return arith::SelectOp::create(nb, nl, big, x, log1p);
}

struct LowerGatedDeltaGates : OpConversionPattern<GatedDeltaGatesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatedDeltaGatesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = adaptor.getA();
    auto aTy = cast<RankedTensorType>(a.getType());
    Type elt = aTy.getElementType();
    GenericBuilder g{rewriter, loc, elt};
    SmallVector<OpFoldResult> sizes = {g.dim(a, 0), g.dim(a, 2), g.dim(a, 1)};
    AffineExpr B = g.d(0), H = g.d(1), S = g.d(2);
    AffineMap tok = g.map(3, {B, S, H}), head = g.map(3, {H}),
              out = g.map(3, {B, H, S});
    SmallVector<IteratorType> par3(3, kPar);
    auto gateTy = cast<RankedTensorType>(op.getGate().getType());
    if (gateTy.getRank() == 4) {
      // Kimi Delta Attention: g[b, h, t, c] = −exp(A_log[h]) ·
      // softplus(a[b, t, h·d_k + c] + dt_bias[h·d_k + c]).
      int64_t hv = gateTy.getDimSize(1), dk = gateTy.getDimSize(3);
      AffineExpr C = g.d(3), HC = H * dk + C;
      SmallVector<OpFoldResult> gSizes = {
          g.dim(a, 0), rewriter.getIndexAttr(hv), g.dim(a, 1),
          rewriter.getIndexAttr(dk)};
      Value gate = g.generic(
          {a, adaptor.getALog(), adaptor.getDtBias()}, g.empty(gSizes, elt),
          {g.map(4, {B, S, HC}), g.map(4, {H}), g.map(4, {HC}),
           g.map(4, {B, H, S, C})},
          SmallVector<IteratorType>(4, kPar),
          [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
            Value sp = softplus(nb, nl, v[0], v[2]);
            Value decay = math::ExpOp::create(nb, nl, v[1]);
            Value prod = arith::MulFOp::create(nb, nl, decay, sp);
            return arith::NegFOp::create(nb, nl, prod);
          });
      Value bIn = adaptor.getB();
      SmallVector<OpFoldResult> bSizes = {g.dim(bIn, 0), g.dim(bIn, 2),
                                          g.dim(bIn, 1)};
      Value beta = g.generic({bIn}, g.empty(bSizes, elt), {tok, out}, par3,
                             [&](OpBuilder &nb, Location nl, ValueRange v) {
                               return sigmoid(nb, nl, v[0]);
                             });
      rewriter.replaceOp(
          op, {castToType(rewriter, loc, gate, op.getGate().getType()),
               castToType(rewriter, loc, beta, op.getBeta().getType())});
      return success();
    }
    // dt = softplus(a + dt_bias), clamped to [dt_min, dt_max] (Mamba2's
    // time_step_limit) where given.
    auto dtOf = [&](OpBuilder &nb, Location nl, Value x, Value bias) {
      Value dt = softplus(nb, nl, x, bias);
      if (std::optional<APFloat> lo = op.getDtMin()) {
        Value c = fconst(nb, nl, elt, lo->convertToDouble());
        dt = arith::MaximumFOp::create(nb, nl, dt, c);
      }
      if (std::optional<APFloat> hi = op.getDtMax()) {
        Value c = fconst(nb, nl, elt, hi->convertToDouble());
        dt = arith::MinimumFOp::create(nb, nl, dt, c);
      }
      return dt;
    };
    Value gate =
        g.generic({a, adaptor.getALog(), adaptor.getDtBias()},
                  g.empty(sizes, elt), {tok, head, head, out}, par3,
                  [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
                    Value sp = dtOf(nb, nl, v[0], v[2]);
                    Value decay = math::ExpOp::create(nb, nl, v[1]);
                    Value prod = arith::MulFOp::create(nb, nl, decay, sp);
                    return arith::NegFOp::create(nb, nl, prod);
                  });
    // β = sigmoid(b), or Mamba2's dt = softplus(a + dt_bias).
    Value beta =
        op.getBetaIsDt()
            ? g.generic({a, adaptor.getDtBias()}, g.empty(sizes, elt),
                        {tok, head, out}, par3,
                        [&](OpBuilder &nb, Location nl, ValueRange v) -> Value {
                          return dtOf(nb, nl, v[0], v[1]);
                        })
            : g.generic({adaptor.getB()}, g.empty(sizes, elt), {tok, out}, par3,
                        [&](OpBuilder &nb, Location nl, ValueRange v) {
                          return sigmoid(nb, nl, v[0]);
                        });
    rewriter.replaceOp(op, {castToType(rewriter, loc, gate, op.getGate().getType()),
                            castToType(rewriter, loc, beta,
                                       op.getBeta().getType())});
    return success();
  }
};

} // namespace

namespace mlir {
namespace attn {
namespace to_linalg {

// Found by argument-dependent lookup from LowerToLinalg<OpT>.

static Value lowerOp(L2NormOp op, L2NormOp::Adaptor a, GenericBuilder &g) {
  Value x = a.getInput();
  auto ty = cast<RankedTensorType>(x.getType());
  Type elt = ty.getElementType();
  int64_t r = ty.getRank();
  Value ss = rowSumOfSquares(g, x);
  double eps = op.getEpsilon().convertToDouble();
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, g.b.getContext());
  return g.generic({x, ss}, g.empty(g.sizes(x), elt),
                   {id, rowMap(g, r), id}, SmallVector<IteratorType>(r, kPar),
                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     Value sum = arith::AddFOp::create(b, l, a[1],
                                                       fconst(b, l, elt, eps));
                     Value inv = math::RsqrtOp::create(b, l, sum);
                     return arith::MulFOp::create(b, l, a[0], inv);
                   });
}

static Value lowerOp(GatedRMSNormOp op, GatedRMSNormOp::Adaptor a,
                     GenericBuilder &g) {
  Value x = a.getInput();
  auto ty = cast<RankedTensorType>(x.getType());
  Type elt = ty.getElementType();
  int64_t r = ty.getRank(), n = ty.getDimSize(r - 1);
  double eps = op.getEpsilon().convertToDouble();
  AffineMap id = AffineMap::getMultiDimIdentityMap(r, g.b.getContext());
  // The weight over the last dim, or the last two ([groups, n]).
  AffineMap wMap =
      cast<RankedTensorType>(a.getWeight().getType()).getRank() == 2
          ? g.map(r, {g.d(r - 2), g.d(r - 1)})
          : g.map(r, {g.d(r - 1)});
  SmallVector<IteratorType> par(r, kPar);
  if (op.getGateFirst()) {
    // u = x · silu(z), then u's RMSNorm with the weight.
    Value u = g.generic(
        {x, a.getGate()}, g.empty(g.sizes(x), elt), {id, id, id}, par,
        [&](OpBuilder &b, Location l, ValueRange v) -> Value {
          Value gate = op.getSigmoid() ? sigmoid(b, l, v[1]) : silu(b, l, v[1]);
          return arith::MulFOp::create(b, l, v[0], gate);
        });
    Value uss = rowSumOfSquares(g, u);
    return g.generic(
        {u, uss, a.getWeight()}, g.empty(g.sizes(x), elt),
        {id, rowMap(g, r), wMap, id}, par,
        [&](OpBuilder &b, Location l, ValueRange v) -> Value {
          Value mean =
              arith::DivFOp::create(b, l, v[1], fconst(b, l, elt, double(n)));
          Value sum = arith::AddFOp::create(b, l, mean, fconst(b, l, elt, eps));
          Value inv = math::RsqrtOp::create(b, l, sum);
          Value y = arith::MulFOp::create(b, l, v[0], inv);
          return arith::MulFOp::create(b, l, y, v[2]);
        });
  }
  Value ss = rowSumOfSquares(g, x);
  return g.generic(
      {x, ss, a.getWeight(), a.getGate()}, g.empty(g.sizes(x), elt),
      {id, rowMap(g, r), wMap, id, id}, SmallVector<IteratorType>(r, kPar),
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value mean =
            arith::DivFOp::create(b, l, a[1], fconst(b, l, elt, double(n)));
        Value sum = arith::AddFOp::create(b, l, mean, fconst(b, l, elt, eps));
        Value inv = math::RsqrtOp::create(b, l, sum);
        Value y = arith::MulFOp::create(b, l, a[0], inv);
        y = arith::MulFOp::create(b, l, y, a[2]);
        Value gate = op.getSigmoid() ? sigmoid(b, l, a[3]) : silu(b, l, a[3]);
        return arith::MulFOp::create(b, l, y, gate);
      });
}

static Value lowerOp(SkipAddOp op, SkipAddOp::Adaptor a, GenericBuilder &g) {
  Value x = a.getInput();
  auto ty = cast<RankedTensorType>(x.getType());
  Type elt = ty.getElementType();
  AffineMap id = AffineMap::getMultiDimIdentityMap(4, g.b.getContext());
  return g.generic({x, a.getX(), a.getD()}, g.empty(g.sizes(x), elt),
                   {id, id, g.map(4, {g.d(1)}), id},
                   SmallVector<IteratorType>(4, kPar),
                   [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                     return fma(b, l, v[2], v[1], v[0]);
                   });
}

} // namespace to_linalg
} // namespace attn
} // namespace mlir

void mlir::attn::to_linalg::populateLinearOpPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerGatedDeltaRule, LowerCausalConv1d, LowerGatedDeltaGates,
               LowerToLinalg<L2NormOp>, LowerToLinalg<GatedRMSNormOp>,
               LowerToLinalg<SkipAddOp>>(patterns.getContext());
}
