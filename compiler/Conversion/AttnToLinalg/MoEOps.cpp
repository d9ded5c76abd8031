//===- MoEOps.cpp - attn.moe -> linalg + scf ------------------------------===//
//
// This file implements the convert-attn-to-linalg pattern of attn.moe, the
// sparse mixture of experts. Tokens are the input's leading positions,
// flattened to [T, H]:
//
//   router   p = softmax(x·Wᵀ) [T, E] (linalg.generic reductions);
//   top-k    k passes of a (max, first index) reduction over the experts,
//            each masking its pick, then the weights renormalized;
//   shared   the shared expert's network (gated, or plain without a gate
//            weight) on every token, scaled by sigmoid(x·w), as the
//            accumulator's initial value;
//   experts  an scf.for over the experts: the tokens routed to expert e
//            gathered into a compact [n, H] tile (an scf.for compaction),
//            the expert's network (gated or plain) on those rows only (its
//            weights sliced from the stacked [E, ., .] tensors: read once per
//            call), and each row, scaled by its routing weight, added back
//            to its token's row; an expert with no token is skipped.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/AttnToLinalg/LinalgBuilder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::to_linalg;

namespace mlir {
namespace attn {
namespace to_linalg {

namespace {

/// One row reduction of `x` [T, C] into a [T] tensor (init `init`).
Value rowReduce(GenericBuilder &g, Value x, double init,
                function_ref<Value(OpBuilder &, Location, Value, Value)> f) {
  Value rows = g.fill({g.dim(x, 0)}, init);
  return g.generic({x}, rows, {g.map(2, {g.d(0), g.d(1)}), g.map(2, {g.d(0)})},
                   {kPar, kRed},
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     return f(b, l, a[0], a[1]);
                   });
}

/// Builds the body of `loop` (created without one) with `body`, which
/// returns the values to yield.
void fillLoop(OpBuilder &b, scf::ForOp loop,
              function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  OpBuilder::InsertionGuard guard(b);
  Block *block = loop.getBody();
  if (!block->empty())
    block->back().erase(); // the default empty terminator
  b.setInsertionPointToEnd(block);
  SmallVector<Value> results =
      body(loop.getInductionVar(), loop.getRegionIterArgs());
  scf::YieldOp::create(b, loop.getLoc(), results);
}

} // namespace

namespace {

/// The lowering of one attn.moe, phase by phase in the order its IR runs:
/// the router's scores, the group-limited selection, top-k, the shared
/// expert, then each routed expert on its tokens.
class MoELowering {
public:
  MoELowering(MoEOp op, MoEOp::Adaptor a, GenericBuilder &g);
  /// The op's result.
  Value run();

private:
  /// Router probabilities p [T, E] of the router logits: softmax over the
  /// experts, or each logit's sigmoid.
  Value routerProbs(Value logits);
  /// Group-limited selection: the experts in G groups of n, each group
  /// scored by its best c (or its best two summed), the topk_groups best
  /// groups kept, the others' c set to 0.
  Value limitGroups(Value choice, Value logits);
  /// Top-k: k picks of (max c, first index), each masking its pick; the
  /// weights are the picked experts' p, renormalized and scaled as the
  /// op says. (topIdx [T, k] (i64), topW [T, k]).
  std::pair<Value, Value> topK(Value choice, Value probs);
  /// The accumulator: the shared expert's output, or zeros.
  Value sharedExpert();
  /// `acc` plus each routed expert's output on its tokens only.
  Value routedExperts(Value acc, Value topIdx, Value topW);
  /// The routing weight of expert `ei` (i64) for every token [T] (0: not
  /// routed): a reduction over the token's k picks.
  Value routingWeight(Value topIdx, Value topW, Value ei);
  /// Compaction: the count n and the rows [T] (the first n used) of the
  /// tokens routed to an expert (weight `we` [T] not 0), in order.
  std::pair<Value, Value> routedRows(Value we);
  /// The routed tokens' hidden states [n, H] (Llama 4: scaled by their
  /// routing weight).
  Value gatherRows(Value n, Value rows, Value we);
  /// Expert `e`'s network on the rows `xs` [n, H].
  Value expertOn(Value xs, Value e);
  /// act(xs·upᵀ)·downᵀ: a network without a gate (Nemotron-H's experts and
  /// shared expert).
  Value plainNetwork(Value xs, Value up, Value down);
  /// `acc` with each row of `ye` added to its token's row, scaled by its
  /// routing weight (not when the input was scaled).
  Value scatterRows(Value acc, Value ye, Value rows, Value n, Value we);

