//===- MicroKernelAmx.cpp - grouped decode on AMX tiles -------------------===//
//
// Decode of a bf16 KV cache on the AMX tile unit (Intel Sapphire Rapids and
// later: amx-tile, amx-bf16) for tiles of 9 to 16 query rows per KV head (a
// group of 16, or of 8 with two query rows; the group at least 8), when the
// target has it and the OS grants it (arch_prctl, once per process;
// otherwise the dot-product path runs).
//
// Per chunk of 32 keys:
//   1. Sᵀ [32 keys, 16 rows] = K · Qᵀ: the A tiles are 16 K rows × 32 of d,
//      loaded from the cache in place; the B tiles the query rows, packed
//      once per tile call (pairs of d, VNNI);
//   2. the online softmax with the rows in the lanes (as in the lanes
//      path: no horizontal reduction);
//   3. O [16 rows, dv] += P · V: P transposed into A tiles [16 rows, 32
//      keys], V's rows interleaved by pairs into B tiles (VNNI), O kept in
//      a scratch [16, dv] for the whole tile call.
// The tile unit multiplies bf16 pairs exactly and accumulates in f32; the
// f32 operands (the scaled query rows, P) are split into three bf16 parts,
// x = hi + lo + lo2 to within 2^-27·|x|, so the products keep f32 accuracy
// (the K and V of a bf16 cache are exact): three tile products per block
// (one tile product, 16×16×32, issues every 16 cycles: 1,024 FLOP/cycle
// against the FMAs' 64). The seed's 64/4 decode over 65,536 keys: 1.51×
// the AVX-512 path (docs/benchmarks.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernelEmitter.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include <functional>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Parts of each f32 operand of the tile products.
constexpr int64_t kSplits = kBF16Parts;
/// Keys per chunk: a P·V tile product's depth.
constexpr int64_t kAmxChunk = 32;
/// How far scores may pass a row's reference max before it moves.
constexpr double kLazyMax = 8.0;

/// Byte sizes of the AMX scratch buffers, in allocation order.
static SmallVector<int64_t> amxScratchBytes(int64_t d, int64_t dv) {
  return {kSplits * 16 * d * 2,         // QR: split rows [3·16, d] bf16
          kSplits * (d / 32) * 16 * 64, // QB: B tiles [3·d/32·16, 32] bf16
          kAmxChunk * 16 * 4,           // ST: scores / P [32, 16] f32
          16 * kAmxChunk * 4,           // PT: P [16, 32] f32
          kSplits * 16 * kAmxChunk * 2, // PA: A tiles [3·16, 32] bf16
          16 * (2 * dv + 32) * 2,       // VB: V pairs [16, 2·dv + 32] bf16
          16 * (dv + 16) * 4,           // OS: O [16, dv + 16] f32
          kAmxChunk * d * 2,            // KS: K rows [32, d] bf16
          kAmxChunk * dv * 2,           // VS: V rows [32, dv] bf16
          kAmxChunk * 16 * 4};          // ST2: odd d blocks' scores
}

} // namespace

bool mlir::attn::amxDecodeApplies(OnlineAttentionOp tile, int64_t lanes,
                                  bool amx) {
  if (!amx || lanes != 16 || microKernelDecodeRows(tile, lanes) != 8)
    return false;
  auto kt = cast<ShapedType>(tile.getKey().getType());
  auto vt = cast<ShapedType>(tile.getValue().getType());
  int64_t d = kt.getShape().back(), dv = vt.getShape().back();
  return kt.getElementType().isBF16() && vt.getElementType().isBF16() &&
         d % 32 == 0 && dv % 32 == 0;
}

SmallVector<Value> mlir::attn::allocateAmxScratch(OpBuilder &b, Location loc,
                                                  OnlineAttentionOp tile) {
  int64_t d = cast<ShapedType>(tile.getKey().getType()).getShape().back();
  int64_t dv = cast<ShapedType>(tile.getValue().getType()).getShape().back();
  SmallVector<Value> bufs;
  for (int64_t bytes : amxScratchBytes(d, dv))
    bufs.push_back(
        memref::AllocOp::create(b, loc, MemRefType::get({bytes}, b.getI8Type()),
                                b.getI64IntegerAttr(64)));
  return bufs;
}

namespace mlir::attn::microkernel {

Value Emitter::amxView(Value buf, ArrayRef<int64_t> shape, Type elt) {
  Value zero = idx(0);
  return memref::ViewOp::create(b, loc, MemRefType::get(shape, elt), buf, zero,
                                ValueRange{});
}

Value Emitter::amxReady() {
  return emitAmxReady(b, loc, op->getParentOfType<ModuleOp>());
}

} // namespace mlir::attn::microkernel

