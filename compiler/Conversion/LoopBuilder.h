//===- LoopBuilder.h - scf.for built at a builder's insertion point -*- C++ -*-===//
//
// This file declares the loop helper the code emitters share (the CPU
// micro-kernel, the GPU kernels): an scf.for whose body a callback builds
// with the same builder and whose yielded values it returns.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_LOOPBUILDER_H
#define ATTN_COMPILER_CONVERSION_LOOPBUILDER_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace attn {

/// scf.for [lb, ub) by `step` carrying `init`; `body(iv, iterArgs)` builds
/// at `b`'s insertion point inside the loop and returns the next values.
inline scf::ForOp
buildForLoop(OpBuilder &b, Location loc, Value lb, Value ub, Value step,
             ValueRange init,
             function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto f = scf::ForOp::create(b, loc, lb, ub, step, init);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(f.getBody());
  SmallVector<Value> next = body(f.getInductionVar(), f.getRegionIterArgs());
  if (f.getBody()->mightHaveTerminator())
    f.getBody()->getTerminator()->erase();
  b.setInsertionPointToEnd(f.getBody());
  scf::YieldOp::create(b, loc, next);
  return f;
}

/// scf.for [lb, ub) by `step` without loop-carried values; `body(iv)`
/// builds its body.
inline scf::ForOp buildForLoop(OpBuilder &b, Location loc, Value lb, Value ub,
                               Value step, function_ref<void(Value)> body) {
  return buildForLoop(b, loc, lb, ub, step, ValueRange{},
                      [&](Value iv, ValueRange) {
                        body(iv);
                        return SmallVector<Value>{};
                      });
}

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_LOOPBUILDER_H
