//===- CPUTarget.cpp - LLVM dialect -> x86-64 object code -----------------===//
//
// This file implements the CPU target with LLVM's x86 backend, in process.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CPU/CPUTarget.h"

#include "compiler/Conversion/CPU/MicroKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"
#include "llvm/Transforms/Instrumentation/AddressSanitizer.h"
#include "llvm/Transforms/Utils/SplitModule.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::registerCPUTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
}

/// A CPU name LLVM's x86 backend knows (skylake-avx512, sapphirerapids,
/// znver4...), for cross-compiling: its features, or false.
static bool namedCPUFeatures(llvm::StringRef cpu, llvm::StringMap<bool> &out) {
  if (cpu == "native" ||
      llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) == llvm::X86::CK_None)
    return false;
  llvm::SmallVector<llvm::StringRef> features;
  llvm::X86::getFeaturesForCPU(cpu, features);
  for (llvm::StringRef f : features)
    out[f] = true;
  return true;
}

/// The features of a --cpu value: the host's for `native`, else a named
/// CPU's (namedCPUFeatures); false for an unknown name.
static bool cpuFeatures(llvm::StringRef cpu, llvm::StringMap<bool> &out) {
  if (cpu != "native")
    return namedCPUFeatures(cpu, out);
  out = llvm::sys::getHostCPUFeatures();
  return true;
}

int64_t mlir::attn::cpuVectorLanes(llvm::StringRef cpu) {
  if (cpu == "x86-64-v4")
    return 16;
  if (cpu == "x86-64-v3")
    return 8;
  if (cpu == "x86-64")
    return 4;
  llvm::StringMap<bool> features;
  if (!cpuFeatures(cpu, features))
    return 0;
  if (features.lookup("avx512f"))
    return 16;
  if (features.lookup("avx2") && features.lookup("fma"))
    return 8;
  return 4;
}

bool mlir::attn::cpuHasAMX(llvm::StringRef cpu) {
  llvm::StringMap<bool> features;
  return cpuFeatures(cpu, features) && features.lookup("amx-tile") &&
         features.lookup("amx-bf16");
}

/// Runs the module passes `build` makes from a pass builder for `tm` with
/// `tuning` on `m`.
static void runPasses(
    llvm::Module &m, llvm::TargetMachine &tm,
    const llvm::PipelineTuningOptions &tuning,
    llvm::function_ref<llvm::ModulePassManager(llvm::PassBuilder &)> build) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&tm, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  build(builder).run(m, mam);
}

/// AddressSanitizer instrumentation of every function and global of `m`, as
/// clang adds it after optimization: a sanitizer build (ATTN_SANITIZE, see
/// the README) links the executables with the ASan runtime, so their
/// kernels and model table are checked as the runtime around them is.
static void instrumentAddresses(llvm::Module &m, llvm::TargetMachine *tm) {
  // Checks as calls into the ASan runtime, not inlined: the kernels' vector
  // code instrumented inline takes LLVM 3x as long to compile (clang's
  // -mllvm -asan-instrumentation-with-call-threshold=0). Set once: the option
  // takes one occurrence.
  static bool callsSet = [] {
    auto &registered = llvm::cl::getRegisteredOptions();
    if (llvm::cl::Option *o =
            registered.lookup("asan-instrumentation-with-call-threshold"))
      o->addOccurrence(0, "asan-instrumentation-with-call-threshold", "0");
    return true;
  }();
  (void)callsSet;
  for (llvm::Function &fn : m)
    if (!fn.isDeclaration())
      fn.addFnAttr(llvm::Attribute::SanitizeAddress);
  runPasses(m, *tm, {}, [](llvm::PassBuilder &) {
    llvm::ModulePassManager mpm;
    mpm.addPass(llvm::AddressSanitizerPass(llvm::AddressSanitizerOptions()));
    return mpm;
  });
}

