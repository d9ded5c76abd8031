//===- MicroKernelAmxPrefill.cpp - prefill on AMX tiles -------------------===//
//
// Prefill (tiles of more than 16 query rows) on the AMX tile unit, where
// the target has amx-tile and amx-bf16 and the OS grants the tile state
// (otherwise the lanes path runs). d and dv multiples of 32, d at most 256;
// a bf16 K and V, or with amx-f32-prefill f32 or f16 ones.
//
// Per parallel iteration (one block of query rows, its tiles one chunk of
// 64 keys each) the rows are packed once (a tag records what is packed):
// scaled, split into three bf16 parts, transposed by pairs of d into the B
// tiles of Sᵀ = K · Qᵀ, 16 rows per block, with their indices in a row
// table. Per chunk of 64 keys:
//   1. K's rows into A tiles [16 keys, 32 of d], V's rows by pairs,
//      interleaved (VNNI), into B tiles [16 pairs, 16 columns × 2], both
//      split into three bf16 parts (f32, f16) or as they are (bf16:
//      exact), each tile's 1 KiB contiguous. Once per chunk for all the
//      blocks of rows.
//   2. Per pair of blocks of 16 rows (2 × 2 C tiles: each K or V tile
//      loaded serves both blocks), O [16, dv] of each loaded from acc; per
//      half chunk of 32 keys the scores over the parts p of K and s of the
//      rows with p + s < 3 (six products per d block and block, three for
//      a bf16 K), each block's online softmax with its rows in the lanes
//      (MicroKernelAmx.h), P split into three A tiles, O += P · V over the
//      parts (six or three); then O, max and sum back.
// The parts keep the products to f32 accuracy (x = hi + lo + lo2 to
// within 2^-27·|x|; the dropped cross terms are below 2^-24 of the
// product). One tile product (16×16×32) issues every 16 cycles: 1,024
// FLOP/cycle against the FMAs' 64, 171 with six products. Measured on an
// Intel core (docs/benchmarks.md), against the lanes path: a bf16 cache
// 1.24-1.55x (P1-P4); f32 0.90-1.07x, so f32 and f16 only on request. The
// tile unit and the vector code do not overlap there (a product queued
// next to independent FMAs takes as long as both), and with every tile
// product removed the f32 kernel hardly moved: the time goes to the tile
// loads, the softmax and the splits between the products.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernelAmx.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::microkernel;

namespace {

/// Keys per chunk of the prefill path (a prefill tile's keys).
constexpr int64_t kPrefillKeys = 2 * kAmxChunk;
/// The largest d on the tiles.
constexpr int64_t kMaxPrefillD = 256;

int64_t partsOf(Type elt) { return elt.isBF16() ? 1 : kSplits; }

/// Byte sizes of the prefill scratch (i8 buffers), in allocation order:
/// QR, QB (tcap rows), ST, PT, PA, VB, OS (AmxTiles::views), KP (K's
/// parts as 64 keys' tiles, prepKeys).
SmallVector<int64_t> prefillScratchBytes(int64_t d, int64_t dv, int64_t tcap,
                                         int64_t kParts, int64_t vParts) {
  int64_t C = kAmxChunk;
  return {kSplits * 16 * d * 2, tcap * kSplits * d * 2,
          C * 16 * 4,           16 * C * 4,
          kSplits * 16 * C * 2, vParts * 2 * dv * 32 * 2,
          16 * (dv + 16) * 4,   kParts * kPrefillKeys * d * 2};
}

/// The second block's ST, PT, PA and OS (after the tag).
SmallVector<int64_t> pairScratchBytes(int64_t dv) {
  int64_t C = kAmxChunk;
  return {C * 16 * 4, 16 * C * 4, kSplits * 16 * C * 2, 16 * (dv + 16) * 4};
}

/// The prefill of one slab of rows on AMX tiles (Emitter::amxPrefillPath).
struct AmxPrefill : AmxTiles {
  /// K's parts, tile-major [kParts · 4 · DB · 16, 32] bf16 (prepKeys).
  Value KP;
  /// The pack's tag [2] (Emitter::staleTag).
  Value tagBuf;
  /// Parts of K (A tiles of the scores): 1 for a bf16 cache, else kSplits.
  int64_t kParts;
  /// The second block of a pair of blocks (its rows 16 on): its own ST,
  /// PT, PA and OS; the same QR, QB, VB and KP.
  AmxTiles other;

