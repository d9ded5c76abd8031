//===- EmitAttnIR.cpp - ModelSpec -> attn graph-level IR ------------------===//
//
// This file implements the emission of a model's attention as `attn` IR: the
// eager chain of each distinct layer kind as one function (norm, projections,
// head split, q/k norm, RoPE, QKᵀ, scale, softcap, bias, mask, softmax, ·V,
// head merge, gate, output projection, residual), and a `@model` function
// that calls them in layer order with the checkpoint's tensors.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Frontend.h"

#include "compiler/Frontend/Emitter.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <array>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::emit {

Value emitRope(OpBuilder &b, Location loc, Value t, Value positions,
               const RopeSpec &r) {
  DenseF64ArrayAttr invFreq, longInvFreq;
  IntegerAttr longAfter;
  if (!r.invFreq.empty())
    invFreq = b.getDenseF64ArrayAttr(r.invFreq);
  if (!r.longInvFreq.empty()) {
    longInvFreq = b.getDenseF64ArrayAttr(r.longInvFreq);
    longAfter = b.getI64IntegerAttr(r.longAfter);
  }
  return RopeOp::create(b, loc, t.getType(), t, positions,
                        b.getF64FloatAttr(r.theta),
                        b.getI64IntegerAttr(r.rotaryDim), invFreq,
                        b.getF64FloatAttr(r.attentionFactor),
                        r.interleaved ? b.getUnitAttr() : UnitAttr(),
                        longInvFreq, longAfter);
}

namespace {

/// ALiBi adds a bias the dialect cannot express yet: refused with an error
/// at the config field that asks for it.
static bool rejectAlibi(const ConfigSource &src, const LayerSpec &l) {
  if (l.position != PositionKind::Alibi)
    return false;
  emitError(src.loc("/alibi"))
      << "layer " << l.index
      << " uses ALiBi position biases ('alibi': true), which the attn "
         "dialect cannot express yet; accepted: 'alibi': false (rotary "
         "embeddings)";
  return true;
}

} // namespace

bool Emitter::checkSupported(const LayerSpec &l) {
  if (rejectAlibi(src, l))
    return false;
  if (!l.sinks.empty() && spec.gpu) {
    emitError(src.loc("/model_type"))
        << "layer " << l.index << " has attention sinks ('"
        << spec.modelType << "'), which the CUDA kernels (--target=cuda) "
        << "do not take yet; accepted: the CPU target (its kernels, paged, "
           "split-K and context-parallel ones included, count the sinks)";
    return false;
  }
  if (l.position == PositionKind::Rope && !l.rope.unsupported.empty()) {
    emitError(src.loc(l.rope.scalingPointer))
        << "layer " << l.index << ": " << l.rope.unsupported
        << "; only static RoPE scaling is compiled (accepted rope types: "
           "default, linear, llama3, yarn)";
    return false;
  }
  return true;
}

Value Emitter::sliceHeads(Location loc, Value x, int64_t groups,
                          int64_t perGroup, int64_t start, int64_t count,
                          int64_t dim) {
  // Slices of one projection share its batch and sequence sizes.
  auto [it, inserted] = dims.try_emplace(x);
  if (inserted)
    it->second = {tensor::DimOp::create(b, loc, x, 0),
                  tensor::DimOp::create(b, loc, x, 1)};
  auto [b0, s0] = it->second;
  SmallVector<ReassociationIndices> re = {{0}, {1}, {2, 3, 4}};
  SmallVector<OpFoldResult> shape = {b0, s0, b.getIndexAttr(groups),
                                     b.getIndexAttr(perGroup),
                                     b.getIndexAttr(dim)};
  Value e = tensor::ExpandShapeOp::create(
      b, loc, tensor({kDyn, kDyn, groups, perGroup, dim}), x, re, shape);
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0),
                                       b.getIndexAttr(0),
                                       b.getIndexAttr(start),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b0, s0, b.getIndexAttr(groups),
                                     b.getIndexAttr(count),
                                     b.getIndexAttr(dim)};
  SmallVector<OpFoldResult> strides(5, b.getIndexAttr(1));
  Value s = tensor::ExtractSliceOp::create(
      b, loc, tensor({kDyn, kDyn, groups, count, dim}), e, offsets, sizes,
      strides);
  return tensor::CollapseShapeOp::create(
      b, loc, hiddenType(groups * count * dim), s, re);
}

