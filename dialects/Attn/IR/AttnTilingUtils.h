//===- AttnTilingUtils.h - what the ops' TilingInterfaces share -*- C++ -*-===//
//
// Internal to the attn dialect: its TilingInterfaces (AttnTiling.cpp,
// AttnPagedTiling.cpp) and the tilers that build on them
// (dialects/Attn/Transforms: the online form, the key-range cut).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECTS_ATTN_IR_ATTNTILINGUTILS_H
#define ATTN_DIALECTS_ATTN_IR_ATTNTILINGUTILS_H

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::attn {

/// Unit-stride slices for a tiled implementation, remembered as the
/// TilingResult's generated slices.
struct Slicer {
  OpBuilder &b;
  Location loc;
  SmallVector<Operation *> slices;
  Value operator()(Value source, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes) {
    SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
    auto op =
        tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes, strides);
    slices.push_back(op);
    return op.getResult();
  }
};

/// The size of dim `i` of a tensor or buffer: a slice's own size operand
/// where it is one (so that loops over a slice run to the size it was cut
/// with, not to a tensor.dim of it).
inline OpFoldResult mixedSize(OpBuilder &b, Location loc, Value x, int64_t i) {
  auto ty = cast<ShapedType>(x.getType());
  if (!ty.isDynamicDim(i))
    return b.getIndexAttr(ty.getDimSize(i));
  if (auto slice = x.getDefiningOp<tensor::ExtractSliceOp>()) {
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    int64_t kept = -1;
    for (unsigned d = 0; d < sizes.size(); ++d)
      if (!dropped[d] && ++kept == i)
        return sizes[d];
  }
  if (isa<TensorType>(ty))
    return tensor::DimOp::create(b, loc, x, i).getResult();
  return memref::DimOp::create(b, loc, x, i).getResult();
}

/// The iteration domain of an op tiled over its result's dims: [0, size)
/// of each dim of its destination `init`.
inline SmallVector<Range> resultDomain(OpBuilder &b, Location loc, Value init) {
  SmallVector<Range> domain;
  for (int64_t i = 0, e = cast<ShapedType>(init.getType()).getRank(); i < e;
       ++i)
    domain.push_back(Range{b.getIndexAttr(0),
                           tensor::getMixedSize(b, loc, init, i),
                           b.getIndexAttr(1)});
  return domain;
}

/// The KV heads a tile of `headTile` query heads reads in GQA groups of
/// `group`: headTile / group when the group divides it, 1 when it divides
/// the group; otherwise (or a dynamic tile) an error at `op`.
inline FailureOr<int64_t> kvHeadsOfTile(Operation *op, int64_t group,
                                        OpFoldResult headTile) {
  std::optional<int64_t> tile = getConstantIntValue(headTile);
  if (!tile)
    return op->emitOpError("tiling the query heads needs a static tile size "
                           "(one that divides the head count)");
  if (*tile % group == 0)
    return *tile / group;
  if (group % *tile == 0)
    return 1;
  return op->emitOpError() << "a tile of " << *tile
                           << " query heads straddles GQA groups of " << group
                           << "; tile the heads by a multiple or a divisor of "
                           << group;
}

} // namespace mlir::attn

#endif // ATTN_DIALECTS_ATTN_IR_ATTNTILINGUTILS_H