  AmxPrefill(Emitter &e, int64_t tcap) : AmxTiles(e), other(e) {
    kParts = partsOf(cast<MemRefType>(e.k.getType()).getElementType());
    vParts = partsOf(cast<MemRefType>(e.v.getType()).getElementType());
    vPartRows = 2 * dv;
    ArrayRef<Value> bufs = e.amxPrefillBufs;
    views(bufs, tcap / 16);
    KP = e.amxView(bufs[7], {kParts * 4 * DB * 16, 32}, bf16);
    tagBuf = bufs[8];
    other.vParts = vParts;
    other.vPartRows = vPartRows;
    other.views(
        {bufs[0], bufs[1], bufs[9], bufs[10], bufs[11], bufs[5], bufs[12]},
        tcap / 16);
  }

  /// K's rows n0 + [0, 64) as A tiles, split; rows from nc on are 0. KP is
  /// tile-major (each tile's 16 rows of 64 bytes contiguous: in a
  /// microbenchmark, tile loads of rows 256 bytes apart from L2 took 2.4x
  /// as long as contiguous ones): key j, column c of part p at row
  /// ((p · 4 + j / 16) · DB + c / 32) · 16 + j % 16, column c % 32.
  void prepKeys(Value n0, Value nc) {
    Value zeros = e.splatF(0.0);
    e.loop(zero, idx(kPrefillKeys), one, [&](Value j) {
      Value in =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j, nc);
      Value jr = e.minI(j, e.sub(nc, one));
      Emitter::RowRef row = e.kvRow(/*key=*/true, n0, jr);
      Value jb = arith::DivUIOp::create(b, loc, j, sixteen);
      Value jm = arith::RemUIOp::create(b, loc, j, sixteen);
      Value blockRow = arith::MulIOp::create(b, loc, jb, idx(DB * 16));
      Value base = add(blockRow, jm);
      for (int64_t c = 0; c < d; c += W) {
        Value x = e.loadF32(row.mem, e.colOf(row, idx(c)));
        Value y = arith::SelectOp::create(b, loc, in, x, zeros);
        SmallVector<Value> ps = splitToBF16(b, loc, y, kParts);
        for (int64_t p = 0; p < kParts; ++p) {
          Value r = add(base, idx((p * 4 * DB + c / 32) * 16));
          vector::StoreOp::create(b, loc, ps[p], KP,
                                  ValueRange{r, idx(c % 32)});
        }
      }
    });
  }

