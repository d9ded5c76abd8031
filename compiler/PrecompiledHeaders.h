//===- PrecompiledHeaders.h - the MLIR headers most sources parse -*- C++ -*-===//
//
// The upstream MLIR/LLVM headers that nearly every compiler source includes,
// directly or through compiler/Conversion/Passes.h. The build precompiles them
// once (CMake option ATTN_PCH, default ON) and every compiler library and tool
// reuses that header: parsing them took ~20 s of each source's ~25 s on the
// 2-core machines CI runs on. Only upstream headers belong here (the project's
// own headers depend on tablegen output); including one here changes no
// source's meaning: a build with -DATTN_PCH=OFF generates the same IR for
// every config (tools/check-host-compiler.sh between the two builds).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_PRECOMPILEDHEADERS_H
#define ATTN_COMPILER_PRECOMPILEDHEADERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#endif // ATTN_COMPILER_PRECOMPILEDHEADERS_H