Value Emitter::norm(Location loc, const LayerSpec &l, Value x, Value w,
                    Value bias) {
  FloatAttr eps = b.getF64FloatAttr(l.normEps);
  if (l.norm == NormKind::Layer) {
    auto op = LayerNormOp::create(b, loc, x.getType(), x, w, bias, eps);
    return op.getResult();
  }
  auto op = RMSNormOp::create(b, loc, x.getType(), x, w, eps,
                              unit(l.norm == NormKind::RMSUnitOffset));
  return op.getResult();
}

Value Emitter::scoreChain(Location loc, const LayerSpec &l, Value qh, Value kh,
                          Value vh, Value table, Value kvLengths,
                          Value sinks) {
  int64_t hq = l.numHeads;
  RankedTensorType sTy = tensor({kDyn, hq, kDyn, kDyn});
  Value s = QKOp::create(b, loc, sTy, qh, kh);
  // A scale of 1 (T5) folds away.
  if (!l.scaleOnQuery)
    s = b.createOrFold<ScaleOp>(loc, s, b.getF64FloatAttr(l.scale));
  if (l.softcap)
    s = SoftcapOp::create(b, loc, s, b.getF64FloatAttr(*l.softcap));
  if (l.position == PositionKind::T5Bias)
    s = RelativePositionBiasOp::create(
        b, loc, sTy, s, table, /*q_pos=*/Value(),
        b.getI64IntegerAttr(l.t5.numBuckets),
        b.getI64IntegerAttr(l.t5.maxDistance), unit(l.t5.bidirectional));
  if (l.causal || kvLengths) {
    auto [kind, window] = maskOf(l);
    s = MaskOp::create(b, loc, sTy, s, kvLengths, /*q_pos=*/Value(), kind,
                       window, CausalAlignment::bottom_right);
  }
  Value p = sinks ? SinkSoftmaxOp::create(b, loc, sTy, s, sinks).getResult()
                  : SoftmaxOp::create(b, loc, s).getResult();
  return PVOp::create(b, loc, headsType(hq, l.headDimV), p, vh);
}

Value widenQuery(OpBuilder &b, Location loc, Value q) {
  auto t = cast<RankedTensorType>(q.getType());
  if (t.getElementType().isF32())
    return q;
  return arith::ExtFOp::create(b, loc, t.clone(b.getF32Type()), q);
}

Value narrowOutput(OpBuilder &b, Location loc, Value o, Type elt) {
  if (elt.isF32())
    return o;
  return arith::TruncFOp::create(
      b, loc, cast<RankedTensorType>(o.getType()).clone(elt), o);
}

