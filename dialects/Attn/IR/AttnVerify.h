//===- AttnVerify.h - shared checks of the attn verifiers ---------*- C++ -*-===//
//
// Internal to dialects/Attn/IR: the checks the verifiers of the graph ops
// (AttnOps.cpp) and of the fused and tiled ops (AttnFusedOps.cpp) share,
// each emitting an op error that names the operand and the dim.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTN_IR_ATTNVERIFY_H
#define ATTN_DIALECT_ATTN_IR_ATTNVERIFY_H

#include "dialects/Attn/IR/AttnOps.h"

#include <string>

namespace mlir {
namespace attn {
namespace verify {

/// Renders a dim for a message: "?" for dynamic.
std::string dimStr(int64_t d);

/// Renders a double the shortest way that reads back ("0.5", "1e-06").
std::string numStr(double v);

/// Two dims agree unless both are static and differ.
bool dimsAgree(int64_t a, int64_t b);

/// The shape of an operand: a ranked tensor, or a buffer for the ops in
/// destination-passing style after bufferization.
ShapedType tensorOf(Value v);

/// Checks that `v` has rank `rank`; `what` names it and its layout.
LogicalResult expectRank(Operation *op, Value v, int64_t rank,
                         StringRef what);

/// Checks that dim `i` of `t` is static (head counts and head dims must be).
LogicalResult expectStatic(Operation *op, ShapedType t, int64_t i,
                           const Twine &what);

/// Checks that dim `ia` of `a` agrees with dim `ib` of `b`.
LogicalResult expectDimsAgree(Operation *op, ShapedType a, int64_t ia,
                              const Twine &aName, ShapedType b,
                              int64_t ib, const Twine &bName);

/// Expects `t` to be exactly `[dims...]` (a dynamic dim on either side
/// agrees): "expects WHAT = [d0, ...], got T".
LogicalResult expectShape(Operation *op, ShapedType t,
                          ArrayRef<int64_t> dims, StringRef what);

/// Checks that all the given values share one element type.
LogicalResult expectSameElementType(Operation *op, ArrayRef<Value> values,
                                    ArrayRef<StringRef> names);

/// Checks that `narrow` (a key/value operand: a bf16/f16 cache, widened in
/// registers) has an element type no wider than `wide`'s (the query side,
/// whose type the arithmetic uses).
LogicalResult expectNoWider(Operation *op, Value narrow, StringRef narrowName,
                            Value wide, StringRef wideName);

/// Verifies `[batch, heads, seq, d]` operands of a GQA pair: the query-side
/// tensor `q` with Hq heads and the key-side tensor `k` with Hkv heads.
LogicalResult verifyHeadGroups(Operation *op, RankedTensorType q,
                               StringRef qName, RankedTensorType k,
                               StringRef kName);

/// Verifies mask kind / window consistency, shared by mask and sdpa.
LogicalResult verifyMaskAttrs(Operation *op, MaskKind kind,
                              std::optional<int64_t> window);

/// Verifies an optional per-sequence key-length operand `[batch]`.
LogicalResult verifyKvLengths(Operation *op, Value lengths,
                              RankedTensorType ref);

LogicalResult verifyPositiveFinite(Operation *op, double v, StringRef name);

LogicalResult verifyNormWeight(Operation *op, Value input, Value weight,
                               StringRef name);

/// Attention sinks: `sinks` (when given) is [heads] with one entry per query
/// head (dim 1 of `query`), of the query's element type.
LogicalResult verifySinks(Operation *op, Value sinks, Value query);

/// Verifies an optional relative-bias attribute with its table operand.
LogicalResult verifyRelativeBias(Operation *op, RelativeBiasAttr attr,
                                 Value table, int64_t heads);

} // namespace verify
} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_ATTN_IR_ATTNVERIFY_H
