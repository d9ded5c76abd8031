//===- ParallelizeOuterLinalg.cpp - attn-parallelize-outer-linalg ---------===//
//
// Lower linalg ops outside parallel loops to scf.parallel
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_PARALLELIZEOUTERLINALGPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The linalg ops outside any parallel loop (the graph's norms, RoPE, head
/// layout, activations, residuals; the reference path's steps) as loops
/// whose leading parallel ones (at most two) are one scf.parallel, which
/// OpenMP then runs on every core (all parallel dims in one collapsed
/// loop cost a dynamic-schedule dispatch per element: 60x slower; the
/// innermost loop stays sequential); ops already inside a parallel loop are left to
/// convert-linalg-to-loops (a nested parallel region would only add a
/// fork per tile). Before this, every such op ran on one core while the
/// others waited: Qwen3-Next-80B's full-attention projections (S = 512)
/// took 110-125 ms, 97-109 ms after (A/B in one session, attn-bench
/// --layers).
struct ParallelizeOuterLinalgPassImpl
    : attn::impl::ParallelizeOuterLinalgPassBase<ParallelizeOuterLinalgPassImpl> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() &&
          !op->getParentOfType<scf::ParallelOp>() &&
          !op->getParentOfType<scf::ForOp>() &&
          !op->getParentOfType<scf::ForallOp>() &&
          !op->getParentOfType<omp::ParallelOp>())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToLoops(rewriter, op);
      if (failed(loops))
        return signalPassFailure();
      rewriter.eraseOp(op);
      // The leading parallel loops, at most two and never the innermost
      // ([B, S] rows, [B, H] heads: enough iterations for the cores, each
      // a whole row of work; a dynamic-schedule dispatch per element would
      // cost more than the element).
      size_t n = 0;
      while (n < 2 && n + 1 < loops->size() && n < iters.size() &&
             iters[n] == utils::IteratorType::parallel)
        ++n;
      // Each iteration's work: the inner loops' static trip counts (a
      // dynamic one counts as large). Below 64 elements (a convolution
      // state's K - 1 taps per channel) the loop stays sequential: one
      // dispatch per 3 elements cost more than they do.
      int64_t inner = 1;
      for (size_t i = n; i < loops->size(); ++i) {
        auto f = cast<scf::ForOp>((*loops)[i]);
        std::optional<int64_t> lb = getConstantIntValue(f.getLowerBound());
        std::optional<int64_t> ub = getConstantIntValue(f.getUpperBound());
        inner *= lb && ub ? std::max<int64_t>(*ub - *lb, 0) : 1 << 20;
        inner = std::min<int64_t>(inner, 1 << 20);
      }
      if (n == 0 || inner < 64)
        continue;
      // Parallel only when the leading loops have 2 iterations or more: a
      // decode step's [1, 1] rows stay on the calling thread (without this
      // check a Qwen3-Next linear layer's decode step measured 7.9-9.2 ms,
      // against 6.5-6.6 ms with no parallel loops at all).
      auto outer = cast<scf::ForOp>((*loops)[0]);
      Location loc = outer.getLoc();
      rewriter.setInsertionPoint(outer);
      Value trips;
      for (size_t i = 0; i < n; ++i) {
        auto f = cast<scf::ForOp>((*loops)[i]);
        Value count = arith::SubIOp::create(rewriter, loc, f.getUpperBound(),
                                            f.getLowerBound());
        trips = trips ? arith::MulIOp::create(rewriter, loc, trips, count)
                            .getResult()
                      : count;
      }
      Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
      Value wide = arith::CmpIOp::create(rewriter, loc,
                                         arith::CmpIPredicate::sge, trips, two);
      auto branch = scf::IfOp::create(rewriter, loc, wide,
                                      /*withElseRegion=*/true);
      // The sequential nest moves to the else branch; a clone of it becomes
      // the parallel loop in the then branch.
      rewriter.moveOpBefore(outer,
                            branch.getElseRegion().front().getTerminator());
      rewriter.setInsertionPoint(
          branch.getThenRegion().front().getTerminator());
      auto copy = cast<scf::ForOp>(rewriter.clone(*outer));
      SmallVector<scf::ForOp> fors = {copy};
      while (fors.size() < n) {
        scf::ForOp next;
        for (Operation &o : *fors.back().getBody())
          if ((next = dyn_cast<scf::ForOp>(o)))
            break;
        if (!next)
          return signalPassFailure();
        fors.push_back(next);
      }
      SmallVector<Value> lbs, ubs, steps;
      for (scf::ForOp f : fors) {
        lbs.push_back(f.getLowerBound());
        ubs.push_back(f.getUpperBound());
        steps.push_back(f.getStep());
      }
      rewriter.setInsertionPoint(fors.front());
      auto par = scf::ParallelOp::create(rewriter, fors.front().getLoc(), lbs,
                                         ubs, steps);
      for (size_t i = 0; i < n; ++i)
        fors[i].getInductionVar().replaceAllUsesWith(
            par.getInductionVars()[i]);
      Block *from = fors.back().getBody();
      Block *to = par.getBody();
      to->getOperations().splice(to->getTerminator()->getIterator(),
                                 from->getOperations(), from->begin(),
                                 std::prev(from->end()));
      rewriter.eraseOp(fors.front());
    }
  }
};

} // namespace
