//===- MicroKernel.h - register-tiled CPU code for attn tiles ---*- C++ -*-===//
//
// The CPU lowering of `attn.online_attention`: attn-cpu-micro-kernel (see
// MicroKernel.cpp and Passes.td) turns the op's buffer form into vector code
// with register micro-tiles. The ops it cannot take (not f32, dynamic head
// dims, a relative bias table) are lowered to linalg by
// convert-attn-to-linalg before bufferization.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H
#define ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H

#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringRef.h"

namespace mlir {
class Operation;
namespace attn {

/// True when the micro-kernel handles `op` (an attn.online_attention, on
/// tensors or buffers).
bool microKernelHandles(Operation *op);

/// A unit attribute on a func.func: its LLVM function gets `noinline` (set
/// by the CPU target before translation; FuncToLLVM keeps it discardable).
/// The micro-kernel's tile functions carry it.
constexpr llvm::StringLiteral kNoInlineAttr = "attn.no_inline";

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H
