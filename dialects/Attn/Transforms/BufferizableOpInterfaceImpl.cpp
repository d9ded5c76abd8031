//===- BufferizableOpInterfaceImpl.cpp - attn bufferization ---------------===//
//
// This file implements BufferizableOpInterface for the tiled ops that the CPU
// micro-kernel lowers, attn.online_attention and attn.gated_delta_chunk: the
// inputs are read, the state (acc, max, sum; out and state: the
// destinations) is read and written in place, and the op becomes its buffer
// form, which attn-cpu-micro-kernel lowers. The other attn ops never reach
// bufferization: they are tiled or lowered to linalg before it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/BufferizableOpInterfaceImpl.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::bufferization;

namespace {

struct OnlineAttentionBufferization
    : public DstBufferizableOpInterfaceExternalModel<
          OnlineAttentionBufferization, OnlineAttentionOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto oa = cast<OnlineAttentionOp>(op);
    auto buffer = [&](Value v) -> FailureOr<Value> {
      if (!v || !isa<TensorType>(v.getType()))
        return v;
      return getBuffer(rewriter, v, options, state);
    };
    SmallVector<Value> buffers;
    for (Value v : {oa.getQuery(), oa.getKey(), oa.getValue(), oa.getAcc(),
                    oa.getMax(), oa.getSum(), oa.getBiasTable(),
                    oa.getPages()}) {
      FailureOr<Value> b = buffer(v);
      if (failed(b))
        return failure();
      buffers.push_back(*b);
    }
    rewriter.setInsertionPoint(op);
    OnlineAttentionOp::create(
        rewriter, op->getLoc(), TypeRange{}, buffers[0], buffers[1],
        buffers[2], buffers[3], buffers[4], buffers[5], oa.getQPos(),
        oa.getKvPos(), buffers[6], oa.getHeadOffset(), buffers[7],
        oa.getNumKeys(), oa.getRangeStart(), oa.getScaleAttr(),
        oa.getRelativeBiasAttr(), oa.getMaskAttr(), oa.getWindowAttr(),
        oa.getSoftcapAttr());
    replaceOpWithBufferizedValues(rewriter, op,
                                  {buffers[3], buffers[4], buffers[5]});
    return success();
  }
};

struct GatedDeltaChunkBufferization
    : public DstBufferizableOpInterfaceExternalModel<
          GatedDeltaChunkBufferization, GatedDeltaChunkOp> {
  /// The output destination is only written (no copy of its old value), and
  /// so is the state's when the op reads its state from initial_state.
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand,
                              const AnalysisState &) const {
    auto chunk = cast<GatedDeltaChunkOp>(op);
    if (&operand == &chunk.getStateMutable())
      return !chunk.getInitialState();
    return &operand != &chunk.getOutMutable();
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto chunk = cast<GatedDeltaChunkOp>(op);
    SmallVector<Value> buffers;
    for (Value v : chunk->getOperands()) {
      FailureOr<Value> b = getBuffer(rewriter, v, options, state);
      if (failed(b))
        return failure();
      buffers.push_back(*b);
    }
    rewriter.setInsertionPoint(op);
    Value init = buffers.size() > 7 ? buffers[7] : Value();
    GatedDeltaChunkOp::create(
        rewriter, op->getLoc(), TypeRange{}, buffers[0], buffers[1], buffers[2],
        buffers[3], buffers[4], buffers[5], buffers[6], init,
        chunk.getScaleAttr(), chunk.getRecurrentAttr(), chunk.getNoDeltaAttr());
    replaceOpWithBufferizedValues(rewriter, op, {buffers[5], buffers[6]});
    return success();
  }
};

} // namespace

void mlir::attn::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AttnDialect *) {
    OnlineAttentionOp::attachInterface<OnlineAttentionBufferization>(*ctx);
    GatedDeltaChunkOp::attachInterface<GatedDeltaChunkBufferization>(*ctx);
  });
}
