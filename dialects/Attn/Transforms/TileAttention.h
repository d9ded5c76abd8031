//===- TileAttention.h - the attention tiler, shared parts ------*- C++ -*-===//
//
// The tiler of attn-tile-attention (TileAttention.cpp: the query blocks'
// forall, the block's body, the pass) and its split-K merge
// (TileAttentionMerge.cpp). Internal to dialects/Attn/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECTS_ATTN_TRANSFORMS_TILEATTENTION_H
#define ATTN_DIALECTS_ATTN_TRANSFORMS_TILEATTENTION_H

#include "dialects/Attn/Transforms/Passes.h"
#include "dialects/Attn/Transforms/TileLoops.h"

namespace mlir::attn::tiling {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// The induction variables of the query blocks' forall: (batch, KV head,
/// query block), or with split-K (batch, part, KV head, query block).
constexpr unsigned kIvPart = 1;
inline unsigned ivHead(bool split) { return split ? 2 : 1; }
inline unsigned ivQBlock(bool split) { return split ? 3 : 2; }

struct TileSizes {
  int64_t qBlock, kvBlock, decodeKvBlock, splitTarget, splitMinKeys;
  /// Rows per block over the group (q-block = blockRows / G); 0: unused.
  int64_t blockRows = 0;
  /// GPU: the (batch, KV head, query block) forall is mapped to the grid,
  /// #gpu.block<z, y, x> (so canonicalization keeps its unit dims).
  bool gridMapping = false;
};

class SDPATiler {
public:
  /// `op` is attn.sdpa or attn.paged_sdpa.
  SDPATiler(Operation *op, TileSizes sizes) : op(op), sizes(sizes) {}

  /// Tiles the op (and erases it); failure when upstream tiling failed
  /// (reported at the op).
  LogicalResult run();

private:
  /// Upstream tiling of the op over (batch, query heads by group, query
  /// rows by q-block) into an scf.forall whose induction variables count
  /// the tiles (plus the split-K part when `split` is set, with the
  /// workspaces as further shared outputs). Returns the forall and the
  /// tiled op in it.
  FailureOr<std::pair<scf::ForallOp, Operation *>>
  tileBlocks(IRRewriter &rewriter, Value split, Value nSplit);
  /// The body of the block: the tiled op's online form, its key ranges
  /// cut, split-K's part of them, the write-back (the tile's rows of the
  /// output and statistics, or the part's state into the workspaces), the
  /// CPU's key loops. Erases the tiled op.
  LogicalResult buildBlock(IRRewriter &rewriter, scf::ForallOp forall,
                           Operation *tile, Value split, Value nSplit);
  /// The multiple of keys the unmasked piece of the block's online form
  /// (`keys`, created before it) is cut to (cutKeyRange's `align`): the kv
  /// block on the CPU when the block has 17 rows or more, 1 below (decode);
  /// none on the GPU.
  Value keyAlignment(IRRewriter &rewriter, Operation *keys);
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

  Operation *op;
  TileSizes sizes;
  int64_t groupSize = 1, headDimV = 0, hkv = 1;
  Type accType, elt;
  Value batch, qLen, kvLen;
  /// The op's row statistics destination (paged), or null.
  Value statsInit;
  /// Where the forall writes the tile's results back: each result's
  /// offsets and sizes (from the op's TilingInterface).
  SmallVector<SmallVector<OpFoldResult>> resultOffsets, resultSizes;
};

} // namespace mlir::attn::tiling

#endif // ATTN_DIALECTS_ATTN_TRANSFORMS_TILEATTENTION_H
