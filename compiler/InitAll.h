//===- InitAll.h - attn dialect and pass registration -------------*- C++ -*-===//
//
// This file declares the single place where the tools register the `attn`
// dialect, its passes and pipelines, and the upstream dialects and passes the
// pipelines use. attn-opt and attn-compile both call these.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_INITALL_H
#define ATTN_COMPILER_INITALL_H

namespace mlir {
class DialectRegistry;
namespace attn {

/// Adds the `attn` dialect and every upstream dialect our IR may contain.
void registerAllDialects(DialectRegistry &registry);

/// Registers the `attn` passes, the named pipelines and the upstream passes
/// useful on our IR (canonicalize, cse, ...), for command-line use.
void registerAllPasses();

/// Buffers stderr when the command line asks for IR dumps (MLIR's
/// --mlir-print-ir-*, LLVM's --print-after/-before/-changed): llvm::errs()
/// is unbuffered, and printing a module wrote it a few bytes per syscall
/// (14 million writes, 85 s of system time, for a 40 MB dump). Diagnostics
/// are then written when the buffer fills, at exit, and on a crash (LLVM's
/// signal handlers flush it).
void bufferStderrForIRDumps(int argc, char **argv);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_INITALL_H
