//===- GPUTarget.cpp - PTX out of the CUDA pipeline -----------------------===//
//
// This file implements the NVPTX initialization and the PTX extraction of
// attn-compile --target=cuda.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/GPU/GPUTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;

void mlir::attn::initializeNVPTXTarget() {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

LogicalResult mlir::attn::writePTX(ModuleOp module, llvm::raw_ostream &os,
                                   std::string &error) {
  int count = 0;
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute a : binary.getObjects()) {
      auto object = dyn_cast<gpu::ObjectAttr>(a);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      os << "// gpu.binary @" << binary.getSymName() << " for "
         << object.getTarget() << "\n"
         << object.getObject().getValue() << "\n";
      ++count;
    }
  });
  if (count == 0) {
    error = "the module has no PTX (no attention kernel to compile?)";
    return failure();
  }
  return success();
}
