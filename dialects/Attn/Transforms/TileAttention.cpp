//===- TileAttention.cpp - attn.sdpa -> online-softmax loops --------------===//
//
// This file implements attn-tile-attention. Each attn.sdpa and
// attn.paged_sdpa is built in four steps:
//
//  1. upstream tiling (scf::tileUsingSCF, through the op's TilingInterface)
//     builds an scf.forall over (batch, KV head, query block) with the op's
//     tile in it: the query rows of all G = Hq/Hkv query heads of one KV
//     head ([1, G, rows, d]), so that each K/V tile is read once per group.
//     The loop header is ours (a custom loop): its induction variables count
//     tiles, which a GPU grid maps, and split-K adds its part dimension and
//     workspaces there;
//  2. the tile's online form (OnlineForm.cpp): one attn.online_attention
//     over the row's keys from the initial state, then attn.online_finalize;
//  3. the key-range cut (KeyRanges.cpp): a masked op becomes the keys its
//     rows see, unmasked where every row sees them; with split-K each part
//     keeps its share of them;
//  4. the write-back where the op's TilingInterface puts the tile's results
//     (or the part's state into the workspaces), and on the CPU the key
//     loop of each piece, by upstream tiling of its key dimension. The GPU
//     target keeps the pieces whole: convert-attn-to-gpu reads their ranges
//     and builds its own loop.
//
// The split-K merge is in TileAttentionMerge.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/TileAttention.h"

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "dialects/Attn/Transforms/OnlineForm.h"
#include "dialects/Attn/Transforms/TileLoops.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_TILEATTENTIONPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

using namespace mlir::attn::tiling;

