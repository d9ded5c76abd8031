//===- attn-compile.cpp - the attn compiler driver ------------------------===//
//
// This file implements attn-compile: it reads a Hugging Face config.json,
// normalizes it, and prints the model's attention as IR at the stage named by
// --compile-to, or describes it as JSON with --describe. Errors are located
// in the config (config.json:line:col), exit non-zero and write nothing.
//
//===----------------------------------------------------------------------===//

#include "CudaOptions.h"
#include "Description.h"
#include "Files.h"

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/CPU/TileChoice.h"
#include "compiler/Frontend/Diagnostics.h"
#include "compiler/Frontend/Frontend.h"
#include "compiler/InitAll.h"
#include "compiler/Pipelines/Pipelines.h"
#include "compiler/Target/CPU/CPUTarget.h"
#include "compiler/Target/CPU/Executable.h"
#include "compiler/Target/CPU/ModelTable.h"
#include "compiler/Target/GPU/GPUTarget.h"
#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdlib>

#include <algorithm>
#include <functional>

using namespace mlir;
namespace cl = llvm::cl;
using attn_compile::sameFile;
using attn_compile::writeFile;

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

cl::opt<std::string>
    cpu("cpu",
        cl::desc("CPU to compile for: native (default), x86-64-v3 (AVX2), "
                 "x86-64-v4 (AVX-512) or an x86-64 CPU name LLVM knows "
                 "(sapphirerapids, znver4, ...: its features and scheduling "
                 "model, for cross-compiling)"),
        cl::init("native"), cl::cat(category));

// -O2 by default: -O3 adds LLVM's non-trivial loop unswitching and its loop
// unroller (off below -O3: CPUTarget.cpp), which make the kernels' code much
// larger and the build longer for no measured kernel speed
// (docs/benchmarks.md, "Compile time" and "LLVM's loop unroller").
cl::opt<unsigned> optLevel("O",
                           cl::desc("Optimization level 0-3 (default 2; 3 adds "
                                    "LLVM's loop unroller and unswitching)"),
                           cl::Prefix, cl::init(2), cl::cat(category));

// Subnormal floats flushed to zero while the generated CPU code runs (MXCSR
// FTZ and DAZ, the caller's MXCSR restored on return): the linear
// attentions' decays reach subnormals, which Intel cores compute by
// microcode assists (Qwen3-Next's linear layer 1.3x faster on one;
// docs/benchmarks.md).
cl::opt<bool> preserveDenormals(
    "preserve-denormals",
    cl::desc("Keep subnormal floats in the CPU kernels (default: flushed to "
             "zero, MXCSR FTZ/DAZ set on entry and restored on return)"),
    cl::init(false), cl::cat(category));

// Prefill, the grouped decode of a bf16 cache and the GEMMs on the AMX tile
// unit where the target CPU has it (docs/benchmarks.md).
cl::opt<bool>
    noAmx("no-amx",
          cl::desc("Keep the CPU kernels off the AMX tile unit (default: "
                   "the prefill (head sizes multiples of 32, up to 256) and "
                   "grouped decode of a bf16 cache and the projections' "
                   "GEMMs use it when --cpu has amx-tile and amx-bf16 and "
                   "the OS grants it)"),
          cl::init(false), cl::cat(category));

// Prefill of f32/f16 caches on AMX tiles: measured 0.9-1.07x the AVX-512
// path on an Intel core (docs/benchmarks.md), so off by default.
cl::opt<bool> amxF32Prefill(
    "amx-f32-prefill",
    cl::desc("Also run the prefill of f32 and f16 K/V on the AMX tile unit "
             "(split into three bf16 parts, f32-accurate; default: only a "
             "bf16 cache's, exact in one part)"),
    cl::init(false), cl::cat(category));

// LLVM's optimization and code generation of an executable or library
// take most of a build: its module is split into parts compiled on this
// many threads (docs/benchmarks.md "Compile time").
cl::opt<unsigned>
    jobs("jobs",
         cl::desc("Threads that optimize and compile an executable's or "
                  "library's code, each a part of it (default 0: one per core "
                  "of the host, at most 64; 1: one object, as --emit=obj "
                  "writes)"),
         cl::init(0), cl::cat(category));