  /// (best value, its first index) of a [T, N] tensor's rows, and the
  /// value of `carry` [T, N] at that index.
  std::array<Value, 3> argmax(Value t, Value carry);
  /// `t` [T, N] with column idx[t] set to `v`.
  Value maskPick(Value t, Value idx, double v);
  /// A loop of `n` picks (scf.for: a count from the config is never
  /// unrolled into the IR), each with its state in `iter`.
  scf::ForOp picks(int64_t n, ValueRange init,
                   function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// Expert e's slice [N, K] of stacked weights [E, N, K].
  Value weightOf(Value stacked, Value e);
  /// Row e of a stacked bias [E, N].
  Value biasOf(Value stacked, Value e);

  MoEOp op;
  /// The operands, as the conversion has rewritten them.
  MoEOp::Adaptor a;
  GenericBuilder &g;
  OpBuilder &b;
  Location loc;
  Value x;
  Type elt, idxTy, i64;
  int64_t k;
  Activation act;
  /// Tokens [T, H] (x2: the input's leading dims flattened by `re`).
  SmallVector<ReassociationIndices> re;
  Value x2, tokens, c0, c1;
  OpFoldResult T, H, E;
  SmallVector<OpFoldResult> te;
  AffineMap id2, row;
};

MoELowering::MoELowering(MoEOp op, MoEOp::Adaptor a, GenericBuilder &g)
    : op(op), a(a), g(g), b(g.b), loc(g.loc), x(a.getInput()),
      elt(cast<RankedTensorType>(x.getType()).getElementType()),
      idxTy(b.getIndexType()), i64(b.getI64Type()), k(op.getTopK()),
      act(op.getActivation()) {
  // Tokens [T, H].
  x2 = asRows(g, x, re);
  T = g.dim(x2, 0);
  H = g.dim(x2, 1);
  tokens = getValueOrCreateConstantIndexOp(b, loc, T);
  c0 = arith::ConstantIndexOp::create(b, loc, 0);
  c1 = arith::ConstantIndexOp::create(b, loc, 1);
  id2 = g.map(2, {g.d(0), g.d(1)});
  row = g.map(2, {g.d(0)});
}

Value MoELowering::run() {
  Value logits = linearOf(g, x2, a.getRouterWeight(), a.getRouterBias(), false);
  E = g.dim(logits, 1);
  te = {T, E};
  Value probs = routerProbs(logits);
  // The selection's scores c: p plus the per-expert bias.
  Value choice = probs;
  if (Value bias = a.getScoreBias())
    choice = g.generic({probs, bias}, g.empty(te, elt),
                       {id2, g.map(2, {g.d(1)}), id2}, {kPar, kPar},
                       [](OpBuilder &nb, Location l, ValueRange a) {
                         return arith::AddFOp::create(nb, l, a[0], a[1])
                             .getResult();
                       });
  if (op.getNumGroups() > 1)
    choice = limitGroups(choice, logits);
  auto [topIdx, topW] = topK(choice, probs);
  Value acc = sharedExpert();
  Value out = routedExperts(acc, topIdx, topW);
  return fromRows(g, out, x, re);
}

Value MoELowering::routerProbs(Value logits) {
  Value probs;
  if (a.getScoring() == RouterScoring::sigmoid) {
    probs = elementwise(g, {logits}, elt,
                        [](OpBuilder &nb, Location l, ValueRange a) {
                          return sigmoid(nb, l, a[0]);
                        });
  } else {
    Value mx = rowReduce(g, logits, -INFINITY,
                         [](OpBuilder &nb, Location l, Value v, Value acc) {
                           return arith::MaximumFOp::create(nb, l, v, acc)
                               .getResult();
                         });
    Value ex = g.generic({logits, mx}, g.empty(te, elt), {id2, row, id2},
                         {kPar, kPar},
                         [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                           Value d = arith::SubFOp::create(nb, l, a[0], a[1]);
                           return math::ExpOp::create(nb, l, d);
                         });
    Value sum =
        rowSum(g, ex, [](OpBuilder &, Location, Value v) { return v; });
    probs = g.generic({ex, sum}, g.empty(te, elt), {id2, row, id2},
                      {kPar, kPar},
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        return arith::DivFOp::create(nb, l, a[0], a[1])
                            .getResult();
                      });
  }
  return probs;
}

std::array<Value, 3> MoELowering::argmax(Value t, Value carry) {
  OpFoldResult n = g.dim(t, 1);
  (void)n;
  Value initV = g.fill({T}, -INFINITY);
  Value initC = g.fill({T}, 0.0);
  Value minusOne = arith::ConstantIntOp::create(b, loc, i64, -1);
  Value emptyI =
      tensor::EmptyOp::create(b, loc, SmallVector<OpFoldResult>{T}, i64);
  Value initI = linalg::FillOp::create(b, loc, ValueRange{minusOne},
                                       ValueRange{emptyI})
                    .getResult(0);
  auto pick = linalg::GenericOp::create(
      b, loc, TypeRange{initV.getType(), initI.getType(), initC.getType()},
      ValueRange{t, carry}, ValueRange{initV, initI, initC},
      ArrayRef<AffineMap>{id2, id2, row, row, row},
      ArrayRef<IteratorType>{kPar, kRed},
      [](OpBuilder &nb, Location l, ValueRange a) {
        Value e = linalg::IndexOp::create(nb, l, 1);
        Value ei = arith::IndexCastOp::create(nb, l, nb.getI64Type(), e);
        Value better = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                             a[0], a[2]);
        Value v = arith::SelectOp::create(nb, l, better, a[0], a[2]);
        Value i = arith::SelectOp::create(nb, l, better, ei, a[3]);
        Value c = arith::SelectOp::create(nb, l, better, a[1], a[4]);
        linalg::YieldOp::create(nb, l, ValueRange{v, i, c});
      });
  return {pick.getResult(0), pick.getResult(1), pick.getResult(2)};
}

Value MoELowering::maskPick(Value t, Value idx, double v) {
  return g.generic({t, idx}, g.empty(g.sizes(t), elt), {id2, row, id2},
                   {kPar, kPar},
                   [v](OpBuilder &nb, Location l, ValueRange a) -> Value {
                     Value e = linalg::IndexOp::create(nb, l, 1);
                     Value ei =
                         arith::IndexCastOp::create(nb, l, nb.getI64Type(), e);
                     Value hit = arith::CmpIOp::create(
                         nb, l, arith::CmpIPredicate::eq, ei, a[1]);
                     Value c = fconst(nb, l, a[0].getType(), v);
                     return arith::SelectOp::create(nb, l, hit, c, a[0]);
                   });
}

scf::ForOp MoELowering::picks(
    int64_t n, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  Value cn = arith::ConstantIndexOp::create(b, loc, n);
  auto loop = scf::ForOp::create(b, loc, c0, cn, c1, init);
  fillLoop(b, loop, body);
  return loop;
}

Value MoELowering::limitGroups(Value choice, Value logits) {
  int64_t groups = op.getNumGroups();
  int64_t experts = cast<RankedTensorType>(logits.getType()).getDimSize(1);
  int64_t per = experts / groups;
  SmallVector<ReassociationIndices> re3 = {{0}, {1, 2}};
  SmallVector<OpFoldResult> tgn = {T, b.getIndexAttr(groups),
                                   b.getIndexAttr(per)};
  Value c3 = tensor::ExpandShapeOp::create(b, loc, g.tensor(tgn, elt),
                                           choice, re3, tgn);
  AffineMap id3 = g.map(3, {g.d(0), g.d(1), g.d(2)}),
            grp = g.map(3, {g.d(0), g.d(1)});
  SmallVector<OpFoldResult> tg = {T, b.getIndexAttr(groups)};
  Value m1 = g.fill(tg, -INFINITY), m2 = g.fill(tg, -INFINITY);
  auto best = linalg::GenericOp::create(
      b, loc, TypeRange{m1.getType(), m2.getType()}, ValueRange{c3},
      ValueRange{m1, m2}, ArrayRef<AffineMap>{id3, grp, grp},
      ArrayRef<IteratorType>{kPar, kPar, kRed},
      [](OpBuilder &nb, Location l, ValueRange a) {
        // (first, second) best so far.
        Value gt = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT,
                                         a[0], a[1]);
        Value first = arith::SelectOp::create(nb, l, gt, a[0], a[1]);
        Value other = arith::SelectOp::create(nb, l, gt, a[1], a[0]);
        Value second = arith::MaximumFOp::create(nb, l, other, a[2]);
        linalg::YieldOp::create(nb, l, ValueRange{first, second});
      });
  Value groupScore = best.getResult(0);
  if (a.getGroupScore() == GroupScore::top2_sum)
    groupScore = elementwise(g, {best.getResult(0), best.getResult(1)}, elt,
                             [](OpBuilder &nb, Location l, ValueRange a) {
                               return arith::AddFOp::create(nb, l, a[0],
                                                            a[1])
                                   .getResult();
                             });
  Value keep0 = g.fill(tg, 0.0);
  auto groupLoop = picks(
      op.getTopkGroups(), ValueRange{groupScore, keep0},
      [&](Value, ValueRange it) -> SmallVector<Value> {
        auto [v, idx, unused] = argmax(it[0], it[0]);
        (void)v;
        (void)unused;
        return {maskPick(it[0], idx, -INFINITY), maskPick(it[1], idx, 1.0)};
      });
  Value keep = groupLoop.getResult(1); // [T, G]: 1 for a kept group
  AffineMap ofGroup =
      g.map(2, {g.d(0), g.d(1).floorDiv(b.getAffineConstantExpr(per))});
  // The other groups' experts: c = 0 (transformers' DeepSeek-V3), or out
  // of the running (-inf: exclude_other_groups, Nemotron-H).
  double masked = op.getExcludeOtherGroups() ? -INFINITY : 0.0;
  choice = g.generic({choice, keep}, g.empty(te, elt), {id2, ofGroup, id2},
                     {kPar, kPar},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value zero = fconst(nb, l, a[0].getType(), 0.0);
                       Value out = fconst(nb, l, a[0].getType(), masked);
                       Value kept = arith::CmpFOp::create(
                           nb, l, arith::CmpFPredicate::ONE, a[1], zero);
                       return arith::SelectOp::create(nb, l, kept, a[0], out);
                     });
  return choice;
}