Value mlir::attn::emitAmxReady(OpBuilder &b, Location loc, ModuleOp module) {
  // One flag per module: 0 not asked yet, 1 granted, 2 refused.
  Type i32 = b.getI32Type();
  auto ty = MemRefType::get({}, i32);
  StringRef name = "attn_amx_state";
  if (!SymbolTable::lookupSymbolIn(module, name)) {
    OpBuilder mb(module.getBodyRegion());
    auto init = DenseElementsAttr::get(RankedTensorType::get({}, i32),
                                       b.getI32IntegerAttr(0).getValue());
    memref::GlobalOp::create(mb, loc, name, mb.getStringAttr("private"), ty,
                             init, /*constant=*/false,
                             /*alignment=*/IntegerAttr());
  }
  Value g = memref::GetGlobalOp::create(b, loc, ty, name);
  Value state = memref::LoadOp::create(b, loc, g, ValueRange{});
  Value zeroI = arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
  Value unknown =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, state, zeroI);
  auto ask = scf::IfOp::create(b, loc, TypeRange{i32}, unknown,
                               /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ask.getThenRegion().front());
    // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): Linux hands a
    // process the tile data state only when asked (5.16 and later).
    Type i64 = b.getI64Type();
    auto c64 = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
    };
    Value nr = c64(158), code = c64(0x1023), feature = c64(18);
    auto call = LLVM::InlineAsmOp::create(
        b, loc, TypeRange{i64}, ValueRange{nr, code, feature}, "syscall",
        "={rax},{rax},{rdi},{rsi},~{rcx},~{r11},~{memory},~{dirflag},"
        "~{fpsr},~{flags}",
        /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
        ArrayAttr());
    Value zero64 = c64(0);
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     call.getResult(0), zero64);
    Value granted =
        arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(1));
    Value refused =
        arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(2));
    Value next = arith::SelectOp::create(b, loc, ok, granted, refused);
    memref::StoreOp::create(b, loc, next, g, ValueRange{});
    scf::YieldOp::create(b, loc, next);
    b.setInsertionPointToStart(&ask.getElseRegion().front());
    scf::YieldOp::create(b, loc, state);
  }
  Value one = arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(1));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               ask.getResult(0), one);
}

SmallVector<Value> mlir::attn::splitToBF16(OpBuilder &b, Location loc, Value x,
                                           int64_t parts) {
  auto half = VectorType::get(cast<VectorType>(x.getType()).getShape(),
                              b.getBF16Type());
  SmallVector<Value> out;
  Value rest = x;
  for (int64_t s = 0; s < parts; ++s) {
    Value p = arith::TruncFOp::create(b, loc, half, rest);
    out.push_back(p);
    if (s + 1 < parts) {
      Value back = arith::ExtFOp::create(b, loc, rest.getType(), p);
      rest = arith::SubFOp::create(b, loc, rest, back);
    }
  }
  return out;
}

namespace mlir::attn::microkernel {

/// x (f32 lanes) as kSplits bf16 parts whose sum is x to f32 accuracy.
SmallVector<Value> Emitter::splitBF16(Value x) {
  return splitToBF16(b, loc, x, kSplits);
}

namespace {

/// The decode of at most 16 rows on AMX tiles: the tile function's views
/// of its scratch and the steps of one chunk of keys (Emitter::amxPath).
struct AmxDecode {
  Emitter &e;
  OpBuilder &b;
  Location loc;
  int64_t W, d, dv, DB;
  static constexpr int64_t C = kAmxChunk;
  Type bf16, f32t;
  amx::TileType tileAB, tileC;
  VectorType vt, vbf, square;
  Value zero, one, sixteen;
  /// Views of the scratch (amxScratchBytes).
  Value QRb, QRf, QBb, QBf, ST, PT, PA, VB, OS, KS, VS, ST2;
  /// O's columns within each block of 32 are in the order the interleave of
  /// V's pairs (vpunpcklwd/hwd, within 128-bit lanes) gives the tile's
  /// columns: position p holds column perm[p] (inv: the inverse); the
  /// interleave's lanes of (row 2k, row 2k + 1).
  SmallVector<int64_t> perm, inv, loLanes, hiLanes;
  /// The tile's rows (flattened, clamped to T - 1), their positions.
  std::function<SmallVector<Value>(Value)> rowOf;
  Value qPos;