namespace mlir::attn::tiling {

FailureOr<std::pair<scf::ForallOp, Operation *>>
SDPATiler::tileBlocks(IRRewriter &rewriter, Value split, Value nSplit) {
  bool maySplit = split != Value();
  Operation *tiled = nullptr;
  scf::ForallOp forall;
  // The loop header: (batch, KV head, query block[, part]), each induction
  // variable a tile index; the tile at (b, g, qb) is the query heads
  // [g·G, (g+1)·G) and rows [qb·q-block, ...) of batch row b, all value
  // dims.
  auto header = [&](RewriterBase &b, Location l, ArrayRef<Range> domain,
                    ArrayRef<OpFoldResult>, ValueRange dests)
      -> FailureOr<scf::SCFTilingOptions::CustomLoopHeaderInfo> {
    IndexMath m{b, l};
    Value zero = m.c(0);
    Value numQBlocks = m.ceilDiv(qLen, m.c(sizes.qBlock));
    SmallVector<Value> outs(dests.begin(), dests.end());
    // With split-K the parts come before the KV heads: the threads, taking
    // iterations in turn, read the same keys of neighbouring KV heads at
    // once, rows that share their 4 KiB in a pool whose pages interleave
    // the heads (vLLM's NHD) and pages in an HND one, rather than one
    // head's keys in two parts far apart (docs/benchmarks.md, "Page pools'
    // layouts": 1.15x for NHD, 1.1x for HND in f32 decode).
    SmallVector<OpFoldResult> ubs = {batch, b.getIndexAttr(hkv), numQBlocks};
    if (maySplit) {
      // Workspace of the split parts: per (batch, KV head, part) the
      // unnormalized state of the group's rows, acc [.., G, q_len, dv],
      // max and sum [.., G, q_len]; empty (q_len 0) without split.
      Value wsRows = arith::SelectOp::create(b, l, split, qLen, zero);
      SmallVector<int64_t> accShape = {kDyn,      hkv,  kDyn,
                                       groupSize, kDyn, headDimV};
      SmallVector<int64_t> rowShape = {kDyn, hkv, kDyn, groupSize, kDyn};
      outs.push_back(tensor::EmptyOp::create(
          b, l, accShape, accType, ValueRange{batch, nSplit, wsRows}));
      for (int i = 0; i < 2; ++i)
        outs.push_back(tensor::EmptyOp::create(
            b, l, rowShape, accType, ValueRange{batch, nSplit, wsRows}));
      ubs.insert(ubs.begin() + 1, nSplit);
    }
    std::optional<ArrayAttr> mapping;
    if (sizes.gridMapping && !maySplit) {
      MLIRContext *ctx = b.getContext();
      mapping = b.getArrayAttr(
          {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ),
           gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY),
           gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
    }
    forall = scf::ForallOp::create(b, l, ubs, outs, mapping);
    // The tiled loop nest carries the sizes it was built with (a target's
    // later lowering, convert-attn-to-gpu, reads them there).
    forall->setAttr(TilesAttr::kAttrName,
                    TilesAttr::get(b.getContext(), sizes.qBlock, sizes.kvBlock,
                                   sizes.decodeKvBlock, sizes.splitTarget,
                                   sizes.splitMinKeys));
    Block *body = forall.getBody();
    b.setInsertionPoint(body->getTerminator());
    IndexMath n{b, l};
    Value q0 = n.mul(body->getArgument(ivQBlock(maySplit)), n.c(sizes.qBlock));
    Value blockRows = n.c(sizes.qBlock);
    Value qn = n.min(blockRows, n.sub(qLen, q0));
    // (An affine map, so that the tile's KV head, h0 floordiv G, folds
    // back to the induction variable.)
    OpFoldResult h0 = affine::makeComposedFoldedAffineApply(
        b, l, b.getAffineDimExpr(0) * groupSize,
        {body->getArgument(ivHead(maySplit))});
    scf::SCFTilingOptions::CustomLoopHeaderInfo info;
    info.loops = {cast<LoopLikeOpInterface>(forall.getOperation())};
    info.tileOffset = {body->getArgument(0), h0, q0, b.getIndexAttr(0)};
    info.tileSizes = {b.getIndexAttr(1), b.getIndexAttr(groupSize), qn,
                      domain[3].size};
    for (size_t i = 0; i < dests.size(); ++i)
      info.destinationTensors.push_back(forall.getRegionIterArgs()[i]);
    return info;
  };
  // The write-back waits for the tile's online form (buildBlock): here
  // only where each result goes.
  auto terminator = [&](RewriterBase &, Location, ArrayRef<LoopLikeOpInterface>,
                        ValueRange results,
                        ArrayRef<SmallVector<OpFoldResult>> offsets,
                        ArrayRef<SmallVector<OpFoldResult>> sizes,
                        ValueRange) -> LogicalResult {
    tiled = results.empty() ? nullptr : results.front().getDefiningOp();
    resultOffsets.assign(offsets.begin(), offsets.end());
    resultSizes.assign(sizes.begin(), sizes.end());
    return success();
  };
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::CustomOp)
      .setTileSizes({rewriter.getIndexAttr(1), rewriter.getIndexAttr(groupSize),
                     rewriter.getIndexAttr(sizes.qBlock),
                     rewriter.getIndexAttr(0)})
      .setCustomLoopGenerationFns(header, terminator);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> result =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(op), options);
  if (failed(result) || !tiled || !forall)
    return op->emitOpError("attn-tile-attention could not tile its query "
                           "blocks");
  return std::make_pair(forall, tiled);
}

Value SDPATiler::keyAlignment(IRRewriter &rewriter, Operation *keys) {
  // The CPU folds each piece by tiles of kv-block keys: the unmasked one
  // aligned to them, unless the block has few rows (decode: tiles of
  // decode-kv-block, and an aligned piece would add a masked tile).
  if (sizes.gridMapping)
    return {};
  Location loc = keys->getLoc();
  rewriter.setInsertionPoint(keys);
  IndexMath n{rewriter, loc};
  Value qn = getValueOrCreateConstantIndexOp(rewriter, loc, resultSizes[0][2]);
  Value rows = n.mul(qn, n.c(groupSize));
  Value few = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt,
                                    rows, n.c(17));
  // One op per statement: the host compiler's argument order would
  // change the IR (tools/dev.sh gcc-check).
  Value one = n.c(1);
  Value block = n.c(sizes.kvBlock);
  return arith::SelectOp::create(rewriter, loc, few, one, block);
}