std::pair<Value, Value> MoELowering::topK(Value choice, Value probs) {
  SmallVector<OpFoldResult> tk = {T, b.getIndexAttr(k)};
  Value idx0 = tensor::EmptyOp::create(b, loc, tk, i64);
  Value w0 = g.empty(tk, elt);
  auto topLoop = picks(
      k, ValueRange{choice, idx0, w0},
      [&](Value j, ValueRange it) -> SmallVector<Value> {
        auto [v, idx, w] = argmax(it[0], probs);
        (void)v;
        SmallVector<OpFoldResult> at = {b.getIndexAttr(0), j};
        SmallVector<OpFoldResult> colSizes = {T, b.getIndexAttr(1)};
        SmallVector<OpFoldResult> ones(2, b.getIndexAttr(1));
        SmallVector<ReassociationIndices> col = {{0, 1}};
        auto colOf = [&](Value t, Type e) -> Value {
          return tensor::ExpandShapeOp::create(b, loc, g.tensor(colSizes, e),
                                               t, col, colSizes);
        };
        Value idxT = tensor::InsertSliceOp::create(b, loc, colOf(idx, i64),
                                                   it[1], at, colSizes, ones);
        Value wT = tensor::InsertSliceOp::create(b, loc, colOf(w, elt), it[2],
                                                 at, colSizes, ones);
        return {maskPick(it[0], idx, -INFINITY), idxT, wT};
      });
  Value topIdx = topLoop.getResult(1), topW = topLoop.getResult(2);
  double eps = op.getNormTopkEpsilon().convertToDouble();
  double scale = op.getRoutedScalingFactor().convertToDouble();
  if (op.getNormTopkProb()) {
    Value total = rowSum(g, topW, [](OpBuilder &, Location, Value v) {
      return v;
    });
    topW = g.generic({topW, total}, g.empty(tk, elt), {id2, row, id2},
                     {kPar, kPar},
                     [eps](OpBuilder &nb, Location l, ValueRange a) {
                       Value den = a[1];
                       if (eps != 0)
                         den = arith::AddFOp::create(
                             nb, l, den, fconst(nb, l, den.getType(), eps));
                       return arith::DivFOp::create(nb, l, a[0], den)
                           .getResult();
                     });
  }
  if (scale != 1.0)
    topW = elementwise(g, {topW}, elt,
                       [scale](OpBuilder &nb, Location l, ValueRange a) {
                         return arith::MulFOp::create(
                                    nb, l, a[0],
                                    fconst(nb, l, a[0].getType(), scale))
                             .getResult();
                       });
  return {topIdx, topW};
}

