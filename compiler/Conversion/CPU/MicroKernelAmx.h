//===- MicroKernelAmx.h - the micro-kernel on AMX tiles ---------*- C++ -*-===//
//
// The steps of the CPU micro-kernel on the AMX tile unit shared by grouped
// decode (MicroKernelAmx.cpp) and prefill (MicroKernelAmxPrefill.cpp): the
// query rows split and packed as B tiles, Sᵀ = K · Qᵀ, the online softmax
// with the rows in the lanes, P split into A tiles and O += P · V.
// Internal to compiler/Conversion/CPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_MICROKERNELAMX_H
#define ATTN_COMPILER_CONVERSION_CPU_MICROKERNELAMX_H

#include "compiler/Conversion/CPU/MicroKernelEmitter.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include <functional>

namespace mlir::attn::microkernel {

/// Parts of each f32 operand of the tile products.
inline constexpr int64_t kSplits = kBF16Parts;
/// Keys per chunk: a P·V tile product's depth.
inline constexpr int64_t kAmxChunk = 32;
/// How far scores may pass a row's reference max before it moves.
inline constexpr double kLazyMax = 8.0;

/// The attention of blocks of 16 query rows on AMX tiles: the tile
/// function's views of its scratch and the steps shared by decode
/// (AmxDecode, MicroKernelAmx.cpp) and prefill (AmxPrefill,
/// MicroKernelAmxPrefill.cpp).
struct AmxTiles {
  Emitter &e;
  OpBuilder &b;
  Location loc;
  int64_t W, d, dv, DB;
  static constexpr int64_t C = kAmxChunk;
  Type bf16, f32t;
  amx::TileType tileAB, tileC;
  VectorType vt, vbf, square;
  Value zero, one, sixteen;
  /// Views of the scratch: the query rows split QR [3·16, d] (as f32 pairs
  /// QRf) and their B tiles QB [blocks · 3 · DB · 16, 32] (QBf), the
  /// scores ST (+ ST2, set by decode when DB > 1: its second chain's, the
  /// odd d blocks') [32 keys, 16 rows] f32, P
  /// transposed PT [16, 32] f32 and split PA [3·16, 32] bf16, V's pairs VB
  /// (vTile), O [16, dv + 16] f32 (rows padded by a line: rows 1 KiB apart
  /// would share a few L1 sets).
  Value QRb, QRf, QBb, QBf, ST, PT, PA, VB, OS, ST2;
  /// Parts of V (B tiles of P · V): 1 for a bf16 cache (exact), kSplits
  /// for f32 (and f16); with vPartRows VB is tile-major and V's part q
  /// starts at its row q · vPartRows (vTile).
  int64_t vParts = 1, vPartRows = 0;
  /// Where the current block's query tiles start in QB (null: row 0) and
  /// the chunk's V pairs in VB (null: row 0).
  Value qbRow0, vbRow0;
  /// O's columns within each block of 32 are in the order the interleave of
  /// V's pairs (vpunpcklwd/hwd, within 128-bit lanes) gives the tile's
  /// columns: position p holds column perm[p] (inv: the inverse); the
  /// interleave's lanes of (row 2k, row 2k + 1). Empty: O in column order.
  SmallVector<int64_t> perm, inv, loLanes, hiLanes;
  /// The block's rows (their indices in q, acc, max and sum: decode's
  /// flattened rows clamped to T - 1, prefill's row table), their
  /// positions (loadState).
  std::function<SmallVector<Value>(Value)> rowOf;
  Value qPos;

  AmxTiles(Emitter &e)
      : e(e), b(e.b), loc(e.loc), W(e.W), d(e.d), dv(e.dv), DB(e.d / 32) {
    bf16 = b.getBF16Type();
    f32t = b.getF32Type();
    tileAB = amx::TileType::get({16, 32}, bf16);
    tileC = amx::TileType::get({16, 16}, f32t);
    vt = e.vt;
    vbf = VectorType::get({32}, bf16);
    square = VectorType::get({W, W}, f32t);
    zero = e.idx(0);
    one = e.idx(1);
    sixteen = e.idx(16);
  }