cl::opt<bool> kernelsOnly(
    "kernels",
    cl::desc("Emit only the attention kernels (<kind>_sdpa entry points) "
             "instead of the model; implied by the stages after tiled"),
    cl::init(false), cl::cat(category));

cl::opt<bool> keepReference(
    "reference",
    cl::desc("Keep an unfused <kind>_reference copy of each layer kind "
             "(default true; --reference=false omits it, like --entries "
             "without reference)"),
    cl::init(true), cl::cat(category));

// Fewer entries, a smaller and faster build: a server that only decodes
// through the C API needs `paged`; a test of the attention kernels `sdpa`.
cl::list<std::string> entryList(
    "entries", cl::CommaSeparated,
    cl::desc("What to compile for each layer kind besides its fused "
             "attention kernel (<kind>_sdpa or _gdn, always compiled), "
             "comma-separated: reference (the unfused copy check and bench "
             "compare with), paged (the paged-KV-cache kernel of the C API, "
             "the Python module and bench --page-size), blocks (<kind>_block "
             "and _layer: the block, layer and model commands); all "
             "(default) or sdpa (the fused kernels alone)"),
    cl::value_desc("list"), cl::cat(category));

enum class Target { CPU, CUDA };
cl::opt<Target> target(
    "target", cl::desc("Target (default cpu)"), cl::init(Target::CPU),
    cl::values(clEnumValN(Target::CPU, "cpu", "x86-64 CPUs (AVX-512/AVX2)"),
               clEnumValN(Target::CUDA, "cuda", "NVIDIA GPUs (PTX)"),
               clEnumValN(Target::CUDA, "gpu", "an alias of cuda")),
    cl::cat(category));

cl::opt<int64_t> qBlock("q-block",
                        cl::desc("Query rows per tile (0: target default)"),
                        cl::init(0), cl::cat(category));

cl::opt<int64_t> kvBlock("kv-block",
                         cl::desc("Keys per tile (0: target default)"),
                         cl::init(0), cl::cat(category));

cl::opt<int64_t> splitTarget(
    "split-target",
    cl::desc("Split-K decode (flash-decoding) on the CPU: a query of one "
             "block whose "
             "batch x KV heads is below this many gets its key range split "
             "across threads, merged by log-sum-exp (0: never; default 16)"),
    cl::init(16), cl::cat(category));

cl::opt<int64_t> splitMinKeys(
    "split-min-keys",
    cl::desc("Split-K decode on the CPU: the fewest keys of a part (at most "
             "kv_len / this many parts; default 512)"),
    cl::init(512), cl::cat(category));

cl::opt<std::string> latentForm(
    "latent-form",
    cl::desc("Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): the "
             "form of the layers' attention, auto (default: chosen at run "
             "time, the absorbed form when it does less work, as in "
             "decode), expanded or absorbed (one form for every query "
             "length: to measure or test each)"),
    cl::value_desc("auto|expanded|absorbed"), cl::init("auto"),
    cl::cat(category));

cl::opt<attn::KVCacheType> kvDtype(
    "kv-dtype",
    cl::desc("Element type of the K and V the softmax-attention kernels "
             "read (<kind>_sdpa and <kind>_paged: attn_sdpa, "
             "attn_decode_paged); arithmetic and accumulation stay fp32 "
             "(q and the output: --qo-dtype)"),
    cl::init(attn::KVCacheType::f32),
    cl::values(clEnumValN(attn::KVCacheType::f32, "f32", "fp32 (default)"),
               clEnumValN(attn::KVCacheType::bf16, "bf16",
                          "bfloat16: widened in registers by a shift"),
               clEnumValN(attn::KVCacheType::f16, "f16",
                          "IEEE half: widened in registers (F16C "
                          "vcvtph2ps)")),
    cl::cat(category));

