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

#include <algorithm>

namespace mlir {
namespace attn {

/// The loop form attn-tile-attention produces: an scf.forall over threads
/// (cpu) or mapped to the GPU's grid (gpu).
enum class TileTarget { cpu, gpu };

#define GEN_PASS_DECL
#include "dialects/Attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Attn/Transforms/Passes.h.inc"

/// Replaces `op` by the unfused chain it stands for (scores materialized).
void decomposeSDPA(SDPAOp op, OpBuilder &builder);

} // namespace attn
} // namespace mlir

#endif // ATTN_DIALECT_ATTN_TRANSFORMS_PASSES_H
