//===- InitAll.cpp - attn dialect and pass registration -------------------===//
//
// This file implements the registration shared by attn-opt and attn-compile.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "dialects/Attn/IR/AttnDialect.h"
#include "dialects/Attn/Transforms/Passes.h"
#include "compiler/Conversion/Passes.h"
#include "compiler/Pipelines/Pipelines.h"

#include "dialects/Attn/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

void mlir::attn::registerAllDialects(DialectRegistry &registry) {
  registry.insert<attn::AttnDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, func::FuncDialect,
                  linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, omp::OpenMPDialect, scf::SCFDialect,
                  tensor::TensorDialect, vector::VectorDialect,
                  x86vector::X86VectorDialect, amx::AMXDialect>();
  // What the later stages print (affine.apply from the strided metadata,
  // cf after scf-to-cf, index and ub from the upstream lowerings): every
  // dialect a pipeline stage prints parses back in attn-opt.
  registry.insert<affine::AffineDialect, cf::ControlFlowDialect,
                  index::IndexDialect, ub::UBDialect>();
  // Bufferization of the upstream ops the tiled form uses.
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  // attn.online_attention bufferizes to its buffer form (for the CPU
  // micro-kernel).
  attn::registerBufferizableOpInterfaceExternalModels(registry);
  // The CUDA backend: gpu.launch, NVVM, serialization to PTX.
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, nvgpu::NVGPUDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  // The kernels' serialization translates their LLVM dialect (attn-opt's
  // attn-gpu-pipeline to PTX, as attn-compile's CUDA target does).
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
  // convert-gpu-to-nvvm and gpu-to-llvm lower the other dialects in and
  // around the kernels through their ConvertToLLVM interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  gpu::registerConvertGpuToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  // The tensor-core kernel's fragments (nvgpu.ldmatrix results).
  vector::registerConvertVectorToLLVMInterface(registry);
}

void mlir::attn::registerAllPasses() {
  registerAttnPasses();
  registerAttnConversionPasses();
  registerAttnPipelines();
  // one-shot-bufferize and friends, to inspect the micro-kernel.
  bufferization::registerBufferizationPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
}

void mlir::attn::bufferStderrForIRDumps(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = llvm::StringRef(argv[i]).ltrim('-');
    if (arg.starts_with("mlir-print-ir") || arg.starts_with("print-after") ||
        arg.starts_with("print-before") || arg.starts_with("print-changed")) {
      llvm::errs().SetBufferSize(1 << 20);
      // A crash still writes what the dumps had buffered: the last stage
      // before it is what a reader of the dumps is looking for.
      llvm::sys::AddSignalHandler([](void *) { llvm::errs().flush(); },
                                  nullptr);
      return;
    }
  }
}
