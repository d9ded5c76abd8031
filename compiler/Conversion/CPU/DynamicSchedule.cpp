//===- DynamicSchedule.cpp - dynamic OpenMP schedule for uneven loops -----===//
//
// This file implements attn-dynamic-schedule.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_DYNAMICSCHEDULELOOPSPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;

namespace {
struct DynamicScheduleLoopsPass
    : attn::impl::DynamicScheduleLoopsPassBase<DynamicScheduleLoopsPass> {
  void runOnOperation() override {
    getOperation().walk([](omp::WsloopOp loop) {
      if (!loop.getScheduleKind())
        loop.setScheduleKind(omp::ClauseScheduleKind::Dynamic);
    });
  }
};
} // namespace
