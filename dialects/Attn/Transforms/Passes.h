//===- Passes.h - attn dialect passes ------------------------------*- C++ -*-===//
//
// This file declares the passes of the `attn` dialect and the helpers they
// share with other components.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_H
#define ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_H

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace attn {

/// The machine whose tile-size defaults and loop shapes attn-tile-attention
/// produces.
enum class TileTarget { cpu, gpu };

/// The CPU's tile sizes, attn-tile-attention's defaults for --target=cpu:
/// a tile of q-block rows per head (at least minGroupRows over the G heads
/// of a GQA group, so that each K/V chunk's pack serves as many register
/// blocks) by kvBlock keys, decodeKvBlock keys when the group's rows fit one
/// micro-kernel call (at most 16: decode).
struct CPUTileDefaults {
  static constexpr int64_t qBlock = 64, minGroupRows = 256, kvBlock = 64,
                           decodeKvBlock = 1024;
  /// The q-block for G query heads per KV head (`option`: --q-block, 0 for
  /// the default).
  static int64_t qBlockFor(int64_t group, int64_t option) {
    if (option > 0)
      return option;
    return group > 0 && minGroupRows / group > qBlock ? minGroupRows / group
                                                      : qBlock;
  }
};

#define GEN_PASS_DECL
#include "dialects/Attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Attn/Transforms/Passes.h.inc"

/// Replaces `op` by the unfused chain it stands for (scores materialized).
void decomposeSDPA(SDPAOp op, OpBuilder &builder);

} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_H
