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
      if (chunk > 1) {
        OpBuilder b(loop);
        loop.getScheduleChunkMutable().assign(arith::ConstantOp::create(
            b, loop.getLoc(), b.getI64IntegerAttr(chunk)));
      }
    });
  }
};
} // namespace
