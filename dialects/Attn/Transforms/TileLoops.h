//===- TileLoops.h - index arithmetic and key loops for tilers -*- C++ -*-===//
//
// Internal to dialects/Attn/Transforms (the attention and Gated DeltaNet
// tilers, the online form).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECTS_ATTN_TRANSFORMS_TILELOOPS_H
#define ATTN_DIALECTS_ATTN_TRANSFORMS_TILELOOPS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace mlir::attn {

/// Small arith helpers on index values.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivSIOp::create(b, loc, x, y);
  }
  Value dim(Value t, int64_t i) { return tensor::DimOp::create(b, loc, t, i); }
};

/// Tiles `op` by `tileSizes` into scf.for loops (scf::tileUsingSCF through
/// its TilingInterface; a reduction dim's loop carries the destinations),
/// replaces it by the loops' results and merges the slices of slices that
/// tiling a slice operand makes into one slice each. Returns the outermost
/// loop, with `b`'s insertion point after it; failure when upstream tiling
/// fails (the op is left in place).
FailureOr<Operation *> tileIntoLoops(OpBuilder &b, TilingInterface op,
                                     ArrayRef<OpFoldResult> tileSizes);

} // namespace mlir::attn

#endif // ATTN_DIALECTS_ATTN_TRANSFORMS_TILELOOPS_H