cl::opt<attn::KVCacheType> qoDtype(
    "qo-dtype",
    cl::desc("Element type of q and the output of the softmax-attention "
             "entries (<kind>_sdpa, its reference and <kind>_paged: "
             "attn_sdpa, attn_decode_paged), as torch's bf16/f16 "
             "scaled_dot_product_attention takes them; f32 (default) or "
             "--kv-dtype's 16-bit type. Arithmetic and accumulation stay "
             "fp32 (also the latent kinds' absorbed entries); blocks, "
             "layers and linear kinds keep fp32"),
    cl::init(attn::KVCacheType::f32),
    cl::values(clEnumValN(attn::KVCacheType::f32, "f32", "fp32 (default)"),
               clEnumValN(attn::KVCacheType::bf16, "bf16", "bfloat16"),
               clEnumValN(attn::KVCacheType::f16, "f16", "IEEE half")),
    cl::cat(category));

enum class Distributed { None, MPI };
cl::opt<Distributed> distributed(
    "distributed",
    cl::desc("Context parallelism: executables and libraries whose sdpa, "
             "check and bench (and the C API's attn_decode_paged_mpi) run "
             "over MPI ranks (mpirun), the KV cache sharded by sequence "
             "(needs an attn-compile built with Open MPI)"),
    cl::init(Distributed::None),
    cl::values(clEnumValN(Distributed::None, "none", "one process (default)"),
               clEnumValN(Distributed::MPI, "mpi",
                          "MPI: adds <kind>_paged_part kernels and links "
                          "the runtime's MPI part")),
    cl::cat(category));

cl::opt<int64_t> tensorParallel(
    "tensor-parallel",
    cl::desc("With --distributed=mpi: shard the heads over this many ranks "
             "too (each rank its whole KV-head groups; the MPI world is "
             "tensor-parallel x context shards; default 1)"),
    cl::init(1), cl::cat(category));

cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the IR after every pass, as attn-opt does (the test "
             "suite's setting; 10-15% of an executable's build time). "
             "Without it the front end's IR and the pipeline's result are "
             "verified"),
    cl::init(false), cl::cat(category));

cl::opt<bool> describe("describe",
                       cl::desc("Print the normalized model description as "
                                "JSON instead of IR"),
                       cl::init(false), cl::cat(category));

/// --entries and --reference as the entries to compile; false after an
/// error that names what is accepted.
bool parseEntries(attn::EntrySet &entries) {
  std::vector<std::string> list(entryList.begin(), entryList.end());
  std::string why = attn_compile::parseEntryList(
      list, entryList.getNumOccurrences() > 0, keepReference,
      target == Target::CUDA, distributed == Distributed::MPI, entries);
  if (why.empty())
    return true;
  llvm::errs() << "attn-compile: error: --entries: " << why << "\n";
  return false;
}

/// The root of --mlir-timing's report: the front end, each pass, LLVM's
/// code generation and the link, each timed.
TimingScope *timingRoot = nullptr;

/// What the driver prints or writes once everything succeeded: `text` goes
/// to -o, then `after` (the --emit=obj header) runs.
struct Output {
  std::string text;
  std::function<bool()> after;
};

/// The path of the entry points' header next to -o NAME: NAME.h.
std::string headerPath() {
  llvm::StringRef dir = llvm::sys::path::parent_path(outputPath);
  return (dir.empty() ? std::string() : (dir + "/").str()) +
         llvm::sys::path::stem(outputPath).str() + ".h";
}

/// Checks the options that depend on each other. Prints the error.
/// Prints an option error; false.
bool optionError(const llvm::Twine &msg) {
  llvm::errs() << "attn-compile: error: " << msg << "\n";
  return false;
}

