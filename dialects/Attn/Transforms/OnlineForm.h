//===- OnlineForm.h - attention tiles in the online form --------*- C++ -*-===//
//
// The steps attn-tile-attention builds a query block with, each usable on
// its own:
//
//  - buildOnlineForm: a tile of attn.sdpa / attn.paged_sdpa (one batch row,
//    the query heads of one KV head) as one attn.online_attention over the
//    row's keys from the initial state, then attn.online_finalize;
//  - cutKeyRange: a masked attn.online_attention cut by its rows' positions
//    into the keys some row sees (masked) and those every row sees
//    (mask = none); keys no row sees are dropped;
//  - keySubrange: the part of an attn.online_attention that folds the keys
//    [lo, hi) (split-K's parts).
//
// The key cuts are tiles of the op's key dimension, taken through its
// TilingInterface (dialects/Attn/IR/AttnTiling.cpp), so contiguous and
// paged keys are cut alike.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECTS_ATTN_TRANSFORMS_ONLINEFORM_H
#define ATTN_DIALECTS_ATTN_TRANSFORMS_ONLINEFORM_H

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

/// The online form of one attention tile.
struct OnlineForm {
  /// The tile's keys folded into the state (a chain of ops once cut).
  OnlineAttentionOp keys;
  /// attn.online_finalize of the state: the tile's output rows [G, rows, dv].
  Value result;
};

/// Builds, before `tile` (attn.sdpa or attn.paged_sdpa whose batch and key
/// heads are 1: a tile of attn-tile-attention's forall), its online form:
/// its query [G, rows, d] folds the row's keys [0, kv_len) (kv_lengths
/// clamped to the keys there are; the causal and window masks and the sinks
/// as the op's) from acc 0, max -inf, sum 0, with sinks each head's sink as
/// one more key of value 0 (only where `countSinks`, an i1, holds: one part
/// of a split counts them), then attn.online_finalize. The tile is left in
/// place for the caller to replace. Fails with an error at the tile when
/// its batch or key heads are not 1.
FailureOr<OnlineForm> buildOnlineForm(RewriterBase &rewriter, Operation *tile,
                                      Value countSinks = {});

/// Replaces a masked `op` (causal, sliding window or chunked) by the keys
/// its rows can see, in order: [lo, fullLo) masked (windows and chunks
/// only), [fullLo, fullHi) with mask = none (seen by every row),
/// [fullHi, hi) masked. Keys outside [lo, hi) are never visited. The
/// bounds come from the op's positions (q_pos, kv_pos, its rows and keys)
/// and are clamped so that the pieces partition [lo, hi) even for empty
/// ones. An op with mask = none is left as it is (one piece).
struct KeyCut {
  /// The pieces, in order; the last one's results replace the op's.
  SmallVector<OnlineAttentionOp> pieces;
  /// The keys they fold, [lo, hi), computed before the first piece.
  Value lo, hi;
};
/// With `align` (an index), the unmasked piece is shortened to a multiple
/// of it, its remainder going to the masked piece after it: a target that
/// folds each piece by tiles of `align` keys then has no short tile in the
/// middle (causal blocks: [0, p + 1) would end in a tile of one key).
KeyCut cutKeyRange(RewriterBase &rewriter, OnlineAttentionOp op,
                   Value align = {});

/// Replaces `op` by the tile of it that folds the keys [lo, hi) (key
/// coordinates, clamped to the op's keys) into its state.
FailureOr<OnlineAttentionOp>
keySubrange(RewriterBase &rewriter, OnlineAttentionOp op, Value lo, Value hi);

/// The op's first key position and the end of its keys.
std::pair<Value, Value> keyBounds(OpBuilder &b, OnlineAttentionOp op);

} // namespace mlir::attn

#endif // ATTN_DIALECTS_ATTN_TRANSFORMS_ONLINEFORM_H
