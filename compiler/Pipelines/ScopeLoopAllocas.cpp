//===- ScopeLoopAllocas.cpp - loop bodies' allocas freed per iteration ----===//
//
// attn-scope-loop-allocas (Passes.td): the stack pointer saved before a
// loop body's first alloca and restored before its terminator, per
// iteration.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_SCOPELOOPALLOCASPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Saves the stack pointer before `first` and restores it before the
/// body's terminator, unless a memref defined in between (which may be
/// one of the allocas) is used past that point.
void scope(Block *body, Operation *first) {
  Operation *end = body->getTerminator();
  for (Operation *op = first; op != end; op = op->getNextNode())
    for (Value v : op->getResults())
      if (isa<BaseMemRefType>(v.getType()))
        for (Operation *user : v.getUsers()) {
          Operation *at = body->findAncestorOpInBlock(*user);
          if (!at || at == end)
            return;
        }
  OpBuilder b(first);
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value saved = LLVM::StackSaveOp::create(b, first->getLoc(), ptr);
  b.setInsertionPoint(end);
  LLVM::StackRestoreOp::create(b, end->getLoc(), saved);
}

struct ScopeLoopAllocasPassImpl
    : attn::impl::ScopeLoopAllocasPassBase<ScopeLoopAllocasPassImpl> {
  void runOnOperation() override {
    // The first alloca of each loop body, in program order.
    llvm::MapVector<Block *, Operation *> firsts;
    getOperation().walk([&](memref::AllocaOp alloca) {
      Block *body = alloca->getBlock();
      if (isa<scf::ForOp, scf::WhileOp, scf::ParallelOp>(
              alloca->getParentOp()) &&
          !firsts.count(body))
        firsts[body] = alloca;
    });
    for (auto [body, first] : firsts)
      scope(body, first);
  }
};

} // namespace
