//===- FuseAttention.cpp - eager attention chain -> attn.sdpa -------------===//
//
// This file implements the attn-fuse-attention pass. The pattern is rooted at
// attn.pv and walks the probabilities back to attn.qk, accepting the steps of
// the chain only in the order attn.sdpa defines them (scale, softcap, bias,
// mask), each value used once. Anything else leaves the chain untouched.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// What the walk from the softmax input back to attn.qk collected.
struct Chain {
  QKOp qk;
  Value query;
  double scale = 1.0;
  std::optional<double> softcap;
  RelativePositionBiasOp bias;
  MaskKind mask = MaskKind::none;
  std::optional<int64_t> window;
  CausalAlignment align = CausalAlignment::bottom_right;
  Value kvLengths;
  Value qPos; ///< explicit query position (a tile of a longer query)
};

/// True if `v` is a splat of -inf (a tensor.splat of an arith.constant, or a
/// dense constant).
bool isNegInfSplat(Value v) {
  FloatAttr scalar;
  if (auto splat = v.getDefiningOp<tensor::SplatOp>()) {
    if (!matchPattern(splat.getInput(), m_Constant(&scalar)))
      return false;
  } else {
    DenseElementsAttr dense;
    if (!matchPattern(v, m_Constant(&dense)) || !dense.isSplat() ||
        !isa<FloatType>(dense.getElementType()))
      return false;
    scalar = FloatAttr::get(dense.getElementType(),
                            dense.getSplatValue<APFloat>());
  }
  APFloat f = scalar.getValue();
  return f.isInfinity() && f.isNegative();
}

/// If `v` is the masked form of some scores, returns those scores and records
/// the mask in `chain`; returns nullptr otherwise.
Value peelMask(Value v, Chain &chain) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return nullptr;
  if (auto mask = dyn_cast<MaskOp>(def)) {
    chain.mask = mask.getKind();
    chain.window = mask.getWindow();
    chain.align = mask.getAlign();
    chain.kvLengths = mask.getKvLengths();
    chain.qPos = mask.getQPos();
    return mask.getInput();
  }
  if (auto add = dyn_cast<arith::AddFOp>(def)) {
    for (int i = 0; i < 2; ++i) {
      auto bias = add->getOperand(i).getDefiningOp<MaskBiasOp>();
      if (!bias)
        continue;
      chain.mask = bias.getKind();
      chain.window = bias.getWindow();
      chain.align = bias.getAlign();
      return add->getOperand(1 - i);
    }
    return nullptr;
  }
  if (auto select = dyn_cast<arith::SelectOp>(def)) {
    auto cond = select.getCondition().getDefiningOp<MaskCondOp>();
    if (!cond || !isNegInfSplat(select.getFalseValue()))
      return nullptr;
    chain.mask = cond.getKind();
    chain.window = cond.getWindow();
    chain.align = cond.getAlign();
    return select.getTrueValue();
  }
  return nullptr;
}

/// True if `v` feeds exactly one op besides ops that only read its shape
/// (`attn.mask_bias %s` next to `arith.addf %s, ...`, `tensor.dim %s` sizing
/// the -inf splat of a select).
bool hasOneRealUse(Value v) {
  int uses = 0;
  for (Operation *user : v.getUsers())
    if (!isa<MaskBiasOp, MaskCondOp, tensor::DimOp>(user))
      ++uses;
  return uses == 1;
}

/// Walks from the softmax input back to attn.qk. Each stage may appear at
/// most once and only in sdpa order (qk, scale, softcap, bias, mask).
bool matchChain(Value scores, Chain &chain) {
  enum Stage { Mask, Bias, Softcap, Scale, QK };
  int next = Mask;
  Value v = scores;
  while (true) {
    if (!hasOneRealUse(v))
      return false; // also used outside the chain
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (auto qk = dyn_cast<QKOp>(def)) {
      chain.qk = qk;
      chain.query = qk.getQuery();
      // Scale folded into Q before QKᵀ.
      if (auto qs = chain.query.getDefiningOp<ScaleOp>()) {
        chain.scale *= qs.getScale().convertToDouble();
        chain.query = qs.getInput();
      }
      return chain.scale > 0 && std::isfinite(chain.scale);
    }
    if (next <= Mask) {
      if (Value inner = peelMask(v, chain)) {
        next = Bias;
        v = inner;
        continue;
      }
    }
    if (next <= Bias) {
      if (auto bias = dyn_cast<RelativePositionBiasOp>(def)) {
        // One alignment places the query for both the mask and the bias.
        if (chain.mask != MaskKind::none &&
            (chain.align != bias.getAlign() || chain.qPos != bias.getQPos()))
          return false;
        chain.qPos = bias.getQPos();
        chain.align = bias.getAlign();
        chain.bias = bias;
        next = Softcap;
        v = bias.getInput();
        continue;
      }
    }
    if (next <= Softcap) {
      if (auto cap = dyn_cast<SoftcapOp>(def)) {
        chain.softcap = cap.getCap().convertToDouble();
        next = Scale;
        v = cap.getInput();
        continue;
      }
    }
    if (next <= Scale) {
      if (auto scale = dyn_cast<ScaleOp>(def)) {
        chain.scale *= scale.getScale().convertToDouble();
        next = QK;
        v = scale.getInput();
        continue;
      }
    }
    return false;
  }
}

struct FusePV : OpRewritePattern<PVOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PVOp pv,
                                PatternRewriter &rewriter) const override {
    // The probabilities: a softmax, or one with attention sinks.
    Operation *softmax = pv.getProbs().getDefiningOp();
    Value scores, sinks;
    if (auto plain = dyn_cast_or_null<SoftmaxOp>(softmax)) {
      scores = plain.getInput();
    } else if (auto sink = dyn_cast_or_null<SinkSoftmaxOp>(softmax)) {
      scores = sink.getInput();
      sinks = sink.getSinks();
    } else {
      return rewriter.notifyMatchFailure(pv, "probabilities are not a softmax");
    }
    if (!softmax->getResult(0).hasOneUse())
      return rewriter.notifyMatchFailure(pv, "softmax has other uses");
    Chain chain;
    if (!matchChain(scores, chain))
      return rewriter.notifyMatchFailure(pv, "not an attention chain");

    Value table;
    RelativeBiasAttr rel;
    if (chain.bias) {
      table = chain.bias.getTable();
      rel = RelativeBiasAttr::get(getContext(), chain.bias.getNumBuckets(),
                                  chain.bias.getMaxDistance(),
                                  chain.bias.getBidirectional());
    }
    Value init = SDPAOp::createEmptyInit(rewriter, pv.getLoc(), chain.query,
                                         pv.getValue());
    auto sdpa = SDPAOp::create(
        rewriter, pv.getLoc(), pv.getType(), chain.query, chain.qk.getKey(),
        pv.getValue(), chain.kvLengths, table, chain.qPos, sinks, init,
        rewriter.getF64FloatAttr(chain.scale), rel,
        MaskKindAttr::get(getContext(), chain.mask),
        chain.window ? rewriter.getI64IntegerAttr(*chain.window)
                     : IntegerAttr(),
        chain.softcap ? rewriter.getF64FloatAttr(*chain.softcap) : FloatAttr(),
        CausalAlignmentAttr::get(getContext(), chain.align));
    rewriter.replaceOp(pv, sdpa.getResult());
    return success();
  }
};

struct FuseAttentionPass
    : attn::impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FusePV>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
