//===- TileLoops.h - upstream tiling into scf.for, for the tilers -*- C++
//-*-===//
//
// Internal to dialects/Attn/Transforms (TileAttention.cpp,
// TileGatedDelta.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECTS_ATTN_TRANSFORMS_TILELOOPS_H
#define ATTN_DIALECTS_ATTN_TRANSFORMS_TILELOOPS_H

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace mlir::attn {

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
