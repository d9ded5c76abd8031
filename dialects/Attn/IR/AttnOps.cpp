//===- AttnOps.cpp - attn dialect operations ------------------------------===//
//
// This file implements the verifiers of the `attn` operations. Types already
// say "ranked float tensor"; the verifiers check what they cannot: ranks,
// matching dims, head-count divisibility, static head counts and head dims,
// element types and attribute ranges. Messages name the operand and the dim.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/ADT/SmallString.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

/// Renders a dim for a message: "?" for dynamic.
std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// Renders a double the shortest way that reads back ("0.5", "1e-06").
std::string numStr(double v) {
  SmallString<16> s;
  APFloat(v).toString(s);
  return std::string(s);
}

/// Two dims agree unless both are static and differ.
bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// The shape of an operand: a ranked tensor, or a buffer for the ops in
/// destination-passing style after bufferization.
ShapedType tensorOf(Value v) { return cast<ShapedType>(v.getType()); }

/// Checks that `v` has rank `rank`; `what` names it and its layout.
LogicalResult expectRank(Operation *op, Value v, int64_t rank,
                         StringRef what) {
  int64_t got = tensorOf(v).getRank();
  if (got == rank)
    return success();
  return op->emitOpError() << "expects " << what << " of rank " << rank
                           << ", got rank " << got;
}

/// Checks that dim `i` of `t` is static (head counts and head dims must be).
LogicalResult expectStatic(Operation *op, ShapedType t, int64_t i,
                           const Twine &what) {
  if (!t.isDynamicDim(i))
    return success();
  return op->emitOpError() << "expects a static " << what
                           << " (dim " << i << "), got '?'";
}

/// Checks that dim `ia` of `a` agrees with dim `ib` of `b`.
LogicalResult expectDimsAgree(Operation *op, ShapedType a, int64_t ia,
                              const Twine &aName, ShapedType b,
                              int64_t ib, const Twine &bName) {
  if (dimsAgree(a.getDimSize(ia), b.getDimSize(ib)))
    return success();
  return op->emitOpError() << aName << " (" << dimStr(a.getDimSize(ia))
                           << ") does not match " << bName << " ("
                           << dimStr(b.getDimSize(ib)) << ")";
}

/// Checks that all the given values share one element type.
LogicalResult expectSameElementType(Operation *op, ArrayRef<Value> values,
                                    ArrayRef<StringRef> names) {
  Type first = tensorOf(values[0]).getElementType();
  for (size_t i = 1; i < values.size(); ++i) {
    Type t = tensorOf(values[i]).getElementType();
    if (t != first)
      return op->emitOpError()
             << "expects " << names[0] << " and " << names[i]
             << " to have the same element type, got " << first << " and "
             << t;
  }
  return success();
}

/// Verifies `[batch, heads, seq, d]` operands of a GQA pair: the query-side
/// tensor `q` with Hq heads and the key-side tensor `k` with Hkv heads.
LogicalResult verifyHeadGroups(Operation *op, RankedTensorType q,
                               StringRef qName, RankedTensorType k,
                               StringRef kName) {
  if (failed(expectStatic(op, q, 1, qName + " head count")) ||
      failed(expectStatic(op, k, 1, kName + " head count")))
    return failure();
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1);
  if (hq <= 0 || hkv <= 0)
    return op->emitOpError() << "expects positive head counts, got " << hq
                             << " " << qName << " heads and " << hkv << " "
                             << kName << " heads";
  if (hq % hkv != 0)
    return op->emitOpError()
           << "expects the " << qName << " head count (" << hq
           << ") to be a multiple of the " << kName << " head count (" << hkv
           << ") for grouped-query attention";
  return expectDimsAgree(op, q, 0, qName + " batch", k, 0,
                         kName + " batch");
}

/// Verifies mask kind / window consistency, shared by mask and sdpa.
LogicalResult verifyMaskAttrs(Operation *op, MaskKind kind,
                              std::optional<int64_t> window) {
  if (kind == MaskKind::sliding_window && !window)
    return op->emitOpError()
           << "expects a 'window' attribute with a sliding_window mask";
  if (kind != MaskKind::sliding_window && window)
    return op->emitOpError() << "has a 'window' attribute but mask kind '"
                             << stringifyMaskKind(kind)
                             << "'; only sliding_window takes a window";
  if (window && *window <= 0)
    return op->emitOpError() << "expects a positive window, got " << *window;
  return success();
}

