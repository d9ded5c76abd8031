//===- AttnToGPU.cpp - attn.sdpa -> gpu.launch (fp32 SIMT kernel) ---------===//
//
// This file implements convert-attn-to-gpu: each fused attention of a kernel
// entry (an `attn.sdpa` whose result is materialized into the entry's output
// buffer) becomes one `gpu.launch` that writes the output in place:
//
//   grid  = (query blocks, KV heads, batch): one thread block per (batch,
//           KV head, query block), as in the tiled form;
//   block = 32 · ceil(G · qb / R) threads: the G query heads of the group
//           times qb query rows, R rows per warp (8 for head dims up to
//           32, 4 above: registers); lane l holds elements
//           l, l + 32, ... of each row's q and accumulator (registers);
//   K and V tiles of kv-block keys are staged in shared memory by all the
//           threads and read by every row of the group;
//   per key, a warp computes its rows' scores (lane partial dot products
//           summed by gpu.subgroup_reduce, xor shuffles in PTX), masks them by
//           position, and folds them into the row's online-softmax state in the
//           log2 domain (scale · log2 e folded into q, `llvm.intr.exp2`, which
//           NVPTX maps to ex2.approx); a row that sees no key writes 0. The PTX
//           needs no libdevice.
//
// This is the fp32 (CUDA-core) path (FP32Kernel.cpp), the accuracy
// reference of the GPU backend; with precision=bf16 (f16) the same launch
// computes Q·Kᵀ and P·V on tensor cores (MmaKernel.cpp: mma.sync m16n8k16
// on bf16 (f16) inputs, fp32 accumulators). K and V may be a bf16 or f16
// cache (--kv-dtype): the fp32 kernel widens it as it stages the tiles,
// the tensor-core kernel of the same type stages it as it is. A short grid
// (decode) splits each block's keys into parts merged by a second kernel
// (SplitK.cpp). This file reads the tiled form and runs the pass.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/KernelEmitter.h"
#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOGPUPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

using namespace mlir::attn::gpu_kernels;

/// (batch, KV head, query block) mapped to blocks z, y, x.
bool isGridMapping(scf::ForallOp forall) {
  std::optional<ArrayAttr> mapping = forall.getMapping();
  if (!mapping || mapping->size() != 3)
    return false;
  const gpu::MappingId expected[] = {gpu::MappingId::DimZ,
                                     gpu::MappingId::DimY,
                                     gpu::MappingId::DimX};
  for (auto [m, id] : llvm::zip(*mapping, expected)) {
    auto block = dyn_cast<gpu::GPUBlockMappingAttr>(m);
    if (!block || block.getBlock() != id)
      return false;
  }
  return true;
}

