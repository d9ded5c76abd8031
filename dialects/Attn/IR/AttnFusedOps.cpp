//===- AttnFusedOps.cpp - the fused and tiled attn operations -------------===//
//
// This file implements attn.sdpa's helpers and the verifiers of the fused
// (attn.sdpa) and tiled (attn.online_attention, attn.online_finalize)
// operations, on tensors and, in destination-passing style, on buffers.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnVerify.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::verify;

//===----------------------------------------------------------------------===//
// SDPAOp
//===----------------------------------------------------------------------===//

int64_t SDPAOp::getGroupSize() {
  return getQuery().getType().getDimSize(1) / getKey().getType().getDimSize(1);
}

Value SDPAOp::createEmptyInit(OpBuilder &b, Location loc, Value query,
                              Value value) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i < 3; ++i)
    sizes.push_back(tensor::getMixedSize(b, loc, query, i));
  sizes.push_back(tensor::getMixedSize(b, loc, value, 3));
  return tensor::EmptyOp::create(
      b, loc, sizes, cast<RankedTensorType>(query.getType()).getElementType());
}

/// The score attributes the fused attention ops share: a positive finite
/// scale (and softcap, when set) and a mask whose window goes with its kind.
static LogicalResult verifyScoreAttrs(Operation *op, double scale,
                                      MaskKind mask,
                                      std::optional<int64_t> window,
                                      std::optional<APFloat> softcap) {
  if (failed(verifyPositiveFinite(op, scale, "scale")) ||
      failed(verifyMaskAttrs(op, mask, window)))
    return failure();
  if (softcap)
    return verifyPositiveFinite(op, softcap->convertToDouble(), "softcap");
  return success();
}

/// Destination-passing style: outs(...) has the result's type.
static LogicalResult verifyDestination(Operation *op, Type init,
                                       Type result) {
  if (init == result)
    return success();
  return op->emitOpError() << "expects the destination (outs) to have the "
                              "result type "
                           << result << ", got " << init;
}

LogicalResult SDPAOp::verify() {
  if (failed(expectRank(*this, getQuery(), 4,
                        "a query [batch, Hq, q_len, head_dim]")) ||
      failed(expectRank(*this, getKey(), 4,
                        "a key [batch, Hkv, kv_len, head_dim]")) ||
      failed(expectRank(*this, getValue(), 4,
                        "a value [batch, Hkv, kv_len, head_dim_v]")) ||
      failed(expectRank(*this, getResult(), 4,
                        "a result [batch, Hq, q_len, head_dim_v]")))
    return failure();
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   v = getValue().getType(), o = getResult().getType();
  if (failed(verifyHeadGroups(*this, q, "query", k, "key")) ||
      failed(expectStatic(*this, q, 3, "query head_dim")) ||
      failed(expectStatic(*this, k, 3, "key head_dim")) ||
      failed(expectStatic(*this, v, 1, "value head count")) ||
      failed(expectStatic(*this, v, 3, "value head_dim")) ||
      failed(expectDimsAgree(*this, q, 3, "query head_dim", k, 3,
                             "key head_dim")) ||
      failed(expectDimsAgree(*this, k, 1, "key head count", v, 1,
                             "value head count")) ||
      failed(expectDimsAgree(*this, k, 0, "key batch", v, 0, "value batch")) ||
      failed(expectDimsAgree(*this, k, 2, "key kv_len", v, 2,
                             "value kv_len")) ||
      failed(expectSameElementType(*this, {getQuery(), getResult()},
                                   {"query", "result"})) ||
      failed(expectSameElementType(*this, {getKey(), getValue()},
                                   {"key", "value"})) ||
      failed(expectNoWider(*this, getKey(), "key", getQuery(), "query")))
    return failure();
  if (failed(expectShape(*this, o,
                         {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2),
                          v.getDimSize(3)},
                         "a result of shape [batch, Hq, q_len, head_dim_v]")))
    return failure();
  if (failed(verifyScoreAttrs(*this, getScale().convertToDouble(), getMask(),
                              getWindow(), getSoftcap())))
    return failure();
  if (failed(verifyRelativeBias(*this, getRelativeBiasAttr(), getBiasTable(),
                                q.getDimSize(1))))
    return failure();
  if (failed(verifyKvLengths(*this, getKvLengths(), q)) ||
      failed(verifySinks(*this, getSinks(), getQuery())))
    return failure();
  return verifyDestination(*this, getInit().getType(), o);
}

