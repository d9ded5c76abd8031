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
#include "compiler/Target/CPU/CPUTarget.h"
#include "compiler/Target/CPU/Executable.h"
#include "compiler/Target/GPU/GPUTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace mlir;
namespace cl = llvm::cl;

namespace {


cl::OptionCategory category("attn-compile options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<config.json>"),
                               cl::Required, cl::cat(category));

cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));

/// The stages --compile-to can stop after: the pipeline's, then the target's.
enum class Stage {
  Attn,
  Fused,
  Tiled,
  Linalg,
  LLVMDialect,
  LLVMIR,
  Asm,
  Obj,
  GPU,
  PTX
};

cl::opt<Stage> compileTo(
    "compile-to",
    cl::desc("Stop after this stage and print it (default: build the "
             "executable named by -o)"),
    cl::values(
        clEnumValN(Stage::Attn, "attn",
                   "graph-level attn IR from the front end"),
        clEnumValN(Stage::Fused, "fused",
                   "after fusion: each attention chain is one attn.sdpa"),
        clEnumValN(Stage::Tiled, "tiled",
                   "after tiling: online-softmax loops, K/V tiles shared per "
                   "GQA group"),
        clEnumValN(Stage::Linalg, "linalg",
                   "kernels: tiles lowered to linalg on tensors"),
        clEnumValN(Stage::LLVMDialect, "llvm-dialect",
                   "kernels: bufferized, parallel (OpenMP), LLVM dialect"),
        clEnumValN(Stage::LLVMIR, "llvm-ir", "kernels: optimized LLVM IR"),
        clEnumValN(Stage::Asm, "asm", "kernels: x86-64 assembly"),
        clEnumValN(Stage::Obj, "obj", "kernels: an x86-64 object file"),
        clEnumValN(Stage::GPU, "gpu",
                   "--target=cuda kernels: gpu.launch_func and the outlined "
                   "gpu.module (one thread block per batch, KV head, query "
                   "block)"),
        clEnumValN(Stage::PTX, "ptx",
                   "--target=cuda kernels: PTX for --gpu-arch")),
    cl::cat(category));

enum class Emit { Exe, Obj, Shared };
cl::opt<Emit> emit(
    "emit", cl::desc("What -o writes when no --compile-to is given"),
    cl::values(clEnumValN(Emit::Exe, "exe", "an executable (default)"),
               clEnumValN(Emit::Obj, "obj",
                          "an object file with the kernels, plus NAME.h"),
               clEnumValN(Emit::Shared, "shared",
                          "a shared library (kernels, model table, runtime), "
                          "plus NAME.h")),
    cl::init(Emit::Exe), cl::cat(category));

cl::opt<std::string> cpu("cpu",
                         cl::desc("CPU to compile for: native (default), "
                                  "x86-64-v3 (AVX2) or x86-64-v4 (AVX-512)"),
                         cl::init("native"), cl::cat(category));

cl::opt<unsigned> optLevel("O", cl::desc("Optimization level 0-3 (default 3)"),
                           cl::Prefix, cl::init(3), cl::cat(category));

cl::opt<bool> kernelsOnly(
    "kernels",
    cl::desc("Emit only the attention kernels (<kind>_sdpa entry points) "
             "instead of the model; implied by the stages after tiled"),
    cl::init(false), cl::cat(category));

cl::opt<bool> keepReference(
    "reference",
    cl::desc("Keep an unfused <kind>_reference copy of each layer kind "
             "(default true; --reference=false omits it)"),
    cl::init(true), cl::cat(category));

cl::opt<std::string> target(
    "target",
    cl::desc("Target: cpu (default) or cuda (NVIDIA GPUs; 'gpu' is an alias)"),
    cl::init("cpu"), cl::cat(category));

cl::opt<std::string> gpuPrecision(
    "gpu-precision",
    cl::desc("--target=cuda: fp32 (CUDA cores, the accuracy path; default) "
             "or bf16 (tensor cores: mma.sync on bf16 inputs, fp32 "
             "accumulators)"),
    cl::init("fp32"), cl::cat(category));

