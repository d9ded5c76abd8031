//===- EmitLayer.cpp - a kind's layer entry: block, then feed-forward -----===//
//
// This file implements the `<kind>_layer` entries: a call of the kind's
// `<kind>_block` entry, then the feed-forward sub-layer (dense, gated or
// mixture of experts, with its norms and residual), and the rewrite of an
// entry into destination-passing style for the C ABI.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Emitter.h"

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::emit {

void toDestinationStyle(func::FuncOp fn) {
  OpBuilder b(fn.getContext());
  SmallVector<Type> results(fn.getResultTypes());
  for (auto [i, t] : llvm::enumerate(results)) {
    auto resTy = cast<RankedTensorType>(t);
    auto memTy = MemRefType::get(resTy.getShape(), resTy.getElementType());
    if (failed(fn.insertArgument(i, memTy, {}, fn.getLoc())))
      return;
  }
  fn.walk([&](func::ReturnOp ret) {
    b.setInsertionPoint(ret);
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      bufferization::MaterializeInDestinationOp::create(
          b, ret.getLoc(), Type(), v, fn.getArgument(i), b.getUnitAttr(),
          b.getUnitAttr());
    func::ReturnOp::create(b, ret.getLoc());
    ret.erase();
  });
  (void)fn.setFunctionType(
      b.getFunctionType(fn.getArgumentTypes(), TypeRange{}));
}

func::FuncOp Emitter::emitLayerOverBlock(const std::string &name,
                                         const LayerSpec &l, func::FuncOp block,
                                         unsigned numResults) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  FunctionType blockTy = block.getFunctionType();
  SmallVector<Type> inputs(blockTy.getInputs().drop_front(numResults));
  SmallVector<Type> results;
  for (Type t : blockTy.getInputs().take_front(numResults)) {
    auto m = cast<MemRefType>(t);
    results.push_back(RankedTensorType::get(m.getShape(), m.getElementType()));
  }
  std::vector<WeightArg> blockWeights = layerWeights(spec, l),
                         ffn = ffnWeights(spec, l);
  unsigned numBlockInputs = inputs.size(),
           first = numBlockInputs - blockWeights.size();
  for (const WeightArg &w : ffn)
    inputs.push_back(tensor(w.shape));
  auto fn = func::FuncOp::create(loc, name, b.getFunctionType(inputs, results));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  for (unsigned i = 0; i < numBlockInputs; ++i)
    if (DictionaryAttr attrs = block.getArgAttrDict(numResults + i))
      fn.setArgAttrs(i, attrs);
  nameWeightArgs(fn, numBlockInputs, ffn, l);

  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = entry->getArgument(0);
  Value batch = tensor::DimOp::create(b, loc, x, 0);
  Value seq = tensor::DimOp::create(b, loc, x, 1);
  // The block's results: the hidden states [B, S, h], a latent block's
  // cache [B, P + S, r + dr] (its cache_in, the input of the same type
  // after x, holds P rows), a linear block's states [B, ...].
  SmallVector<Value> buffers;
  for (auto [i, t] :
       llvm::enumerate(blockTy.getInputs().take_front(numResults))) {
    auto type = cast<MemRefType>(t);
    SmallVector<Value> sizes;
    for (auto [d, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size))
        continue;
      if (d == 0) {
        sizes.push_back(batch);
        continue;
      }
      Value rows = seq;
      if (i > 0) {
        ArrayRef<Type> before = ArrayRef<Type>(inputs).slice(1, first - 1);
        const Type *in = llvm::find(before, results[i]);
        assert(in != before.end() && "a grown result without its input");
        Value past = tensor::DimOp::create(
            b, loc, entry->getArgument(1 + (in - before.begin())), 1);
        rows = arith::AddIOp::create(b, loc, past, seq);
      }
      sizes.push_back(rows);
    }
    buffers.push_back(
        memref::AllocOp::create(b, loc, type, sizes, b.getI64IntegerAttr(64)));
  }
  SmallVector<Value> args(buffers);
  llvm::append_range(args, entry->getArguments().take_front(numBlockInputs));
  func::CallOp::create(b, loc, block, args);
  SmallVector<Value> outs;
  for (auto [buffer, t] : llvm::zip(buffers, results))
    outs.push_back(bufferization::ToTensorOp::create(
        b, loc, t, buffer, /*restrict=*/true, /*writable=*/true));

  Weights w;
  for (auto [i, arg] : llvm::enumerate(blockWeights))
    w[arg.role] = entry->getArgument(first + i);
  for (auto [i, arg] : llvm::enumerate(ffn))
    w[arg.role] = entry->getArgument(numBlockInputs + i);
  outs[0] = feedForward(loc, l, w, x, outs[0]);
  func::ReturnOp::create(b, loc, outs);
  toDestinationStyle(fn);
  return fn;
}

