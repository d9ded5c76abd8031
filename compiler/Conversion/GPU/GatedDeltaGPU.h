//===- GatedDeltaGPU.h - the Gated DeltaNet GPU kernels' shared pieces --*- C++
//-*-===//
//
// Internal to compiler/Conversion/GPU: what the recurrent gated-delta kernel
// (GatedDeltaKernel.cpp) hands the chunked one on tensor cores
// (GatedDeltaChunkKernel.cpp) when it compiles both into one entry.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_GPU_GATEDDELTAGPU_H
#define ATTN_COMPILER_CONVERSION_GPU_GATEDDELTAGPU_H

#include "compiler/Conversion/GPU/GatedDeltaChunkShape.h"
#include "compiler/Conversion/GPU/KernelEmitter.h"

namespace mlir {
namespace attn {
namespace gpu_kernels {

/// The kernel entry's buffers (host values, memrefs) and the rule's shape:
/// q, k [B, Hk, S, d_k], v [B, Hv, S, d_v], a gate g [B, Hv, S] (or
/// per channel, [B, Hv, S, d_k]) and β [B, Hv, S], the initial state [B, Hv,
/// d_k, d_v] (or null: zeros), the lengths [B] (or null), the output [B, Hv, S,
/// d_v] and the final state.
struct GatedDeltaBuffers {
  Value q, k, v, g, beta, init, lengths, out, state;
  double scale = 1.0;
  bool noDelta = false;
  /// A per-channel gate g [B, Hv, S, d_k] (Kimi Delta Attention).
  bool channel = false;
  int64_t hv = 1, hk = 1, dk = 0, dv = 0;
};

/// In a gated-delta kernel's launch: the batch row `bi`'s own tokens, [0,
/// len), len = clamp(lengths[bi], 0, seq) (seq without lengths).
inline Value sequenceLength(KernelEmitter &e, Value lengths, Value bi,
                            Value seq) {
  if (!lengths)
    return seq;
  Value raw = memref::LoadOp::create(e.b, e.loc, lengths, ValueRange{bi});
  Value idx = arith::IndexCastOp::create(e.b, e.loc, e.b.getIndexType(), raw);
  Value zero = e.c(0);
  Value low = e.max(idx, zero);
  return e.min(low, seq);
}

/// The chunked kernel's value columns per block.
int64_t chunkColumns(int64_t dv);
/// The chunked kernel's dynamic shared memory in bytes.
int64_t gatedDeltaChunkSharedMemory(int64_t dk, int64_t dv, bool noDelta,
                                    bool channel = false);
/// The chunked kernel's gpu.launch at e.b's insertion point (e.mmaElt the
/// tensor-core operand type).
void emitGatedDeltaChunked(KernelEmitter &e, const GatedDeltaBuffers &g);

} // namespace gpu_kernels
} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_GPU_GATEDDELTAGPU_H