LogicalResult SDPATiler::buildBlock(IRRewriter &rewriter, scf::ForallOp forall,
                                    Operation *tile, Value split,
                                    Value nSplit) {
  Location loc = tile->getLoc();
  Block *body = forall.getBody();
  bool maySplit = split != Value();
  Value part = maySplit ? body->getArgument(kIvPart) : Value();
  rewriter.setInsertionPoint(tile);
  IndexMath n{rewriter, loc};
  // Sinks count in one part only.
  Value countSinks;
  if (maySplit)
    countSinks = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                       part, n.c(0));
  FailureOr<OnlineForm> form = buildOnlineForm(rewriter, tile, countSinks);
  if (failed(form))
    return failure();
  Value align = keyAlignment(rewriter, form->keys);
  KeyCut cut = cutKeyRange(rewriter, form->keys, align);
  SmallVector<OnlineAttentionOp> pieces = cut.pieces;
  if (maySplit) {
    // Part s takes keys [lo + s·per, lo + (s+1)·per) of the block's keys
    // [lo, hi) (all of them with one part).
    rewriter.setInsertionPoint(pieces.front());
    Value lo = cut.lo, hi = cut.hi;
    Value per = n.ceilDiv(n.sub(hi, lo), nSplit);
    Value sLo = n.min(n.add(lo, n.mul(part, per)), hi);
    Value sHi = n.min(n.add(sLo, per), hi);
    for (OnlineAttentionOp &piece : pieces) {
      FailureOr<OnlineAttentionOp> mine =
          keySubrange(rewriter, piece, sLo, sHi);
      if (failed(mine))
        return piece.emitOpError("could not take split-K's part of its keys");
      piece = *mine;
    }
  }
  // The tile's rows and state, for the write-back.
  rewriter.setInsertionPoint(tile);
  Value qn = getValueOrCreateConstantIndexOp(rewriter, loc, resultSizes[0][2]);
  SmallVector<Value> state(pieces.back()->getResults());
  Value result = form->result, rowMax = state[1], rowSum = state[2];
  OpFoldResult one = rewriter.getIndexAttr(1), z = rewriter.getIndexAttr(0),
               G = rewriter.getIndexAttr(groupSize),
               Dv = rewriter.getIndexAttr(headDimV);
  Value outRows = qn, partRows;
  SmallVector<Value> workspace;
  if (maySplit) {
    // Exactly one of the two writes has rows: the normalized block into
    // the output, or the part's state into the workspace.
    outRows = arith::SelectOp::create(rewriter, loc, split, n.c(0), qn);
    partRows = n.sub(qn, outRows);
    auto rows = [&](Value t, Value count, bool withDv) -> Value {
      SmallVector<OpFoldResult> offs = {z, z}, sz = {G, count};
      if (withDv) {
        offs.push_back(z);
        sz.push_back(Dv);
      }
      SmallVector<OpFoldResult> strides(offs.size(), one);
      return tensor::ExtractSliceOp::create(rewriter, loc, t, offs, sz,
                                            strides);
    };
    result = rows(result, outRows, true);
    if (statsInit) {
      rowMax = rows(rowMax, outRows, false);
      rowSum = rows(rowSum, outRows, false);
    }
    workspace = {rows(state[0], partRows, true),
                 rows(state[1], partRows, false),
                 rows(state[2], partRows, false)};
  }
  // Write the group's rows back, where the op's TilingInterface puts them.
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> oOffs = resultOffsets[0];
  SmallVector<OpFoldResult> oSizes = resultSizes[0];
  oSizes[2] = outRows;
  SmallVector<OpFoldResult> ones(4, one);
  ValueRange outs = forall.getRegionIterArgs();
  tensor::ParallelInsertSliceOp::create(rewriter, loc, result, outs[0], oOffs,
                                        oSizes, ones);
  Value bIdx = body->getArgument(0), gIdx = body->getArgument(ivHead(maySplit));
  if (statsInit)
    insertStats(
        rewriter, loc, rowMax, rowSum, outs[1], bIdx,
        getValueOrCreateConstantIndexOp(rewriter, loc, resultOffsets[1][1]),
        resultOffsets[1][2], outRows);
  int64_t wsBase = statsInit ? 2 : 1;
  for (size_t i = 0; i < workspace.size(); ++i) {
    SmallVector<OpFoldResult> offs = {bIdx, gIdx, part, z, z};
    SmallVector<OpFoldResult> sz = {one, one, one, G, partRows};
    if (i == 0) {
      offs.push_back(z);
      sz.push_back(Dv);
    }
    SmallVector<OpFoldResult> strides(offs.size(), one);
    tensor::ParallelInsertSliceOp::create(rewriter, loc, workspace[i],
                                          outs[wsBase + i], offs, sz, strides);
  }
  // The tiled op and its slices are replaced by the online form.
  SmallVector<Value> operands(tile->getOperands());
  rewriter.eraseOp(tile);
  for (Value v : operands)
    if (Operation *def = v.getDefiningOp();
        def && isa<tensor::ExtractSliceOp, tensor::GenerateOp>(def) &&
        def->use_empty() && def->getBlock() == body)
      rewriter.eraseOp(def);
  // One slice where tiling and the online form sliced a slice.
  {
    RewritePatternSet patterns(forall.getContext());
    tensor::populateMergeConsecutiveInsertExtractSlicePatterns(patterns);
    (void)applyPatternsGreedily(forall.getOperation(), std::move(patterns));
  }
  if (sizes.gridMapping)
    return success();
  // CPU: each piece's keys in tiles of kv-block, or decode-kv-block when
  // the block has few rows (decode, up to 16: one row per head of a group
  // of 16 query heads per KV head), so that the kernel can stream K and V
  // ahead of its use inside one tile.
  OpBuilder b(pieces.front());
  IndexMath m{b, loc};
  Value step = m.c(sizes.kvBlock);
  if (sizes.decodeKvBlock != sizes.kvBlock) {
    // (Its own compare: the cut's is folded away with the alignment when
    // no piece uses it.)
    Value rows = m.mul(qn, m.c(groupSize));
    Value fewRows =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rows, m.c(17));
    step = arith::SelectOp::create(b, loc, fewRows, m.c(sizes.decodeKvBlock),
                                   step);
  }
  for (OnlineAttentionOp piece : pieces) {
    b.setInsertionPoint(piece);
    if (failed(tileIntoLoops(b, cast<TilingInterface>(piece.getOperation()),
                             {b.getIndexAttr(0), b.getIndexAttr(0), step})))
      return op->emitOpError("attn-tile-attention could not tile the keys "
                             "of its attn.online_attention");
  }
  return success();
}

