//===- EmitLatent.cpp - multi-head latent attention as attn IR ------------===//
//
// The emitter's multi-head latent attention parts: a latent kind's block
// (the low-rank projections, the latent cache and the expanded form) and
// its kernel entries (`<kind>_mla`, the absorbed form over a paged latent
// cache and its partial form).
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Emitter.h"

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::emit {

/// `t` [B, S, n] -> [B, S, off : off + size).
static Value sliceFeatures(OpBuilder &b, Location loc, Value t, int64_t off,
                           int64_t size) {
  auto ty = cast<RankedTensorType>(t.getType());
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0),
                                       b.getIndexAttr(off)};
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, t, 0),
                                     tensor::getMixedSize(b, loc, t, 1),
                                     b.getIndexAttr(size)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto resTy = RankedTensorType::get({kDyn, kDyn, size}, ty.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, resTy, t, offsets, sizes,
                                        strides);
}

/// `a` [B, Sa, n] then `c` [B, Sc, n] along the sequence: [B, Sa + Sc, n].
static Value concatTokens(OpBuilder &b, Location loc, Value a, Value c) {
  auto ty = cast<RankedTensorType>(a.getType());
  OpFoldResult batch = tensor::getMixedSize(b, loc, a, 0);
  Value sa = tensor::DimOp::create(b, loc, a, 1);
  Value sc = tensor::DimOp::create(b, loc, c, 1);
  Value total = arith::AddIOp::create(b, loc, sa, sc);
  int64_t n = ty.getDimSize(2);
  Value out = tensor::EmptyOp::create(
      b, loc, SmallVector<OpFoldResult>{batch, total, b.getIndexAttr(n)},
      ty.getElementType());
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  out = tensor::InsertSliceOp::create(
      b, loc, a, out,
      SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0),
                                b.getIndexAttr(0)},
      SmallVector<OpFoldResult>{batch, sa, b.getIndexAttr(n)}, strides);
  return tensor::InsertSliceOp::create(
      b, loc, c, out,
      SmallVector<OpFoldResult>{b.getIndexAttr(0), sa, b.getIndexAttr(0)},
      SmallVector<OpFoldResult>{batch, sc, b.getIndexAttr(n)}, strides);
}

