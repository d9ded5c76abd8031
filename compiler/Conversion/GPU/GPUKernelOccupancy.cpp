//===- GPUKernelOccupancy.cpp - attn-gpu-kernel-occupancy -----------------===//
//
// This file implements attn-gpu-kernel-occupancy: it asks ptxas for one
// resident block per SM at least (`nvvm.minctasm = 1` on the outlined
// kernels), so that the online-softmax state stays in registers instead of
// spilling under the default occupancy target.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_GPUKERNELOCCUPANCYPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct GPUKernelOccupancyPass
    : attn::impl::GPUKernelOccupancyPassBase<GPUKernelOccupancyPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::GPUFuncOp f) {
      if (f.isKernel())
        f->setAttr("nvvm.minctasm",
                   IntegerAttr::get(IntegerType::get(f.getContext(), 32), 1));
    });
  }
};
} // namespace