/// Verifies an optional per-sequence key-length operand `[batch]`.
LogicalResult verifyKvLengths(Operation *op, Value lengths,
                              RankedTensorType ref) {
  if (!lengths)
    return success();
  ShapedType t = tensorOf(lengths);
  if (t.getRank() != 1)
    return op->emitOpError() << "expects kv_lengths of rank 1 ([batch]), got "
                                "rank "
                             << t.getRank();
  return expectDimsAgree(op, t, 0, "kv_lengths size", ref, 0, "batch");
}

LogicalResult verifyPositiveFinite(Operation *op, double v, StringRef name) {
  if (std::isfinite(v) && v > 0)
    return success();
  return op->emitOpError() << "expects a positive finite " << name << ", got "
                           << numStr(v);
}

LogicalResult verifyNormWeight(Operation *op, Value input, Value weight,
                               StringRef name) {
  ShapedType x = tensorOf(input), w = tensorOf(weight);
  if (x.getRank() < 1)
    return op->emitOpError() << "expects an input of rank >= 1";
  if (w.getRank() != 1)
    return op->emitOpError() << "expects a " << name
                             << " of rank 1, got rank " << w.getRank();
  return expectDimsAgree(op, w, 0, name + " size", x, x.getRank() - 1,
                         "the input's last dim");
}

/// Verifies an optional relative-bias attribute with its table operand.
LogicalResult verifyRelativeBias(Operation *op, RelativeBiasAttr attr,
                                 Value table, int64_t heads) {
  if (!attr && !table)
    return success();
  if (!attr || !table)
    return op->emitOpError() << "expects 'relative_bias' and a bias_table "
                                "operand together";
  if (attr.getNumBuckets() < 2 ||
      (attr.getBidirectional() && attr.getNumBuckets() < 4))
    return op->emitOpError() << "expects num_buckets >= 2 (>= 4 when "
                                "bidirectional), got "
                             << attr.getNumBuckets();
  if (attr.getMaxDistance() <= 0)
    return op->emitOpError() << "expects a positive max_distance, got "
                             << attr.getMaxDistance();
  ShapedType t = tensorOf(table);
  if (t.getRank() != 2)
    return op->emitOpError() << "expects a bias_table [num_buckets, heads] of "
                                "rank 2, got rank "
                             << t.getRank();
  if (!dimsAgree(t.getDimSize(0), attr.getNumBuckets()))
    return op->emitOpError() << "expects a bias_table with num_buckets = "
                             << attr.getNumBuckets() << " rows, got "
                             << dimStr(t.getDimSize(0));
  if (heads > 0 && !dimsAgree(t.getDimSize(1), heads))
    return op->emitOpError() << "expects a bias_table with one column per "
                                "query head ("
                             << heads << "), got " << dimStr(t.getDimSize(1));
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  RankedTensorType x = getInput().getType(), w = getWeight().getType(),
                   y = getResult().getType();
  if (x.getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1";
  if (w.getRank() != 2)
    return emitOpError() << "expects a weight of rank 2 ([out_features, "
                            "in_features]), got rank "
                         << w.getRank();
  if (y.getRank() != x.getRank())
    return emitOpError() << "expects the result rank (" << y.getRank()
                         << ") to equal the input rank (" << x.getRank()
                         << ")";
  int64_t last = x.getRank() - 1;
  unsigned outDim = getOutFeaturesDim(), inDim = 1 - outDim;
  if (failed(expectDimsAgree(*this, w, inDim, "weight in_features", x, last,
                             "the input's last dim")) ||
      failed(expectDimsAgree(*this, w, outDim, "weight out_features", y, last,
                             "the result's last dim")))
    return failure();
  for (int64_t i = 0; i < last; ++i)
    if (failed(expectDimsAgree(*this, x, i, "input dim " + std::to_string(i),
                               y, i, "result dim " + std::to_string(i))))
      return failure();
  if (Value b = getBias()) {
    ShapedType bt = tensorOf(b);
    if (bt.getRank() != 1)
      return emitOpError() << "expects a bias of rank 1, got rank "
                           << bt.getRank();
    if (failed(expectDimsAgree(*this, bt, 0, "bias size", w, outDim,
                               "weight out_features")))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Norms and RoPE
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(verifyNormWeight(*this, getInput(), getWeight(), "weight")))
    return failure();
  return verifyPositiveFinite(*this, getEpsilon().convertToDouble(),
                              "epsilon");
}

LogicalResult LayerNormOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(verifyNormWeight(*this, getInput(), getWeight(), "weight")))
    return failure();
  if (getBias() &&
      failed(verifyNormWeight(*this, getInput(), getBias(), "bias")))
    return failure();
  return verifyPositiveFinite(*this, getEpsilon().convertToDouble(),
                              "epsilon");
}

