//===- VectorToLLVM.cpp - vector to LLVM, per function when it can --------===//
//
// attn-convert-vector-to-llvm: upstream's convert-vector-to-llvm with the
// pipeline's settings on each function on the context's threads, or on the
// whole module when it holds vector.print (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_VECTORTOLLVMPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

struct VectorToLLVMPassImpl
    : attn::impl::VectorToLLVMPassBase<VectorToLLVMPassImpl> {
  using Base::Base;

  ConvertVectorToLLVMPassOptions upstream() const {
    ConvertVectorToLLVMPassOptions o;
    // Row sums of the micro-kernel: a shuffle tree, not 16 ordered adds.
    o.reassociateFPReductions = true;
    // The softmax's exp scales by 2^n with x86vector.avx512.mask.scalef
    // (vscalefps) when the micro-kernel has 16 lanes.
    o.x86Vector = true;
    o.amx = amx; // the tile products (MicroKernelAmx.cpp, GemmAmx.cpp)
    // The Kᵀ pack: 16×16 transposes as AVX-512 shuffle sequences.
    o.vectorTransposeLowering =
        lanes == 16 ? vector::VectorTransposeLowering::Shuffle16x16
                    : vector::VectorTransposeLowering::Shuffle1D;
    return o;
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    createConvertVectorToLLVMPass(upstream())->getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool prints =
        module.walk([](vector::PrintOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    OpPassManager pm(ModuleOp::getOperationName());
    if (prints)
      pm.addPass(createConvertVectorToLLVMPass(upstream()));
    else
      pm.addNestedPass<func::FuncOp>(createConvertVectorToLLVMPass(upstream()));
    if (failed(runPipeline(pm, module)))
      signalPassFailure();
  }
};

} // namespace
