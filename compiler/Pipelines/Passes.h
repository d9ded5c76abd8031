//===- Passes.h - the pipelines' own codegen passes -----------*- C++ -*-===//
//
// Declares the passes of Passes.td (one file each in this directory).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_PIPELINES_PASSES_H
#define ATTN_COMPILER_PIPELINES_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace attn {

#define GEN_PASS_DECL
#include "compiler/Pipelines/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Pipelines/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_PIPELINES_PASSES_H
