//===- config.cpp - libFuzzer target: the config front end ----------------===//
//
// Bytes as a config.json: parse, normalize, describe (dumped as JSON), emit
// the attn IR (model graph and kernel module) and verify it. Any input must
// end in a clean error or valid IR: a crash, a sanitizer report, a leak or a
// verifier failure on emitted IR is a finding.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/ConfigSource.h"
#include "compiler/Frontend/Frontend.h"
#include "dialects/Attn/IR/AttnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdlib>

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    // The dialects the front end emits (not the passes': a small build).
    auto *r = new DialectRegistry();
    r->insert<attn::AttnDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, func::FuncDialect,
              memref::MemRefDialect, tensor::TensorDialect>();
    return r;
  }();
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  // Errors are the expected outcome of most inputs: keep them quiet.
  context.getDiagEngine().registerHandler([](Diagnostic &) {});
  llvm::SourceMgr srcMgr;
  std::unique_ptr<attn::ConfigSource> src = attn::ConfigSource::parse(
      "fuzz.json", std::string(reinterpret_cast<const char *>(data), size),
      srcMgr, &context);
  if (!src)
    return 0;
  attn::ModelSpec spec;
  if (!attn::normalizeConfig(*src, spec))
    return 0;
  (void)attn::describeModel(spec).dump(
      2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  // Huge models take long to emit without telling the fuzzer anything new.
  if (spec.layers.size() > 64)
    return 0;
  for (bool kernels : {false, true}) {
    OwningOpRef<ModuleOp> module =
        kernels ? attn::emitKernelModule(spec, *src)
                : attn::emitAttnModule(spec, *src);
    // A config the front end accepted must give verified IR (or a clean,
    // reported refusal: a null module).
    if (module && failed(module->verify()))
      std::abort();
  }
  return 0;
}