Value SDPATiler::splat(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       double v, ValueRange dyn) {
  auto ty = RankedTensorType::get(shape, accType);
  Value c =
      arith::ConstantOp::create(b, loc, accType, b.getFloatAttr(accType, v));
  return tensor::SplatOp::create(b, loc, ty, c, dyn);
}

LogicalResult SDPATiler::run() {
  IRRewriter rewriter(op->getContext());
  OpBuilder &b = rewriter;
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  IndexMath m{b, loc};
  Value query, key, value, blockTable;
  if (auto s = dyn_cast<SDPAOp>(op)) {
    query = s.getQuery();
    key = s.getKey();
    value = s.getValue();
  } else {
    auto p = cast<PagedSDPAOp>(op);
    query = p.getQuery();
    key = p.getKeyCache();
    value = p.getValueCache();
    blockTable = p.getBlockTable();
    statsInit = p.getStatsInit();
  }
  auto qTy = cast<RankedTensorType>(query.getType());
  int64_t hq = qTy.getDimSize(1);
  hkv = cast<RankedTensorType>(key.getType()).getDimSize(1);
  groupSize = hq / hkv;
  headDimV = cast<RankedTensorType>(value.getType()).getDimSize(3);
  if (sizes.blockRows > 0)
    sizes.qBlock = std::max<int64_t>(1, sizes.blockRows / groupSize);
  // The state accumulates in f32 at least (bf16/f16 inputs).
  elt = qTy.getElementType();
  accType = elt.getIntOrFloatBitWidth() < 32 ? b.getF32Type() : elt;
  batch = m.dim(query, 0);
  qLen = m.dim(query, 2);
  // Paged: the most keys a row can have (its block table's pages).
  // (One op per statement: argument order would depend on the compiler.)
  if (blockTable) {
    Value maxPages = m.dim(blockTable, 1);
    Value pageSize = m.dim(key, 2);
    kvLen = m.mul(maxPages, pageSize);
  } else {
    kvLen = m.dim(key, 2);
  }
  // Split-K when the whole query is one block, batch x KV heads gives
  // fewer than split-target parallel iterations and the keys are long
  // enough: parts = min(ceil(target / (B·Hkv)), kv_len / min-keys). One
  // loop nest serves both cases (no branch on the output, so the kernel
  // still writes into the caller's buffer): without split there is one
  // part, the workspace is empty and the merge loop has no iteration.
  Value split, nSplit;
  if (sizes.splitTarget > 1) {
    Value items = m.mul(batch, m.c(hkv));
    items = m.max(items, m.c(1));
    Value byTarget = m.ceilDiv(m.c(sizes.splitTarget), items);
    Value byKeys =
        arith::DivSIOp::create(b, loc, kvLen, m.c(sizes.splitMinKeys));
    Value want = m.min(byTarget, byKeys);
    Value oneBlock = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                           qLen, m.c(sizes.qBlock));
    Value worth = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                        want, m.c(1));
    split = arith::AndIOp::create(b, loc, oneBlock, worth);
    nSplit = arith::SelectOp::create(b, loc, split, want, m.c(1));
  }
  auto blocks = tileBlocks(rewriter, split, nSplit);
  if (failed(blocks))
    return failure();
  auto [forall, tile] = *blocks;
  if (failed(buildBlock(rewriter, forall, tile, split, nSplit)))
    return failure();
  SmallVector<Value> parts(forall.getResults());
  Value stats;
  if (statsInit) {
    stats = parts[1];
    parts.erase(parts.begin() + 1);
  }
  SmallVector<Value> results = {parts[0]};
  if (stats)
    results.push_back(stats);
  b.setInsertionPointAfter(forall);
  if (sizes.splitTarget > 1)
    results = mergeForall(b, loc, parts, stats, split, nSplit);
  rewriter.replaceOp(op, results);
  return success();
}

} // namespace mlir::attn::tiling