  /// The views of bufs (QR, QB, ST, PT, PA, VB, OS in that order; ST2 is
  /// the caller's) for `blocks` blocks of query rows in QB.
  void views(ArrayRef<Value> bufs, int64_t blocks) {
    QRb = e.amxView(bufs[0], {kSplits * 16, d}, bf16);
    QRf = e.amxView(bufs[0], {kSplits * 16, d / 2}, f32t);
    QBb = e.amxView(bufs[1], {blocks * kSplits * DB * 16, 32}, bf16);
    QBf = e.amxView(bufs[1], {blocks * kSplits * DB * 16, 16}, f32t);
    ST = e.amxView(bufs[2], {C, 16}, f32t);
    PT = e.amxView(bufs[3], {16, C}, f32t);
    PA = e.amxView(bufs[4], {kSplits * 16, C}, bf16);
    VB = vPartRows ? e.amxView(bufs[5], {vParts * vPartRows, 32}, bf16)
                   : e.amxView(bufs[5], {16, 2 * dv + 32}, bf16);
    OS = e.amxView(bufs[6], {16, dv + 16}, f32t);
  }

  Value idx(int64_t c) { return e.idx(c); }
  /// for x in [0, ub) step `step` (the bound and step created in order:
  /// the emitted IR must not depend on the compiler's argument order).
  void forUpTo(int64_t ub, int64_t step, function_ref<void(Value)> body) {
    Value u = idx(ub);
    Value st = idx(step);
    e.loop(zero, u, st, body);
  }
  Value add(Value x, Value y) { return e.add(x, y); }
  Value load(Value mem, ValueRange ix) {
    return vector::LoadOp::create(b, loc, vt, mem, ix);
  }

  /// out[0..32) = x[0..32)[order] for the 32 lanes of (x0, x1).
  std::pair<Value, Value> permute32(Value x0, Value x1,
                                    ArrayRef<int64_t> order) {
    Value y0 = vector::ShuffleOp::create(b, loc, x0, x1, order.take_front(16));
    Value y1 = vector::ShuffleOp::create(b, loc, x0, x1, order.drop_front(16));
    return {y0, y1};
  }

  /// The query rows, scaled, split (rows past T repeat row T - 1: their
  /// lanes are computed and never stored), then per d block of 32 the
  /// transpose of their pairs: the scores' B tiles.
  void packQueries() {
    Value scale = e.splatF(e.op.getScale().convertToDouble());
    e.loop(zero, sixteen, one, [&](Value r) {
      SmallVector<Value> row = rowOf(r);
      forUpTo(d, W, [&](Value c) {
        Value x = load(e.q, Emitter::at(row, {c}));
        Value xs = arith::MulFOp::create(b, loc, x, scale);
        SmallVector<Value> parts = e.splitBF16(xs);
        for (int64_t s = 0; s < kSplits; ++s)
          vector::StoreOp::create(b, loc, parts[s], QRb,
                                  ValueRange{add(r, idx(s * 16)), c});
      });
    });
    e.loop(zero, idx(kSplits * DB), one, [&](Value sd) {
      Value s = arith::DivUIOp::create(b, loc, sd, idx(DB));
      Value db = arith::RemUIOp::create(b, loc, sd, idx(DB));
      Value row0 = arith::MulIOp::create(b, loc, s, sixteen);
      Value col = arith::MulIOp::create(b, loc, db, sixteen);
      Value dst0 = arith::MulIOp::create(b, loc, sd, sixteen);
      if (qbRow0)
        dst0 = add(dst0, qbRow0);
      storeTransposedBlock(
          b, loc, square,
          [&](int64_t i) {
            return load(QRf, {add(row0, idx(i)), col});
          },
          QBf, dst0, zero);
    });
  }

  /// O from acc (permuted unless perm is empty), and max and sum as vectors of
  /// rows.
  SmallVector<Value> loadState() {
    e.loop(zero, sixteen, one, [&](Value r) {
      SmallVector<Value> row = rowOf(r);
      forUpTo(dv, 32, [&](Value c) {
        Value c1 = add(c, idx(W));
        Value x0 = load(e.acc, Emitter::at(row, {c}));
        Value x1 = load(e.acc, Emitter::at(row, {c1}));
        auto [y0, y1] =
            perm.empty() ? std::pair(x0, x1) : permute32(x0, x1, perm);
        vector::StoreOp::create(b, loc, y0, OS, ValueRange{r, c});
        vector::StoreOp::create(b, loc, y1, OS, ValueRange{r, c1});
      });
    });
    SmallVector<Value> ms, ls, ps;
    for (int64_t r = 0; r < 16; ++r) {
      SmallVector<Value> row = rowOf(idx(r));
      ms.push_back(memref::LoadOp::create(b, loc, e.max, row));
      ls.push_back(memref::LoadOp::create(b, loc, e.sum, row));
      ps.push_back(e.toI32(add(e.op.getQPos(), row.back())));
    }
    qPos = vector::FromElementsOp::create(b, loc, e.vi32, ps);
    return {vector::FromElementsOp::create(b, loc, vt, ms),
            vector::FromElementsOp::create(b, loc, vt, ls)};
  }