namespace {

/// The x86-64 target a CPUTargetOptions names: what creates its target
/// machines (one per thread: a TargetMachine is not shared between
/// concurrent compilations).
struct X86Target {
  const llvm::Target *target = nullptr;
  llvm::Triple triple{"x86_64-unknown-linux-gnu"};
  std::string cpu, features;
  llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Default;

  std::unique_ptr<llvm::TargetMachine> create() const {
    llvm::TargetOptions targetOptions;
    return std::unique_ptr<llvm::TargetMachine>(
        target->createTargetMachine(triple, cpu, features, targetOptions,
                                    llvm::Reloc::PIC_, std::nullopt, level));
  }
};

/// Resolves `options`' CPU into a target; false with `error` set.
bool resolveTarget(const CPUTargetOptions &options, X86Target &t,
                   std::string &error) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  // The AMX path asks the OS for the tile state with inline asm.
  LLVMInitializeX86AsmParser();

  t.cpu = options.cpu;
  llvm::StringMap<bool> named;
  if (t.cpu == "native") {
    t.cpu = llvm::sys::getHostCPUName().str();
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      t.features += (f.second ? "+" : "-") + f.first().str() + ",";
  } else if (t.cpu != "x86-64-v3" && t.cpu != "x86-64-v4" &&
             t.cpu != "x86-64" && !namedCPUFeatures(t.cpu, named)) {
    error = "unknown --cpu '" + options.cpu +
            "'; accepted: native, x86-64, x86-64-v3 (AVX2), x86-64-v4 "
            "(AVX-512), or an x86-64 CPU name LLVM knows (skylake-avx512, "
            "sapphirerapids, znver4, ...)";
    return false;
  }
  t.target = llvm::TargetRegistry::lookupTarget(t.triple, error);
  if (!t.target)
    return false;
  t.level = options.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
            : options.optLevel == 2 ? llvm::CodeGenOptLevel::Default
            : options.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                    : llvm::CodeGenOptLevel::None;
  if (!t.create()) {
    error = "cannot create an x86-64 target machine for cpu '" + t.cpu + "'";
    return false;
  }
  return true;
}

/// MXCSR's flush-to-zero and denormals-are-zero bits.
constexpr uint32_t kFlushDenormalBits = 0x8040;

/// `f` runs with FTZ and DAZ set and restores the MXCSR it found before
/// each return (see CPUTargetOptions::flushDenormals).
void flushDenormalsIn(llvm::Function &f) {
  llvm::Module &m = *f.getParent();
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Function *save = llvm::Intrinsic::getOrInsertDeclaration(
      &m, llvm::Intrinsic::x86_sse_stmxcsr);
  llvm::Function *load = llvm::Intrinsic::getOrInsertDeclaration(
      &m, llvm::Intrinsic::x86_sse_ldmxcsr);
  llvm::IRBuilder<> b(&*f.getEntryBlock().getFirstInsertionPt());
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Value *saved = b.CreateAlloca(i32, nullptr, "mxcsr.saved");
  llvm::Value *flushed = b.CreateAlloca(i32, nullptr, "mxcsr.flush");
  b.CreateCall(save, {saved});
  llvm::Value *old = b.CreateLoad(i32, saved);
  b.CreateStore(b.CreateOr(old, kFlushDenormalBits), flushed);
  b.CreateCall(load, {flushed});
  for (llvm::BasicBlock &bb : f)
    if (auto *ret = llvm::dyn_cast<llvm::ReturnInst>(bb.getTerminator())) {
      b.SetInsertPoint(ret);
      b.CreateCall(load, {saved});
    }
}

/// Applies flushDenormalsIn to the functions through which code runs: the
/// externally visible ones (the library's and executable's entry points)
/// and the OpenMP regions' outlined bodies (each on its own thread). Not to
/// internal helpers, which their callers cover and which LLVM may inline
/// into loops.
void flushDenormals(llvm::Module &m) {
  for (llvm::Function &f : m)
    if (!f.isDeclaration() &&
        (!f.hasLocalLinkage() || f.getName().contains(".omp_par")))
      flushDenormalsIn(f);
}