Value MoELowering::sharedExpert() {
  Value acc;
  if (Value su = a.getSharedUpWeight()) {
    Value sg = a.getSharedGateWeight();
    acc = sg ? gatedNetwork(g, x2, sg, su, a.getSharedDownWeight(), act)
             : plainNetwork(x2, su, a.getSharedDownWeight());
    if (Value sgate = a.getSharedExpertGateWeight()) {
      Value gate = linearOf(g, x2, sgate, Value(), false); // [T, 1]
      acc = g.generic(
          {acc, gate}, g.empty({T, H}, elt),
          {id2, g.map(2, {g.d(0), b.getAffineConstantExpr(0)}), id2},
          {kPar, kPar}, [](OpBuilder &nb, Location l, ValueRange a) -> Value {
            Value s = sigmoid(nb, l, a[1]);
            return arith::MulFOp::create(nb, l, a[0], s);
          });
    }
  } else {
    acc = g.fill({T, H}, 0.0);
  }
  return acc;
}

Value MoELowering::weightOf(Value stacked, Value e) {
  auto st = cast<RankedTensorType>(stacked.getType());
  auto sliceTy = RankedTensorType::get(st.getShape().drop_front(), elt);
  SmallVector<OpFoldResult> offsets = {e, b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), g.dim(stacked, 1),
                                     g.dim(stacked, 2)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, sliceTy, stacked, offsets,
                                        sizes, strides);
}

