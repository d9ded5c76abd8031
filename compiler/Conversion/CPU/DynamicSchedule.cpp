//===- DynamicSchedule.cpp - dynamic OpenMP schedule for uneven loops -----===//
//
// This file implements attn-dynamic-schedule.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <algorithm>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_DYNAMICSCHEDULELOOPSPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
/// The run of iterations each grab of `loop` takes: `most`, or fewer when
/// the loop has fewer than `most` iterations per thread of its team
/// (omp_get_num_threads(), when the module declares it: the micro-kernel
/// pass does where it asks for runs), so that every thread gets work:
/// max(1, min(most, ceil(trip count / threads))) as an i64.
Value runLength(omp::WsloopOp loop, int64_t most) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  auto fixed = [&]() -> Value {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(most));
  };
  auto nest = dyn_cast_or_null<omp::LoopNestOp>(loop.getWrappedLoop());
  auto numThreads = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      loop, b.getStringAttr("omp_get_num_threads"));
  if (!nest || nest.getLoopInclusive() || !numThreads ||
      numThreads.getFunctionType() !=
          b.getFunctionType(TypeRange{}, {b.getI32Type()}))
    return fixed();
  for (Value x : nest.getOperands())
    if (!x.getType().isIndex())
      return fixed();
  Value trip = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [lb, ub, step] :
       llvm::zip(nest.getLoopLowerBounds(), nest.getLoopUpperBounds(),
                 nest.getLoopSteps())) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    Value n = arith::CeilDivSIOp::create(b, loc, span, step);
    trip = arith::MulIOp::create(b, loc, trip, n);
  }
  Value raw = func::CallOp::create(b, loc, numThreads).getResult(0);
  Value threads = arith::IndexCastOp::create(b, loc, b.getIndexType(), raw);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value team = arith::MaxSIOp::create(b, loc, threads, one);
  Value per = arith::CeilDivSIOp::create(b, loc, trip, team);
  Value cap = arith::ConstantIndexOp::create(b, loc, most);
  Value capped = arith::MinSIOp::create(b, loc, per, cap);
  Value run = arith::MaxSIOp::create(b, loc, capped, one);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), run);
}