/// `module` as LLVM IR in `context`, with `options`' extension (the model
/// table); null with `error` set.
std::unique_ptr<llvm::Module> translate(ModuleOp module,
                                        const CPUTargetOptions &options,
                                        llvm::TargetMachine &tm,
                                        llvm::LLVMContext &context,
                                        std::string &error) {
  // Checkpoint names on arguments are for readers of the IR; LLVM IR has no
  // place for them.
  module.walk([](LLVM::LLVMFuncOp fn) {
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      fn.removeArgAttr(i, StringAttr::get(fn.getContext(), "attn.tensor"));
  });
  // The micro-kernel's tile functions stay functions: FuncToLLVM leaves
  // their no-inline mark discardable, LLVM IR export reads the op's own.
  module.walk([](LLVM::LLVMFuncOp fn) {
    if (fn->removeAttr(kNoInlineAttr))
      fn.setNoInline(true);
  });
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context);
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return nullptr;
  }
  llvmModule->setTargetTriple(tm.getTargetTriple());
  llvmModule->setDataLayout(tm.createDataLayout());
  if (options.extendModule && !options.extendModule(*llvmModule, error))
    return nullptr;
  if (options.flushDenormals)
    flushDenormals(*llvmModule);
  return llvmModule;
}

/// LLVM's default pipeline at `optLevel` on `m`, without LLVM's loop
/// unroller below -O3. The kernels' loops come out of MLIR already unrolled
/// where it pays (the micro-kernels' register tiles, the chunk loops over a
/// head's vectors); LLVM's runtime, partial and full unrolling on top of
/// them nearly doubled the code (Gemma-3-1B: 72.7k -> 127.4k lines of
/// optimized IR) and ~40% of its opt + llc time; no kernel measured slower
/// without them (docs/benchmarks.md, "LLVM's loop unroller").
static void optimize(llvm::Module &m, llvm::TargetMachine &tm,
                     unsigned optLevel) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = optLevel >= 3;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::OptimizationLevel level = optLevel >= 3   ? llvm::OptimizationLevel::O3
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                  : optLevel == 1 ? llvm::OptimizationLevel::O1
                                                  : llvm::OptimizationLevel::O0;
  runPasses(m, tm, tuning, [&](llvm::PassBuilder &builder) {
    return builder.buildPerModuleDefaultPipeline(level);
  });
}

/// Optimizes `m` (and instruments it in a sanitizer build), then writes it
/// to `os` as `output`.
bool optimizeAndEmit(llvm::Module &m, llvm::TargetMachine &tm,
                     unsigned optLevel, CPUOutput output,
                     llvm::raw_pwrite_stream &os, std::string &error) {
  optimize(m, tm, optLevel);
  if (ATTN_SANITIZE_ADDRESS)
    instrumentAddresses(m, &tm);
  if (output == CPUOutput::LLVMIR) {
    m.print(os, nullptr);
    return true;
  }
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr,
                             output == CPUOutput::Object
                                 ? llvm::CodeGenFileType::ObjectFile
                                 : llvm::CodeGenFileType::AssemblyFile)) {
    error = "the x86-64 target cannot emit this file type";
    return false;
  }
  pm.run(m);
  return true;
}

} // namespace

namespace {

/// A step under `options.timing` (an inactive scope without one).
TimingScope nestTiming(const CPUTargetOptions &options, llvm::StringRef name) {
  return options.timing ? options.timing->nest(name) : TimingScope();
}

/// `module` as LLVM IR for `options`' target (resolved into `t`, a target
/// machine in `tm`); null with `error` set.
std::unique_ptr<llvm::Module>
lowerToLLVM(ModuleOp module, const CPUTargetOptions &options, X86Target &t,
            std::unique_ptr<llvm::TargetMachine> &tm,
            llvm::LLVMContext &context, std::string &error) {
  if (!resolveTarget(options, t, error))
    return nullptr;
  tm = t.create();
  TimingScope timing = nestTiming(options, "translate to LLVM IR");
  return translate(module, options, *tm, context, error);
}

} // namespace

