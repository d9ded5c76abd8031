//===- attn-compile.cpp - the attn compiler driver ------------------------===//
//
// This file implements attn-compile: it reads a Hugging Face config.json,
// normalizes it, and prints the model's attention as IR at the stage named by
// --compile-to, or describes it as JSON with --describe. Errors are located
// in the config (config.json:line:col), exit non-zero and write nothing.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Diagnostics.h"
#include "compiler/Frontend/Frontend.h"
#include "compiler/InitAll.h"
#include "compiler/Pipelines/Pipelines.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {


cl::OptionCategory category("attn-compile options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<config.json>"),
                               cl::Required, cl::cat(category));

cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));

cl::opt<attn::PipelineStage> compileTo(
    "compile-to", cl::desc("Stop after this stage and print its IR"),
    cl::values(
        clEnumValN(attn::PipelineStage::Attn, "attn",
                   "graph-level attn IR from the front end"),
        clEnumValN(attn::PipelineStage::Fused, "fused",
                   "after fusion: each attention chain is one attn.sdpa"),
        clEnumValN(attn::PipelineStage::Tiled, "tiled",
                   "after tiling: online-softmax loops, K/V tiles shared per "
                   "GQA group")),
    cl::init(attn::PipelineStage::Attn), cl::cat(category));

cl::opt<bool> keepReference(
    "reference",
    cl::desc("Keep an unfused <kind>_reference copy of each layer kind "
             "(default true; --reference=false omits it)"),
    cl::init(true), cl::cat(category));

cl::opt<std::string> target("target", cl::desc("Target: cpu (default) or gpu"),
                            cl::init("cpu"), cl::cat(category));

cl::opt<int64_t> qBlock("q-block",
                        cl::desc("Query rows per tile (0: target default)"),
                        cl::init(0), cl::cat(category));

cl::opt<int64_t> kvBlock("kv-block",
                         cl::desc("Keys per tile (0: target default)"),
                         cl::init(0), cl::cat(category));

cl::opt<bool> describe("describe",
                       cl::desc("Print the normalized model description as "
                                "JSON instead of IR"),
                       cl::init(false), cl::cat(category));

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&category, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-compile: compile a Hugging Face config.json's attention\n\n"
      "  attn-compile config.json --describe\n"
      "  attn-compile config.json --compile-to=attn|fused|tiled [-o out.mlir]\n");

  DialectRegistry registry;
  attn::registerAllDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr srcMgr;
  attn::SnippetDiagnosticHandler diagHandler(&context, srcMgr, "attn-compile",
                                            llvm::errs());

  std::unique_ptr<attn::ConfigSource> src =
      attn::ConfigSource::load(inputPath, srcMgr, &context);
  if (!src)
    return 1;
  attn::ModelSpec spec;
  if (!attn::normalizeConfig(*src, spec))
    return 1;

  // Produce everything before opening the output, so that a failure leaves
  // no file behind.
  std::string text;
  llvm::raw_string_ostream os(text);
  if (describe) {
    os << attn::describeModel(spec).dump(2) << "\n";
  } else {
    OwningOpRef<ModuleOp> module = attn::emitAttnModule(spec, *src);
    if (!module)
      return 1;
    if (failed(module->verify()))
      return 1;
    if (target != "cpu" && target != "gpu") {
      llvm::errs() << "attn-compile: error: unknown --target '" << target
                   << "'; accepted: cpu, gpu\n";
      return 1;
    }
    if (qBlock < 0 || kvBlock < 0) {
      llvm::errs() << "attn-compile: error: --q-block and --kv-block must be "
                      "positive (0 picks the target default)\n";
      return 1;
    }
    attn::PipelineOptions options;
    options.stopAfter = compileTo == attn::PipelineStage::Attn    ? "attn"
                        : compileTo == attn::PipelineStage::Fused ? "fused"
                                                                  : "tiled";
    options.reference = keepReference;
    options.target = target;
    options.qBlock = qBlock;
    options.kvBlock = kvBlock;
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    std::string pipelineError;
    if (failed(attn::buildAttnPipeline(pm, options, &pipelineError))) {
      llvm::errs() << "attn-compile: error: " << pipelineError << "\n";
      return 1;
    }
    if (failed(pm.run(*module)))
      return 1;
    module->print(os);
    os << "\n";
  }

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out =
      openOutputFile(outputPath, &error);
  if (!out) {
    llvm::errs() << "attn-compile: error: " << error << "\n";
    return 1;
  }
  out->os() << text;
  out->os().flush();
  if (out->os().has_error()) {
    llvm::errs() << "attn-compile: error: cannot write '" << outputPath
                 << "'\n";
    out->os().clear_error();
    return 1;
  }
  out->keep();
  return 0;
}