Value Emitter::feedForward(Location loc, const LayerSpec &l, const Weights &w,
                           Value x, Value r) {
  const FFNSpec &f = l.ffn;
  if (f.kind == FFNKind::Identity)
    return r;
  auto get = [&](llvm::StringRef role) { return w.lookup(role); };
  Value in = r;
  // A parallel feed-forward reads x through its own norm or, without one
  // (Falcon, GPT-J), through the attention's (computed again from x).
  bool attnNorm = l.placement == NormPlacement::Pre ||
                  l.placement == NormPlacement::PrePost;
  if (f.placement == FFNPlacement::Parallel)
    in = get("ffn_norm_weight")
             ? norm(loc, l, x, get("ffn_norm_weight"), get("ffn_norm_bias"))
         : attnNorm ? norm(loc, l, x, get("norm_weight"), get("norm_bias"))
                    : x;
  else if (f.placement == FFNPlacement::Pre ||
           f.placement == FFNPlacement::PrePost)
    in = norm(loc, l, r, get("ffn_norm_weight"), get("ffn_norm_bias"));
  auto act = ActivationAttr::get(ctx, *symbolizeActivation(f.activation));
  // Gate and up as the first and second halves of `gateUp`'s dim `dim`
  // (Phi-3's gate_up_proj, GraniteMoeHybrid's input_linear).
  auto halves = [&](Value gateUp, int64_t dim) -> std::pair<Value, Value> {
    auto ty = cast<RankedTensorType>(gateUp.getType());
    SmallVector<int64_t> shape(ty.getShape());
    shape[dim] /= 2;
    SmallVector<OpFoldResult> sizes, gateAt, upAt;
    for (int64_t i = 0; i < ty.getRank(); ++i) {
      sizes.push_back(b.getIndexAttr(shape[i]));
      gateAt.push_back(b.getIndexAttr(0));
      upAt.push_back(b.getIndexAttr(i == dim ? shape[i] : 0));
    }
    SmallVector<OpFoldResult> strides(ty.getRank(), b.getIndexAttr(1));
    Value g = tensor::ExtractSliceOp::create(b, loc, tensor(shape), gateUp,
                                             gateAt, sizes, strides);
    Value u = tensor::ExtractSliceOp::create(b, loc, tensor(shape), gateUp,
                                             upAt, sizes, strides);
    return {g, u};
  };
  Value y;
  if (f.kind == FFNKind::MoE) {
    Value eGate = get("ffn_experts_gate_weight"),
          eUp = get("ffn_experts_up_weight");
    if (Value gateUp = get("ffn_experts_gate_up_weight"))
      std::tie(eGate, eUp) = halves(gateUp, 1);
    Value sGate = get("ffn_shared_gate_weight"),
          sUp = get("ffn_shared_up_weight");
    if (Value gateUp = get("ffn_shared_gate_up_weight"))
      std::tie(sGate, sUp) = halves(gateUp, 0);
    y = MoEOp::create(
        b, loc, in.getType(), in, get("ffn_router_weight"),
        get("ffn_score_bias"), eGate, eUp, get("ffn_experts_down_weight"),
        sGate, sUp, get("ffn_shared_down_weight"),
        get("ffn_shared_expert_gate_weight"), get("ffn_router_bias"),
        get("ffn_experts_gate_bias"), get("ffn_experts_up_bias"),
        get("ffn_experts_down_bias"), act, b.getI64IntegerAttr(f.topK),
        unit(f.normTopK), b.getF64FloatAttr(f.normEpsilon),
        RouterScoringAttr::get(ctx, f.scoring == ExpertScoring::Sigmoid
                                        ? attn::RouterScoring::sigmoid
                                        : attn::RouterScoring::softmax),
        b.getI64IntegerAttr(f.numGroups), b.getI64IntegerAttr(f.topKGroups),
        GroupScoreAttr::get(ctx, f.groupScore == ExpertGroupScore::TopTwoSum
                                     ? attn::GroupScore::top2_sum
                                     : attn::GroupScore::max),
        unit(f.excludeOtherGroups), b.getF64FloatAttr(f.routedScale),
        f.swigluLimit ? b.getF64FloatAttr(*f.swigluLimit) : FloatAttr(),
        b.getF64FloatAttr(f.swigluAlpha), unit(f.scaleInput));
  } else if (f.kind == FFNKind::Gated) {
    Value gate = get("ffn_gate_weight"), up = get("ffn_up_weight");
    if (Value gateUp = get("ffn_gate_up_weight"))
      std::tie(gate, up) = halves(gateUp, 0);
    y = GatedMLPOp::create(b, loc, in.getType(), in, gate, up,
                           get("ffn_down_weight"), act);
  } else {
    y = MLPOp::create(b, loc, in.getType(), in, get("ffn_up_weight"),
                      get("ffn_up_bias"), get("ffn_down_weight"),
                      get("ffn_down_bias"), act, unit(f.transposedWeights));
  }
  return closeSublayer(loc, l, r, y,
                       f.placement == FFNPlacement::PrePost ||
                           f.placement == FFNPlacement::Output,
                       get("ffn_post_norm_weight"),
                       f.placement == FFNPlacement::Post,
                       get("ffn_norm_weight"), get("ffn_norm_bias"));
}

Value Emitter::closeSublayer(Location loc, const LayerSpec &l, Value x, Value y,
                             bool normOut, Value outWeight, bool normSum,
                             Value sumWeight, Value sumBias) {
  if (normOut)
    y = norm(loc, l, y, outWeight, Value());
  Value sum = residual(loc, l, x, y);
  return normSum ? norm(loc, l, sum, sumWeight, sumBias) : sum;
}

} // namespace mlir::attn::emit