  /// The rows' O (in column order), max and sum back (rows < T).
  void storeState(Value T, Value m, Value l) {
    e.loop(zero, T, one, [&](Value r) {
      SmallVector<Value> row = rowOf(r);
      forUpTo(dv, 32, [&](Value c) {
        Value c1 = add(c, idx(W));
        Value x0 = load(OS, {r, c});
        Value x1 = load(OS, {r, c1});
        auto [y0, y1] =
            inv.empty() ? std::pair(x0, x1) : permute32(x0, x1, inv);
        vector::StoreOp::create(b, loc, y0, e.acc, Emitter::at(row, {c}));
        vector::StoreOp::create(b, loc, y1, e.acc, Emitter::at(row, {c1}));
      });
      Value mv =
          vector::ExtractOp::create(b, loc, m, ArrayRef<OpFoldResult>{r});
      Value lv =
          vector::ExtractOp::create(b, loc, l, ArrayRef<OpFoldResult>{r});
      memref::StoreOp::create(b, loc, mv, e.max, row);
      memref::StoreOp::create(b, loc, lv, e.sum, row);
    });
  }

  /// The B tile row of query part s, d block db, in QB.
  Value qbRow(int64_t s, int64_t db) {
    Value r = idx((s * DB + db) * 16);
    return qbRow0 ? add(qbRow0, r) : r;
  }

  /// The chunk's scores (softcap, mask: rows in the lanes) and their
  /// running max over the chunk, back into ST.
  Value maskedMax(Value n0, Value nc) {
    Value ninf = e.splat(e.negInf(), vt);
    Value kvBase = e.toI32(add(e.op.getKvPos(), n0));
    auto body = [&](Value n, ValueRange cur) -> SmallVector<Value> {
      Value x = load(ST, {n, zero});
      if (ST2)
        x = arith::AddFOp::create(b, loc, x, load(ST2, {n, zero}));
      if (std::optional<APFloat> cap = e.op.getSoftcap()) {
        Value c = e.splatF(cap->convertToDouble());
        Value t =
            math::TanhOp::create(b, loc, arith::DivFOp::create(b, loc, x, c));
        x = arith::MulFOp::create(b, loc, t, c);
      }
      Value inRange =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, n, nc);
      Value kPos = arith::AddIOp::create(b, loc, kvBase, e.toI32(n));
      Value seen = e.laneMask(qPos, kPos, inRange);
      x = arith::SelectOp::create(b, loc, seen ? seen : inRange, x, ninf);
      vector::StoreOp::create(b, loc, x, ST, ValueRange{n, zero});
      return {e.maxNoNaN(cur[0], x)};
    };
    return e.loop(zero, idx(C), one, ValueRange{ninf}, body)[0];
  }

