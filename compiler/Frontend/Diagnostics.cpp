//===- Diagnostics.cpp - user-facing diagnostics for config errors --------===//
//
// This file implements SnippetDiagnosticHandler.
//
//===----------------------------------------------------------------------===//

#include "compiler/Frontend/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::attn;

SnippetDiagnosticHandler::SnippetDiagnosticHandler(MLIRContext *ctx,
                                                   llvm::SourceMgr &srcMgr,
                                                   llvm::StringRef tool,
                                                   llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(ctx), srcMgr(srcMgr), tool(tool.str()), os(os) {
  setHandler([this](Diagnostic &diag) {
    print(diag);
    for (Diagnostic &note : diag.getNotes())
      print(note);
    return success();
  });
}

static const char *severityName(DiagnosticSeverity s) {
  switch (s) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

void SnippetDiagnosticHandler::print(Diagnostic &diag) {
  FileLineColLoc loc = dyn_cast<FileLineColLoc>(diag.getLocation());
  if (auto named = dyn_cast<NameLoc>(diag.getLocation()))
    loc = dyn_cast<FileLineColLoc>(named.getChildLoc());
  if (!loc || loc.getLine() == 0) {
    os << tool << ": " << severityName(diag.getSeverity()) << ": " << diag
       << "\n";
    return;
  }
  os << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
     << loc.getColumn() << ": " << severityName(diag.getSeverity()) << ": "
     << diag << "\n";

  // Find the buffer and the line, then print at most ~100 columns of it.
  for (unsigned id = 1, e = srcMgr.getNumBuffers(); id <= e; ++id) {
    const llvm::MemoryBuffer *buf = srcMgr.getMemoryBuffer(id);
    if (buf->getBufferIdentifier() != loc.getFilename().getValue())
      continue;
    llvm::StringRef text = buf->getBuffer();
    size_t start = 0;
    for (unsigned line = 1; line < loc.getLine(); ++line) {
      size_t nl = text.find('\n', start);
      if (nl == llvm::StringRef::npos)
        return;
      start = nl + 1;
    }
    llvm::StringRef lineText = text.substr(start).split('\n').first;
    lineText = lineText.rtrim("\r");
    size_t col = loc.getColumn() > 0 ? loc.getColumn() - 1 : 0;
    constexpr size_t kBefore = 50, kAfter = 50;
    size_t from = col > kBefore ? col - kBefore : 0;
    size_t to = std::min(lineText.size(), col + kAfter);
    std::string prefix = from > 0 ? "..." : "";
    std::string suffix = to < lineText.size() ? "..." : "";
    os << "  " << prefix << lineText.slice(from, to) << suffix << "\n";
    os << "  " << std::string(prefix.size() + (col - from), ' ') << "^\n";
    return;
  }
}