/// Refuses options that would do nothing with the others given.
bool checkOptionsApply() {
  auto fail = optionError;
  if (describe && (compileTo.getNumOccurrences() || emit.getNumOccurrences()))
    return fail(llvm::Twine("--describe prints the model's description; --") +
                (emit.getNumOccurrences() ? "emit" : "compile-to") +
                " does not apply (give one or the other)");
  if (emit.getNumOccurrences() && compileTo.getNumOccurrences())
    return fail("--emit chooses what a build writes (exe, shared, obj); with "
                "--compile-to the output is that stage's: give one or the "
                "other");
  if (noAmx && amxF32Prefill)
    return fail("--amx-f32-prefill puts f32 prefill on the AMX tile unit, "
                "which --no-amx keeps off: give one or the other");
  std::string gpuOption = attn_compile::cudaOptionGiven();
  if (target != Target::CUDA && !gpuOption.empty())
    return fail("--" + gpuOption +
                " applies to --target=cuda, and the target is the CPU");
  return true;
}

bool checkOptions(Stage stage, bool building) {
  auto fail = optionError;
  // No output may be an input: -o (or the header next to it) naming the
  // config would overwrite the user's config.
  if (outputPath != "-" && inputPath != "-" && sameFile(outputPath, inputPath))
    return fail("-o " + outputPath + " is the input config " + inputPath +
                ": writing it would overwrite the config; name the output "
                "differently");
  if (building && emit != Emit::Exe && inputPath != "-" &&
      sameFile(headerPath(), inputPath))
    return fail("--emit=" + llvm::Twine(emit == Emit::Shared ? "shared" : "obj") +
                " writes its C header to " + headerPath() +
                ", which is the input config: name -o differently");
  bool cuda = target == Target::CUDA;
  bool gpuStage = stage == Stage::GPU || stage == Stage::PTX;
  if (building && outputPath == "-")
    return fail("building an executable needs -o NAME (or "
                "--compile-to=STAGE, or --describe)");
  if (gpuStage && !cuda)
    return fail(llvm::Twine("--compile-to=") +
                (stage == Stage::GPU ? "gpu" : "ptx") + " needs --target=cuda");
  if (cuda && !building && stage >= Stage::Linalg && !gpuStage)
    return fail("--target=cuda compiles to --compile-to=attn|fused|tiled|"
                "gpu|ptx or to an executable (-o NAME); the other stages are "
                "the CPU's");
  if (building && emit != Emit::Exe) {
    // The header goes next to -o as NAME.h: -o NAME.h would overwrite the
    // object or library with its own header.
    llvm::SmallString<256> out(outputPath), header(headerPath());
    llvm::sys::path::remove_dots(out, /*remove_dot_dot=*/true);
    llvm::sys::path::remove_dots(header, /*remove_dot_dot=*/true);
    if (out == header)
      return fail("-o " + outputPath + " is where --emit=" +
                  (emit == Emit::Shared ? "shared" : "obj") +
                  " writes the C header (NAME.h next to -o NAME); name the " +
                  (emit == Emit::Shared ? "library" : "object") +
                  " differently, e.g. -o " +
                  llvm::sys::path::stem(outputPath).str() +
                  (emit == Emit::Shared ? ".so" : ".o"));
  }
  if (cuda)
    if (std::string why = attn_compile::checkCudaCache(kvDtype); !why.empty())
      return fail(why);
  // q and the output in 16 bits come with K and V of the same type (as
  // torch's SDPA takes them); the distributed merge of partial outputs
  // stays fp32.
  if (qoDtype != attn::KVCacheType::f32 && kvDtype != qoDtype)
    return fail(llvm::Twine("--qo-dtype=") + attn::dtypeName(qoDtype) +
                " needs --kv-dtype=" + attn::dtypeName(qoDtype) +
                " (q, K, V and the output of one 16-bit type), got "
                "--kv-dtype=" +
                attn::dtypeName(kvDtype));
  if (qoDtype != attn::KVCacheType::f32 && distributed == Distributed::MPI)
    return fail(llvm::Twine("--qo-dtype=") + attn::dtypeName(qoDtype) +
                " with --distributed=mpi: the ranks' partial outputs are "
                "merged in fp32; use --qo-dtype=f32");
  if (tensorParallel < 1 || tensorParallel > 4096)
    return fail("--tensor-parallel must be in [1, 4096], got " +
                llvm::Twine(tensorParallel.getValue()));
  if (tensorParallel > 1 && distributed != Distributed::MPI)
    return fail("--tensor-parallel=" + llvm::Twine(tensorParallel.getValue()) +
                " shards heads across MPI ranks: it needs --distributed=mpi");
  if (distributed == Distributed::MPI && cuda)
    return fail("--distributed=mpi is CPU-only for now (--target=cpu)");
  if (distributed == Distributed::MPI && building && !attn::haveMPI())
    return fail("--distributed=mpi needs MPI, and this attn-compile was "
                "built without it (install libopenmpi-dev and openmpi-bin, "
                "then rebuild: tools/dev.sh build)");
  if (cuda && building && emit != Emit::Exe)
    return fail("--target=cuda builds executables; --emit=obj and "
                "--emit=shared are CPU-only for now");
  if (qBlock < 0 || kvBlock < 0)
    return fail("--q-block and --kv-block must be positive (0 picks the "
                "target default)");
  if (latentForm != "auto" && latentForm != "expanded" &&
      latentForm != "absorbed")
    return fail("--latent-form must be auto, expanded or absorbed, got '" +
                llvm::Twine(latentForm.getValue()) + "'");
  if (splitTarget < 0)
    return fail("--split-target must be 0 (no split-K) or more, got " +
                llvm::Twine(splitTarget.getValue()));
  if (splitMinKeys <= 0)
    return fail("--split-min-keys must be positive, got " +
                llvm::Twine(splitMinKeys.getValue()));
  if (optLevel > 3)
    return fail("-O" + llvm::Twine(optLevel.getValue()) +
                " is not a level; accepted: -O0 to -O3");
  return true;
}