  struct Softmax {
    Value mNew, lNew, alpha, up;
  };
  /// The online softmax of the chunk, P into ST. A row's reference max
  /// moves only when a score passes it by more than kLazyMax (P ≤ e^8: the
  /// sums stay far from overflow), so O is rescaled in few chunks;
  /// (O, sum, max) stays a consistent online-softmax state.
  Softmax softmax(Value n0, Value nc, Value mOld, Value lOld) {
    Value runMax = maskedMax(n0, nc);
    Value ninf = e.splat(e.negInf(), vt);
    Value limit = arith::AddFOp::create(b, loc, mOld, e.splatF(kLazyMax));
    Value up =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, runMax, limit);
    Value mNew =
        arith::SelectOp::create(b, loc, up, e.maxNoNaN(mOld, runMax), mOld);
    Value none =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew, ninf);
    Value shift = arith::SelectOp::create(b, loc, none, e.splatF(0.0), mNew);
    Value alpha = e.expNonPositive(arith::SubFOp::create(b, loc, mOld, shift));
    constexpr int64_t U = 4;
    SmallVector<Value> sums(U, e.splatF(0.0));
    Value keys = idx(C), step = idx(U);
    sums = e.loop(zero, keys, step, sums, [&](Value n, ValueRange cur) {
      SmallVector<Value> next(cur.begin(), cur.end());
      for (int64_t u = 0; u < U; ++u) {
        SmallVector<Value, 2> ix{add(n, idx(u)), zero};
        Value x = load(ST, ix);
        Value p = e.expNonPositive(arith::SubFOp::create(b, loc, x, shift));
        vector::StoreOp::create(b, loc, p, ST, ix);
        next[u] = arith::AddFOp::create(b, loc, cur[u], p);
      }
      return next;
    });
    Value l = sums[0];
    for (int64_t u = 1; u < U; ++u)
      l = arith::AddFOp::create(b, loc, l, sums[u]);
    Value lNew = vector::FMAOp::create(b, loc, lOld, alpha, l);
    return {mNew, lNew, alpha, up};
  }

  /// P [16 rows, 32 keys] (the transpose of ST) in kSplits parts: the A
  /// tiles of P · V.
  void packP() {
    for (int64_t h = 0; h < C / 16; ++h)
      storeTransposedBlock(
          b, loc, square,
          [&](int64_t i) {
            return load(ST, {idx(16 * h + i), zero});
          },
          PT, zero, idx(16 * h));
    e.loop(zero, sixteen, one, [&](Value r) {
      for (int64_t c = 0; c < C; c += W) {
        SmallVector<Value> parts = e.splitBF16(load(PT, {r, idx(c)}));
        for (int64_t s = 0; s < kSplits; ++s)
          vector::StoreOp::create(b, loc, parts[s], PA,
                                  ValueRange{add(r, idx(s * 16)), idx(c)});
      }
    });
  }

  /// O · alpha (skipped unless some row's max moved).
  void rescale(Value alpha, Value up) {
    Value anyUp =
        vector::ReductionOp::create(b, loc, vector::CombiningKind::OR, up);
    auto scaleIf = scf::IfOp::create(b, loc, anyUp, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&scaleIf.getThenRegion().front());
    e.loop(zero, sixteen, one, [&](Value r) {
      Value a =
          vector::ExtractOp::create(b, loc, alpha, ArrayRef<OpFoldResult>{r});
      Value av = e.splat(a, vt);
      forUpTo(dv, W, [&](Value c) {
        Value y = arith::MulFOp::create(b, loc, load(OS, {r, c}), av);
        vector::StoreOp::create(b, loc, y, OS, ValueRange{r, c});
      });
    });
  }

  /// Where P · V's B tile of V's part q and O's columns [c, c + 16) is in
  /// VB: decode's rows of pairs ([16, 2·dv + 32]: row 0, column 2c), or
  /// with vPartRows set, tile-major ([vParts · vPartRows, 32]: row
  /// vbRow0 + q · vPartRows + c, each tile 1 KiB contiguous).
  SmallVector<Value> vTile(int64_t q, Value c) {
    if (!vPartRows) {
      Value c2 = add(c, c);
      return {vbRow0 ? vbRow0 : zero, c2};
    }
    Value row = add(vbRow0, c);
    if (q > 0)
      row = add(row, idx(q * vPartRows));
    return {row, zero};
  }

  /// O[:, col .. col + 16·tiles) += P · V (V in one part: decode's bf16
  /// cache): `tiles` chains of tile products, each over the parts of P.
  void pvStep(Value col, int64_t tiles) {
    SmallVector<Value> cT, cols;
    for (int64_t j = 0; j < tiles; ++j) {
      cols.push_back(add(col, idx(16 * j)));
      cT.push_back(amx::TileLoadOp::create(b, loc, tileC, OS,
                                           ValueRange{zero, cols[j]}, Value()));
    }
    for (int64_t s = 0; s < kSplits; ++s) {
      Value a = amx::TileLoadOp::create(b, loc, tileAB, PA,
                                        ValueRange{idx(16 * s), zero}, Value());
      for (int64_t j = 0; j < tiles; ++j) {
        Value bt = amx::TileLoadOp::create(b, loc, tileAB, VB,
                                           vTile(0, cols[j]), Value());
        cT[j] = amx::TileMulFOp::create(b, loc, tileC, a, bt, cT[j]);
      }
    }
    for (int64_t j = 0; j < tiles; ++j)
      amx::TileStoreOp::create(b, loc, OS, ValueRange{zero, cols[j]}, cT[j],
                               Value());
  }
};

} // namespace mlir::attn::microkernel

#endif // ATTN_COMPILER_CONVERSION_CPU_MICROKERNELAMX_H