struct ConvertAttnToGPUPass
    : attn::impl::ConvertAttnToGPUPassBase<ConvertAttnToGPUPass> {
  using ConvertAttnToGPUPassBase::ConvertAttnToGPUPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn->hasAttr("attn.reference"))
      return;
    // Not tiled: run attn-tile-attention first.
    WalkResult r = fn.walk([&](Operation *op) {
      if (isa<SDPAOp>(op)) {
        op->emitOpError("convert-attn-to-gpu lowers the tiled form: run "
                        "attn-tile-attention (target=gpu, split-target=0) "
                        "first");
        return WalkResult::interrupt();
      }
      if (isa<GatedDeltaRuleOp>(op)) {
        op->emitOpError("convert-attn-to-gpu lowers the tiled form: run "
                        "attn-tile-gated-delta first");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    SmallVector<scf::ForallOp> foralls, gatedDelta;
    fn.walk([&](scf::ForallOp f) {
      if (f->hasAttrOfType<TilesAttr>(TilesAttr::kAttrName))
        foralls.push_back(f);
      if (f->hasAttr("attn.gated_delta"))
        gatedDelta.push_back(f);
    });
    for (scf::ForallOp f : foralls)
      if (failed(convert(f)))
        return signalPassFailure();
    // The chunked tensor-core form where asked for (linear-chunked).
    Type mmaElt = precision == GPUPrecision::fp32 || !linearChunked
                      ? Type()
                      : mmaType(fn.getContext());
    for (scf::ForallOp f : gatedDelta)
      if (failed(emitGatedDeltaGPU(f, mmaElt)))
        return signalPassFailure();
  }

  /// Reads what the kernel needs off the tiled forall: its query tile, its
  /// key ranges (one attn.online_attention each, untiled on the GPU: its
  /// range, mask and pages), the batch's key length, the attention's
  /// parameters.
  LogicalResult readTiled(scf::ForallOp forall, TiledSource &src,
                          OnlineAttentionOp &first) {
    src.forall = forall;
    auto tiles = forall->getAttrOfType<TilesAttr>(TilesAttr::kAttrName);
    if (!tiles)
      return forall.emitOpError("a tiled forall without attn.tiles");
    src.qBlock = tiles.getQBlock();
    SmallVector<OnlineAttentionOp> ranges;
    for (Operation &o : forall.getBody()->without_terminator()) {
      if (auto e = dyn_cast<tensor::ExtractOp>(o))
        src.kvLength = e;
      if (auto oa = dyn_cast<OnlineAttentionOp>(o))
        ranges.push_back(oa);
    }
    for (OnlineAttentionOp oa : ranges) {
      if (!first)
        first = oa;
      if (oa.getBiasTable() || oa.getRelativeBiasAttr())
        return oa.emitOpError("relative position bias (T5) is not supported "
                              "by the GPU backend yet; compile for the CPU");
      if (oa.isPaged()) {
        auto rows = oa.getPages().getDefiningOp<tensor::ExtractSliceOp>();
        if (!rows || rows->getParentOfType<scf::ForallOp>() != forall)
          return oa.emitOpError("a paged tile's pages must be a slice of "
                                "the block table");
        src.pageTable = rows.getSource();
      }
      // Chunked local attention: the chunk's size in `window`, chunks from
      // key position 0 (a context-parallel range's own origin, range_start,
      // is the CPU's: the GPU has no such entry).
      if (oa.getMask() == MaskKind::chunked && oa.getRangeStart())
        return oa.emitOpError("chunked local attention over a sequence "
                              "range (range_start) is not supported by the "
                              "GPU backend; compile for the CPU");
      if (oa.getMask() != MaskKind::none) {
        src.mask = oa.getMask();
        (src.mask == MaskKind::chunked ? src.chunk : src.window) =
            oa.getWindow();
      }
      src.scale = oa.getScale().convertToDouble();
      src.softcap = oa.getSoftcap();
      src.qPos = oa.getQPos();
    }
    if (!first)
      return forall.emitOpError("a tiled forall without attn.online_attention "
                                "over its key ranges");
    // The ops fold the block's key ranges in order, each [kv_pos, kv_pos +
    // count): the block's keys run from the first one's kv_pos to the last
    // one's end (folded to `end` itself, as the tiler writes the count as
    // end - kv_pos).
    OnlineAttentionOp last = ranges.back();
    OpFoldResult count = last.getNumKeys();
    if (!last.isPaged()) {
      auto keys = last.getKey().getDefiningOp<tensor::ExtractSliceOp>();
      if (!keys || keys.getMixedSizes().size() != 4)
        return last.emitOpError("expects its keys as a slice [1, 1, n, d] of "
                                "the sequence's K (attn-tile-attention)");
      count = keys.getMixedSizes()[2];
    }
    src.lo = first.getKvPos();
    OpBuilder eb(last);
    src.hi = eb.createOrFold<arith::AddIOp>(
        last.getLoc(), last.getKvPos(),
        getValueOrCreateConstantIndexOp(eb, last.getLoc(), count));
    auto qTile = first.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
    if (!qTile || qTile->getParentOp() != forall)
      return first.emitOpError("the query tile is not a slice in the forall");
    OpBuilder qb(qTile);
    src.q0 = getValueOrCreateConstantIndexOp(qb, qTile.getLoc(),
                                             qTile.getMixedOffsets()[2]);
    src.qn = getValueOrCreateConstantIndexOp(qb, qTile.getLoc(),
                                             qTile.getMixedSizes()[2]);
    return success();
  }

  /// The tensor-core kernels' operand type: f16, or bf16 (precision bf16,
  /// and the default where fp32 asks for none).
  Type mmaType(MLIRContext *ctx) {
    Builder types(ctx);
    return precision == GPUPrecision::f16 ? Type(types.getF16Type())
                                          : Type(types.getBF16Type());
  }

  /// The kernel's tiles: keys per shared-memory tile, rows per warp, within
  /// the block's shared memory and threads; errors name the option to change.
  LogicalResult chooseTiles(Operation *op, KernelEmitter &e, bool mmaKernel,
                            StringRef mmaName) {
    int64_t group = e.group, d = e.d, dv = e.dv;
    // V read from the K tile: no V ring in shared memory.
    int64_t dvRing = e.vInK ? 0 : dv;
    // fp32: about 32 rows (heads x query rows) per block, static K and V
    // tiles within 48 KB; bf16/f16: up to 128 rows (8 warps of 16), the Q
    // tile and two-slot K/V rings in dynamic shared memory, within
    // max-shared-memory (163 KB on an A100, 227 KB on Hopper; the runtime
    // raises the launch's limit past 48 KB).
    int64_t elt = mmaKernel ? 2 : 4;
    e.qRows = e.src.qBlock;
    int64_t rowsPerWarp = warpRows ? warpRows : 16;
    // Tensor cores: 64-key tiles where the block's shared memory allows
    // them (head dim 256: on Hopper, not on an A100), else 32. Measured on
    // an H200 at head dim 256: 64 keys 7-11% faster than 32 (docs/cuda.md).
    // Value head dims past 256 (the latent's 512): column groups of warps
    // of at most 256 columns each.
    if (mmaKernel && dv > 256) {
      e.dvSplit = (dv + 255) / 256;
      if (dv % (16 * e.dvSplit))
        return op->emitOpError("the ")
               << mmaName << " tensor-core kernel splits a value head dim "
               << dv << " into " << e.dvSplit
               << " column groups of warps, which needs a multiple of "
               << 16 * e.dvSplit;
    }
    // Head chunks, where the group's rows do not fit a block for the
    // kernel's own reasons: one query row per head (q-block 1: decode, or a
    // group at least block-rows wide), the column groups of a value head
    // dim past 256 or the fp32 kernel's wide rows (the latent's 576/512).
    // The limits: the rows (warps of every column group: at most 8 of them;
    // the fp32 kernel's wide rows: 32 rows, 256 threads) and the
    // tensor-core kernel's shared memory at 32-key tiles. (A q-block the
    // user chose too large is an error below.)
    bool wideFp32 = !mmaKernel && e.epl + e.eplV > 8;
    int64_t maxRows = mmaKernel  ? 128 / e.dvSplit
                      : wideFp32 ? 32
                                 : std::numeric_limits<int64_t>::max();
    auto mmaBytesFor = [&](int64_t rows, int64_t keys) {
      return KernelEmitter::mmaSharedMemory(rows, d, dvRing, keys,
                                            /*stages=*/2, rowsPerWarp, e.wgmma)
          .bytes;
    };
    auto fits = [&](int64_t rows) {
      return rows <= maxRows &&
             (!mmaKernel || mmaBytesFor(rows, kvBlock ? int64_t(kvBlock)
                                                      : 32) <= maxSharedMemory);
    };
    if (e.qRows == 1 || e.dvSplit > 1 || wideFp32)
      while (e.headChunks < group && !fits(e.blockHeads() * e.qRows))
        ++e.headChunks;
    if (!mmaKernel && wideFp32 && e.blockHeads() * e.qRows > maxRows)
      return op->emitOpError("the fp32 kernel holds at most 32 rows per "
                             "thread block at head dims ")
             << d << " and " << dv << ", got q-block " << e.qRows
             << ": use a q-block of at most 32";
    int64_t blockRows = e.blockHeads() * e.qRows;
    auto mmaBytes = [&](int64_t keys) { return mmaBytesFor(blockRows, keys); };
    // (Column groups: 16-key tiles, whose scores sit next to 256 columns'
    // accumulators without spilling: at 32 keys ptxas needs 252-255
    // registers, and Kimi-K2's kernel spills. The paged mma.sync kernel at
    // Dv = 256 for sm_90a: 32-key tiles; at 64 its block-table copies next
    // to the 128 accumulators spill 8 bytes for groups of 2 heads, Gemma-3-4B
    // and Qwen3-Next, where sm_90 and sm_80 do not.)
    bool pagedWide = wgmma && e.src.pageTable && dv > 128;
    e.kvBlock = kvBlock                  ? kvBlock
                : e.dvSplit > 1          ? 16
                : mmaKernel && pagedWide ? 32
                : mmaKernel ? (mmaBytes(64) <= maxSharedMemory ? 64 : 32)
                            : std::max<int64_t>(8, 4096 / std::max(d, dv));
    if (e.kvBlock <= 0)
      return op->emitOpError("kv-block must be positive");
    if (splitBlocks < 0 || splitMinKeys <= 0)
      return op->emitOpError("split-blocks must be 0 or more and "
                             "split-min-keys positive, got ")
             << int64_t(splitBlocks) << " and " << int64_t(splitMinKeys);
    if (mmaKernel && e.kvBlock % 16)
      return op->emitOpError("the ")
             << mmaName << " kernel's kv-block must be a multiple of 16, got "
             << e.kvBlock;
    if (!mmaKernel && warpRows)
      return op->emitOpError("warp-rows sets the tensor-core kernel's rows "
                             "per warp (precision=bf16 or f16); the fp32 "
                             "kernel takes 0");
    if (mmaKernel && rowsPerWarp != 16 && rowsPerWarp != 32)
      return op->emitOpError("warp-rows must be 16 or 32, got ") << rowsPerWarp;
    if (mmaKernel && rowsPerWarp == 32 && dv > 128)
      return op->emitOpError("warp-rows 32 holds two accumulators of the "
                             "value head dim per thread: value head dims up "
                             "to 128, got ")
             << dv;
    e.warpRows = rowsPerWarp;
    if (mmaKernel && (blockRows + 15) / 16 * e.dvSplit > 8)
      return op->emitOpError("the ")
             << mmaName << " tensor-core kernel holds at most "
             << 128 / e.dvSplit << " rows per thread block"
             << (e.dvSplit > 1 ? " at this value head dim" : "") << ", got "
             << e.blockHeads() << " heads x q-block " << e.qRows << " = "
             << blockRows << ": use a q-block of at most "
             << std::max<int64_t>(1, 128 / e.dvSplit / e.blockHeads())
             << (e.blockHeads() * e.dvSplit > 128
                     ? " (q-block 1 splits the heads across blocks)"
                     : "");
    if (mmaKernel) {
      int64_t bytes = mmaBytes(e.kvBlock);
      if (bytes > maxSharedMemory)
        return op->emitOpError("kv-block ")
               << e.kvBlock << (kvBlock ? "" : " (the default)") << " needs "
               << bytes
               << " bytes of shared memory (the Q tile, two K and V tiles); "
                  "at most "
               << static_cast<int64_t>(maxSharedMemory)
               << " (max-shared-memory): use a smaller kv-block or q-block";
    } else if (e.kvBlock * (d + dv) * elt > 48 * 1024) {
      return op->emitOpError("kv-block ")
             << e.kvBlock << " needs " << e.kvBlock * (d + dv) * elt
             << " bytes of shared memory (K, V tiles); at most 49152";
    }
    return success();
  }

  LogicalResult convert(scf::ForallOp forall) {
    if (forall.getRank() != 3)
      return forall.emitOpError(
          "the tiler's split-K parts are not lowered to the GPU: tile with "
          "split-target=0 (convert-attn-to-gpu splits a short grid's keys "
          "itself: split-blocks)");
    if (!isGridMapping(forall))
      return forall.emitOpError(
          "expects the tiled forall mapped to the grid (mapping = "
          "[#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]: batch, KV head, "
          "query block), as attn-tile-attention{target=gpu} makes it");
    // The kernel entry form: the result goes straight into an output buffer.
    bufferization::MaterializeInDestinationOp dest;
    Value result = forall.getResult(0);
    if (result.hasOneUse())
      dest = dyn_cast<bufferization::MaterializeInDestinationOp>(
          *result.getUsers().begin());
    if (!dest || !isa<BaseMemRefType>(dest.getDest().getType()))
      return forall.emitOpError(
          "the GPU backend compiles attention kernel entries (attn-compile "
          "--kernels): the result must be materialized into an output "
          "buffer; blocks and models run on the CPU for now");
    TiledSource src;
    OnlineAttentionOp first;
    if (failed(readTiled(forall, src, first)))
      return failure();
    auto qSlice = first.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
    auto kSlice = first.getKey().getDefiningOp<tensor::ExtractSliceOp>();
    auto vSlice = first.getValue().getDefiningOp<tensor::ExtractSliceOp>();
    if (!kSlice || !vSlice)
      return first.emitOpError("K and V tiles must be slices of K and V");
    Value qT = qSlice.getSource(), kT = kSlice.getSource(),
          vT = vSlice.getSource();
    // V as the first columns of K's rows (the latent cache's absorbed
    // form: V's tiles slices of K itself, or of a slice of K's first
    // columns): read in place, from K's buffer.
    bool vInK = vT == kT;
    if (auto kv = vT.getDefiningOp<tensor::ExtractSliceOp>();
        kv && kv.getSource() == kT && kv.hasUnitStride() &&
        llvm::all_of(kv.getMixedOffsets(),
                     [](OpFoldResult o) { return isConstantIntValue(o, 0); }))
      vInK = true;
    // (Columns from K's first: the tile's own column offset 0.)
    vInK = vInK && isConstantIntValue(vSlice.getMixedOffsets().back(), 0);
    Operation *op = first;
    auto qTy = cast<RankedTensorType>(qT.getType());
    // K and V fp32 or a 16-bit cache (--kv-dtype), read as it is (widened,
    // or taken by a tensor-core kernel of the same type); q and the output
    // fp32 or of the cache's 16-bit type (--qo-dtype: widened as q is
    // loaded, rounded as the output is stored).
    Type kvElt = cast<ShapedType>(kT.getType()).getElementType();
    Type qElt = cast<ShapedType>(qT.getType()).getElementType();
    Type outElt = cast<ShapedType>(dest.getDest().getType()).getElementType();
    if (!(qElt.isF32() || qElt == kvElt) || outElt != qElt)
      return op->emitOpError("the GPU kernels take q and the output in f32 "
                             "or in the K/V cache's 16-bit type; got q ")
             << qElt << ", output " << outElt << ", K/V " << kvElt;
    if (!(kvElt.isF32() || kvElt.isBF16() || kvElt.isF16()) ||
        cast<ShapedType>(vT.getType()).getElementType() != kvElt)
      return op->emitOpError("the GPU kernels take K and V of one type, "
                             "f32, bf16 or f16; got ")
             << kT.getType() << " and " << vT.getType();
    bool mmaKernel = precision != GPUPrecision::fp32;
    Type mmaElt = mmaType(forall.getContext());
    StringRef mmaName = mmaElt.isF16() ? "f16" : "bf16";
    if (mmaKernel && !kvElt.isF32() && kvElt != mmaElt)
      return op->emitOpError("the ")
             << mmaName << " tensor-core kernel would round a "
             << (kvElt.isBF16() ? "bf16" : "f16") << " K/V cache to " << mmaName
             << ": compile with precision=" << (kvElt.isBF16() ? "bf16" : "f16")
             << " or fp32";
    int64_t hq = qTy.getDimSize(1);
    int64_t d = qTy.getDimSize(3);
    // (The V tile's width: V's own, or the columns of K it reads.)
    int64_t dv = vSlice.getType().getDimSize(vSlice.getType().getRank() - 1);
    int64_t hkv = cast<RankedTensorType>(kT.getType()).getDimSize(1);
    if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) ||
        ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
      return op->emitOpError("the GPU kernel needs static head counts and "
                             "head dims");
    int64_t group = hq / hkv;
    OpBuilder b(dest);
    Location loc = forall.getLoc();
    KernelEmitter e{b, loc, src};
    e.hkv = hkv;
    e.group = group;
    e.d = d;
    e.dv = dv;
    e.epl = (d + kWarp - 1) / kWarp;
    e.eplV = (dv + kWarp - 1) / kWarp;
    e.vInK = vInK;
    e.kRowsPerWarp = std::max(e.epl, e.eplV) <= 1 ? 8 : 4;
    e.mmaElt = mmaElt;
    // sm_90a: warpgroup MMAs on tiles copied as they are (a cache of the
    // kernel's type) in whole swizzle blocks of 64 columns; one m16 tile per
    // warp (the warpgroup's rows); wgmma's N (kv-block for S, Dv for P·V)
    // at most 256. A paged cache's copies (cp.async through the block
    // table) next to Dv = 256's accumulators spill: the mma.sync kernel
    // there.
    e.wgmma = wgmma && mmaKernel && kvElt == mmaElt && d % 64 == 0 &&
              dv % 64 == 0 && dv <= 256 && warpRows != 32 && kvBlock <= 256 &&
              (!src.pageTable || dv <= 128) && !vInK;
    StringRef products = wgmmaProducts;
    if (products != "all" && products != "qk" && products != "pv" &&
        products != "none")
      return op->emitOpError("wgmma-products takes all, qk, pv or none; got '")
             << products << "'";
    e.tma = tma;
    e.overlap = overlap;
    e.warpSpecialized = warpSpecialized;
    e.wgmmaQK = products == "all" || products == "qk";
    e.wgmmaPV = products == "all" || products == "pv";
    if (mmaKernel && (d % 16 || dv % 16))
      return op->emitOpError("the ")
             << mmaName
             << " tensor-core kernel needs head dims that are multiples of "
                "16, got "
             << d << " and " << dv << " (the fp32 kernel takes any)";
    if (failed(chooseTiles(op, e, mmaKernel, mmaName)))
      return failure();
    auto buffer = [&](Value t) -> Value {
      auto ty = cast<RankedTensorType>(t.getType());
      return bufferization::ToBufferOp::create(
          b, loc, MemRefType::get(ty.getShape(), ty.getElementType()), t,
          /*readOnly=*/true);
    };
    Value lens = src.kvLength ? buffer(src.kvLength.getTensor()) : Value();
    if (src.pageTable)
      e.table = buffer(src.pageTable);
    Value qBuf = buffer(qT);
    Value kBuf = buffer(kT);
    Value vBuf = vInK ? kBuf : buffer(vT);
    if (splitBlocks > 0)
      e.planSplit(qBuf, kBuf, dest.getDest(), splitBlocks, splitMinKeys);
    if (mmaKernel)
      e.emitMma(dest.getDest(), qBuf, kBuf, vBuf, lens);
    else
      e.emit(dest.getDest(), qBuf, kBuf, vBuf, lens);
    if (splitBlocks > 0)
      e.finishSplit(dest.getDest());
    dest.erase();
    forall.erase();
    return success();
  }
};

} // namespace