/// Runs `build` into a fresh pass manager (with the MLIR command-line
/// options: --mlir-timing, --mlir-print-ir-after-all...) on `module`.
template <typename Options, typename BuildFn>
bool runPipeline(MLIRContext &context, ModuleOp module, const Options &options,
                 BuildFn build) {
  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return false;
  pm.enableVerifier(verifyEach);
  TimingScope timing = timingRoot->nest("pass pipeline");
  pm.enableTiming(timing);
  std::string error;
  if (failed(build(pm, options, &error))) {
    llvm::errs() << "attn-compile: error: " << error << "\n";
    return false;
  }
  if (failed(pm.run(module)))
    return false;
  if (verifyEach)
    return true;
  // Verifying after every pass took 10-15% of a build; once here still
  // stops invalid IR before LLVM sees it.
  TimingScope verifyTiming = timing.nest("verify the result");
  if (succeeded(verify(module)))
    return true;
  llvm::errs() << "attn-compile: error: the pass pipeline produced invalid IR "
                  "(a compiler bug: --verify-each names the pass)\n";
  return false;
}

/// The LLVM dialect module as x86-64 code in `out`: with `table` (an
/// executable or library: its model table added, `cuda`: host stubs of GPU
/// kernels, `bf16`: tensor-core tolerance) the objects of the parts
/// compiled on --jobs threads (at most 64: past that the parts are too
/// small to matter), else one object, LLVM IR or assembly (`kind`).
bool emitHost(ModuleOp module, attn::CPUOutput kind,
              std::vector<llvm::SmallString<0>> &out,
              const attn::ModelSpec *table = nullptr, bool cuda = false,
              bool bf16 = false) {
  TimingScope timing = timingRoot->nest("LLVM code generation (x86-64)");
  attn::CPUTargetOptions options;
  options.cpu = cpu;
  options.optLevel = optLevel;
  options.timing = &timing;
  options.flushDenormals = !preserveDenormals;
  if (table)
    options.extendModule = [&](llvm::Module &m, std::string &error) {
      return attn::addModelTable(
          m, *table,
          attn_compile::tableDescription(
              *table,
              {cpu, cuda, attn_compile::gpuPrecision(), qBlock, kvBlock})
              .dump(2, ' ', false,
                    nlohmann::ordered_json::error_handler_t::replace),
          cuda, bf16, error);
    };
  std::string error;
  unsigned n = jobs ? jobs.getValue()
                    : llvm::hardware_concurrency().compute_thread_count();
  LogicalResult done = failure();
  if (table) {
    done = attn::emitCPUObjects(module, options, std::clamp(n, 1u, 64u), out,
                                error);
  } else {
    out.assign(1, {});
    llvm::raw_svector_ostream os(out[0]);
    done = attn::emitCPU(module, options, kind, os, error);
  }
  if (failed(done))
    llvm::errs() << "attn-compile: error: " << error << "\n";
  return succeeded(done);
}

