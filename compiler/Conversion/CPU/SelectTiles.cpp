//===- SelectTiles.cpp - the CPU target's attention tile sizes -----------===//
//
// This file implements attn-cpu-select-tiles: each attn.sdpa and
// attn.paged_sdpa gets the CPU's tile sizes as #attn.tiles (TileChoice.h:
// rows per head from its GQA group and head dims, keys per tile, decode's
// longer key tiles, split-K), which attn-tile-attention reads.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/TileChoice.h"
#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CPUSELECTTILESPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Query heads per KV head and the head dims (d, dv) of an attention op.
std::array<int64_t, 3> groupAndDims(Operation *op) {
  auto dim3 = [](Value t) {
    return cast<ShapedType>(t.getType()).getDimSize(3);
  };
  if (auto s = dyn_cast<SDPAOp>(op))
    return {s.getGroupSize(), dim3(s.getQuery()), dim3(s.getValue())};
  auto p = cast<PagedSDPAOp>(op);
  return {p.getGroupSize(), dim3(p.getQuery()), dim3(p.getValueCache())};
}

struct CPUSelectTilesPass
    : attn::impl::CPUSelectTilesPassBase<CPUSelectTilesPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    int64_t q = qBlock, kv = kvBlock, dkv = decodeKvBlock,
            split = splitTarget, minKeys = splitMinKeys;
    if (q < 0 || kv < 0 || dkv < 0 || split < 0 || minKeys <= 0) {
      fn.emitError() << "attn-cpu-select-tiles: q-block " << q
                     << ", kv-block " << kv << " and decode-kv-block " << dkv
                     << " must be 0 (the CPU's choice) or positive, "
                        "split-target "
                     << split << " 0 or more, split-min-keys " << minKeys
                     << " positive";
      return signalPassFailure();
    }
    if (fn->hasAttr("attn.reference"))
      return;
    using Tiles = CPUTileDefaults;
    fn.walk([&](Operation *op) {
      if (!isa<SDPAOp, PagedSDPAOp>(op))
        return;
      auto [group, d, dv] = groupAndDims(op);
      op->setAttr(TilesAttr::kAttrName,
                  TilesAttr::get(&getContext(),
                                 Tiles::qBlockFor(group, d, dv, q),
                                 kv ? kv : Tiles::kvBlock,
                                 dkv ? dkv : Tiles::decodeKvBlock, split,
                                 minKeys));
    });
  }
};

} // namespace