//===----------------------------------------------------------------------===//
// LatentAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult LatentAttentionOp::verify() {
  if (failed(expectRank(*this, getQNope(), 4,
                        "a q_nope [batch, H, q_len, dn]")) ||
      failed(expectRank(*this, getQRope(), 4,
                        "a q_rope [batch, H, q_len, dr]")) ||
      failed(expectRank(*this, getCache(), 3,
                        "a cache [batch, kv_len, r + dr]")) ||
      failed(expectRank(*this, getKvBWeight(), 2,
                        "a kv_b_weight [H·(dn + dv), r]")) ||
      failed(expectRank(*this, getResult(), 4,
                        "a result [batch, H, q_len, dv]")))
    return failure();
  RankedTensorType qn = getQNope().getType(), qr = getQRope().getType(),
                   c = getCache().getType(), w = getKvBWeight().getType(),
                   o = getResult().getType();
  if (failed(expectStatic(*this, qn, 1, "q_nope head count")) ||
      failed(expectStatic(*this, qn, 3, "q_nope dn")) ||
      failed(expectStatic(*this, qr, 3, "q_rope dr")) ||
      failed(expectStatic(*this, c, 2, "cache row width")) ||
      failed(expectStatic(*this, w, 0, "kv_b_weight rows")) ||
      failed(expectStatic(*this, w, 1, "kv_b_weight latent width")) ||
      failed(expectStatic(*this, o, 3, "result dv")))
    return failure();
  int64_t h = qn.getDimSize(1), dn = qn.getDimSize(3), dr = qr.getDimSize(3),
          r = w.getDimSize(1), dv = o.getDimSize(3);
  if (h <= 0 || dn <= 0 || dr <= 0 || r <= 0 || dv <= 0)
    return emitOpError() << "expects positive head count and dims, got H = "
                         << h << ", dn = " << dn << ", dr = " << dr
                         << ", r = " << r << ", dv = " << dv;
  if (failed(expectShape(*this, qr,
                         {qn.getDimSize(0), h, qn.getDimSize(2), dr},
                         "a q_rope [batch, H, q_len, dr] matching q_nope")))
    return failure();
  if (c.getDimSize(2) != r + dr)
    return emitOpError() << "expects cache rows of r + dr = " << r << " + "
                         << dr << " = " << r + dr
                         << " features (the latent, then the rotary key), "
                            "got "
                         << c.getDimSize(2);
  if (w.getDimSize(0) != h * (dn + dv))
    return emitOpError() << "expects kv_b_weight rows H·(dn + dv) = " << h
                         << "·(" << dn << " + " << dv << ") = "
                         << h * (dn + dv) << ", got " << w.getDimSize(0);
  if (failed(expectDimsAgree(*this, c, 0, "cache batch", qn, 0,
                             "q_nope batch")) ||
      failed(expectShape(*this, o,
                         {qn.getDimSize(0), h, qn.getDimSize(2), dv},
                         "a result [batch, H, q_len, dv]")) ||
      failed(expectSameElementType(
          *this, {getQNope(), getQRope(), getKvBWeight(), getResult()},
          {"q_nope", "q_rope", "kv_b_weight", "result"})) ||
      failed(expectNoWider(*this, getCache(), "cache", getQNope(),
                           "q_nope")))
    return failure();
  if (getMask() != MaskKind::none && getMask() != MaskKind::causal)
    return emitOpError() << "expects mask none or causal, got "
                         << stringifyMaskKind(getMask());
  if (failed(verifyPositiveFinite(*this, getScale().convertToDouble(),
                                  "scale")))
    return failure();
  return verifyKvLengths(*this, getKvLengths(), qn);
}

int64_t PagedSDPAOp::getGroupSize() {
  return getQuery().getType().getDimSize(1) /
         getKeyCache().getType().getDimSize(1);
}