LogicalResult RopeOp::verify() {
  RankedTensorType x = getInput().getType();
  if (x != getResult().getType())
    return emitOpError() << "expects the result type to equal the input type";
  if (failed(expectRank(*this, getInput(), 4,
                        "an input [batch, heads, seq, head_dim]")) ||
      failed(expectStatic(*this, x, 3, "head_dim")) ||
      failed(expectRank(*this, getPositions(), 2, "positions [batch, seq]")))
    return failure();
  ShapedType pos = tensorOf(getPositions());
  if (failed(expectDimsAgree(*this, pos, 0, "positions batch", x, 0,
                             "input batch")) ||
      failed(expectDimsAgree(*this, pos, 1, "positions seq", x, 2,
                             "input seq")))
    return failure();
  int64_t rd = getRotaryDim(), d = x.getDimSize(3);
  if (rd <= 0 || rd % 2 != 0 || rd > d)
    return emitOpError() << "expects an even rotary_dim in [2, head_dim = "
                         << d << "], got " << rd;
  if (failed(verifyPositiveFinite(*this, getTheta().convertToDouble(),
                                  "theta")) ||
      failed(verifyPositiveFinite(
          *this, getAttentionFactor().convertToDouble(), "attention_factor")))
    return failure();
  if (std::optional<ArrayRef<double>> f = getInvFreq()) {
    if (static_cast<int64_t>(f->size()) != rd / 2)
      return emitOpError() << "expects inv_freq to list rotary_dim / 2 = "
                           << rd / 2 << " frequencies, got " << f->size();
    for (double v : *f)
      if (!std::isfinite(v) || v <= 0)
        return emitOpError()
               << "expects positive finite inv_freq entries, got "
               << numStr(v);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Head split / merge
//===----------------------------------------------------------------------===//

/// Shared by split/merge: `flat` is [batch, seq, heads*d], `heads` is
/// [batch, heads, seq, d].
static LogicalResult verifyHeadReshape(Operation *op, RankedTensorType flat,
                                       StringRef flatName,
                                       RankedTensorType heads,
                                       StringRef headsName) {
  if (flat.getRank() != 3)
    return op->emitOpError() << "expects the " << flatName
                             << " to be [batch, seq, heads*head_dim], got rank "
                             << flat.getRank();
  if (heads.getRank() != 4)
    return op->emitOpError() << "expects the " << headsName
                             << " to be [batch, heads, seq, head_dim], got "
                                "rank "
                             << heads.getRank();
  if (failed(expectStatic(op, heads, 1, "head count")) ||
      failed(expectStatic(op, heads, 3, "head_dim")) ||
      failed(expectDimsAgree(op, flat, 0, flatName + " batch", heads, 0,
                             headsName + " batch")) ||
      failed(expectDimsAgree(op, flat, 1, flatName + " seq", heads, 2,
                             headsName + " seq")))
    return failure();
  int64_t width = heads.getDimSize(1) * heads.getDimSize(3);
  if (!dimsAgree(flat.getDimSize(2), width))
    return op->emitOpError()
           << "expects the " << flatName << " last dim ("
           << dimStr(flat.getDimSize(2)) << ") to equal heads * head_dim = "
           << heads.getDimSize(1) << " * " << heads.getDimSize(3) << " = "
           << width;
  if (flat.getElementType() != heads.getElementType())
    return op->emitOpError() << "expects input and result element types to "
                                "match";
  return success();
}

LogicalResult SplitHeadsOp::verify() {
  return verifyHeadReshape(*this, getInput().getType(), "input",
                           getResult().getType(), "result");
}

LogicalResult MergeHeadsOp::verify() {
  return verifyHeadReshape(*this, getResult().getType(), "result",
                           getInput().getType(), "input");
}

//===----------------------------------------------------------------------===//
// QK / scale / softcap / mask / softmax / PV
//===----------------------------------------------------------------------===//

LogicalResult QKOp::verify() {
  if (failed(expectRank(*this, getQuery(), 4,
                        "a query [batch, Hq, q_len, head_dim]")) ||
      failed(expectRank(*this, getKey(), 4,
                        "a key [batch, Hkv, kv_len, head_dim]")) ||
      failed(expectRank(*this, getResult(), 4,
                        "a result [batch, Hq, q_len, kv_len]")))
    return failure();
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   s = getResult().getType();
  if (failed(verifyHeadGroups(*this, q, "query", k, "key")) ||
      failed(expectStatic(*this, q, 3, "query head_dim")) ||
      failed(expectStatic(*this, k, 3, "key head_dim")) ||
      failed(expectDimsAgree(*this, q, 3, "query head_dim", k, 3,
                             "key head_dim")) ||
      failed(expectSameElementType(*this, {getQuery(), getKey(), getResult()},
                                   {"query", "key", "result"})))
    return failure();
  if (!dimsAgree(s.getDimSize(0), q.getDimSize(0)) ||
      !dimsAgree(s.getDimSize(1), q.getDimSize(1)) ||
      !dimsAgree(s.getDimSize(2), q.getDimSize(2)) ||
      !dimsAgree(s.getDimSize(3), k.getDimSize(2)))
    return emitOpError() << "expects a result of shape [batch, Hq, q_len, "
                            "kv_len] = ["
                         << dimStr(q.getDimSize(0)) << ", "
                         << dimStr(q.getDimSize(1)) << ", "
                         << dimStr(q.getDimSize(2)) << ", "
                         << dimStr(k.getDimSize(2)) << "], got " << s;
  return success();
}

LogicalResult ScaleOp::verify() {
  double s = getScale().convertToDouble();
  if (!std::isfinite(s) || s == 0)
    return emitOpError() << "expects a finite non-zero scale, got "
                         << numStr(s);
  return success();
}

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  // x * 1 is x: the front end, the decomposition and the lowering need no
  // special case for a scale of one.
  if (getScale().convertToDouble() == 1.0)
    return getInput();
  // (x * a) * b is x * (a * b), when that product is still a valid scale.
  if (auto inner = getInput().getDefiningOp<ScaleOp>()) {
    double product =
        inner.getScale().convertToDouble() * getScale().convertToDouble();
    if (std::isfinite(product) && product != 0) {
      getInputMutable().assign(inner.getInput());
      setScaleAttr(FloatAttr::get(getScaleAttr().getType(), product));
      if (product == 1.0)
        return getInput();
      return getResult();
    }
  }
  return {};
}

LogicalResult SoftcapOp::verify() {
  return verifyPositiveFinite(*this, getCap().convertToDouble(), "cap");
}

LogicalResult MaskOp::verify() {
  if (failed(expectRank(*this, getInput(), 4,
                        "scores [batch, heads, q_len, kv_len]")) ||
      failed(verifyMaskAttrs(*this, getKind(), getWindow())))
    return failure();
  return verifyKvLengths(*this, getKvLengths(), getInput().getType());
}

LogicalResult RelativePositionBiasOp::verify() {
  if (failed(expectRank(*this, getInput(), 4,
                        "scores [batch, heads, q_len, kv_len]")) ||
      failed(expectRank(*this, getTable(), 2,
                        "a table [num_buckets, heads]")))
    return failure();
  RankedTensorType s = getInput().getType(), t = getTable().getType();
  int64_t buckets = getNumBuckets();
  if (buckets < 2 || (getBidirectional() && buckets < 4))
    return emitOpError() << "expects num_buckets >= 2 (>= 4 when "
                            "bidirectional), got "
                         << buckets;
  if (getMaxDistance() <= 0)
    return emitOpError() << "expects a positive max_distance, got "
                         << getMaxDistance();
  if (!dimsAgree(t.getDimSize(0), buckets))
    return emitOpError() << "expects a table with num_buckets = " << buckets
                         << " rows, got " << dimStr(t.getDimSize(0));
  return expectDimsAgree(*this, t, 1, "table heads", s, 1, "score heads");
}

/// Shared by mask_bias / mask_cond: `like` is scores, result has its shape.
static LogicalResult verifyMaskConstruction(Operation *op, Value like,
                                            Value result, MaskKind kind,
                                            std::optional<int64_t> window) {
  if (failed(expectRank(op, like, 4, "scores [batch, heads, q_len, kv_len]")) ||
      failed(verifyMaskAttrs(op, kind, window)))
    return failure();
  if (tensorOf(like).getShape() != tensorOf(result).getShape())
    return op->emitOpError() << "expects the result to have the shape of the "
                                "scores";
  if (kind == MaskKind::none)
    return op->emitOpError() << "expects a causal or sliding_window mask "
                                "kind; a 'none' mask masks nothing";
  return success();
}

LogicalResult MaskBiasOp::verify() {
  return verifyMaskConstruction(*this, getLike(), getResult(), getKind(),
                                getWindow());
}

LogicalResult MaskCondOp::verify() {
  return verifyMaskConstruction(*this, getLike(), getResult(), getKind(),
                                getWindow());
}

LogicalResult SoftmaxOp::verify() {
  if (getInput().getType().getRank() < 1)
    return emitOpError() << "expects an input of rank >= 1";
  return success();
}

LogicalResult PVOp::verify() {
  if (failed(expectRank(*this, getProbs(), 4,
                        "probabilities [batch, Hq, q_len, kv_len]")) ||
      failed(expectRank(*this, getValue(), 4,
                        "a value [batch, Hkv, kv_len, head_dim_v]")) ||
      failed(expectRank(*this, getResult(), 4,
                        "a result [batch, Hq, q_len, head_dim_v]")))
    return failure();
  RankedTensorType p = getProbs().getType(), v = getValue().getType(),
                   o = getResult().getType();
  if (failed(verifyHeadGroups(*this, p, "probabilities", v, "value")) ||
      failed(expectStatic(*this, v, 3, "value head_dim")) ||
      failed(expectDimsAgree(*this, p, 3, "probabilities kv_len", v, 2,
                             "value kv_len")) ||
      failed(expectSameElementType(*this, {getProbs(), getValue(), getResult()},
                                   {"probabilities", "value", "result"})))
    return failure();
  if (!dimsAgree(o.getDimSize(0), p.getDimSize(0)) ||
      !dimsAgree(o.getDimSize(1), p.getDimSize(1)) ||
      !dimsAgree(o.getDimSize(2), p.getDimSize(2)) ||
      !dimsAgree(o.getDimSize(3), v.getDimSize(3)))
    return emitOpError() << "expects a result of shape [batch, Hq, q_len, "
                            "head_dim_v] = ["
                         << dimStr(p.getDimSize(0)) << ", "
                         << dimStr(p.getDimSize(1)) << ", "
                         << dimStr(p.getDimSize(2)) << ", "
                         << dimStr(v.getDimSize(3)) << "], got " << o;
  return success();
}

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
      failed(expectSameElementType(
          *this, {getQuery(), getKey(), getValue(), getResult()},
          {"query", "key", "value", "result"})))
    return failure();
  if (!dimsAgree(o.getDimSize(0), q.getDimSize(0)) ||
      !dimsAgree(o.getDimSize(1), q.getDimSize(1)) ||
      !dimsAgree(o.getDimSize(2), q.getDimSize(2)) ||
      !dimsAgree(o.getDimSize(3), v.getDimSize(3)))
    return emitOpError() << "expects a result of shape [batch, Hq, q_len, "
                            "head_dim_v] = ["
                         << dimStr(q.getDimSize(0)) << ", "
                         << dimStr(q.getDimSize(1)) << ", "
                         << dimStr(q.getDimSize(2)) << ", "
                         << dimStr(v.getDimSize(3)) << "], got " << o;
  if (failed(verifyPositiveFinite(*this, getScale().convertToDouble(),
                                  "scale")) ||
      failed(verifyMaskAttrs(*this, getMask(), getWindow())))
    return failure();
  if (std::optional<APFloat> cap = getSoftcap())
    if (failed(verifyPositiveFinite(*this, cap->convertToDouble(), "softcap")))
      return failure();
  if (failed(verifyRelativeBias(*this, getRelativeBiasAttr(), getBiasTable(),
                                q.getDimSize(1))))
    return failure();
  if (failed(verifyKvLengths(*this, getKvLengths(), q)))
    return failure();
  if (getInit().getType() != o)
    return emitOpError() << "expects the destination (outs) to have the "
                            "result type "
                         << o << ", got " << getInit().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Tiled level
