//===- CPUTarget.h - LLVM dialect -> x86-64 object code ------------*- C++ -*-===//
//
// This file declares the CPU target: translation of the LLVM-dialect module
// to LLVM IR, optimization for a chosen x86-64 CPU, and emission of LLVM IR,
// assembly or an object file.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_TARGET_CPU_CPUTARGET_H
#define ATTN_COMPILER_TARGET_CPU_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace attn {

enum class CPUOutput { LLVMIR, Assembly, Object };

struct CPUTargetOptions {
  /// native (the host's CPU and features), x86-64-v3 (AVX2), x86-64-v4
  /// (AVX-512) or an x86-64 CPU name LLVM knows (sapphirerapids, znver4...:
  /// its features and scheduling model, for cross-compiling).
  std::string cpu = "native";
  /// LLVM's pipeline level; 2 is attn-compile's default (3 costs compile
  /// time for no measured kernel speed).
  unsigned optLevel = 2;
  /// Runs on the translated LLVM IR before it is optimized (the model
  /// table of executables, see ModelTable.h); false with `error` set stops.
  std::function<bool(llvm::Module &, std::string &error)> extendModule;
  /// Where --mlir-timing shows the steps (translation to LLVM IR, the
  /// split, optimization and code generation); none when null.
  TimingScope *timing = nullptr;
  /// Subnormal floats flushed to zero (MXCSR FTZ and DAZ) while the
  /// generated code runs: every externally visible function and every
  /// OpenMP region's body sets them on entry and restores the caller's
  /// MXCSR on return. Decays in the linear attentions reach subnormals,
  /// which Intel cores handle by microcode assists (docs/benchmarks.md).
  bool flushDenormals = true;
};

/// Registers the dialect translations the CPU target needs.
void registerCPUTranslations(DialectRegistry &registry);

/// f32 lanes of the widest vector registers of `cpu` (a --cpu value): 16
/// with AVX-512, 8 with AVX2, 4 otherwise; 0 for an unknown name.
int64_t cpuVectorLanes(llvm::StringRef cpu);

/// True when `cpu` (a --cpu value) has the AMX tile unit with bf16 products
/// (amx-tile, amx-bf16: Sapphire Rapids and later).
bool cpuHasAMX(llvm::StringRef cpu);

/// Translates, optimizes and emits `module` (LLVM dialect). On failure
/// returns failure with a message in `error`.
LogicalResult emitCPU(ModuleOp module, const CPUTargetOptions &options,
                      CPUOutput output, llvm::raw_pwrite_stream &os,
                      std::string &error);

/// Translates `module` and emits it as object files compiled on `jobs`
/// threads (`objects`, each one part of the code: together they are what
/// emitCPU would write as one object, to be linked together): the LLVM
/// module split into 4 x `jobs` parts (llvm::SplitModule, round robin,
/// local symbols made hidden), each optimized and compiled with its own
/// LLVM context and target machine. With `jobs` <= 1, or in a sanitizer
/// build (AddressSanitizer's module constructor is one per object, in a
/// COMDAT of a fixed name), one object as emitCPU. The parts depend only
/// on `module` and `jobs`.
LogicalResult emitCPUObjects(ModuleOp module, const CPUTargetOptions &options,
                             unsigned jobs,
                             std::vector<llvm::SmallString<0>> &objects,
                             std::string &error);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_TARGET_CPU_CPUTARGET_H
