//===- Passes.h - attn conversion passes ----------------------------*- C++ -*-===//
//
// This file declares the conversions out of the `attn` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_PASSES_H
#define ATTN_COMPILER_CONVERSION_PASSES_H

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace attn {

/// The arithmetic of the CUDA kernel: fp32 on CUDA cores, or bf16 inputs on
/// tensor cores with fp32 accumulation.
enum class GPUPrecision { fp32, bf16, f16 };

#define GEN_PASS_DECL
#include "compiler/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Conversion/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_PASSES_H