Value MoELowering::biasOf(Value stacked, Value e) {
  auto st = cast<RankedTensorType>(stacked.getType());
  auto rowTy = RankedTensorType::get({st.getDimSize(1)}, elt);
  SmallVector<OpFoldResult> offsets = {e, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), g.dim(stacked, 1)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, rowTy, stacked, offsets,
                                        sizes, strides);
}

Value MoELowering::routingWeight(Value topIdx, Value topW, Value ei) {
  return g.generic(
      {topIdx, topW}, g.fill({T}, 0.0), {id2, id2, row}, {kPar, kRed},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value hit = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                          a[0], ei);
        Value zero = fconst(nb, l, elt, 0.0);
        Value w = arith::SelectOp::create(nb, l, hit, a[1], zero);
        return arith::AddFOp::create(nb, l, a[2], w);
      });
}

std::pair<Value, Value> MoELowering::routedRows(Value we) {
  Value rowsInit = tensor::EmptyOp::create(
      b, loc, SmallVector<OpFoldResult>{T}, idxTy);
  auto compact =
      scf::ForOp::create(b, loc, c0, tokens, c1, ValueRange{c0, rowsInit});
  fillLoop(b, compact, [&](Value t, ValueRange it) -> SmallVector<Value> {
    Value n = it[0], rows = it[1];
    Value wt = tensor::ExtractOp::create(b, loc, we, ValueRange{t});
    Value zero = fconst(b, loc, elt, 0.0);
    Value routed =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, wt, zero);
    Value stored = tensor::InsertOp::create(b, loc, t, rows, ValueRange{n});
    Value kept = arith::SelectOp::create(b, loc, routed, stored, rows);
    Value n1 = arith::AddIOp::create(b, loc, n, c1);
    Value count = arith::SelectOp::create(b, loc, routed, n1, n);
    return {count, kept};
  });
  return {compact.getResult(0), compact.getResult(1)};
}

