//===- attn-opt.cpp - the attn optimizer driver ---------------------------===//
//
// This file implements attn-opt, an mlir-opt for the `attn` dialect: it parses
// IR, runs the passes and pipelines named on the command line, and prints IR.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::attn::registerAllDialects(registry);
  mlir::attn::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attn optimizer driver: attention IR in, IR out\n",
      registry));
}