func::FuncOp Emitter::emitKernel(const std::string &name, const LayerSpec &l) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  Type kvElt = cacheType();
  SmallVector<Type> inputs = {
      headsType(l.numHeads, l.headDimQK).clone(qoType()),
      RankedTensorType::get({kDyn, l.numKVHeads, kDyn, l.headDimQK}, kvElt),
      RankedTensorType::get({kDyn, l.numKVHeads, kDyn, l.headDimV}, kvElt),
      RankedTensorType::get({kDyn}, b.getI64Type())};
  bool bias = l.position == PositionKind::T5Bias;
  if (bias)
    inputs.push_back(tensor({l.t5.numBuckets, l.numHeads}));
  bool sinks = !l.sinks.empty();
  if (sinks)
    inputs.push_back(tensor({l.numHeads}));
  auto fn = func::FuncOp::create(
      loc, name + "_sdpa",
      b.getFunctionType(inputs,
                        {headsType(l.numHeads, l.headDimV).clone(qoType())}));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value q = widenQuery(b, loc, entry->getArgument(0));
  if (l.scaleOnQuery) // Whisper scales q before QKᵀ; the fusion folds it.
    q = ScaleOp::create(b, loc, q, b.getF64FloatAttr(l.scale));
  Value o = scoreChain(loc, l, q, entry->getArgument(1),
                       entry->getArgument(2),
                       bias ? entry->getArgument(4) : Value(),
                       entry->getArgument(3),
                       sinks ? entry->getArgument(4) : Value());
  func::ReturnOp::create(b, loc, narrowOutput(b, loc, o, qoType()));
  return fn;
}

func::FuncOp Emitter::emitPagedKernel(const std::string &name,
                                      const LayerSpec &l, bool part) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  RankedTensorType outTy = headsType(l.numHeads, l.headDimV);
  Type cacheElt = cacheType();
  // q and the output: --qo-dtype's type; the partial form's stay fp32 (the
  // ranks merge them; --qo-dtype is refused with --distributed=mpi).
  Type qo = part ? f32 : qoType();
  // The pools [pages, Hkv, P, d]: on the CPU memrefs of any strides whose
  // rows are contiguous (the C API's head-interleaved pools, vLLM's
  // [pages, P, Hkv, d] seen through strides, head-major or padded ones),
  // read as tensors; the kernel indexes them by their descriptor's strides.
  // The CUDA kernels copy whole contiguous pages: tensors there.
  RankedTensorType kPool = RankedTensorType::get(
                       {kDyn, l.numKVHeads, kDyn, l.headDimQK}, cacheElt),
                   vPool = RankedTensorType::get(
                       {kDyn, l.numKVHeads, kDyn, l.headDimV}, cacheElt);
  auto poolArg = [&](RankedTensorType t) -> Type {
    if (spec.gpu)
      return t;
    return MemRefType::get(
        t.getShape(), cacheElt,
        StridedLayoutAttr::get(ctx, kDyn, {kDyn, kDyn, kDyn, 1}));
  };
  SmallVector<Type> inputs = {
      headsType(l.numHeads, l.headDimQK).clone(qo), poolArg(kPool),
      poolArg(vPool), RankedTensorType::get({kDyn, kDyn}, b.getI32Type()),
      RankedTensorType::get({kDyn}, b.getI64Type())};
  RankedTensorType statsTy = tensor({kDyn, l.numHeads, kDyn, 2});
  SmallVector<Type> results = {outTy.clone(qo)};
  if (part) {
    inputs.push_back(RankedTensorType::get({kDyn}, b.getI64Type()));
    inputs.push_back(RankedTensorType::get({kDyn}, b.getI64Type()));
    results.push_back(statsTy);
  }
  // The sinks last: (.., kv_lengths[, q_pos, range_start], sinks).
  bool sinks = !l.sinks.empty();
  if (sinks)
    inputs.push_back(tensor({l.numHeads}));
  auto fn = func::FuncOp::create(loc, name + (part ? "_paged_part" : "_paged"),
                                 b.getFunctionType(inputs, results));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value q = widenQuery(b, loc, entry->getArgument(0));
  Value batch = tensor::DimOp::create(b, loc, q, 0);
  Value rows = tensor::DimOp::create(b, loc, q, 2);
  Value init = tensor::EmptyOp::create(b, loc, outTy, ValueRange{batch, rows});
  Value statsInit =
      part ? tensor::EmptyOp::create(b, loc, statsTy, ValueRange{batch, rows})
                 .getResult()
           : Value();
  auto poolOf = [&](Value arg, RankedTensorType t) -> Value {
    if (isa<TensorType>(arg.getType()))
      return arg;
    // Read only: the kernel never writes the caller's pools.
    return bufferization::ToTensorOp::create(b, loc, t, arg, /*restrict=*/true,
                                             /*writable=*/false);
  };
  Value kCache = poolOf(entry->getArgument(1), kPool),
        vCache = poolOf(entry->getArgument(2), vPool);
  auto [kind, window] = maskOf(l);
  // Whisper's scaling of q before QKᵀ is the same factor on the scores.
  auto op = PagedSDPAOp::create(
      b, loc, outTy, part ? Type(statsTy) : Type(), q, kCache, vCache,
      entry->getArgument(3), entry->getArgument(4),
      part ? entry->getArgument(5) : Value(),
      part && kind == MaskKind::chunked ? entry->getArgument(6) : Value(),
      sinks ? entry->getArgument(part ? 7 : 5) : Value(), init, statsInit,
      b.getF64FloatAttr(l.scale), MaskKindAttr::get(ctx, kind), window,
      l.softcap ? b.getF64FloatAttr(*l.softcap) : FloatAttr());
  SmallVector<Value> returned(op->getResults());
  returned[0] = narrowOutput(b, loc, returned[0], qo);
  func::ReturnOp::create(b, loc, returned);
  return fn;
}

