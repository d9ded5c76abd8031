//===- InitAll.cpp - attn dialect and pass registration -------------------===//
//
// This file implements the registration shared by attn-opt and attn-compile.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "dialects/Attn/IR/AttnDialect.h"
#include "dialects/Attn/Transforms/Passes.h"
#include "compiler/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void mlir::attn::registerAllDialects(DialectRegistry &registry) {
  registry.insert<attn::AttnDialect, arith::ArithDialect, func::FuncDialect,
                  math::MathDialect, scf::SCFDialect, tensor::TensorDialect>();
}

void mlir::attn::registerAllPasses() {
  registerAttnPasses();
  registerAttnPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
}
