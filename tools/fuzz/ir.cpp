//===- ir.cpp - libFuzzer target: the attn dialect's parser and verifiers -===//
//
// Bytes as MLIR text: parse (with the attn dialect's custom syntax and
// verifiers); what parses and verifies must print and parse again to the
// same text.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/IR/AttnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    // attn and the dialects its tests use around it.
    auto *r = new DialectRegistry();
    r->insert<attn::AttnDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, func::FuncDialect,
              math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
              tensor::TensorDialect>();
    return r;
  }();
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  context.getDiagEngine().registerHandler([](Diagnostic &) {});
  // MLIR's lexer reads up to a NUL terminator (tools give it files read
  // whole, which have one): a copy of the bytes with one, so that a token at
  // the very end (an op name) is not scanned past the fuzzer's buffer.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module || failed(module->verify()))
    return 0;
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  OwningOpRef<ModuleOp> again = parseSourceString<ModuleOp>(printed, &context);
  if (!again)
    std::abort(); // printed IR must parse back
  std::string reprinted;
  llvm::raw_string_ostream os2(reprinted);
  again->print(os2);
  if (reprinted != printed)
    std::abort();
  return 0;
}
