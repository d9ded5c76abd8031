//===- ExpandShapeToReinterpretCast.cpp - expand_shape as a cast ----------===//
//
// attn-expand-shape-to-reinterpret-cast: memref.expand_shape as
// memref.reinterpret_cast (LLVM 22's expand-strided-metadata crashes on two
// dynamic sizes in a group).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_EXPANDSHAPETOREINTERPRETCASTPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Rewrites each memref.expand_shape as a memref.reinterpret_cast of its
/// source's base buffer: LLVM 22's expand-strided-metadata crashes on an
/// expand_shape whose group has two dynamic sizes ([B·S, n] -> [B, S, n],
/// how the projections' rows go back to tokens). Each group's innermost dim
/// keeps the source dim's stride; each outer one is the next one's times its
/// size.
struct ExpandShapeToReinterpretCastPassImpl
    : attn::impl::ExpandShapeToReinterpretCastPassBase<ExpandShapeToReinterpretCastPassImpl> {
  void runOnOperation() override {
    SmallVector<memref::ExpandShapeOp> ops;
    getOperation().walk([&](memref::ExpandShapeOp op) { ops.push_back(op); });
    for (memref::ExpandShapeOp op : ops) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      MemRefType srcTy = op.getSrcType();
      SmallVector<int64_t> srcStrides;
      int64_t srcOffset;
      if (failed(srcTy.getStridesAndOffset(srcStrides, srcOffset)))
        continue; // not strided: left to expand-strided-metadata
      auto md = memref::ExtractStridedMetadataOp::create(b, loc, op.getSrc());
      auto known = [&](int64_t v, Value dynamic) -> OpFoldResult {
        if (ShapedType::isDynamic(v))
          return dynamic;
        return b.getIndexAttr(v);
      };
      SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
      SmallVector<OpFoldResult> strides(sizes.size());
      for (auto [g, group] : llvm::enumerate(op.getReassociationIndices())) {
        OpFoldResult stride = known(srcStrides[g], md.getStrides()[g]);
        for (int64_t i = int64_t(group.size()) - 1; i >= 0; --i) {
          strides[group[i]] = stride;
          if (i == 0)
            break;
          std::optional<int64_t> cs = getConstantIntValue(stride);
          std::optional<int64_t> cn = getConstantIntValue(sizes[group[i]]);
          if (cs && cn) {
            stride = b.getIndexAttr(*cs * *cn);
            continue;
          }
          Value lhs = getValueOrCreateConstantIndexOp(b, loc, stride);
          Value rhs = getValueOrCreateConstantIndexOp(b, loc, sizes[group[i]]);
          stride = arith::MulIOp::create(b, loc, lhs, rhs).getResult();
        }
      }
      OpFoldResult offset = known(srcOffset, md.getOffset());
      auto cast = memref::ReinterpretCastOp::create(
          b, loc, op.getResultType(), md.getBaseBuffer(), offset, sizes,
          strides);
      op.replaceAllUsesWith(cast.getResult());
      op.erase();
    }
  }
};

} // namespace