OwningOpRef<ModuleOp> Emitter::kernels() {
  ctx->loadDialect<AttnDialect, arith::ArithDialect,
                   bufferization::BufferizationDialect, func::FuncDialect,
                   memref::MemRefDialect, tensor::TensorDialect>();
  Location loc = FileLineColLoc::get(ctx, spec.configPath, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  bool withBlocks = spec.entries.blocks, withPaged = spec.entries.paged;
  // What no kernel of the target can compute is refused before any is
  // built (the block entries check the rest).
  for (const LayerSpec &l : spec.layers)
    if ((!l.sinks.empty() || l.chunk) && !checkSupported(l))
      return nullptr;
  for (const LayerKind &kind : groupLayersByKind(spec)) {
    const std::string &name = kind.name;
    const LayerSpec &l = *kind.first;
    if (kind.isLinear()) {
      func::FuncOp kernel = emitLinearKernel(name, l);
      toDestinationStyle(kernel);
      module->push_back(kernel);
      if (withBlocks) {
        func::FuncOp block = emitLinearKind(name + "_block", l, true);
        block->setAttr("llvm.emit_c_interface", b.getUnitAttr());
        toDestinationStyle(block);
        module->push_back(block);
        if (hasFeedForward(l))
          module->push_back(emitLayerOverBlock(name + "_layer", l, block, 3));
      }
      continue;
    }
    func::FuncOp kernel = emitKernel(name, l);
    toDestinationStyle(kernel);
    module->push_back(kernel);
    if (l.isLatent()) {
      // The absorbed form's attention over a contiguous and a paged latent
      // cache (the expanded form's is `<kind>_sdpa` above).
      func::FuncOp mla = emitLatentKernel(name, l);
      toDestinationStyle(mla);
      module->push_back(mla);
      if (withPaged) {
        func::FuncOp paged = emitLatentPagedKernel(name, l);
        toDestinationStyle(paged);
        module->push_back(paged);
        if (spec.distributed) {
          func::FuncOp part = emitLatentPagedKernel(name, l, /*part=*/true);
          toDestinationStyle(part);
          module->push_back(part);
        }
      }
    }
    if (withPaged && hasPagedKernel(l)) {
      func::FuncOp paged = emitPagedKernel(name, l);
      toDestinationStyle(paged);
      module->push_back(paged);
      if (spec.distributed) {
        // A rank's share of the heads (whole KV-head groups).
        LayerSpec shard = l;
        shard.numHeads /= spec.tensorParallel;
        shard.numKVHeads /= spec.tensorParallel;
        func::FuncOp part = emitPagedKernel(name, shard, /*part=*/true);
        toDestinationStyle(part);
        module->push_back(part);
      }
    }
    if (withBlocks) {
      if (!checkSupported(l))
        return nullptr;
      func::FuncOp block = emitKind(name + "_block", l, /*blockEntry=*/true);
      block->setAttr("llvm.emit_c_interface", b.getUnitAttr());
      toDestinationStyle(block);
      module->push_back(block);
      if (hasFeedForward(l))
        module->push_back(emitLayerOverBlock(name + "_layer", l, block,
                                             l.isLatent() ? 2 : 1));
    }
  }
  return module;
}

void Emitter::nameWeightArgs(func::FuncOp fn, unsigned first,
                             ArrayRef<WeightArg> weights,
                             const LayerSpec &l) {
  for (auto [i, w] : llvm::enumerate(weights))
    fn.setArgAttr(first + i, "attn.tensor",
                  b.getStringAttr(w.shared ? w.tensor
                                           : tensorPattern(w.tensor,
                                                           l.layerInStack)));
}

Value Emitter::linear(Location loc, const LayerSpec &l, const Weights &w,
                      Value in, llvm::StringRef role, int64_t out) {
  return LinearOp::create(b, loc, hiddenType(out), in,
                          w.lookup((role + "_weight").str()),
                          w.lookup((role + "_bias").str()),
                          unit(l.transposedWeights))
      .getResult();
}

std::array<Value, 4> Emitter::projectQKV(Location loc, const LayerSpec &l,
                                         const Weights &w, Value hIn,
                                         Value kvIn) {
  int64_t hq = l.numHeads, hkv = l.numKVHeads, d = l.headDimQK,
          dv = l.headDimV;
  Value q, k, v, gate;
  if (l.layout == QKVLayout::Separate) {
    q = linear(loc, l, w, hIn, "q", queryWidth(l));
    k = linear(loc, l, w, kvIn, "k", hkv * d);
    v = linear(loc, l, w, kvIn, "v", hkv * dv);
  } else {
    Value qkv =
        linear(loc, l, w, hIn, "qkv", queryWidth(l) + hkv * d + hkv * dv);
    switch (l.layout) {
    case QKVLayout::FusedConcat:
      q = sliceHeads(loc, qkv, 1, hq + 2 * hkv, 0, hq, d);
      k = sliceHeads(loc, qkv, 1, hq + 2 * hkv, hq, hkv, d);
      v = sliceHeads(loc, qkv, 1, hq + 2 * hkv, hq + hkv, hkv, d);
      break;
    case QKVLayout::FusedGrouped: {
      int64_t g = hq / hkv;
      q = sliceHeads(loc, qkv, hkv, g + 2, 0, g, d);
      k = sliceHeads(loc, qkv, hkv, g + 2, g, 1, d);
      v = sliceHeads(loc, qkv, hkv, g + 2, g + 1, 1, d);
      break;
    }
    case QKVLayout::FusedPerHead:
      q = sliceHeads(loc, qkv, hq, 3, 0, 1, d);
      k = sliceHeads(loc, qkv, hq, 3, 1, 1, d);
      v = sliceHeads(loc, qkv, hq, 3, 2, 1, d);
      break;
    case QKVLayout::Separate:
      break;
    }
  }
  if (l.outputGate) {
    // Qwen3-Next: per head [query (d), gate (d)].
    Value qg = q;
    q = sliceHeads(loc, qg, hq, 2, 0, 1, d);
    gate = sliceHeads(loc, qg, hq, 2, 1, 1, d);
  }
  return {q, k, v, gate};
}

std::array<Value, 3> Emitter::headsOf(Location loc, const LayerSpec &l,
                                      const Weights &w, Value q, Value k,
                                      Value v, Value positions) {
  if (l.qkNorm && l.qkNormFlat) {
    // OLMo-2: over the whole projection, before the heads split.
    FloatAttr eps = b.getF64FloatAttr(l.normEps);
    q = RMSNormOp::create(b, loc, q.getType(), q, w.lookup("q_norm_weight"),
                          eps, UnitAttr());
    k = RMSNormOp::create(b, loc, k.getType(), k, w.lookup("k_norm_weight"),
                          eps, UnitAttr());
  }
  Value qh = SplitHeadsOp::create(b, loc, headsType(l.numHeads, l.headDimQK),
                                  q);
  Value kh = SplitHeadsOp::create(
      b, loc, headsType(l.numKVHeads, l.headDimQK), k);
  Value vh = SplitHeadsOp::create(b, loc,
                                  headsType(l.numKVHeads, l.headDimV), v);
  if (l.qkNorm && !l.qkNormFlat) {
    FloatAttr eps = b.getF64FloatAttr(l.normEps);
    UnitAttr offset = unit(l.norm == NormKind::RMSUnitOffset);
    qh = RMSNormOp::create(b, loc, qh.getType(), qh, w.lookup("q_norm_weight"),
                           eps, offset);
    kh = RMSNormOp::create(b, loc, kh.getType(), kh, w.lookup("k_norm_weight"),
                           eps, offset);
  }
  if (positions && l.position == PositionKind::Rope) {
    auto ropeOp = [&](Value t) { return emitRope(b, loc, t, positions, l.rope); };
    qh = ropeOp(qh);
    kh = ropeOp(kh);
  }
  if (l.l2QkNorm) {
    // Llama4TextL2Norm: RMS over each head, no weight (ones); after RoPE
    // as transformers applies it (a rotation keeps the RMS: either order).
    auto ones = RankedTensorType::get({l.headDimQK}, f32);
    Value w = arith::ConstantOp::create(
        b, loc, ones, DenseElementsAttr::get(ones, 1.0f));
    FloatAttr eps = b.getF64FloatAttr(l.normEps);
    qh = RMSNormOp::create(b, loc, qh.getType(), qh, w, eps, UnitAttr());
    kh = RMSNormOp::create(b, loc, kh.getType(), kh, w, eps, UnitAttr());
  }
  if (l.temperature && positions)
    qh = TemperatureScaleOp::create(
        b, loc, qh.getType(), qh, positions,
        b.getI64IntegerAttr(l.temperature->floorScale),
        b.getF64FloatAttr(l.temperature->attnScale));
  return {qh, kh, vh};
}

func::FuncOp Emitter::emitKind(const std::string &name, const LayerSpec &l,
                               bool blockEntry) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  int64_t h = spec.hiddenSize;
  RankedTensorType xTy = hiddenType(h);
  if (l.role == LayerRole::LinearAttention)
    return emitLinearKind(name, l);
  if (l.isLatent())
    return emitLatentKind(name, l, /*withCache=*/blockEntry);

  // Signature: x, [memory], [positions], [key lengths], weights.
  SmallVector<Type> inputs = {xTy};
  bool cross = l.role == LayerRole::CrossAttention;
  if (cross)
    inputs.push_back(hiddenType(spec.encoderHiddenSize ? spec.encoderHiddenSize
                                                       : h));
  bool rope = l.takesPositions();
  if (rope)
    inputs.push_back(positionsType());
  bool lengths = blockEntry && takesKeyLengths(l);
  if (lengths)
    inputs.push_back(RankedTensorType::get({kDyn}, b.getI64Type()));
  std::vector<WeightArg> weights = layerWeights(spec, l);
  for (const WeightArg &w : weights)
    inputs.push_back(tensor(w.shape));
  auto fn = func::FuncOp::create(loc, name, b.getFunctionType(inputs, {xTy}));
  unsigned first = 1 + cross + rope + lengths;
  nameWeightArgs(fn, first, weights, l);

  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = entry->getArgument(0);
  Value memory = cross ? entry->getArgument(1) : Value();
  Value positions = rope ? entry->getArgument(1 + cross) : Value();
  Value keyLengths = lengths ? entry->getArgument(1 + cross + rope) : Value();
  Weights w;
  for (auto [i, arg] : llvm::enumerate(weights))
    w[arg.role] = entry->getArgument(first + i);
  auto get = [&](llvm::StringRef role) { return w.lookup(role); };

  Value hIn = x;
  if (l.placement == NormPlacement::Pre || l.placement == NormPlacement::PrePost)
    hIn = norm(loc, l, x, get("norm_weight"), get("norm_bias"));
  Value kvIn = cross ? memory : hIn;
  auto [q, k, v, gate] = projectQKV(loc, l, w, hIn, kvIn);
  auto [qh, kh, vh] = headsOf(loc, l, w, q, k, v, positions);
  // Whisper scales q_proj's output; on the heads that QKᵀ reads (nothing
  // but the split lies between), as the kind's kernel does, the fusion
  // folds it into the sdpa's scale and the block calls that kernel.
  if (l.scaleOnQuery)
    qh = ScaleOp::create(b, loc, qh, b.getF64FloatAttr(l.scale)).getResult();
  Value o = scoreChain(loc, l, qh, kh, vh, get("relative_attention_bias"),
                       keyLengths, get("sinks"));
  Value m = MergeHeadsOp::create(b, loc, hiddenType(l.numHeads * l.headDimV),
                                 o);
  if (gate)
    m = SigmoidGateOp::create(b, loc, m, gate);
  Value y = linear(loc, l, w, m, "o", h);
  Value r =
      closeSublayer(loc, l, x, y,
                    l.placement == NormPlacement::PrePost ||
                        l.placement == NormPlacement::Output,
                    get("post_norm_weight"), l.placement == NormPlacement::Post,
                    get("norm_weight"), get("norm_bias"));
  func::ReturnOp::create(b, loc, r);
  return fn;
}