namespace {

struct TileAttentionPass
    : attn::impl::TileAttentionPassBase<TileAttentionPass> {
  using TileAttentionPassBase::TileAttentionPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn->hasAttr("attn.reference"))
      return;
    bool gpu = target == TileTarget::gpu;
    // The options' sizes (0: the generic defaults, 64 x 64; a target's
    // choice comes on each op as #attn.tiles, from its select-tiles pass).
    TileSizes sizes;
    sizes.qBlock = qBlock ? qBlock : (gpu ? 128 : 64);
    sizes.kvBlock = kvBlock ? kvBlock : 64;
    sizes.decodeKvBlock = decodeKvBlock ? decodeKvBlock : sizes.kvBlock;
    sizes.splitTarget = splitTarget;
    sizes.splitMinKeys = splitMinKeys;
    sizes.blockRows = qBlock ? 0 : blockRows;
    sizes.gridMapping = gpu;
    auto invalid = [](const TileSizes &s) {
      return s.qBlock <= 0 || s.kvBlock <= 0 || s.decodeKvBlock <= 0 ||
             s.splitTarget < 0 || s.splitMinKeys <= 0;
    };
    auto describe = [](InFlightDiagnostic &d, const TileSizes &s) {
      d << "q-block=" << s.qBlock << " kv-block=" << s.kvBlock
        << " decode-kv-block=" << s.decodeKvBlock
        << " split-min-keys=" << s.splitMinKeys << " (split-target "
        << s.splitTarget << ": 0 or more)";
    };
    if (invalid(sizes)) {
      InFlightDiagnostic d = fn.emitError()
                             << "attn-tile-attention: tile sizes must be "
                                "positive, got ";
      describe(d, sizes);
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) {
      if (isa<SDPAOp, PagedSDPAOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      // A target's choice for this op (#attn.tiles) replaces the options.
      TileSizes opSizes = sizes;
      if (auto t = op->getAttrOfType<TilesAttr>(TilesAttr::kAttrName)) {
        opSizes.qBlock = t.getQBlock();
        opSizes.kvBlock = t.getKvBlock();
        opSizes.decodeKvBlock = t.getDecodeKvBlock();
        opSizes.splitTarget = t.getSplitTarget();
        opSizes.splitMinKeys = t.getSplitMinKeys();
        opSizes.blockRows = 0;
        if (invalid(opSizes)) {
          InFlightDiagnostic d = op->emitOpError()
                                 << "has tile sizes (attn.tiles) that are "
                                    "not positive: ";
          describe(d, opSizes);
          return signalPassFailure();
        }
      }
      if (failed(SDPATiler(op, opSizes).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
