//===- CPUTarget.cpp - LLVM dialect -> x86-64 object code -----------------===//
//
// This file implements the CPU target with LLVM's x86 backend, in process.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CPU/CPUTarget.h"

#include "compiler/Conversion/CPU/MicroKernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"
#include "llvm/Transforms/Instrumentation/AddressSanitizer.h"

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

int64_t mlir::attn::cpuVectorLanes(llvm::StringRef cpu) {
  if (cpu == "x86-64-v4")
    return 16;
  if (cpu == "x86-64-v3")
    return 8;
  if (cpu == "x86-64")
    return 4;
  llvm::StringMap<bool> features;
  if (cpu == "native")
    features = llvm::sys::getHostCPUFeatures();
  else if (!namedCPUFeatures(cpu, features))
    return 0;
  if (features.lookup("avx512f"))
    return 16;
  if (features.lookup("avx2") && features.lookup("fma"))
    return 8;
  return 4;
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
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(tm);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::AddressSanitizerPass(llvm::AddressSanitizerOptions()));
  mpm.run(m, mam);
}

LogicalResult mlir::attn::emitCPU(ModuleOp module,
                                  const CPUTargetOptions &options,
                                  CPUOutput output,
                                  llvm::raw_pwrite_stream &os,
                                  std::string &error) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();

  std::string cpu = options.cpu;
  std::string features;
  llvm::StringMap<bool> named;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features += (f.second ? "+" : "-") + f.first().str() + ",";
  } else if (cpu != "x86-64-v3" && cpu != "x86-64-v4" && cpu != "x86-64" &&
             !namedCPUFeatures(cpu, named)) {
    error = "unknown --cpu '" + options.cpu +
            "'; accepted: native, x86-64, x86-64-v3 (AVX2), x86-64-v4 "
            "(AVX-512), or an x86-64 CPU name LLVM knows (skylake-avx512, "
            "sapphirerapids, znver4, ...)";
    return failure();
  }

  llvm::Triple triple("x86_64-unknown-linux-gnu");
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return failure();
  llvm::TargetOptions targetOptions;
  llvm::CodeGenOptLevel level = options.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                : options.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                : options.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                                        : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      level));
  if (!tm) {
    error = "cannot create an x86-64 target machine for cpu '" + cpu + "'";
    return failure();
  }

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
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(tm->createDataLayout());
  if (options.extendModule && !options.extendModule(*llvmModule, error))
    return failure();
  if (llvm::Error err = makeOptimizingTransformer(options.optLevel, 0,
                                                  tm.get())(llvmModule.get())) {
    error = llvm::toString(std::move(err));
    return failure();
  }
  if (ATTN_SANITIZE_ADDRESS)
    instrumentAddresses(*llvmModule, tm.get());
  if (output == CPUOutput::LLVMIR) {
    llvmModule->print(os, nullptr);
    return success();
  }
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr,
                              output == CPUOutput::Object
                                  ? llvm::CodeGenFileType::ObjectFile
                                  : llvm::CodeGenFileType::AssemblyFile)) {
    error = "the x86-64 target cannot emit this file type";
    return failure();
  }
  pm.run(*llvmModule);
  return success();
}