LogicalResult PagedSDPAOp::verify() {
  if (failed(expectRank(*this, getQuery(), 4,
                        "a query [batch, Hq, q_len, head_dim]")) ||
      failed(expectRank(*this, getKeyCache(), 4,
                        "a key cache [num_pages, Hkv, page_size, head_dim]")) ||
      failed(expectRank(*this, getValueCache(), 4,
                        "a value cache [num_pages, Hkv, page_size, "
                        "head_dim_v]")) ||
      failed(expectRank(*this, getBlockTable(), 2,
                        "a block table [batch, max_pages]")) ||
      failed(expectRank(*this, getKvLengths(), 1, "kv_lengths [batch]")) ||
      failed(expectRank(*this, getResult(), 4,
                        "a result [batch, Hq, q_len, head_dim_v]")))
    return failure();
  RankedTensorType q = getQuery().getType(), k = getKeyCache().getType(),
                   v = getValueCache().getType(), o = getResult().getType();
  ShapedType table = tensorOf(getBlockTable()),
             lens = tensorOf(getKvLengths());
  if (failed(expectStatic(*this, q, 1, "query head count")) ||
      failed(expectStatic(*this, k, 1, "key cache head count")))
    return failure();
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    return emitOpError() << "expects the query head count (" << hq
                         << ") to be a positive multiple of the key cache "
                            "head count ("
                         << hkv << ") for grouped-query attention";
  if (failed(expectStatic(*this, q, 3, "query head_dim")) ||
      failed(expectStatic(*this, v, 3, "value cache head_dim")) ||
      failed(expectDimsAgree(*this, q, 3, "query head_dim", k, 3,
                             "key cache head_dim")) ||
      failed(expectDimsAgree(*this, k, 0, "key cache num_pages", v, 0,
                             "value cache num_pages")) ||
      failed(expectDimsAgree(*this, k, 1, "key cache head count", v, 1,
                             "value cache head count")) ||
      failed(expectDimsAgree(*this, k, 2, "key cache page_size", v, 2,
                             "value cache page_size")) ||
      failed(expectDimsAgree(*this, table, 0, "block table batch", q, 0,
                             "query batch")) ||
      failed(expectDimsAgree(*this, lens, 0, "kv_lengths size", q, 0,
                             "query batch")) ||
      failed(expectSameElementType(*this, {getQuery(), getResult()},
                                   {"query", "result"})) ||
      failed(expectSameElementType(*this, {getKeyCache(), getValueCache()},
                                   {"key cache", "value cache"})) ||
      failed(expectNoWider(*this, getKeyCache(), "key cache", getQuery(),
                           "query")))
    return failure();
  if (k.getDimSize(2) == 0)
    return emitOpError() << "expects a positive page_size, got 0";
  if (failed(expectShape(*this, o,
                         {q.getDimSize(0), hq, q.getDimSize(2),
                          v.getDimSize(3)},
                         "a result of shape [batch, Hq, q_len, head_dim_v]")))
    return failure();
  if (failed(verifyScoreAttrs(*this, getScale().convertToDouble(), getMask(),
                              getWindow(), getSoftcap())))
    return failure();
  if (Value pos = getQPos()) {
    ShapedType p = tensorOf(pos);
    if (p.getRank() != 1)
      return emitOpError() << "expects q_pos of rank 1 ([batch]), got rank "
                           << p.getRank();
    if (failed(expectDimsAgree(*this, p, 0, "q_pos size", q, 0,
                               "query batch")))
      return failure();
  }
  if (Value start = getRangeStart()) {
    if (!getQPos())
      return emitOpError() << "expects range_start only with q_pos (the "
                              "query's position in the range)";
    ShapedType p = tensorOf(start);
    if (p.getRank() != 1)
      return emitOpError()
             << "expects range_start of rank 1 ([batch]), got rank "
             << p.getRank();
    if (failed(expectDimsAgree(*this, p, 0, "range_start size", q, 0,
                               "query batch")))
      return failure();
  }
  if (failed(verifySinks(*this, getSinks(), getQuery())))
    return failure();
  if (bool(getStatsInit()) != bool(getStats()))
    return emitOpError() << "expects a stats result with a stats_init "
                            "destination and none without";
  if (Value stats = getStats()) {
    auto st = cast<RankedTensorType>(stats.getType());
    if (!st.getElementType().isF32() || !q.getElementType().isF32())
      return emitOpError() << "expects row statistics of f32 with an f32 "
                              "query, got "
                           << st.getElementType() << " with "
                           << q.getElementType();
    if (failed(expectRank(*this, stats, 4,
                          "row statistics [batch, Hq, q_len, 2]")) ||
        failed(expectShape(*this, st,
                           {q.getDimSize(0), hq, q.getDimSize(2), 2},
                           "row statistics of shape [batch, Hq, q_len, 2] "
                           "(max, sum)")) ||
        failed(verifyDestination(*this, getStatsInit().getType(), st)))
      return failure();
  }
  return verifyDestination(*this, getInit().getType(), o);
}