cl::opt<std::string> gpuArch("gpu-arch",
                             cl::desc("--target=cuda: sm_90 (H100/H200, "
                                      "default) or sm_80 (A100)"),
                             cl::init("sm_90"), cl::cat(category));

cl::opt<int64_t> qBlock("q-block",
                        cl::desc("Query rows per tile (0: target default)"),
                        cl::init(0), cl::cat(category));

cl::opt<int64_t> kvBlock("kv-block",
                         cl::desc("Keys per tile (0: target default)"),
                         cl::init(0), cl::cat(category));

cl::opt<int64_t> splitTarget(
    "split-target",
    cl::desc("Split-K decode (flash-decoding): a query of one block whose "
             "batch x KV heads is below this many gets its key range split "
             "across threads, merged by log-sum-exp (0: never; default 16)"),
    cl::init(16), cl::cat(category));

cl::opt<bool> describe("describe",
                       cl::desc("Print the normalized model description as "
                                "JSON instead of IR"),
                       cl::init(false), cl::cat(category));

/// Writes the kernels object and the model table to a temporary directory
/// and links them with the runtime into `outputPath` (an executable, or with
/// `shared` a library; `cuda`: host code launching GPU kernels, linked to
/// need only the C library). Returns the exit code, errors printed.
int linkBuild(const attn::ModelSpec &spec, llvm::StringRef object, bool shared,
              bool cuda, bool bf16) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("attn-compile", dir)) {
    llvm::errs() << "attn-compile: error: cannot create a temporary "
                    "directory: "
                 << ec.message() << "\n";
    return 1;
  }
  std::string obj = (dir + "/kernels.o").str();
  std::string table = (dir + "/model_table.cpp").str();
  std::string error;
  // Each file is opened, written and closed on its own: an error on any of
  // them names that file (a full disk shows up at close, not at open).
  auto writeFile = [&](const std::string &path,
                       llvm::function_ref<void(llvm::raw_ostream &)> write) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec) {
      write(os);
      os.close();
      ec = os.error();
      os.clear_error();
    }
    if (ec)
      error = "cannot write '" + path + "': " + ec.message();
    return !ec;
  };
  bool linked =
      writeFile(obj, [&](llvm::raw_ostream &os) { os << object; }) &&
      writeFile(table,
                [&](llvm::raw_ostream &os) {
                  attn::writeModelTable(spec,
                                        attn::describeModel(spec).dump(2), os,
                                        cuda, bf16);
                }) &&
      attn::linkExecutable(obj, table, outputPath, shared, error,
                           /*hostOnly=*/cuda);
  llvm::sys::fs::remove_directories(dir);
  if (!linked) {
    llvm::errs() << "attn-compile: error: " << error << "\n";
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  // libLLVM registers hundreds of backend options; --help shows ours
  // (--help-hidden shows all, including the MLIR printing options).
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-compile: compile a Hugging Face config.json's attention\n\n"
      "  attn-compile config.json -o NAME [--cpu=native|x86-64-v3|x86-64-v4] "
      "[-O3]\n"
      "  attn-compile config.json --describe\n"
      "  attn-compile config.json --compile-to=attn|fused|tiled|linalg|"
      "llvm-dialect|llvm-ir|asm|obj [-o FILE]\n"
      "  attn-compile config.json --target=cuda [--gpu-arch=sm_90|sm_80] "
      "[--gpu-precision=fp32|bf16] [-o NAME | --compile-to=tiled|gpu|ptx]\n");

  DialectRegistry registry;
  attn::registerAllDialects(registry);
  attn::registerCPUTranslations(registry);
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
  std::function<bool()> headerAfterOutput;
  if (describe) {
    os << attn::describeModel(spec).dump(2) << "\n";
  } else {
    bool building = compileTo.getNumOccurrences() == 0;
    Stage stage = building ? Stage::Obj : compileTo.getValue();
    if (building && outputPath == "-") {
      llvm::errs() << "attn-compile: error: building an executable needs "
                      "-o NAME (or --compile-to=STAGE, or --describe)\n";
      return 1;
    }
    bool kernels = kernelsOnly || stage >= Stage::Linalg ||
                   (target != "cpu" && stage == Stage::Tiled);
    // The CUDA target compiles the attention entries only; blocks (projections,
    // RoPE) and the model stay on the CPU for now.
    OwningOpRef<ModuleOp> module =
        kernels ? attn::emitKernelModule(spec, *src,
                                         /*withBlocks=*/target == "cpu")
                : attn::emitAttnModule(spec, *src);
    if (!module)
      return 1;
    if (failed(module->verify()))
      return 1;
    if (target != "cpu" && target != "cuda" && target != "gpu") {
      llvm::errs() << "attn-compile: error: unknown --target '" << target
                   << "'; accepted: cpu, cuda (gpu is an alias of cuda)\n";
      return 1;
    }
    bool cuda = target != "cpu";
    bool gpuStage = stage == Stage::GPU || stage == Stage::PTX;
    if (gpuStage && !cuda) {
      llvm::errs() << "attn-compile: error: --compile-to="
                   << (stage == Stage::GPU ? "gpu" : "ptx")
                   << " needs --target=cuda\n";
      return 1;
    }
    if (gpuPrecision != "fp32" && gpuPrecision != "bf16") {
      llvm::errs() << "attn-compile: error: unknown --gpu-precision '"
                   << gpuPrecision << "'; accepted: fp32, bf16\n";
      return 1;
    }
    bool cudaBuild = cuda && building;
    if (cuda && !building && stage >= Stage::Linalg && !gpuStage) {
      llvm::errs() << "attn-compile: error: --target=cuda compiles to "
                      "--compile-to=attn|fused|tiled|gpu|ptx or to an "
                      "executable (-o NAME); the other stages are the CPU's\n";
      return 1;
    }
    if (cudaBuild && emit != Emit::Exe) {
      llvm::errs() << "attn-compile: error: --target=cuda builds "
                      "executables; --emit=obj and --emit=shared are "
                      "CPU-only for now\n";
      return 1;
    }
    if (qBlock < 0 || kvBlock < 0) {
      llvm::errs() << "attn-compile: error: --q-block and --kv-block must be "
                      "positive (0 picks the target default)\n";
      return 1;
    }
    if (splitTarget < 0) {
      llvm::errs() << "attn-compile: error: --split-target must be 0 (no "
                      "split-K) or more, got "
                   << splitTarget << "\n";
      return 1;
    }
    if (optLevel > 3) {
      llvm::errs() << "attn-compile: error: -O" << optLevel
                   << " is not a level; accepted: -O0 to -O3\n";
      return 1;
    }
    // --target=cuda --compile-to=tiled shows the tiled form the GPU
    // lowering consumes (GPU block sizes, no split-K, kernel entries).
    bool cudaTiled = cuda && stage == Stage::Tiled;
    if (gpuStage || cudaBuild || cudaTiled) {
      attn::initializeNVPTXTarget();
      attn::GPUPipelineOptions gpuOptions;
      gpuOptions.arch = gpuArch;
      gpuOptions.qBlock = qBlock;
      gpuOptions.kvBlock = kvBlock;
      gpuOptions.precision = gpuPrecision;
      gpuOptions.toPTX = stage != Stage::GPU;
      gpuOptions.stopAfterTiled = cudaTiled;
      PassManager pm(&context);
      if (failed(applyPassManagerCLOptions(pm)))
        return 1;
      std::string pipelineError;
      if (failed(attn::buildAttnGPUPipeline(pm, gpuOptions, &pipelineError))) {
        llvm::errs() << "attn-compile: error: " << pipelineError << "\n";
        return 1;
      }
      if (failed(pm.run(*module)))
        return 1;
      if (cudaBuild) {
        // The host code (kernel launches, the PTX embedded and loaded at
        // start-up) as an x86-64 object, linked with the model table and
        // the runtime, whose CUDA part loads libcuda.so.1 with dlopen.
        attn::CPUTargetOptions hostOptions;
        hostOptions.cpu = cpu;
        hostOptions.optLevel = optLevel;
        std::string targetError;
        llvm::SmallString<0> buffer;
        llvm::raw_svector_ostream bos(buffer);
        if (failed(attn::emitCPU(*module, hostOptions, attn::CPUOutput::Object,
                                 bos, targetError))) {
          llvm::errs() << "attn-compile: error: " << targetError << "\n";
          return 1;
        }
        return linkBuild(spec, buffer, /*shared=*/false, /*cuda=*/true,
                         gpuPrecision == "bf16");
      }
      if (stage == Stage::GPU || cudaTiled) {
        module->print(os);
        os << "\n";
      } else {
        std::string ptxError;
        if (failed(attn::writePTX(*module, os, ptxError))) {
          llvm::errs() << "attn-compile: error: " << ptxError << "\n";
          return 1;
        }
      }
    } else {
    attn::PipelineOptions options;
    switch (stage) {
    case Stage::Attn:
      options.stopAfter = "attn";
      break;
    case Stage::Fused:
      options.stopAfter = "fused";
      break;
    case Stage::Tiled:
      options.stopAfter = "tiled";
      break;
    case Stage::Linalg:
      options.stopAfter = "linalg";
      break;
    default:
      options.stopAfter = "llvm-dialect";
      break;
    }
    options.reference = keepReference || stage >= Stage::Linalg;
    options.target = target;
    options.qBlock = qBlock;
    options.kvBlock = kvBlock;
    options.splitTarget = splitTarget;
    if (int64_t lanes = attn::cpuVectorLanes(cpu))
      options.vectorLanes = lanes;
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
    if (stage <= Stage::LLVMDialect) {
      module->print(os);
      os << "\n";
    } else {
      attn::CPUTargetOptions cpuOptions;
      cpuOptions.cpu = cpu;
      cpuOptions.optLevel = optLevel;
      attn::CPUOutput kind = stage == Stage::LLVMIR ? attn::CPUOutput::LLVMIR
                             : stage == Stage::Asm  ? attn::CPUOutput::Assembly
                                                    : attn::CPUOutput::Object;
      std::string targetError;
      llvm::SmallString<0> buffer;
      llvm::raw_svector_ostream bos(buffer);
      if (failed(attn::emitCPU(*module, cpuOptions, kind, bos, targetError))) {
        llvm::errs() << "attn-compile: error: " << targetError << "\n";
        return 1;
      }
      if (building) {
        // The header of the entry points, for --emit=obj and shared.
        auto writeHeader = [&]() -> bool {
          std::string header =
              (llvm::sys::path::parent_path(outputPath).empty()
                   ? std::string()
                   : (llvm::sys::path::parent_path(outputPath) + "/").str()) +
              llvm::sys::path::stem(outputPath).str() + ".h";
          std::error_code hec;
          llvm::raw_fd_ostream h(header, hec);
          if (hec) {
            llvm::errs() << "attn-compile: error: cannot write '" << header
                         << "': " << hec.message() << "\n";
            return false;
          }
          attn::writeKernelHeader(spec, h);
          return true;
        };
        if (emit == Emit::Obj) {
          // The object goes out like any stage; the header after it.
          os << buffer;
          headerAfterOutput = writeHeader;
        } else {
        // Kernels, model table and runtime -> the executable or library.
        if (linkBuild(spec, buffer, emit == Emit::Shared, /*cuda=*/false,
                      /*bf16=*/false))
          return 1;
        if (emit == Emit::Shared && !writeHeader())
          return 1;
        return 0;
        }
      } else {
        os << buffer;
      }
    }
    } // CPU pipeline
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
  if (headerAfterOutput && !headerAfterOutput())
    return 1;
  out->keep();
  return 0;
}