func::FuncOp Emitter::emitLatentKind(const std::string &name,
                                     const LayerSpec &l, bool withCache) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  const LatentSpec &m = l.latent;
  int64_t h = spec.hiddenSize, heads = l.numHeads, dn = m.nopeDim,
          dr = m.ropeDim, r = m.kvLoraRank, row = m.cacheWidth();
  RankedTensorType xTy = hiddenType(h), cacheTy = hiddenType(row);
  SmallVector<Type> inputs = {xTy, positionsType()};
  if (withCache)
    inputs.push_back(cacheTy);
  std::vector<WeightArg> weights = layerWeights(spec, l);
  for (const WeightArg &w : weights)
    inputs.push_back(tensor(w.shape));
  unsigned first = withCache ? 3 : 2;
  SmallVector<Type> results = {xTy};
  if (withCache)
    results.push_back(cacheTy);
  auto fn = func::FuncOp::create(loc, name, b.getFunctionType(inputs, results));
  nameWeightArgs(fn, first, weights, l);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = entry->getArgument(0);
  Value positions = entry->getArgument(1);
  Weights w;
  for (auto [i, arg] : llvm::enumerate(weights))
    w[arg.role] = entry->getArgument(first + i);
  auto get = [&](llvm::StringRef role) { return w.lookup(role); };
  auto latentNorm = [&](Value t, llvm::StringRef role) -> Value {
    return RMSNormOp::create(b, loc, t.getType(), t, get(role),
                             b.getF64FloatAttr(m.latentNormEps), UnitAttr());
  };
  // Kimi-Linear's MLA layers (mla_use_nope) keep the rope part unrotated.
  auto rope = [&](Value t) -> Value {
    if (l.position != PositionKind::Rope)
      return t;
    return emitRope(b, loc, t, positions, l.rope);
  };

  Value hIn = norm(loc, l, x, get("norm_weight"), get("norm_bias"));
  // The query: q_a_proj -> q_a_layernorm -> q_b_proj (or q_proj), per head
  // [nope | rope], the rope part rotated.
  Value q;
  if (m.qLoraRank > 0) {
    Value cq = linear(loc, l, w, hIn, "q_a", m.qLoraRank);
    q = linear(loc, l, w, latentNorm(cq, "q_a_norm_weight"), "q_b",
               heads * (dn + dr));
  } else {
    q = linear(loc, l, w, hIn, "q", heads * (dn + dr));
  }
  Value qh = SplitHeadsOp::create(b, loc, headsType(heads, dn + dr), q);
  auto headSlice = [&](Value t, int64_t off, int64_t size) -> Value {
    auto ty = cast<RankedTensorType>(t.getType());
    SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
    offsets[3] = b.getIndexAttr(off);
    SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, t, 0),
                                       b.getIndexAttr(ty.getDimSize(1)),
                                       tensor::getMixedSize(b, loc, t, 2),
                                       b.getIndexAttr(size)};
    SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(
        b, loc, headsType(ty.getDimSize(1), size), t, offsets, sizes,
        strides);
  };
  Value qNope = headSlice(qh, 0, dn);
  Value qRope = rope(headSlice(qh, dn, dr));
  // The new tokens' cache rows: kv_a_proj_with_mqa -> [latent | rope key];
  // the latent normed, the key rotated (one head shared by all).
  Value ckv = linear(loc, l, w, hIn, "kv_a", row);
  Value latent = latentNorm(sliceFeatures(b, loc, ckv, 0, r),
                            "kv_a_norm_weight");
  Value kr = sliceFeatures(b, loc, ckv, r, dr);
  SmallVector<ReassociationIndices> re = {{0, 1}, {2}, {3}};
  SmallVector<OpFoldResult> krShape = {tensor::getMixedSize(b, loc, kr, 0),
                                       b.getIndexAttr(1),
                                       tensor::getMixedSize(b, loc, kr, 1),
                                       b.getIndexAttr(dr)};
  Value kr4 = tensor::ExpandShapeOp::create(b, loc, headsType(1, dr), kr, re,
                                            krShape);
  Value krRot = tensor::CollapseShapeOp::create(b, loc, hiddenType(dr),
                                                rope(kr4), re);
  // [latent | rope key] along the features: the new rows [B, S, r + dr].
  Value rows;
  {
    auto ty = cast<RankedTensorType>(latent.getType());
    SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, ckv, 0),
                                       tensor::getMixedSize(b, loc, ckv, 1),
                                       b.getIndexAttr(row)};
    Value out =
        tensor::EmptyOp::create(b, loc, sizes, ty.getElementType());
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    sizes[2] = b.getIndexAttr(r);
    out = tensor::InsertSliceOp::create(
        b, loc, latent, out,
        SmallVector<OpFoldResult>(3, b.getIndexAttr(0)), sizes, strides);
    sizes[2] = b.getIndexAttr(dr);
    rows = tensor::InsertSliceOp::create(
        b, loc, krRot, out,
        SmallVector<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0),
                                  b.getIndexAttr(r)},
        sizes, strides);
  }
  Value cache = withCache ? concatTokens(b, loc, entry->getArgument(2), rows)
                          : rows;
  Value o = LatentAttentionOp::create(
      b, loc, headsType(heads, l.headDimV), qNope, qRope, cache,
      get("kv_b_weight"), /*kv_lengths=*/Value(),
      b.getF64FloatAttr(l.scale),
      MaskKindAttr::get(ctx, l.causal ? MaskKind::causal : MaskKind::none));
  Value merged = MergeHeadsOp::create(
      b, loc, hiddenType(heads * l.headDimV), o);
  Value y = linear(loc, l, w, merged, "o", h);
  Value res = AddOp::create(b, loc, x, y);
  if (withCache)
    func::ReturnOp::create(b, loc, ValueRange{res, cache});
  else
    func::ReturnOp::create(b, loc, ValueRange{res});
  return fn;
}

func::FuncOp Emitter::emitLatentKernel(const std::string &name,
                                       const LayerSpec &l) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  const LatentSpec &m = l.latent;
  int64_t heads = l.numHeads, r = m.kvLoraRank, row = m.cacheWidth();
  // q and the output in --qo-dtype's type (widened and rounded around the
  // fp32 attention, as the softmax entries).
  SmallVector<Type> inputs = {
      headsType(heads, row).clone(qoType()),
      RankedTensorType::get({kDyn, kDyn, row}, cacheType()),
      RankedTensorType::get({kDyn}, b.getI64Type())};
  auto fn = func::FuncOp::create(
      loc, name + "_mla",
      b.getFunctionType(inputs, {headsType(heads, r).clone(qoType())}));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value c = entry->getArgument(1);
  SmallVector<ReassociationIndices> re = {{0, 1}, {2}, {3}};
  SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, c, 0),
                                     b.getIndexAttr(1),
                                     tensor::getMixedSize(b, loc, c, 1),
                                     b.getIndexAttr(row)};
  Value k = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({kDyn, 1, kDyn, row}, cacheType()), c, re,
      shape);
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {shape[0], b.getIndexAttr(1), shape[2],
                                     b.getIndexAttr(r)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value v = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({kDyn, 1, kDyn, r}, cacheType()), k,
      offsets, sizes, strides);
  // The absorbed form's attention: every head over the one cache row per
  // token (multi-query), D = r + dr, Dv = r.
  LayerSpec mqa = l;
  mqa.numKVHeads = 1;
  mqa.headDimQK = row;
  mqa.headDimV = r;
  mqa.position = PositionKind::Absolute;
  Value o = scoreChain(loc, mqa, widenQuery(b, loc, entry->getArgument(0)), k,
                       v, Value(), entry->getArgument(2));
  func::ReturnOp::create(b, loc, narrowOutput(b, loc, o, qoType()));
  return fn;
}

