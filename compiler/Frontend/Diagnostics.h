//===- Diagnostics.h - user-facing diagnostics for config errors -*- C++ -*-===//
//
// This file declares the diagnostic handler the driver installs: it prints
// `file:line:col: error: message` and a window of the offending line (not the
// whole line: minified configs are one long line) with a caret.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_FRONTEND_DIAGNOSTICS_H
#define ATTN_COMPILER_FRONTEND_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace attn {

class SnippetDiagnosticHandler : public ScopedDiagnosticHandler {
public:
  /// `tool` prefixes diagnostics that have no file location.
  SnippetDiagnosticHandler(MLIRContext *ctx, llvm::SourceMgr &srcMgr,
                           llvm::StringRef tool, llvm::raw_ostream &os);

private:
  void print(Diagnostic &diag);

  llvm::SourceMgr &srcMgr;
  std::string tool;
  llvm::raw_ostream &os;
};

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_FRONTEND_DIAGNOSTICS_H
