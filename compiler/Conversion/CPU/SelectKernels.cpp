//===- SelectKernels.cpp - the CPU target's choice of tile kernels --------===//
//
// This file implements attn-cpu-select-kernels: the CPU target marks the
// tile ops its micro-kernels take with `attn.kernel =
// #attn.cpu_kernel<lanes = N>`, before the generic convert-attn-to-linalg,
// which leaves them for attn-cpu-micro-kernel (after bufferization). What
// the micro-kernels handle is decided here, by the target, and nowhere in
// the generic conversion.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CPUSELECTKERNELSPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

struct CPUSelectKernelsPass
    : attn::impl::CPUSelectKernelsPassBase<CPUSelectKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    int64_t n = lanes;
    if (n != 4 && n != 8 && n != 16) {
      emitError(getOperation().getLoc())
          << "attn-cpu-select-kernels: lanes must be 4, 8 or 16 (SSE, AVX2, "
             "AVX-512 f32 lanes), not "
          << n;
      return signalPassFailure();
    }
    auto choice = CPUKernelAttr::get(&getContext(), n);
    getOperation().walk([&](Operation *op) {
      bool takes = (isa<OnlineAttentionOp>(op) && microKernelHandles(op)) ||
                   (isa<GatedDeltaChunkOp>(op) && gatedDeltaKernelHandles(op));
      if (takes)
        op->setAttr(CPUKernelAttr::kAttrName, choice);
    });
  }
};

} // namespace
