//===- TileAttention.h - the attention tiler, shared parts ------*- C++ -*-===//
//
// The tiler of attn-tile-attention (TileAttention.cpp: the loops over
// queries and keys, the key ranges, the pass) and its split-K merge
// (TileAttentionMerge.cpp). Internal to dialects/Attn/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECTS_ATTN_TRANSFORMS_TILEATTENTION_H
#define ATTN_DIALECTS_ATTN_TRANSFORMS_TILEATTENTION_H

#include "dialects/Attn/Transforms/Passes.h"

namespace mlir::attn::tiling {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// Small arith helpers on index values.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivSIOp::create(b, loc, x, y);
  }
  Value dim(Value t, int64_t i) { return tensor::DimOp::create(b, loc, t, i); }
};

struct TileSizes {
  int64_t qBlock, kvBlock, decodeKvBlock, splitTarget, splitMinKeys;
  /// Rows per block over the group (q-block = blockRows / G); 0: unused.
  int64_t blockRows = 0;
  /// GPU: the (batch, KV head, query block) forall is mapped to the grid,
  /// #gpu.block<z, y, x> (so canonicalization keeps its unit dims).
  bool gridMapping = false;
};

/// The key range of one query block, in the three parts described above,
/// and the offset of its batch row (query row i sits at key i + offset).
struct KeyRange {
  Value lo, fullLo, fullHi, hi, offset;
  /// The sequence position of key 0 (paged with range_start; else null):
  /// the chunked mask's chunks are multiples of the window from there.
  Value origin;
};

/// What the tiler reads of attn.sdpa or attn.paged_sdpa. For the paged op,
/// `key` and `value` are page pools [num_pages, Hkv, page_size, d] and
/// `blockTable` maps a row's page index to its page.
struct AttentionOperands {
  Operation *op;
  Value query, key, value, kvLengths, biasTable, qPos, init, blockTable;
  /// Attention sinks [Hq], or null.
  Value sinks;
  /// Paged: each row's query position (q_pos [batch]) and the row
  /// statistics' destination, or null.
  Value rowQPos, statsInit;
  /// Paged: each row's position of the range's first key (range_start
  /// [batch]), or null.
  Value rowRangeStart;
  FloatAttr scale, softcap;
  IntegerAttr window;
  MaskKind mask;
  RelativeBiasAttr relativeBias;
  CausalAlignment align = CausalAlignment::bottom_right;

  explicit AttentionOperands(SDPAOp s)
      : op(s), query(s.getQuery()), key(s.getKey()), value(s.getValue()),
        kvLengths(s.getKvLengths()), biasTable(s.getBiasTable()),
        qPos(s.getQPos()), init(s.getInit()), sinks(s.getSinks()),
        scale(s.getScaleAttr()),
        softcap(s.getSoftcapAttr()), window(s.getWindowAttr()),
        mask(s.getMask()), relativeBias(s.getRelativeBiasAttr()),
        align(s.getAlign()) {}
  explicit AttentionOperands(PagedSDPAOp s)
      : op(s), query(s.getQuery()), key(s.getKeyCache()),
        value(s.getValueCache()), kvLengths(s.getKvLengths()),
        init(s.getInit()), blockTable(s.getBlockTable()),
        sinks(s.getSinks()), rowQPos(s.getQPos()), statsInit(s.getStatsInit()),
        rowRangeStart(s.getRangeStart()),
        scale(s.getScaleAttr()), softcap(s.getSoftcapAttr()),
        window(s.getWindowAttr()), mask(s.getMask()) {}
  bool paged() const { return blockTable != Value(); }
};

class SDPATiler {
public:
  SDPATiler(AttentionOperands op, TileSizes sizes) : op(op), sizes(sizes) {}

  /// Tiles the op (and erases it); failure when upstream tiling failed
  /// (reported at the op).
  LogicalResult run();

private:
  /// The keys [start, end) folded into the state with the given mask: one
  /// attn.online_attention whose keys upstream tiling cuts into tiles of
  /// `step` (an scf.for carrying the state; the GPU keeps the one op);
  /// returns the new state, empty on failure.
  SmallVector<Value> keyLoop(OpBuilder &b, Location loc, Value start,
                             Value end, Value step, bool masked,
                             ValueRange state, Value qTile, Value bIdx,
                             Value gIdx, Value qPos, Value origin);
  /// The op folding the keys [kb, kb + kn) of K/V tiles `kt`, `vt` into
  /// `iter`; with `pages`, `kt`/`vt` are the KV head's page pools and the
  /// tile is `numKeys` keys read through those pages.
  OnlineAttentionOp foldTile(OpBuilder &b, Location loc, Value kt, Value vt,
                             Value kb, bool masked, ValueRange iter,
                             Value qTile, Value gIdx, Value qPos, Value origin,
                             Value pages = {}, Value numKeys = {});
  /// The key range of the query block [q0, q0 + qn) of batch `bIdx`.
  KeyRange keyRange(OpBuilder &b, Location loc, Value bIdx, Value q0,
                    Value qn);
  /// The online-softmax state of the group's rows [q0, q0 + qn) over the
  /// keys of `range` that lie in [clipLo, clipHi) (all when null); with
  /// sinks, part `part` 0 (or the only part, when null) counts its heads'
  /// sinks.
  SmallVector<Value> foldKeys(OpBuilder &b, Location loc, Value bIdx,
                              Value gIdx, Value q0, Value qn, KeyRange range,
                              Value clipLo, Value clipHi, Value part);
  /// The initial max and sum [G, qn] of the group's rows: -inf and 0, or
  /// with sinks (when `counts`) its heads' sinks and 1 (0 for a sink of
  /// -inf).
  std::pair<Value, Value> initialRowState(OpBuilder &b, Location loc,
                                          Value gIdx, Value qn, Value counts);
  /// One parallel iteration per (batch, KV head, query block, part): with
  /// one part each block is normalized into `init` (result 0); with split
  /// (one query block, `nSplit` parts of its key range) each part's state
  /// goes to the workspace (results 1-3: acc, max, sum).
  SmallVector<Value> partsForall(OpBuilder &b, Location loc, Value init,
                                 Value split, Value nSplit);
  /// Merges the parts by log-sum-exp into the output (and the row
  /// statistics `stats` when the op returns them); no iteration (both pass
  /// through) without split.
  SmallVector<Value> mergeForall(OpBuilder &b, Location loc, ValueRange parts,
                                 Value stats, Value split, Value nSplit);
  /// Inserts a group's row statistics, max and sum [G, rows], into the
  /// stats destination [B, Hq, Sq, 2] at (bIdx, h0, q0).
  void insertStats(OpBuilder &b, Location loc, Value max, Value sum,
                   Value dest, Value bIdx, Value h0, OpFoldResult q0,
                   Value rows);
  Value splat(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, double v,
              ValueRange dyn);

  AttentionOperands op;
  TileSizes sizes;
  int64_t groupSize = 1, headDim = 0, headDimV = 0, hkv = 1;
  Type accType, elt, kvElt;
  Value batch, qLen, kvLen, offset;
  bool tilingFailed = false;
};

} // namespace mlir::attn::tiling

#endif // ATTN_DIALECTS_ATTN_TRANSFORMS_TILEATTENTION_H
