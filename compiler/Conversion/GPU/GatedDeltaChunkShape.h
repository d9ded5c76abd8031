//===- GatedDeltaChunkShape.h - which shapes the chunked GPU kernel takes -===//
//
// Header-only, no MLIR: what convert-attn-to-gpu and the model table (check's
// tolerance) both ask of a gated-delta kind.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_GPU_GATEDDELTACHUNKSHAPE_H
#define ATTN_COMPILER_CONVERSION_GPU_GATEDDELTACHUNKSHAPE_H

#include <cstdint>

namespace mlir {
namespace attn {
namespace gpu_kernels {

/// Whether the chunked tensor-core kernel (GatedDeltaChunkKernel.cpp) takes
/// a gated-delta shape: d_k 64 or 128, d_v a multiple of 64 or a multiple
/// of 16 below it; a scalar gate or (Kimi Delta Attention) a per-channel
/// one, GatedDeltaChunkChannel.cpp.
inline bool gatedDeltaChunkFits(int64_t dk, int64_t dv) {
  return (dk == 64 || dk == 128) && dv % 16 == 0 && (dv % 64 == 0 || dv < 64);
}

} // namespace gpu_kernels
} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_GPU_GATEDDELTACHUNKSHAPE_H