func::FuncOp Emitter::emitLatentPagedKernel(const std::string &name,
                                            const LayerSpec &l, bool part) {
  Location loc = NameLoc::get(b.getStringAttr(name),
                              FileLineColLoc::get(ctx, spec.configPath, 1, 1));
  const LatentSpec &m = l.latent;
  int64_t heads = l.numHeads, r = m.kvLoraRank, row = m.cacheWidth();
  RankedTensorType outTy = headsType(heads, r);
  // The partial form's q and output stay fp32 (see emitPagedKernel).
  Type qo = part ? f32 : qoType();
  SmallVector<Type> inputs = {
      headsType(heads, row).clone(qo),
      RankedTensorType::get({kDyn, kDyn, row}, cacheType()),
      RankedTensorType::get({kDyn, kDyn}, b.getI32Type()),
      RankedTensorType::get({kDyn}, b.getI64Type())};
  // The partial form (context parallelism): q_pos [B] and each row's
  // softmax statistics [B, H, Sq, 2], as `<kind>_paged_part`.
  RankedTensorType statsTy = tensor({kDyn, heads, kDyn, 2});
  SmallVector<Type> results = {outTy.clone(qo)};
  if (part) {
    inputs.push_back(RankedTensorType::get({kDyn}, b.getI64Type()));
    results.push_back(statsTy);
  }
  auto fn = func::FuncOp::create(
      loc, name + (part ? "_mla_paged_part" : "_mla_paged"),
      b.getFunctionType(inputs, results));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value q = widenQuery(b, loc, entry->getArgument(0));
  Value pool = entry->getArgument(1);
  // The pool [pages, page_size, r + dr] as one KV head's pages; the values
  // are each row's first r features, the same rows.
  SmallVector<ReassociationIndices> re = {{0, 1}, {2}, {3}};
  SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, pool, 0),
                                     b.getIndexAttr(1),
                                     tensor::getMixedSize(b, loc, pool, 1),
                                     b.getIndexAttr(row)};
  Value kc = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({kDyn, 1, kDyn, row}, cacheType()), pool,
      re, shape);
  SmallVector<OpFoldResult> sizes = {shape[0], b.getIndexAttr(1), shape[2],
                                     b.getIndexAttr(r)};
  Value vc = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({kDyn, 1, kDyn, r}, cacheType()), kc,
      SmallVector<OpFoldResult>(4, b.getIndexAttr(0)), sizes,
      SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
  Value batch = tensor::DimOp::create(b, loc, q, 0);
  Value qRows = tensor::DimOp::create(b, loc, q, 2);
  Value init =
      tensor::EmptyOp::create(b, loc, outTy, ValueRange{batch, qRows});
  Value statsInit =
      part ? tensor::EmptyOp::create(b, loc, statsTy, ValueRange{batch, qRows})
                 .getResult()
           : Value();
  auto op = PagedSDPAOp::create(
      b, loc, outTy, part ? Type(statsTy) : Type(), q, kc, vc,
      entry->getArgument(2), entry->getArgument(3),
      part ? entry->getArgument(4) : Value(), /*range_start=*/Value(),
      /*sinks=*/Value(), init,
      statsInit, b.getF64FloatAttr(l.scale),
      MaskKindAttr::get(ctx, l.causal ? MaskKind::causal : MaskKind::none),
      IntegerAttr(), FloatAttr());
  SmallVector<Value> returned(op->getResults());
  returned[0] = narrowOutput(b, loc, returned[0], qo);
  func::ReturnOp::create(b, loc, returned);
  return fn;
}

} // namespace mlir::attn::emit