/// --target=cuda: the tiled form, the gpu stage, PTX or an executable.
/// Returns an exit code; 0 with `out` filled when there is output to write.
int compileCUDA(MLIRContext &context, const attn::ModelSpec &spec,
                ModuleOp module, Stage stage, bool building, Output &out) {
  attn::initializeNVPTXTarget();
  attn::GPUPipelineOptions options;
  attn_compile::setCudaPipelineOptions(options);
  options.qBlock = qBlock;
  options.kvBlock = kvBlock;
  options.stopAfter = stage == Stage::Tiled ? attn::GPUStage::Tiled
                      : stage == Stage::GPU ? attn::GPUStage::GPU
                                            : attn::GPUStage::PTX;
  if (!runPipeline(context, module, options, attn::buildAttnGPUPipeline))
    return 1;
  llvm::raw_string_ostream os(out.text);
  if (building) {
    // The host code (kernel launches, the PTX embedded and loaded at
    // start-up) and the model table as an x86-64 object, linked with the
    // runtime, whose CUDA part loads libcuda.so.1 with dlopen.
    std::vector<llvm::SmallString<0>> objects;
    if (!emitHost(module, attn::CPUOutput::Object, objects, &spec,
                  /*cuda=*/true,
                  attn_compile::gpuPrecision() != attn::GPUPrecision::fp32))
      return 1;
    return attn_compile::linkObjects(
        objects, outputPath, /*shared=*/false,
        /*hostOnly=*/true, distributed == Distributed::MPI, *timingRoot);
  }
  if (stage == Stage::PTX) {
    std::string error;
    if (failed(attn::writePTX(module, os, error))) {
      llvm::errs() << "attn-compile: error: " << error << "\n";
      return 1;
    }
    return 0;
  }
  module.print(os);
  os << "\n";
  return 0;
}

bool writeHeader(const attn::ModelSpec &spec) {
  std::string error;
  if (writeFile(
          headerPath(),
          [&](llvm::raw_ostream &os) { attn::writeKernelHeader(spec, os); },
          error))
    return true;
  llvm::errs() << "attn-compile: error: " << error << "\n";
  return false;
}