OwningOpRef<ModuleOp> Emitter::run() {
  ctx->loadDialect<AttnDialect, arith::ArithDialect, func::FuncDialect,
                   tensor::TensorDialect>();
  for (const LayerSpec &l : spec.layers)
    if (l.role != LayerRole::LinearAttention && !checkSupported(l))
      return nullptr;

  Location loc = FileLineColLoc::get(ctx, spec.configPath, 1, 1);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  module->getOperation()->setAttr("attn.model_type",
                                  b.getStringAttr(spec.modelType));
  module->getOperation()->setAttr("attn.family", b.getStringAttr(spec.family));

  // One function per kind, in order of first use.
  std::vector<std::string> names = layerKindNames(spec);
  std::map<std::string, func::FuncOp> kinds;
  for (const LayerKind &kind : groupLayersByKind(spec)) {
    func::FuncOp fn = emitKind(kind.name, *kind.first);
    fn->setAttr("attn.layer_type", b.getStringAttr(kind.first->layerType));
    fn->setAttr("attn.layers", b.getDenseI64ArrayAttr(kind.layers));
    module->push_back(fn);
    kinds[kind.name] = fn;
  }

  // @model: inputs, then every layer's weights (shared ones once).
  int64_t h = spec.hiddenSize;
  // A latent-attention kind takes the positions whether it rotates or not
  // (Kimi-Linear's NoPE MLA: attn_rt_latent_block_fn's one signature).
  auto readsPositions = [](const LayerSpec &l) {
    return l.role != LayerRole::LinearAttention &&
           (l.takesPositions() || l.isLatent());
  };
  bool anyRope = llvm::any_of(spec.layers, readsPositions);
  SmallVector<Type> inputs;
  SmallVector<std::string> inputNames;
  if (spec.encoderDecoder) {
    inputs = {hiddenType(spec.encoderHiddenSize), hiddenType(h),
              hiddenType(spec.encoderHiddenSize)};
    inputNames = {"encoder_hidden_states", "decoder_hidden_states",
                  "encoder_output"};
  } else {
    inputs = {hiddenType(h)};
    inputNames = {"hidden_states"};
  }
  if (anyRope) {
    inputs.push_back(positionsType());
    inputNames.push_back("position_ids");
  }
  size_t numInputs = inputs.size();
  std::vector<WeightArg> allWeights;
  std::map<std::string, unsigned> weightIndex;
  std::vector<std::vector<unsigned>> layerArgs(spec.layers.size());
  for (const LayerSpec &l : spec.layers) {
    for (const WeightArg &w : layerWeights(spec, l)) {
      auto [it, inserted] = weightIndex.try_emplace(
          w.tensor, unsigned(numInputs + allWeights.size()));
      if (inserted) {
        allWeights.push_back(w);
        inputs.push_back(tensor(w.shape));
      }
      layerArgs[l.index].push_back(it->second);
    }
  }
  SmallVector<Type> results = spec.encoderDecoder
                                  ? SmallVector<Type>{inputs[0], inputs[1]}
                                  : SmallVector<Type>{inputs[0]};
  auto model =
      func::FuncOp::create(loc, "model", b.getFunctionType(inputs, results));
  // All argument attributes at once: setArgAttr per argument rebuilds (and
  // uniques) the whole list each time, quadratic in the layer count.
  SmallVector<DictionaryAttr> argAttrs;
  for (size_t i = 0; i < numInputs; ++i)
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr("attn.input", b.getStringAttr(inputNames[i]))));
  for (const WeightArg &w : allWeights)
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr("attn.tensor", b.getStringAttr(w.tensor))));
  model.setAllArgAttrs(argAttrs);
  Block *entry = model.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value enc = entry->getArgument(0);
  Value dec = spec.encoderDecoder ? entry->getArgument(1) : enc;
  Value memory = spec.encoderDecoder ? entry->getArgument(2) : Value();
  Value positions = anyRope ? entry->getArgument(numInputs - 1) : Value();
  for (const LayerSpec &l : spec.layers) {
    func::FuncOp fn = kinds[names[l.index]];
    bool onEncoder = spec.encoderDecoder && l.stack == "encoder";
    Value &cur = onEncoder ? enc : dec;
    SmallVector<Value> args = {cur};
    if (l.role == LayerRole::CrossAttention)
      args.push_back(memory);
    if (readsPositions(l))
      args.push_back(positions);
    for (unsigned a : layerArgs[l.index])
      args.push_back(entry->getArgument(a));
    auto call = func::CallOp::create(b, loc, fn, args);
    call->setAttr("attn.layer", b.getI64IntegerAttr(l.index));
    cur = call.getResult(0);
  }
  if (spec.encoderDecoder)
    func::ReturnOp::create(b, loc, ValueRange{enc, dec});
  else
    func::ReturnOp::create(b, loc, ValueRange{dec});
  module->push_back(model);
  return module;
}

} // namespace mlir::attn::emit

using namespace mlir::attn::emit;


bool mlir::attn::takesKeyLengths(const LayerSpec &l) {
  return l.role != LayerRole::LinearAttention && !l.causal;
}

bool mlir::attn::hasPagedKernel(const LayerSpec &l) {
  // A latent kind caches latent rows: its paged kernel is `<kind>_mla_paged`.
  return l.role != LayerRole::LinearAttention &&
         l.position != PositionKind::T5Bias && !l.isLatent();
}

OwningOpRef<ModuleOp> mlir::attn::emitAttnModule(const ModelSpec &spec,
                                                 const ConfigSource &src) {
  return Emitter(spec, src).run();
}

OwningOpRef<ModuleOp> mlir::attn::emitKernelModule(const ModelSpec &spec,
                                                   const ConfigSource &src) {
  for (const LayerSpec &l : spec.layers)
    if (rejectAlibi(src, l))
      return nullptr;
  return Emitter(spec, src).kernels();
}