/// Replaces `loop`, the last op of its parallel region, by runs of `run`
/// (i64; null: 1) iterations handed out from a counter the region shares: each
/// thread takes the next run with one atomic add, until none is left. The
/// same dynamic schedule as libomp's, without its dispatch calls: Debian's
/// libomp is a KMP_DEBUG build, whose __kmpc_dispatch_next formats its
/// trace strings with malloc at every call (88 mallocs per decode step of
/// the seed's attention on 2 threads). Loops of other forms (reductions,
/// nowait, ordered, an inclusive or non-index nest, ops after the loop in
/// the region) keep libomp's schedule.
void dispatchByCounter(omp::WsloopOp loop, Value run) {
  auto region = dyn_cast<omp::ParallelOp>(loop->getParentOp());
  auto nest = dyn_cast_or_null<omp::LoopNestOp>(loop.getWrappedLoop());
  if (!region || !nest || nest.getLoopInclusive() ||
      !isa_and_nonnull<omp::TerminatorOp>(loop->getNextNode()) ||
      !loop.getReductionVars().empty() || loop.getNowait() ||
      loop.getOrdered() || loop.getOrderAttr() ||
      !nest.getRegion().hasOneBlock())
    return;
  for (Value x : nest.getOperands())
    if (!x.getType().isIndex())
      return;
  // The counter lives at the start of the function or of the body of an
  // enclosing parallel region (outlined: each of its threads runs it on its
  // own stack frame). An alloca just before a region that runs in a loop
  // would grow the stack at every iteration (scf.for is an allocation scope
  // that the lowering to LLVM does not honor: no stack save and restore);
  // one on the function's frame would be shared by nested regions that the
  // threads of an outer region run at once.
  Operation *outer = region;
  while (outer->getParentOp() &&
         !isa<FunctionOpInterface, omp::ParallelOp>(outer->getParentOp()))
    outer = outer->getParentOp();
  if (!outer->getParentOp())
    return;
  Location loc = loop.getLoc();
  OpBuilder b(region);
  b.setInsertionPointToStart(&outer->getParentRegion()->front());
  Type i64 = b.getI64Type(), index = b.getIndexType();
  Value counter =
      memref::AllocaOp::create(b, loc, MemRefType::get({}, i64)).getResult();
  // Zeroed before each run of the region.
  b.setInsertionPoint(region);
  Value zero64 = arith::ConstantIntOp::create(b, loc, i64, 0);
  memref::StoreOp::create(b, loc, zero64, counter, ValueRange{});
  b.setInsertionPoint(loop);
  if (!run)
    run = arith::ConstantIntOp::create(b, loc, i64, 1);
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value one = idx(1), zero = idx(0);
  SmallVector<Value> counts;
  Value trip = one;
  for (auto [lb, ub, step] :
       llvm::zip(nest.getLoopLowerBounds(), nest.getLoopUpperBounds(),
                 nest.getLoopSteps())) {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    Value n = arith::CeilDivSIOp::create(b, loc, span, step);
    Value nonNegative = arith::MaxSIOp::create(b, loc, n, zero);
    counts.push_back(nonNegative);
    trip = arith::MulIOp::create(b, loc, trip, nonNegative);
  }
  Value runIndex = arith::IndexCastOp::create(b, loc, index, run);
  Type types[] = {index};
  auto whileOp = scf::WhileOp::create(b, loc, TypeRange(types), ValueRange{});
  {
    b.createBlock(&whileOp.getBefore());
    Value first =
        memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, run,
                                    counter, ValueRange{})
            .getResult();
    Value start = arith::IndexCastOp::create(b, loc, index, first);
    Value more =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, start, trip);
    scf::ConditionOp::create(b, loc, more, ValueRange{start});
  }
  Block *after = b.createBlock(&whileOp.getAfter(), {}, types, {loc});
  Value start = after->getArgument(0);
  Value top = arith::AddIOp::create(b, loc, start, runIndex);
  Value end = arith::MinSIOp::create(b, loc, top, trip);
  auto forOp = scf::ForOp::create(b, loc, start, end, one);
  b.setInsertionPoint(forOp.getBody()->getTerminator());
  // The flat iteration number, innermost dim fastest, back to the nest's
  // induction variables.
  Block &body = nest.getRegion().front();
  IRMapping map;
  Value rest = forOp.getInductionVar();
  for (int64_t d = int64_t(counts.size()) - 1; d >= 0; --d) {
    Value at = rest;
    if (d > 0) {
      at = arith::RemUIOp::create(b, loc, rest, counts[d]);
      rest = arith::DivUIOp::create(b, loc, rest, counts[d]);
    }
    Value scaled = arith::MulIOp::create(b, loc, at, nest.getLoopSteps()[d]);
    Value iv =
        arith::AddIOp::create(b, loc, nest.getLoopLowerBounds()[d], scaled);
    map.map(body.getArgument(d), iv);
  }
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  b.setInsertionPointAfter(forOp);
  scf::YieldOp::create(b, loc);
  loop.erase();
}

struct DynamicScheduleLoopsPass
    : attn::impl::DynamicScheduleLoopsPassBase<DynamicScheduleLoopsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<omp::WsloopOp, Value>> loops;
    getOperation().walk([&](omp::WsloopOp loop) {
      if (loop.getScheduleKind())
        return;
      loop.setScheduleKind(omp::ClauseScheduleKind::Dynamic);
      // Monotonic: libomp runs a nonmonotonic dynamic loop (OpenMP 5's
      // default) as static stealing, which mallocs a lock per thread for
      // every loop; a monotonic one hands out runs from a shared counter
      // and allocates nothing (a decode step made 92 mallocs for them).
      loop.setScheduleMod(omp::ScheduleModifier::monotonic);
      // The largest run of iterations a call in the body asks for.
      int64_t chunk = 1;
      loop.walk([&](func::CallOp call) {
        if (auto n = call->getAttrOfType<IntegerAttr>(attn::kScheduleChunkAttr))
          chunk = std::max(chunk, n.getInt());
      });
      Value run;
      if (chunk > 1) {
        run = runLength(loop, chunk);
        loop.getScheduleChunkMutable().assign(run);
      }
      loops.push_back({loop, run});
    });
    for (auto [loop, run] : loops)
      dispatchByCounter(loop, run);
  }
};
} // namespace