  /// V's rows n0 + [0, 64) by pairs, interleaved (VNNI, columns in order),
  /// split, tile-major (AmxTiles::vTile): pair k, columns [c, c + 16) of
  /// part q at row q · 2dv + (k / 16) · dv + c + k % 16; rows from nc on are
  /// 0 (their P is 0: no 0 · NaN).
  void prepValues(Value n0, Value nc) {
    Value zeros = e.splatF(0.0);
    SmallVector<int64_t> lo, hi;
    for (int64_t i = 0; i < W / 2; ++i) {
      lo.append({i, W + i});
      hi.append({W / 2 + i, W + W / 2 + i});
    }
    e.loop(zero, idx(kPrefillKeys / 2), one, [&](Value kp) {
      Value r0 = add(kp, kp);
      Value r1 = add(r0, one);
      auto rowAt = [&](Value r, Value &in) {
        in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, nc);
        Value rr = e.minI(r, e.sub(nc, one));
        return e.kvRow(/*key=*/false, n0, rr);
      };
      Value in0, in1;
      Emitter::RowRef ra = rowAt(r0, in0);
      Emitter::RowRef rb = rowAt(r1, in1);
      Value kb = arith::DivUIOp::create(b, loc, kp, sixteen);
      Value km = arith::RemUIOp::create(b, loc, kp, sixteen);
      Value blockRow = arith::MulIOp::create(b, loc, kb, idx(dv));
      Value base = add(blockRow, km);
      for (int64_t c = 0; c < dv; c += W) {
        Value x0 = e.loadF32(ra.mem, e.colOf(ra, idx(c)));
        Value x = arith::SelectOp::create(b, loc, in0, x0, zeros);
        Value y0 = e.loadF32(rb.mem, e.colOf(rb, idx(c)));
        Value y = arith::SelectOp::create(b, loc, in1, y0, zeros);
        Value l = vector::ShuffleOp::create(b, loc, x, y, lo);
        Value h = vector::ShuffleOp::create(b, loc, x, y, hi);
        SmallVector<Value> pl = splitToBF16(b, loc, l, vParts);
        SmallVector<Value> ph = splitToBF16(b, loc, h, vParts);
        for (int64_t q = 0; q < vParts; ++q) {
          Value r = add(base, idx(q * vPartRows + c));
          vector::StoreOp::create(b, loc, pl[q], VB, ValueRange{r, zero});
          vector::StoreOp::create(b, loc, ph[q], VB, ValueRange{r, idx(W)});
        }
      }
    });
  }

  /// Rows [s0, s0 + ns) of the tile's T packed: per block of 16 their
  /// indices into the row table, then their B tiles (AmxTiles::
  /// packQueries); skipped when the tag says they are packed.
  void packSlab(Value s0, Value ns, Value T, Value M, ArrayRef<Value> leadUbs) {
    auto [stale, key] = e.staleTag(tagBuf, T);
    auto ifOp = scf::IfOp::create(b, loc, stale, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value last = e.sub(T, one);
    Value end = e.roundUp(ns, 32);
    e.loop(zero, end, sixteen, [&](Value tb) {
      e.loop(zero, sixteen, one, [&](Value r) {
        Value t = add(tb, r);
        Value g = e.minI(add(s0, t), last);
        SmallVector<Value> row = e.delinearize(g, M, leadUbs);
        for (int64_t c = 0; c <= e.lead; ++c)
          memref::StoreOp::create(b, loc, row[c], e.rowTab,
                                  ValueRange{t, idx(c)});
      });
      setBlock(*this, tb);
      packQueries();
    });
    memref::StoreOp::create(b, loc, key, tagBuf, ValueRange{zero});
    memref::StoreOp::create(b, loc, T, tagBuf, ValueRange{one});
  }

  /// `t` on the block of packed rows from t0 (a multiple of 16): its rows
  /// and its B tiles in QB.
  void setBlock(AmxTiles &t, Value t0) {
    t.qbRow0 = arith::MulIOp::create(b, loc, t0, idx(kSplits * DB));
    t.rowOf = [this, t0](Value r) { return e.tabRow(add(t0, r)); };
  }

  /// The pairs (x, y) of parts x < nx, y < ny with x + y < kSplits in
  /// snake order (x = 1 runs y downwards, so that x = 2 starts with the
  /// Y tiles of y = 0 loaded) for emitAmxPairProducts: f32 operands 16
  /// tile loads for 24 products, where a single block's scores took 24
  /// (and its K and V tiles, from L2, served one block instead of two).
  static SmallVector<std::pair<int64_t, int64_t>> snake(int64_t nx,
                                                        int64_t ny) {
    SmallVector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t x = 0; x < nx; ++x) {
      SmallVector<std::pair<int64_t, int64_t>> row;
      for (int64_t y = 0; y < ny && x + y < kSplits; ++y)
        row.push_back({x, y});
      if (x % 2)
        std::reverse(row.begin(), row.end());
      llvm::append_range(pairs, row);
    }
    return pairs;
  }

  /// The scores of both blocks of a pair: Sᵀ of keys [16h, 16h + 16) and
  /// block i in C tile 2h + i (X: K's parts, Y: the blocks' query parts),
  /// into ST and other.ST.
  void scoresPair(Value relRow) {
    SmallVector<Value> cT;
    for (int64_t i = 0; i < 4; ++i)
      cT.push_back(amx::TileZeroOp::create(b, loc, tileC));
    for (int64_t db = 0; db < DB; ++db)
      emitAmxPairProducts(
          b, loc, snake(kParts, kSplits), cT,
          [&](int64_t p, int64_t h) -> Value {
            Value r = add(relRow, idx(((p * 4 + h) * DB + db) * 16));
            return amx::TileLoadOp::create(b, loc, tileAB, KP,
                                           ValueRange{r, zero}, Value());
          },
          [&](int64_t s, int64_t blk) -> Value {
            AmxTiles &t = blk ? other : *this;
            return amx::TileLoadOp::create(
                b, loc, tileAB, QBb, ValueRange{t.qbRow(s, db), zero}, Value());
          });
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t blk = 0; blk < 2; ++blk)
        amx::TileStoreOp::create(b, loc, blk ? other.ST : ST,
                                 ValueRange{idx(16 * h), zero}, cT[2 * h + blk],
                                 Value());
  }

  /// O[:, col .. col + 32) += P · V for both blocks of a pair: block i and
  /// columns [col + 16j, + 16) in C tile 2i + j (X: the blocks' P parts,
  /// Y: V's parts).
  void pvPair(Value col) {
    Value cols[2] = {col, add(col, idx(16))};
    SmallVector<Value> cT;
    for (int64_t blk = 0; blk < 2; ++blk)
      for (int64_t j = 0; j < 2; ++j)
        cT.push_back(amx::TileLoadOp::create(b, loc, tileC, blk ? other.OS : OS,
                                             ValueRange{zero, cols[j]},
                                             Value()));
    emitAmxPairProducts(
        b, loc, snake(kSplits, vParts), cT,
        [&](int64_t s, int64_t blk) -> Value {
          return amx::TileLoadOp::create(b, loc, tileAB, blk ? other.PA : PA,
                                         ValueRange{idx(16 * s), zero},
                                         Value());
        },
        [&](int64_t q, int64_t j) -> Value {
          return amx::TileLoadOp::create(b, loc, tileAB, VB, vTile(q, cols[j]),
                                         Value());
        });
    for (int64_t blk = 0; blk < 2; ++blk)
      for (int64_t j = 0; j < 2; ++j)
        amx::TileStoreOp::create(b, loc, blk ? other.OS : OS,
                                 ValueRange{zero, cols[j]}, cT[2 * blk + j],
                                 Value());
  }

  /// Half chunk n0 (of the chunk from c0) for a pair of blocks: their new
  /// max and sum (this block's, then other's).
  SmallVector<Value> pairHalfChunk(Value c0, Value n0, Value N, ValueRange st) {
    Value nc = e.minI(e.sub(N, n0), idx(C));
    Value rel = e.sub(n0, c0);
    Value relRow = arith::MulIOp::create(b, loc, rel, idx(DB));
    scoresPair(relRow);
    Softmax s0 = softmax(n0, nc, st[0], st[1]);
    packP();
    rescale(s0.alpha, s0.up);
    Softmax s1 = other.softmax(n0, nc, st[2], st[3]);
    other.packP();
    other.rescale(s1.alpha, s1.up);
    Value pb = arith::DivUIOp::create(b, loc, rel, idx(2 * 16));
    vbRow0 = arith::MulIOp::create(b, loc, pb, idx(dv));
    forUpTo(dv, 32, [&](Value col) { pvPair(col); });
    vbRow0 = Value();
    return {s0.mNew, s0.lNew, s1.mNew, s1.lNew};
  }
};

} // namespace

