//===- DynamicSchedule.cpp - dynamic OpenMP schedule for uneven loops -----===//
//
// This file implements attn-dynamic-schedule.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/Passes.h"

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

struct DynamicScheduleLoopsPass
    : attn::impl::DynamicScheduleLoopsPassBase<DynamicScheduleLoopsPass> {
  void runOnOperation() override {
    getOperation().walk([](omp::WsloopOp loop) {
      if (loop.getScheduleKind())
        return;
      loop.setScheduleKind(omp::ClauseScheduleKind::Dynamic);
      // The largest run of iterations a call in the body asks for.
      int64_t chunk = 1;
      loop.walk([&](func::CallOp call) {
        if (auto n = call->getAttrOfType<IntegerAttr>(attn::kScheduleChunkAttr))
          chunk = std::max(chunk, n.getInt());
      });
      if (chunk > 1)
        loop.getScheduleChunkMutable().assign(runLength(loop, chunk));
    });
  }
};
} // namespace
