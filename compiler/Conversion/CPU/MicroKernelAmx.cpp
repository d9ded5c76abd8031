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

#include "compiler/Conversion/CPU/MicroKernelAmx.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::microkernel;

namespace {

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
  assert(amxScratchBytes(d, dv).size() == kAmxDecodeScratch);
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

void mlir::attn::emitAmxPairProducts(
    OpBuilder &b, Location loc, ArrayRef<std::pair<int64_t, int64_t>> parts,
    MutableArrayRef<Value> c, function_ref<Value(int64_t, int64_t)> loadX,
    function_ref<Value(int64_t, int64_t)> loadY) {
  Type tileC = c.front().getType();
  int64_t curX = -1, curY = -1;
  Value X[2], Y[2];
  auto load = [](Value(&tiles)[2], int64_t &loaded, int64_t part,
                 function_ref<Value(int64_t, int64_t)> loadPart) {
    if (part == loaded)
      return;
    for (int64_t t = 0; t < 2; ++t)
      tiles[t] = loadPart(part, t);
    loaded = part;
  };
  for (auto [x, y] : parts) {
    load(Y, curY, y, loadY);
    load(X, curX, x, loadX);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        c[2 * i + j] =
            amx::TileMulFOp::create(b, loc, tileC, X[i], Y[j], c[2 * i + j]);
  }
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

/// The decode of at most 16 rows on AMX tiles (a bf16 cache: K and V exact
/// in one part): its K and V copies for partial chunks and the steps of
/// one chunk of keys (Emitter::amxPath).
struct AmxDecode : AmxTiles {
  /// A partial chunk's K and V rows [32, d] / [32, dv] bf16.
  Value KS, VS;

  AmxDecode(Emitter &e) : AmxTiles(e) {
    ArrayRef<Value> bufs = e.amxBufs;
    views(bufs, /*blocks=*/1);
    KS = e.amxView(bufs[7], {C, d}, bf16);
    VS = e.amxView(bufs[8], {C, dv}, bf16);
    if (DB > 1)
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
            b, loc, tileAB, QBb, ValueRange{qbRow(s, db), zero}, Value());
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
