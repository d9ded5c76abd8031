//===- SelectTiles.cpp - the CUDA target's attention tile sizes ----------===//
//
// This file implements attn-gpu-select-tiles: each attn.sdpa and
// attn.paged_sdpa gets the GPU's tile sizes as #attn.tiles (block-rows
// query rows per thread block over its GQA group, kv-block keys per tile,
// no split-K), which attn-tile-attention=target=gpu reads and
// convert-attn-to-gpu finds on the tiled loop nest.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_GPUSELECTTILESPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

struct GPUSelectTilesPass
    : attn::impl::GPUSelectTilesPassBase<GPUSelectTilesPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    int64_t q = qBlock, kv = kvBlock, rows = blockRows;
    if (q < 0 || kv < 0 || rows <= 0) {
      fn.emitError() << "attn-gpu-select-tiles: q-block " << q
                     << " and kv-block " << kv
                     << " must be 0 (the GPU's choice) or positive, "
                        "block-rows "
                     << rows << " positive";
      return signalPassFailure();
    }
    if (fn->hasAttr("attn.reference"))
      return;
    fn.walk([&](Operation *op) {
      int64_t group = 0;
      if (auto s = dyn_cast<SDPAOp>(op))
        group = s.getGroupSize();
      else if (auto p = dyn_cast<PagedSDPAOp>(op))
        group = p.getGroupSize();
      else
        return;
      int64_t rowsPerHead =
          q ? q : std::max<int64_t>(1, rows / std::max<int64_t>(group, 1));
      int64_t keys = kv ? kv : 64;
      op->setAttr(TilesAttr::kAttrName,
                  TilesAttr::get(&getContext(), rowsPerHead, keys, keys,
                                 /*split_target=*/0,
                                 /*split_min_keys=*/512));
    });
  }
};

} // namespace