Value MoELowering::gatherRows(Value n, Value rows, Value we) {
  auto xsTy = RankedTensorType::get(
      {ShapedType::kDynamic, cast<RankedTensorType>(x2.getType())
                                 .getDimSize(1)},
      elt);
  SmallVector<Value> xsDyn = {n};
  if (xsTy.isDynamicDim(1))
    xsDyn.push_back(getValueOrCreateConstantIndexOp(b, loc, H));
  bool scaleInput = op.getScaleInput();
  return tensor::GenerateOp::create(
      b, loc, xsTy, xsDyn,
      [&](OpBuilder &nb, Location l, ValueRange ij) {
        Value tok = tensor::ExtractOp::create(nb, l, rows, ij[0]);
        Value v = tensor::ExtractOp::create(nb, l, x2,
                                            ValueRange{tok, ij[1]});
        if (scaleInput) { // Llama 4: the expert's input is scaled
          Value w = tensor::ExtractOp::create(nb, l, we, ValueRange{tok});
          v = arith::MulFOp::create(nb, l, v, w);
        }
        tensor::YieldOp::create(nb, l, v);
      });
}

Value MoELowering::plainNetwork(Value xs, Value up, Value down) {
  Value u = linearOf(g, xs, up, Value(), false);
  Value h = elementwise(g, {u}, elt,
                        [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                          return activate(nb, l, act, v[0]);
                        });
  return linearOf(g, h, down, Value(), false);
}

Value MoELowering::expertOn(Value xs, Value e) {
  Value gateW = a.getExpertGateWeight(), upW = a.getExpertUpWeight(),
        downW = a.getExpertDownWeight();
  // One statement per created op: the IR must not depend on the host
  // compiler's order of argument evaluation.
  if (!gateW) {
    Value eUp = weightOf(upW, e);
    Value eDown = weightOf(downW, e);
    return plainNetwork(xs, eUp, eDown);
  }
  Value eGate = weightOf(gateW, e);
  Value eUp = weightOf(upW, e);
  Value eDown = weightOf(downW, e);
  Value ye;
  if (a.getExpertGateBias() || op.getSwigluLimit()) {
    // gpt-oss's experts: biased projections and, with swiglu_limit,
    // the clamped SwiGLU (up + 1) · g · sigmoid(alpha · g).
    Value bGate, bUp, bDown;
    if (a.getExpertGateBias()) {
      bGate = biasOf(a.getExpertGateBias(), e);
      bUp = biasOf(a.getExpertUpBias(), e);
      bDown = biasOf(a.getExpertDownBias(), e);
    }
    Value gv = linearOf(g, xs, eGate, bGate, false);
    Value uv = linearOf(g, xs, eUp, bUp, false);
    std::optional<double> limit;
    if (std::optional<APFloat> l = op.getSwigluLimit())
      limit = l->convertToDouble();
    double alpha = op.getSwigluAlpha().convertToDouble();
    Value h = elementwise(
        g, {gv, uv}, elt,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          if (!limit) {
            Value act0 = activate(nb, l, act, a[0]);
            return arith::MulFOp::create(nb, l, act0, a[1]);
          }
          Value lim = fconst(nb, l, elt, *limit);
          Value nlim = fconst(nb, l, elt, -*limit);
          Value gc = arith::MinimumFOp::create(nb, l, a[0], lim);
          Value uc = arith::MaximumFOp::create(
              nb, l, arith::MinimumFOp::create(nb, l, a[1], lim), nlim);
          Value ag = arith::MulFOp::create(nb, l, gc,
                                           fconst(nb, l, elt, alpha));
          Value glu = arith::MulFOp::create(nb, l, gc, sigmoid(nb, l, ag));
          Value up1 = arith::AddFOp::create(nb, l, uc,
                                            fconst(nb, l, elt, 1.0));
          return arith::MulFOp::create(nb, l, up1, glu);
        });
    ye = linearOf(g, h, eDown, bDown, false);
  } else {
    ye = gatedNetwork(g, xs, eGate, eUp, eDown, act);
  }
  return ye;
}