//===----------------------------------------------------------------------===//
// Tiled level
//===----------------------------------------------------------------------===//

/// The memory effects of a tiled op's buffer form: every memref operand is
/// read, its destinations are written; the tensor form has none.
static void dpsBufferEffects(
    DestinationStyleOpInterface op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    if (op.isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

LogicalResult OnlineAttentionOp::verify() {
  auto shaped = [](Value x) { return cast<ShapedType>(x.getType()); };
  ShapedType q = shaped(getQuery()), k = shaped(getKey()),
             v = shaped(getValue()), acc = shaped(getAcc()),
             mx = shaped(getMax()), sum = shaped(getSum());
  // Destination-passing style: on tensors, one result per destination, of
  // its type; on buffers, none.
  bool tensors = isa<TensorType>(q), buffers = isa<MemRefType>(q);
  for (Value x : getOperands())
    if (isa<ShapedType>(x.getType()) &&
        (isa<TensorType>(x.getType()) != tensors ||
         isa<MemRefType>(x.getType()) != buffers))
      return emitOpError() << "expects all its operands to be tensors or all "
                              "to be buffers";
  if (tensors && (getNumResults() != 3 ||
                  getResult(0).getType() != getAcc().getType() ||
                  getResult(1).getType() != getMax().getType() ||
                  getResult(2).getType() != getSum().getType()))
    return emitOpError() << "on tensors expects three results of the types "
                            "of acc, max and sum";
  if (buffers && getNumResults() != 0)
    return emitOpError() << "on buffers updates acc, max and sum in place and "
                            "has no results";
  int64_t r = q.getRank();
  if (r < 2)
    return emitOpError() << "expects a query [..., M, head_dim] of rank >= 2, "
                            "got rank "
                         << r;
  // A paged tile reads one KV head's pools [num_pages, page_size, d].
  bool paged = isPaged();
  if (paged != bool(getNumKeys()))
    return emitOpError() << "expects pages and num_keys together";
  int64_t kr = paged ? 3 : 2, kd = kr - 1;
  if (paged &&
      failed(expectRank(*this, getPages(), 1, "a list of pages [num]")))
    return failure();
  if (failed(expectRank(*this, getKey(), kr,
                        paged ? "a key page pool [num_pages, page_size, "
                                "head_dim] with pages"
                              : "a key tile [N, head_dim]")) ||
      failed(expectRank(*this, getValue(), kr,
                        paged ? "a value page pool [num_pages, page_size, "
                                "head_dim_v] with pages"
                              : "a value tile [N, head_dim_v]")) ||
      failed(expectRank(*this, getAcc(), r,
                        "an accumulator [..., M, head_dim_v] (query rank)")) ||
      failed(expectRank(*this, getMax(), r - 1,
                        "a running max [..., M] (query rank - 1)")) ||
      failed(expectRank(*this, getSum(), r - 1,
                        "a running sum [..., M] (query rank - 1)")))
    return failure();
  if (failed(expectDimsAgree(*this, q, r - 1, "query head_dim", k, kd,
                             "key head_dim")) ||
      failed(expectDimsAgree(*this, k, 0, paged ? "key pages" : "key tile rows",
                             v, 0, paged ? "value pages" : "value tile rows")) ||
      (paged && failed(expectDimsAgree(*this, k, 1, "key page_size", v, 1,
                                       "value page_size"))) ||
      failed(expectDimsAgree(*this, acc, r - 1, "accumulator head_dim_v", v,
                             kd, "value head_dim_v")) ||
      failed(expectSameElementType(*this, {getKey(), getValue()},
                                   {"key", "value"})) ||
      failed(expectSameElementType(*this, {getAcc(), getMax(), getSum()},
                                   {"accumulator", "max", "sum"})))
    return failure();
  for (int64_t i = 0; i < r - 1; ++i) {
    std::string qd = "query dim " + std::to_string(i);
    if (failed(expectDimsAgree(*this, q, i, qd, acc, i,
                               "accumulator dim " + std::to_string(i))) ||
        failed(expectDimsAgree(*this, q, i, qd, mx, i,
                               "max dim " + std::to_string(i))) ||
        failed(expectDimsAgree(*this, q, i, qd, sum, i,
                               "sum dim " + std::to_string(i))))
      return failure();
  }
  if (failed(verifyPositiveFinite(*this, getScale().convertToDouble(),
                                  "scale")) ||
      failed(verifyMaskAttrs(*this, getMask(), getWindow())))
    return failure();
  if (std::optional<APFloat> cap = getSoftcap())
    if (failed(verifyPositiveFinite(*this, cap->convertToDouble(), "softcap")))
      return failure();
  if (failed(verifyRelativeBias(*this, getRelativeBiasAttr(), getBiasTable(),
                                /*heads=*/-1)))
    return failure();
  if (getBiasTable() && (!getHeadOffset() || r < 3))
    return emitOpError() << "expects a head_offset and a query [heads, M, "
                            "head_dim] with a bias_table";
  return success();
}

void OnlineAttentionOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // The tensor form is pure; the buffer form reads its inputs and reads and
  // writes its state.
  dpsBufferEffects(*this, effects);
}

LogicalResult OnlineFinalizeOp::verify() {
  RankedTensorType acc = getAcc().getType(), sum = getSum().getType(),
                   out = getResult().getType();
  int64_t r = acc.getRank();
  if (r < 2)
    return emitOpError() << "expects an accumulator [..., M, head_dim_v] of "
                            "rank >= 2, got rank "
                         << r;
  if (failed(expectRank(*this, getSum(), r - 1,
                        "a sum [..., M] (accumulator rank - 1)")) ||
      failed(expectSameElementType(*this, {getAcc(), getSum()},
                                   {"accumulator", "sum"})))
    return failure();
  for (int64_t i = 0; i < r - 1; ++i)
    if (failed(expectDimsAgree(*this, acc, i,
                               "accumulator dim " + std::to_string(i), sum, i,
                               "sum dim " + std::to_string(i))))
      return failure();
  if (out.getRank() != r)
    return emitOpError() << "expects the result to have the accumulator's "
                            "rank "
                         << r << ", got rank " << out.getRank();
  for (int64_t i = 0; i < r; ++i)
    if (failed(expectDimsAgree(*this, acc, i,
                               "accumulator dim " + std::to_string(i), out, i,
                               "result dim " + std::to_string(i))))
      return failure();
  if (getInit().getType() != out)
    return emitOpError() << "expects the destination (outs) to have the "
                            "result type "
                         << out << ", got " << getInit().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// GatedDeltaRuleOp
//===----------------------------------------------------------------------===//

LogicalResult GatedDeltaRuleOp::verify() {
  if (failed(expectRank(*this, getQuery(), 4,
                        "a query [batch, Hk, seq, d_k]")) ||
      failed(expectRank(*this, getKey(), 4, "a key [batch, Hk, seq, d_k]")) ||
      failed(expectRank(*this, getValue(), 4,
                        "a value [batch, Hv, seq, d_v]")))
    return failure();
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   v = getValue().getType();
  if (failed(verifyHeadGroups(*this, v, "value", k, "key")) ||
      failed(expectStatic(*this, k, 3, "key d_k")) ||
      failed(expectStatic(*this, v, 3, "value d_v")))
    return failure();
  int64_t batch = k.getDimSize(0), hk = k.getDimSize(1), seq = k.getDimSize(2),
          dk = k.getDimSize(3), hv = v.getDimSize(1), dv = v.getDimSize(3);
  if (!dimsAgree(seq, v.getDimSize(2)))
    return emitOpError() << "expects the key and value seq lengths to agree, "
                            "got "
                         << dimStr(seq) << " and " << dimStr(v.getDimSize(2));
  seq = seq == ShapedType::kDynamic ? v.getDimSize(2) : seq;
  if (failed(expectShape(*this, q, {batch, hk, seq, dk},
                         "a query [batch, Hk, seq, d_k]")) ||
      failed(expectShape(
          *this, getGate().getType(),
          hasChannelGate() ? SmallVector<int64_t>{batch, hv, seq, dk}
                           : SmallVector<int64_t>{batch, hv, seq},
          hasChannelGate() ? "a per-channel gate [batch, Hv, seq, d_k]"
                           : "a gate [batch, Hv, seq] (or [batch, Hv, "
                             "seq, d_k] per channel)")) ||
      failed(expectShape(*this, getBeta().getType(), {batch, hv, seq},
                         "a beta [batch, Hv, seq]")) ||
      failed(expectShape(*this, getOutput().getType(), {batch, hv, seq, dv},
                         "an output [batch, Hv, seq, d_v]")) ||
      failed(expectShape(*this, getFinalState().getType(), {batch, hv, dk, dv},
                         "a final state [batch, Hv, d_k, d_v]")))
    return failure();
  if (Value s = getInitialState())
    if (failed(expectShape(*this, cast<RankedTensorType>(s.getType()),
                           {batch, hv, dk, dv},
                           "an initial state [batch, Hv, d_k, d_v]")))
      return failure();
  if (Value lengths = getLengths()) {
    auto t = cast<RankedTensorType>(lengths.getType());
    if (t.getRank() != 1)
      return emitOpError() << "expects lengths of rank 1 ([batch]), got rank "
                           << t.getRank();
    if (!dimsAgree(t.getDimSize(0), batch))
      return emitOpError() << "expects lengths of size batch ("
                           << dimStr(batch) << "), got "
                           << dimStr(t.getDimSize(0));
  }
  SmallVector<Value> all = {getQuery(), getKey(), getValue(), getGate(),
                            getBeta(), getOutput(), getFinalState()};
  SmallVector<StringRef> names = {"query", "key",    "value",      "gate",
                                  "beta",  "output", "final state"};
  if (Value s = getInitialState()) {
    all.push_back(s);
    names.push_back("initial state");
  }
  if (failed(expectSameElementType(*this, all, names)))
    return failure();
  return verifyPositiveFinite(*this, getScale().convertToDouble(), "scale");
}


LogicalResult GatedDeltaChunkOp::verify() {
  auto shaped = [](Value x) { return cast<ShapedType>(x.getType()); };
  bool tensors = isa<TensorType>(getQuery().getType());
  for (Value x : getOperands())
    if (isa<TensorType>(x.getType()) != tensors)
      return emitOpError() << "expects all its operands to be tensors or all "
                              "to be buffers";
  if (tensors && (getNumResults() != 2 ||
                  getResult(0).getType() != getOut().getType() ||
                  getResult(1).getType() != getState().getType()))
    return emitOpError() << "on tensors expects two results of the types of "
                            "out and state";
  if (!tensors && getNumResults() != 0)
    return emitOpError() << "on buffers updates out and state in place and "
                            "has no results";
  if (failed(expectRank(*this, getQuery(), 2, "a query chunk [n, d_k]")) ||
      failed(expectRank(*this, getValue(), 2, "a value chunk [n, d_v]")) ||
      failed(expectRank(*this, getState(), 2, "a state [d_k, d_v]")))
    return failure();
  ShapedType q = shaped(getQuery()), v = shaped(getValue()),
             st = shaped(getState());
  int64_t n = q.getDimSize(0), dk = q.getDimSize(1), dv = v.getDimSize(1);
  if (ShapedType::isDynamic(dk) || ShapedType::isDynamic(dv))
    return emitOpError() << "expects static d_k and d_v, got " << q << " and "
                         << v;
  if (!dimsAgree(n, v.getDimSize(0)))
    return emitOpError() << "expects the query and value chunks to have the "
                            "same number of tokens, got "
                         << q << " and " << v;
  if (ShapedType::isDynamic(n))
    n = v.getDimSize(0);
  if (failed(expectShape(*this, shaped(getKey()), {n, dk},
                         "a key chunk [n, d_k]")) ||
      failed(expectShape(*this, shaped(getGate()),
                         hasChannelGate() ? SmallVector<int64_t>{n, dk}
                                          : SmallVector<int64_t>{n},
                         hasChannelGate() ? "a per-channel gate [n, d_k]"
                                          : "a gate [n] (or [n, d_k] per "
                                            "channel)")) ||
      failed(expectShape(*this, shaped(getBeta()), {n}, "a beta [n]")) ||
      failed(expectShape(*this, shaped(getOut()), {n, dv},
                         "an output chunk [n, d_v]")) ||
      failed(expectShape(*this, st, {dk, dv}, "a state [d_k, d_v]")) ||
      failed(expectSameElementType(
          *this,
          {getQuery(), getKey(), getValue(), getGate(), getBeta(), getOut(),
           getState()},
          {"query", "key", "value", "gate", "beta", "output", "state"})))
    return failure();
  if (Value init = getInitialState())
    if (failed(expectShape(*this, shaped(init), {dk, dv},
                           "an initial state [d_k, d_v]")) ||
        failed(expectSameElementType(*this, {getState(), init},
                                     {"state", "initial state"})))
      return failure();
  return verifyPositiveFinite(*this, getScale().convertToDouble(), "scale");
}

void GatedDeltaChunkOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // The tensor form is pure; the buffer form reads its inputs and the state
  // and writes the output and the state.
  dpsBufferEffects(*this, effects);
}
