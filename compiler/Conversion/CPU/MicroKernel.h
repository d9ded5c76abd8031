//===- MicroKernel.h - register-tiled CPU code for attn tiles ---*- C++ -*-===//
//
// The CPU lowering of `attn.online_attention`: when one-shot bufferization
// reaches an op it can take (f32 throughout, static head dims, no relative
// bias table), it emits the op's memref form directly as vector code with
// register micro-tiles (see MicroKernel.cpp). Ops it cannot take are lowered
// to linalg by convert-attn-to-linalg before bufferization.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H
#define ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
class Operation;
namespace attn {

/// Discardable attribute on attn.online_attention: the vector lanes (f32)
/// of the micro-kernel (16 for AVX-512, 8 for AVX2, 4 for SSE).
constexpr const char kVectorLanesAttr[] = "attn.vector_lanes";

/// True when the micro-kernel handles `op` (an attn.online_attention).
bool microKernelHandles(Operation *op);

/// Attaches BufferizableOpInterface to attn.online_attention; its
/// bufferization emits the micro-kernel.
void registerMicroKernelBufferization(DialectRegistry &registry);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_CPU_MICROKERNEL_H