bool mlir::attn::amxPrefillApplies(OnlineAttentionOp tile, int64_t lanes,
                                   bool amx, bool amxF32) {
  if (!amx || lanes != 16)
    return false;
  auto kt = cast<ShapedType>(tile.getKey().getType());
  auto vt = cast<ShapedType>(tile.getValue().getType());
  // f32 and f16 K/V in three parts measured 0.90-1.07x the lanes path on an
  // Intel core (P1-P4), a bf16 cache in one 1.24-1.55x: only on request.
  if (!amxF32 &&
      (!kt.getElementType().isBF16() || !vt.getElementType().isBF16()))
    return false;
  int64_t d = kt.getShape().back(), dv = vt.getShape().back();
  // The scores are unrolled over d's blocks of 32: MLA's absorbed 576 (18
  // blocks, four tile functions) took Kimi-Linear's build from 3.4 to 4.6 s.
  return d % 32 == 0 && dv % 32 == 0 && d <= kMaxPrefillD;
}

SmallVector<Value> mlir::attn::allocateAmxPrefillScratch(OpBuilder &b,
                                                         Location loc,
                                                         OnlineAttentionOp tile,
                                                         int64_t tcap) {
  auto kt = cast<ShapedType>(tile.getKey().getType());
  auto vt = cast<ShapedType>(tile.getValue().getType());
  int64_t d = kt.getShape().back(), dv = vt.getShape().back();
  SmallVector<Value> bufs;
  for (int64_t bytes :
       prefillScratchBytes(d, dv, tcap, partsOf(kt.getElementType()),
                           partsOf(vt.getElementType())))
    bufs.push_back(
        memref::AllocOp::create(b, loc, MemRefType::get({bytes}, b.getI8Type()),
                                b.getI64IntegerAttr(64)));
  // The tag: nothing packed yet (no buffer is at address -1).
  Value tag = memref::AllocOp::create(
      b, loc, MemRefType::get({2}, b.getIndexType()), b.getI64IntegerAttr(64));
  Value none = arith::ConstantIndexOp::create(b, loc, -1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  memref::StoreOp::create(b, loc, none, tag, ValueRange{zero});
  bufs.push_back(tag);
  for (int64_t bytes : pairScratchBytes(dv))
    bufs.push_back(
        memref::AllocOp::create(b, loc, MemRefType::get({bytes}, b.getI8Type()),
                                b.getI64IntegerAttr(64)));
  return bufs;
}

namespace mlir::attn::microkernel {

void Emitter::amxPrefillPath(Value T, Value M, ArrayRef<Value> leadUbs,
                             Value N) {
  // chunk() = 64 keys: the paged row tables (fillRowTables) cover them.
  int64_t savedNV = NV;
  NV = kPrefillKeys / W;
  AmxPrefill a(*this, Tcap);
  Value zero = idx(0), C = idx(kPrefillKeys), half = idx(kAmxChunk);
  loop(zero, T, idx(Tcap), [&](Value s0) {
    Value ns = minI(idx(Tcap), sub(T, s0));
    a.packSlab(s0, ns, T, M, leadUbs);
    loop(zero, N, C, [&](Value c0) {
      Value nc = minI(sub(N, c0), C);
      if (paged)
        fillRowTables(c0);
      a.prepKeys(c0, nc);
      a.prepValues(c0, nc);
      // Pairs of blocks of 16 rows (their K and V tiles loaded once for
      // both); a last block of at most 16 rows is paired with a copy of
      // its last row (packed up to a multiple of 32), computed and not
      // stored: one code for all (a single block's own code doubled the
      // compile time of the prefill path for a few percent of its rows).
      Value end = roundUp(ns, 32);
      Value cEnd = add(c0, nc);
      loop(zero, end, idx(32), [&](Value t0) {
        Value t1 = add(t0, idx(16));
        a.setBlock(a, t0);
        a.setBlock(a.other, t1);
        SmallVector<Value> init = a.loadState();
        llvm::append_range(init, a.other.loadState());
        SmallVector<Value> fin =
            loop(c0, cEnd, half, init, [&](Value n0, ValueRange st) {
              return a.pairHalfChunk(c0, n0, N, st);
            });
        Value valid0 = minI(idx(16), sub(ns, t0));
        a.storeState(valid0, fin[0], fin[1]);
        // No row when ns - t1 <= 0: the loop runs no iteration.
        Value valid1 = minI(idx(16), sub(ns, t1));
        a.other.storeState(valid1, fin[2], fin[3]);
      });
    });
  });
  NV = savedNV;
}

} // namespace mlir::attn::microkernel
