//===- attn-opt.cpp - the attn optimizer driver ---------------------------===//
//
// This file implements attn-opt, an mlir-opt for the `attn` dialect: it parses
// IR, runs the passes and pipelines named on the command line (the attn
// passes, `attn-pipeline`, `attn-gpu-pipeline` and every upstream pass), and
// prints IR.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/Dialect/Func/TransformOps/FuncTransformOps.h"
#include "mlir/Dialect/Linalg/TransformOps/DialectExtension.h"
#include "mlir/Dialect/SCF/TransformOps/SCFTransformOps.h"
#include "mlir/Dialect/Tensor/TransformOps/TensorTransformOps.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::attn::bufferStderrForIRDumps(argc, argv);
  mlir::DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  // The transform dialect drives upstream tiling of attn.sdpa through its
  // TilingInterface (transform.structured.tile_using_forall).
  registry.insert<mlir::transform::TransformDialect>();
  mlir::func::registerTransformDialectExtension(registry);
  mlir::linalg::registerTransformDialectExtension(registry);
  mlir::scf::registerTransformDialectExtension(registry);
  mlir::tensor::registerTransformDialectExtension(registry);
  // Every upstream pass, so that any stage of attn-compile's pipelines can
  // be replayed and bisected here (the dialects are those the pipelines
  // produce, registered above).
  mlir::registerAllPasses();
  mlir::attn::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attn optimizer driver: attention IR in, IR out\n",
      registry));
}