  AmxDecode(Emitter &e)
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
    ArrayRef<Value> bufs = e.amxBufs;
    QRb = e.amxView(bufs[0], {kSplits * 16, d}, bf16);
    QRf = e.amxView(bufs[0], {kSplits * 16, d / 2}, f32t);
    QBb = e.amxView(bufs[1], {kSplits * DB * 16, 32}, bf16);
    QBf = e.amxView(bufs[1], {kSplits * DB * 16, 16}, f32t);
    ST = e.amxView(bufs[2], {C, 16}, f32t);
    PT = e.amxView(bufs[3], {16, C}, f32t);
    PA = e.amxView(bufs[4], {kSplits * 16, C}, bf16);
    // O and V's pairs: rows padded by a line (rows 1 KiB apart would share
    // a few L1 sets).
    VB = e.amxView(bufs[5], {16, 2 * dv + 32}, bf16);
    OS = e.amxView(bufs[6], {16, dv + 16}, f32t);
    KS = e.amxView(bufs[7], {C, d}, bf16);
    VS = e.amxView(bufs[8], {C, dv}, bf16);
    ST2 = e.amxView(bufs[9], {C, 16}, f32t);
    inv.resize(32);
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t L = 0; L < 4; ++L)
        for (int64_t i = 0; i < 4; ++i)
          perm.push_back(8 * L + 4 * half + i);
    for (int64_t p = 0; p < 32; ++p)
      inv[perm[p]] = p;
    for (int64_t L = 0; L < 4; ++L)
      for (int64_t i = 0; i < 4; ++i) {
        loLanes.append({8 * L + i, 32 + 8 * L + i});
        hiLanes.append({8 * L + 4 + i, 32 + 8 * L + 4 + i});
      }
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
      storeTransposedBlock(
          b, loc, square,
          [&](int64_t i) {
            return load(QRf, {add(row0, idx(i)), col});
          },
          QBf, dst0, zero);
    });
  }

  /// O from acc (permuted), and max and sum as vectors of rows.
  SmallVector<Value> loadState() {
    e.loop(zero, sixteen, one, [&](Value r) {
      SmallVector<Value> row = rowOf(r);
      forUpTo(dv, 32, [&](Value c) {
        Value c1 = add(c, idx(W));
        Value x0 = load(e.acc, Emitter::at(row, {c}));
        Value x1 = load(e.acc, Emitter::at(row, {c1}));
        auto [y0, y1] = permute32(x0, x1, perm);
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

  /// The rows' O (unpermuted), max and sum back (rows < T).
  void storeState(Value T, Value m, Value l) {
    e.loop(zero, T, one, [&](Value r) {
      SmallVector<Value> row = rowOf(r);
      forUpTo(dv, 32, [&](Value c) {
        Value c1 = add(c, idx(W));
        Value x0 = load(OS, {r, c});
        Value x1 = load(OS, {r, c1});
        auto [y0, y1] = permute32(x0, x1, inv);
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

  /// Copies rows [0, nc) of the chunk (K or V, through kvRow) to `dst`
  /// [C, width] bf16 and zeroes the rest: a partial chunk's tiles read no
  /// further than the cache, and V's missing rows are 0, not NaN.
  void copyRows(bool key, Value dst, int64_t width, Value n0, Value nc) {
    e.loop(zero, idx(C), one, [&](Value j) {
      Value in =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j, nc);
      Value jr = e.minI(j, e.sub(nc, one));
      Emitter::RowRef row = e.kvRow(key, n0, jr);
      Value zeros = arith::ConstantOp::create(
          b, loc, vbf, DenseElementsAttr::get(vbf, b.getFloatAttr(bf16, 0.0)));
      forUpTo(width, 32, [&](Value c) {
        Value x = vector::LoadOp::create(b, loc, vbf, row.mem, e.colOf(row, c));
        Value y = arith::SelectOp::create(b, loc, in, x, zeros);
        vector::StoreOp::create(b, loc, y, dst, ValueRange{j, c});
      });
    });
  }

  /// Sᵀ = K · Qᵀ into ST (+ ST2) from the K rows kRow0.. of `kmem`: four
  /// independent chains of tile products (one chain waits on each
  /// product's latency), the two C tiles of 16 keys each over the even and
  /// the odd d blocks (ST2, added in the softmax).
  /// `at(h, col)`: the indices in `kmem` of column col of the first K row
  /// of keys [16h, 16h + 16), rows `stride` elements apart.
  void scores(Value kmem, function_ref<SmallVector<Value>(int64_t, Value)> at,
              Value stride) {
    int64_t chains = DB > 1 ? 2 : 1, halves = C / 16;
    SmallVector<Value> cT;
    for (int64_t i = 0; i < chains * halves; ++i)
      cT.push_back(amx::TileZeroOp::create(b, loc, tileC));
    for (int64_t db = 0; db < DB; ++db) {
      int64_t first = (db % chains) * halves;
      SmallVector<Value> a;
      for (int64_t h = 0; h < halves; ++h)
        a.push_back(amx::TileLoadOp::create(b, loc, tileAB, kmem,
                                            at(h, idx(32 * db)), stride));
      for (int64_t s = 0; s < kSplits; ++s) {
        Value bt = amx::TileLoadOp::create(
            b, loc, tileAB, QBb, ValueRange{idx((s * DB + db) * 16), zero},
            Value());
        for (int64_t h = 0; h < halves; ++h)
          cT[first + h] =
              amx::TileMulFOp::create(b, loc, tileC, a[h], bt, cT[first + h]);
      }
    }
    for (int64_t i = 0; i < chains * halves; ++i)
      amx::TileStoreOp::create(b, loc, i < halves ? ST : ST2,
                               ValueRange{idx(16 * (i % halves)), zero}, cT[i],
                               Value());
  }

  /// The chunk's scores (softcap, mask: rows in the lanes) and their
  /// running max over the chunk, back into ST.
  Value maskedMax(Value n0, Value nc) {
    Value ninf = e.splat(e.negInf(), vt);
    Value kvBase = e.toI32(add(e.op.getKvPos(), n0));
    auto body = [&](Value n, ValueRange cur) -> SmallVector<Value> {
      Value x = load(ST, {n, zero});
      if (DB > 1)
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

  /// V's rows by pairs, interleaved: the B tiles [16 pairs, 16 columns ×
  /// 2] of P · V. The next chunk's K and V rows are prefetched meanwhile.
  void pairs(function_ref<Emitter::RowRef(Value)> rowAt) {
    e.loop(zero, sixteen, one, [&](Value kp) {
      Value r0 = add(kp, kp);
      Value r1 = add(r0, one);
      e.prefetchRow(/*key=*/true, r0, zero, d);
      e.prefetchRow(/*key=*/true, r1, zero, d);
      e.prefetchRow(/*key=*/false, r0, zero, dv);
      e.prefetchRow(/*key=*/false, r1, zero, dv);
      Emitter::RowRef ra = rowAt(r0), rb = rowAt(r1);
      for (int64_t c = 0; c < dv; c += 32) {
        Value x =
            vector::LoadOp::create(b, loc, vbf, ra.mem, e.colOf(ra, idx(c)));
        Value y =
            vector::LoadOp::create(b, loc, vbf, rb.mem, e.colOf(rb, idx(c)));
        Value lo = vector::ShuffleOp::create(b, loc, x, y, loLanes);
        Value hi = vector::ShuffleOp::create(b, loc, x, y, hiLanes);
        vector::StoreOp::create(b, loc, lo, VB, ValueRange{kp, idx(2 * c)});
        vector::StoreOp::create(b, loc, hi, VB,
                                ValueRange{kp, idx(2 * c + 32)});
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

  /// O[:, col .. col + 16·tiles) += P · V: `tiles` chains of tile products,
  /// each over the kSplits parts of P.
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
        Value col2 = add(cols[j], cols[j]);
        Value bt = amx::TileLoadOp::create(b, loc, tileAB, VB,
                                           ValueRange{zero, col2}, Value());
        cT[j] = amx::TileMulFOp::create(b, loc, tileC, a, bt, cT[j]);
      }
    }
    for (int64_t j = 0; j < tiles; ++j)
      amx::TileStoreOp::create(b, loc, OS, ValueRange{zero, cols[j]}, cT[j],
                               Value());
  }

  /// A paged chunk's two halves of 16 K rows each lie in one page, rows a
  /// row stride apart (pages of 16 or more, the chunk at a page boundary):
  /// the A tiles load them in place.
  Value pagedHalvesContiguous() {
    Value ok;
    for (int64_t h = 0; h < C / 16; ++h) {
      Value first =
          memref::LoadOp::create(b, loc, e.kRows, ValueRange{idx(16 * h)});
      Value last =
          memref::LoadOp::create(b, loc, e.kRows, ValueRange{idx(16 * h + 15)});
      Value span = e.sub(last, first);
      Value want = arith::MulIOp::create(b, loc, e.kPool.rowStride, idx(15));
      Value same =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, span, want);
      ok = ok ? arith::AndIOp::create(b, loc, ok, same).getResult() : same;
    }
    return ok;
  }

  /// The scores of a full chunk, K read in place: contiguous rows n0.. of
  /// K, or a paged tile's two halves at their row tables' offsets.
  std::function<void()> inPlaceScores(Value n0) {
    return [this, n0] {
      if (e.paged) {
        scores(
            e.kFlat,
            [&](int64_t h, Value col) -> SmallVector<Value> {
              Value first = memref::LoadOp::create(b, loc, e.kRows,
                                                   ValueRange{idx(16 * h)});
              return {add(first, col)};
            },
            e.kPool.rowStride);
        return;
      }
      auto md = memref::ExtractStridedMetadataOp::create(b, loc, e.k);
      scores(
          e.k,
          [&](int64_t h, Value col) -> SmallVector<Value> {
            Value row = add(n0, idx(16 * h));
            return {row, col};
          },
          md.getStrides()[0]);
    };
  }

  /// Runs `inPlace` for a full chunk (one the tiles may read in place),
  /// `copied` (after the copy to `dst`) otherwise.
  void fullOrCopied(Value full, bool key, Value dst, int64_t width, Value n0,
                    Value nc, function_ref<void()> inPlace,
                    function_ref<void()> copied) {
    auto ifOp = scf::IfOp::create(b, loc, full, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    inPlace();
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    copyRows(key, dst, width, n0, nc);
    copied();
  }

  /// One chunk of keys from n0: the new max and sum.
  SmallVector<Value> chunk(Value n0, Value N, ValueRange st) {
    Value left = e.sub(N, n0);
    Value nc = e.minI(left, idx(C));
    // Without the dot path's demand touch of the next chunk's pages: each
    // one holds retirement until DRAM answers (D2 bf16, 3 alternated runs:
    // pages of 16 19.3-19.7 -> 18.8-19.5 ms, pages of 256 17.4-17.7 ->
    // 16.4-17.0).
    if (e.paged)
      e.fillRowTables(n0, /*touchNext=*/false);
    e.prefetchBase = add(n0, idx(C));
    e.prefetchLast = e.sub(N, one);
    Value full =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, nc, idx(C));
    if (e.paged) {
      Value halves = pagedHalvesContiguous();
      full = arith::AndIOp::create(b, loc, full, halves);
    }
    fullOrCopied(full, /*key=*/true, KS, d, n0, nc, inPlaceScores(n0), [&] {
      scores(
          KS,
          [&](int64_t h, Value col) -> SmallVector<Value> {
            return {idx(16 * h), col};
          },
          Value());
    });
    Softmax sm = softmax(n0, nc, st[0], st[1]);
    packP();
    fullOrCopied(
        full, /*key=*/false, VS, dv, n0, nc,
        [&] { pairs([&](Value r) { return e.kvRow(/*key=*/false, n0, r); }); },
        [&] { pairs([&](Value r) {
                return Emitter::RowRef{VS, r, false};
              }); });
    rescale(sm.alpha, sm.up);
    // Four column tiles per step, then the rest of dv.
    int64_t wide = dv / 64 * 64;
    if (wide > 0)
      forUpTo(wide, 64, [&](Value col) { pvStep(col, 4); });
    if (dv > wide)
      pvStep(idx(wide), (dv - wide) / 16);
    e.prefetchBase = e.prefetchLast = Value();
    return {sm.mNew, sm.lNew};
  }
};

} // namespace

void Emitter::amxPath(Value T, Value M, ArrayRef<Value> leadUbs, Value N) {
  int64_t savedNV = NV;
  NV = kAmxChunk / W; // chunk() = 32: the paged row tables and prefetches
  AmxDecode a(*this);
  Value tLast = sub(T, idx(1));
  a.rowOf = [&](Value r) { return delinearize(minI(r, tLast), M, leadUbs); };
  a.packQueries();
  SmallVector<Value> init = a.loadState();
  Value zero = idx(0), step = idx(kAmxChunk);
  SmallVector<Value> fin =
      loop(zero, N, step, init,
           [&](Value n0, ValueRange st) { return a.chunk(n0, N, st); });
  a.storeState(T, fin[0], fin[1]);
  NV = savedNV;
}

} // namespace mlir::attn::microkernel
