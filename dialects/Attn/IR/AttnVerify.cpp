//===- AttnVerify.cpp - shared checks of the attn verifiers ---------------===//
//
// This file implements the checks the attn verifiers share (AttnVerify.h).
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnVerify.h"

#include "llvm/ADT/SmallString.h"

using namespace mlir;
using namespace mlir::attn;


/// Renders a dim for a message: "?" for dynamic.
std::string verify::dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// Renders a double the shortest way that reads back ("0.5", "1e-06").
std::string verify::numStr(double v) {
  SmallString<16> s;
  APFloat(v).toString(s);
  return std::string(s);
}

/// Two dims agree unless both are static and differ.
bool verify::dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// The shape of an operand: a ranked tensor, or a buffer for the ops in
/// destination-passing style after bufferization.
ShapedType verify::tensorOf(Value v) { return cast<ShapedType>(v.getType()); }

/// Checks that `v` has rank `rank`; `what` names it and its layout.
LogicalResult verify::expectRank(Operation *op, Value v, int64_t rank,
                         StringRef what) {
  int64_t got = tensorOf(v).getRank();
  if (got == rank)
    return success();
  return op->emitOpError() << "expects " << what << " of rank " << rank
                           << ", got rank " << got;
}

/// Checks that dim `i` of `t` is static and positive (head counts and head
/// dims must be: a head dim of 0 has nothing to compute, and the tilers'
/// slices of it were out of bounds).
LogicalResult verify::expectStatic(Operation *op, ShapedType t, int64_t i,
                           const Twine &what) {
  if (t.isDynamicDim(i))
    return op->emitOpError()
           << "expects a static " << what << " (dim " << i << "), got '?'";
  if (t.getDimSize(i) > 0)
    return success();
  return op->emitOpError() << "expects a positive " << what << " (dim " << i
                           << "), got " << t.getDimSize(i);
}

/// Checks that dim `ia` of `a` agrees with dim `ib` of `b`.
LogicalResult verify::expectDimsAgree(Operation *op, ShapedType a, int64_t ia,
                              const Twine &aName, ShapedType b,
                              int64_t ib, const Twine &bName) {
  if (dimsAgree(a.getDimSize(ia), b.getDimSize(ib)))
    return success();
  return op->emitOpError() << aName << " (" << dimStr(a.getDimSize(ia))
                           << ") does not match " << bName << " ("
                           << dimStr(b.getDimSize(ib)) << ")";
}

/// Checks that all the given values share one element type.
LogicalResult verify::expectSameElementType(Operation *op, ArrayRef<Value> values,
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

LogicalResult verify::expectNoWider(Operation *op, Value narrow,
                                    StringRef narrowName, Value wide,
                                    StringRef wideName) {
  Type n = tensorOf(narrow).getElementType(),
       w = tensorOf(wide).getElementType();
  if (n.getIntOrFloatBitWidth() > w.getIntOrFloatBitWidth())
    return op->emitOpError()
           << "expects the " << narrowName << " no wider than the "
           << wideName << " (a bf16/f16 cache, fp32 arithmetic), got " << n
           << " for a " << w << " " << wideName;
  return success();
}

/// Verifies `[batch, heads, seq, d]` operands of a GQA pair: the query-side
/// tensor `q` with Hq heads and the key-side tensor `k` with Hkv heads.
LogicalResult verify::verifyHeadGroups(Operation *op, RankedTensorType q,
                               StringRef qName, RankedTensorType k,
                               StringRef kName) {
  // Static first (the zero counts are named together below).
  for (auto [t, name] : {std::pair{q, qName}, std::pair{k, kName}})
    if (t.isDynamicDim(1))
      return op->emitOpError()
             << "expects a static " << name << " head count (dim 1), got '?'";
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

/// Expects `t` to be `[dims...]`, shared by the verifiers that check a
/// whole shape.
LogicalResult verify::expectShape(Operation *op, ShapedType t,
                                 ArrayRef<int64_t> dims, StringRef what) {
  bool ok = t.getRank() == int64_t(dims.size());
  for (size_t i = 0; ok && i < dims.size(); ++i)
    ok = dimsAgree(t.getDimSize(i), dims[i]);
  if (ok)
    return success();
  InFlightDiagnostic d = op->emitOpError() << "expects " << what << " = [";
  for (size_t i = 0; i < dims.size(); ++i)
    d << (i ? ", " : "") << dimStr(dims[i]);
  return d << "], got " << t;
}

/// Verifies mask kind / window consistency, shared by mask and sdpa.
LogicalResult verify::verifyMaskAttrs(Operation *op, MaskKind kind,
                              std::optional<int64_t> window) {
  bool takesWindow =
      kind == MaskKind::sliding_window || kind == MaskKind::chunked;
  if (takesWindow && !window)
    return op->emitOpError() << "expects a 'window' attribute with a "
                             << stringifyMaskKind(kind) << " mask"
                             << (kind == MaskKind::chunked
                                     ? " (the chunk size)"
                                     : "");
  if (!takesWindow && window)
    return op->emitOpError() << "has a 'window' attribute but mask kind '"
                             << stringifyMaskKind(kind)
                             << "'; only sliding_window and chunked take a "
                                "window";
  if (window && *window <= 0)
    return op->emitOpError() << "expects a positive window, got " << *window;
  return success();
}

/// Verifies an optional per-sequence key-length operand `[batch]`.
LogicalResult verify::verifyKvLengths(Operation *op, Value lengths,
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

LogicalResult verify::verifyPositiveFinite(Operation *op, double v, StringRef name) {
  if (std::isfinite(v) && v > 0)
    return success();
  return op->emitOpError() << "expects a positive finite " << name << ", got "
                           << numStr(v);
}

LogicalResult verify::verifyNormWeight(Operation *op, Value input, Value weight,
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
LogicalResult verify::verifySinks(Operation *op, Value sinks, Value query) {
  if (!sinks)
    return success();
  ShapedType s = tensorOf(sinks), q = tensorOf(query);
  if (s.getRank() != 1)
    return op->emitOpError() << "expects sinks [heads] of rank 1, got rank "
                             << s.getRank();
  if (!dimsAgree(s.getDimSize(0), q.getDimSize(1)))
    return op->emitOpError() << "expects one sink per query head ("
                             << dimStr(q.getDimSize(1)) << "), got "
                             << dimStr(s.getDimSize(0));
  // A 16-bit query (a --qo-dtype entry) keeps fp32 sinks.
  if (s.getElementType() != q.getElementType() && !s.getElementType().isF32())
    return op->emitOpError() << "expects f32 sinks or sinks of the query's "
                             << "element type " << q.getElementType()
                             << ", got " << s.getElementType();
  return success();
}

LogicalResult verify::verifyRelativeBias(Operation *op, RelativeBiasAttr attr,
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