/// The CPU target: a pipeline stage, LLVM IR, assembly, an object or a
/// linked executable/library. Returns an exit code; 0 with `out` filled when
/// there is output to write.
int compileCPU(MLIRContext &context, const attn::ModelSpec &spec,
               ModuleOp module, Stage stage, bool building, Output &out) {
  attn::PipelineOptions options;
  options.stopAfter = stage == Stage::Attn     ? attn::PipelineStage::Attn
                      : stage == Stage::Fused  ? attn::PipelineStage::Fused
                      : stage == Stage::Tiled  ? attn::PipelineStage::Tiled
                      : stage == Stage::Linalg ? attn::PipelineStage::Linalg
                                               : attn::PipelineStage::LLVMDialect;
  options.reference = spec.entries.reference;
  options.target = attn::TileTarget::cpu;
  options.qBlock = qBlock;
  options.kvBlock = kvBlock;
  options.splitTarget = splitTarget;
  options.splitMinKeys = splitMinKeys;
  options.latentForm = latentForm;
  if (int64_t lanes = attn::cpuVectorLanes(cpu))
    options.vectorLanes = lanes;
  options.amx = !noAmx && attn::cpuHasAMX(cpu);
  options.amxF32Prefill = amxF32Prefill;
  // What is linked with the runtime allocates through it.
  options.runtimeAlloc = building;
  if (!runPipeline(context, module, options, attn::buildAttnPipeline))
    return 1;
  llvm::raw_string_ostream os(out.text);
  if (stage <= Stage::LLVMDialect) {
    module.print(os);
    os << "\n";
    return 0;
  }
  attn::CPUOutput kind = stage == Stage::LLVMIR ? attn::CPUOutput::LLVMIR
                         : stage == Stage::Asm  ? attn::CPUOutput::Assembly
                                                : attn::CPUOutput::Object;
  // Kernels with their model table, and the runtime -> the executable or
  // library.
  bool linking = building && emit != Emit::Obj;
  std::vector<llvm::SmallString<0>> objects;
  if (!emitHost(module, kind, objects, linking ? &spec : nullptr))
    return 1;
  if (linking) {
    // A library's header first, so that a header that cannot be written
    // leaves no library; a failed link removes the header again.
    bool shared = emit == Emit::Shared;
    if (shared && !writeHeader(spec))
      return 1;
    if (attn_compile::linkObjects(
            objects, outputPath, shared,
            /*hostOnly=*/false, distributed == Distributed::MPI, *timingRoot)) {
      if (shared)
        llvm::sys::fs::remove(headerPath());
      return 1;
    }
    return 0;
  }
  // An object goes out like any stage; with --emit=obj, its header after it.
  if (building)
    out.after = [&spec] { return writeHeader(spec); };
  os << objects[0];
  return 0;
}