Value MoELowering::scatterRows(Value acc, Value ye, Value rows, Value n,
                                Value we) {
  bool scaleInput = op.getScaleInput();
  auto scatter = scf::ForOp::create(b, loc, c0, n, c1, ValueRange{acc});
  fillLoop(b, scatter, [&](Value i, ValueRange it) -> SmallVector<Value> {
    Value cur = it[0];
    Value tok = tensor::ExtractOp::create(b, loc, rows, ValueRange{i});
    Value w = scaleInput
                  ? fconst(b, loc, elt, 1.0)
                  : tensor::ExtractOp::create(b, loc, we, ValueRange{tok})
                        .getResult();
    SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1), H};
    SmallVector<OpFoldResult> ones(2, b.getIndexAttr(1));
    auto rowTy = RankedTensorType::get(
        {1, cast<RankedTensorType>(cur.getType()).getDimSize(1)}, elt);
    Value dst = tensor::ExtractSliceOp::create(
        b, loc, rowTy, cur,
        SmallVector<OpFoldResult>{tok, b.getIndexAttr(0)}, rowSizes, ones);
    Value src = tensor::ExtractSliceOp::create(
        b, loc, rowTy, ye,
        SmallVector<OpFoldResult>{i, b.getIndexAttr(0)}, rowSizes, ones);
    Value sumRow = elementwise(
        g, {dst, src}, elt,
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value scaled = arith::MulFOp::create(nb, l, a[1], w);
          return arith::AddFOp::create(nb, l, a[0], scaled);
        });
    Value updated = tensor::InsertSliceOp::create(
        b, loc, sumRow, cur,
        SmallVector<OpFoldResult>{tok, b.getIndexAttr(0)}, rowSizes, ones);
    return {updated};
  });
  return scatter.getResult(0);
}

Value MoELowering::routedExperts(Value acc, Value topIdx, Value topW) {
  // Each expert on its tokens only.
  Value experts = tensor::DimOp::create(b, loc, a.getRouterWeight(), 0);
  auto expertLoop = scf::ForOp::create(b, loc, c0, experts, c1, ValueRange{acc});
  fillLoop(b, expertLoop, [&](Value e, ValueRange iter) -> SmallVector<Value> {
    Value accIn = iter[0];
    Value ei = arith::IndexCastOp::create(b, loc, i64, e);
    Value we = routingWeight(topIdx, topW, ei);
    auto [n, rows] = routedRows(we);
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, n, c0);
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{accIn.getType()}, any,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      scf::YieldOp::create(b, loc, accIn);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      Value xs = gatherRows(n, rows, we);
      Value ye = expertOn(xs, e);
      scf::YieldOp::create(b, loc, scatterRows(accIn, ye, rows, n, we));
    }
    return {ifOp.getResult(0)};
  });
  return expertLoop.getResult(0);
}

} // namespace

static Value lowerOp(MoEOp op, MoEOp::Adaptor a, GenericBuilder &g) {
  return MoELowering(op, a, g).run();
}

void populateMoEOpPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerToLinalg<MoEOp>>(patterns.getContext());
}

} // namespace to_linalg
} // namespace attn
} // namespace mlir