LogicalResult mlir::attn::emitCPU(ModuleOp module,
                                  const CPUTargetOptions &options,
                                  CPUOutput output, llvm::raw_pwrite_stream &os,
                                  std::string &error) {
  X86Target t;
  std::unique_ptr<llvm::TargetMachine> tm;
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      lowerToLLVM(module, options, t, tm, llvmContext, error);
  if (!llvmModule)
    return failure();
  TimingScope timing = nestTiming(options, "optimize and emit");
  return success(
      optimizeAndEmit(*llvmModule, *tm, options.optLevel, output, os, error));
}

LogicalResult mlir::attn::emitCPUObjects(
    ModuleOp module, const CPUTargetOptions &options, unsigned jobs,
    std::vector<llvm::SmallString<0>> &objects, std::string &error) {
  objects.clear();
  X86Target t;
  std::unique_ptr<llvm::TargetMachine> tm;
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      lowerToLLVM(module, options, t, tm, llvmContext, error);
  if (!llvmModule)
    return failure();
  // AddressSanitizer gives every instrumented object one module constructor
  // in a COMDAT of a fixed name: parts would share it. One object there.
  if (jobs <= 1 || ATTN_SANITIZE_ADDRESS) {
    TimingScope timing = nestTiming(options, "optimize and emit");
    objects.emplace_back();
    llvm::raw_svector_ostream os(objects.back());
    return success(optimizeAndEmit(*llvmModule, *tm, options.optLevel,
                                   CPUOutput::Object, os, error));
  }
  // The parts as bitcode: each is read back into its own context on its
  // thread (a context is not shared between threads). Local symbols become
  // hidden ones (the parts call each other's helpers; hidden, they stay
  // inside the executable or library). Four parts per thread, dealt round
  // robin: the functions' compile times differ too much for one part per
  // thread to balance (keeping local symbols with their users instead put
  // 90% of Llama's code in one part).
  TimingScope splitTiming = nestTiming(options, "split into parts");
  std::vector<llvm::SmallString<0>> parts;
  llvm::SplitModule(
      *llvmModule, jobs * 4,
      [&](std::unique_ptr<llvm::Module> part) {
        parts.emplace_back();
        llvm::raw_svector_ostream os(parts.back());
        llvm::WriteBitcodeToFile(*part, os);
      },
      /*PreserveLocals=*/false, /*RoundRobin=*/true);
  llvmModule.reset();
  splitTiming.stop();
  // Each part's optimization and code generation, timed on its thread.
  TimingScope partsTiming =
      nestTiming(options, "optimize and emit " + std::to_string(parts.size()) +
                              " parts on " + std::to_string(jobs) + " threads");
  objects.resize(parts.size());
  std::vector<std::string> errors(parts.size());
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(jobs));
    for (size_t i = 0; i < parts.size(); ++i)
      pool.async([&, i] {
        TimingScope partTiming = partsTiming.nest("part " + std::to_string(i));
        llvm::LLVMContext context;
        llvm::Expected<std::unique_ptr<llvm::Module>> m =
            llvm::parseBitcodeFile(
                llvm::MemoryBufferRef(parts[i].str(), "part"), context);
        if (!m) {
          errors[i] = llvm::toString(m.takeError());
          return;
        }
        std::unique_ptr<llvm::TargetMachine> partTm = t.create();
        llvm::raw_svector_ostream os(objects[i]);
        optimizeAndEmit(**m, *partTm, options.optLevel, CPUOutput::Object, os,
                        errors[i]);
      });
    pool.wait();
  }
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      return failure();
    }
  return success();
}