//===----------------------------------------------------------------------===//

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
  if (failed(expectRank(*this, getKey(), 2, "a key tile [N, head_dim]")) ||
      failed(expectRank(*this, getValue(), 2,
                        "a value tile [N, head_dim_v]")) ||
      failed(expectRank(*this, getAcc(), r,
                        "an accumulator [..., M, head_dim_v] (query rank)")) ||
      failed(expectRank(*this, getMax(), r - 1,
                        "a running max [..., M] (query rank - 1)")) ||
      failed(expectRank(*this, getSum(), r - 1,
                        "a running sum [..., M] (query rank - 1)")))
    return failure();
  if (failed(expectDimsAgree(*this, q, r - 1, "query head_dim", k, 1,
                             "key head_dim")) ||
      failed(expectDimsAgree(*this, k, 0, "key tile rows", v, 0,
                             "value tile rows")) ||
      failed(expectDimsAgree(*this, acc, r - 1, "accumulator head_dim_v", v, 1,
                             "value head_dim_v")) ||
      failed(expectSameElementType(*this, {getQuery(), getKey(), getValue()},
                                   {"query", "key", "value"})) ||
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
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(MemoryEffects::Read::get(), &operand,
                         SideEffects::DefaultResource::get());
    if (isDpsInit(&operand))
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
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

#define GET_OP_CLASSES
#include "dialects/Attn/IR/AttnOps.cpp.inc"