/// Writes `out` to -o (stdout by default); no file is left on failure.
int writeOutput(const Output &out) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file =
      openOutputFile(outputPath, &error);
  if (!file) {
    llvm::errs() << "attn-compile: error: " << error << "\n";
    return 1;
  }
  file->os() << out.text;
  file->os().flush();
  if (file->os().has_error()) {
    llvm::errs() << "attn-compile: error: cannot write '" << outputPath
                 << "'\n";
    file->os().clear_error();
    return 1;
  }
  if (out.after && !out.after())
    return 1;
  file->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  attn::bufferStderrForIRDumps(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // libLLVM registers hundreds of backend options; --help shows ours
  // (--help-hidden shows all, including the MLIR printing options).
  cl::HideUnrelatedOptions({&category, &attn_compile::cudaCategory()});
  std::string parseErrors;
  llvm::raw_string_ostream parseErrs(parseErrors);
  bool parsed = cl::ParseCommandLineOptions(
      argc, argv,
      "attn-compile: compile a Hugging Face config.json's attention\n\n"
      "  attn-compile config.json -o NAME "
      "[--cpu=native|x86-64-v3|x86-64-v4|CPU] "
      "[-O3]\n"
      "  attn-compile config.json --describe\n"
      "  attn-compile config.json --compile-to=attn|fused|tiled|linalg|"
      "llvm-dialect|llvm-ir|asm|obj [-o FILE]\n"
      "  attn-compile config.json --target=cuda "
      "[--gpu-arch=sm_90|sm_90a|sm_80] "
      "[--gpu-precision=fp32|bf16] [-o NAME | --compile-to=tiled|gpu|ptx]\n"
      "\nATTN_COMPILE_OPTIONS in the environment: options read before the "
      "command line's (the test suite sets --verify-each there)\n",
      &parseErrs, /*VFS=*/nullptr, "ATTN_COMPILE_OPTIONS");
  if (!parsed) {
    llvm::errs() << parseErrors;
    // The environment's options are parsed first: say where a bad one was.
    const char *env = std::getenv("ATTN_COMPILE_OPTIONS");
    if (env && *env)
      llvm::errs() << "attn-compile: note: the options above include "
                      "ATTN_COMPILE_OPTIONS from the environment: '"
                   << env << "'\n";
    return 1;
  }

  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope root = timingManager.getRootScope();
  timingRoot = &root;
  TimingScope frontEnd = root.nest("front end (config -> attn IR)");

  DialectRegistry registry;
  attn::registerAllDialects(registry);
  attn::registerCPUTranslations(registry);
  MLIRContext context(registry);
  llvm::SourceMgr srcMgr;
  attn::SnippetDiagnosticHandler diagHandler(&context, srcMgr, "attn-compile",
                                            llvm::errs());

  if (!checkOptionsApply())
    return 1;
  std::unique_ptr<attn::ConfigSource> src =
      attn::ConfigSource::load(inputPath, srcMgr, &context);
  if (!src)
    return 1;
  attn::ModelSpec spec;
  spec.kvCache = kvDtype;
  spec.qoType = qoDtype;
  spec.distributed = distributed == Distributed::MPI;
  spec.gpu = target == Target::CUDA;
  spec.gpuLinearChunked = spec.gpu && attn_compile::gpuLinearChunked();
  spec.tensorParallel = tensorParallel;
  if (!parseEntries(spec.entries))
    return 1;
  if (!attn::normalizeConfig(*src, spec))
    return 1;
  // Head sharding keeps whole KV-head groups on each rank; a latent
  // cache serves every head, so it is sharded by context only.
  for (const attn::LayerSpec &l : spec.layers)
    if (spec.tensorParallel > 1 && l.isLatent()) {
      llvm::errs() << "attn-compile: error: --tensor-parallel="
                   << spec.tensorParallel << ": layer " << l.index
                   << " is multi-head latent attention, whose one latent "
                      "row per token serves every head: shard its context "
                      "across the ranks (--distributed=mpi without "
                      "--tensor-parallel)\n";
      return 1;
    }
  for (const attn::LayerSpec &l : spec.layers)
    if (spec.tensorParallel > 1 && l.role != attn::LayerRole::LinearAttention &&
        attn::hasPagedKernel(l) && l.numKVHeads % spec.tensorParallel != 0) {
      llvm::errs() << "attn-compile: error: --tensor-parallel="
                   << spec.tensorParallel << ": layer " << l.index << " has "
                   << l.numKVHeads
                   << " key/value heads (num_key_value_heads), which "
                   << spec.tensorParallel
                   << " does not divide; each rank holds whole KV-head "
                      "groups (accepted: a divisor of "
                   << l.numKVHeads << ")\n";
      return 1;
    }

  // Produce everything before opening the output, so that a failure leaves
  // no file behind.
  Output out;
  if (describe) {
    // Invalid UTF-8 (in the config's path) becomes U+FFFD, never a throw.
    out.text = attn::describeModel(spec).dump(
                   2, ' ', false,
                   nlohmann::ordered_json::error_handler_t::replace) +
               "\n";
    return writeOutput(out);
  }
  bool building = compileTo.getNumOccurrences() == 0;
  Stage stage = building ? Stage::Obj : compileTo.getValue();
  if (!checkOptions(stage, building))
    return 1;
  bool cuda = target == Target::CUDA;
  bool kernels = kernelsOnly || stage >= Stage::Linalg ||
                 (cuda && stage == Stage::Tiled);
  // The CUDA target compiles the attention entries only (parseEntries
  // cleared the rest); blocks (projections, RoPE) and the model stay on
  // the CPU for now.
  OwningOpRef<ModuleOp> module =
      kernels ? attn::emitKernelModule(spec, *src)
              : attn::emitAttnModule(spec, *src);
  if (!module || failed(module->verify()))
    return 1;
  frontEnd.stop();
  int code;
  // --target=cuda shows the graph and fused forms like the CPU (no target
  // choice there); from tiled on, the GPU pipeline.
  if (cuda && (building || stage >= Stage::Tiled))
    code = compileCUDA(context, spec, *module, stage, building, out);
  else
    code = compileCPU(context, spec, *module, stage, building, out);
  if (code || (building && emit != Emit::Obj))
    return code;
  return writeOutput(out);
}
