//===- MmaKernel.cpp - the bf16/f16 tensor-core attention kernel ----------===//
//
// This file implements the tensor-core kernel of convert-attn-to-gpu, on
// bf16 or f16 operands (mmaElt): 16 rows per warp (heads of the group x
// query rows, flattened); per key tile staged in shared memory as mmaElt
// (a cache of that type copied, an f32 one rounded), S = Q·Kᵀ and O += P·V
// as mma.sync m16n8k16 with
// fp32 accumulators; the online softmax on the C fragments, each row's
// max and sum reduced over the quad of lanes that share it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/KernelEmitter.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;

namespace {
constexpr int64_t kTileRows = 16;
constexpr double kInf = std::numeric_limits<double>::infinity();
} // namespace

KernelEmitter::MmaState KernelEmitter::beginMma(Value q, Value k,
                                                Value lens) {
  MmaState m;
  m.warps = (group * qRows + kTileRows - 1) / kTileRows;
  Type narrow = mmaElt;
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  auto kTileTy =
      MemRefType::get({kvBlock, d}, narrow, MemRefLayoutAttrInterface(), wg);
  auto vTileTy =
      MemRefType::get({kvBlock, dv}, narrow, MemRefLayoutAttrInterface(), wg);
  // Head dims above 128: Q's fragments would not fit in registers next to
  // the accumulators; Q is staged in shared memory once and its fragments
  // read per step.
  m.qShared = d > 128;
  auto qTileTy = MemRefType::get({m.warps * kTileRows, d}, narrow,
                                 MemRefLayoutAttrInterface(), wg);
  SmallVector<Type> tileTypes = {kTileTy, vTileTy};
  if (m.qShared)
    tileTypes.push_back(qTileTy);
  m.L = beginLaunch(k, lens, m.warps * kWarp, tileTypes);
  const Launch &L = m.L;
  gpu::LaunchOp launch = L.op;
  m.kTile = launch.getWorkgroupAttributions()[0];
  m.vTile = launch.getWorkgroupAttributions()[1];
  Value zero = c(0);
  // Fragment coordinates: group (row within 8) and thread in group.
  m.gq = arith::DivUIOp::create(b, loc, L.lane, c(4));
  m.tq = arith::RemUIOp::create(b, loc, L.lane, c(4));
  m.col2 = mul(m.tq, c(2));
  m.qScale = qPrescale();

  // The thread's two rows: r0 = group, r1 = group + 8 of the warp's 16.
  for (int64_t h = 0; h < 2; ++h) {
    Value t = add(mul(L.warp, c(kTileRows)), m.gq);
    t = add(t, c(8 * h));
    m.valid[h] = cmp(arith::CmpIPredicate::slt, t, mul(c(group), L.qn));
    Value ts = select(m.valid[h], t, zero);
    Value groupHead0 = mul(L.g, c(group));
    m.head[h] = add(groupHead0, arith::DivUIOp::create(b, loc, ts, L.qn));
    m.pos[h] = add(L.q0, arith::RemUIOp::create(b, loc, ts, L.qn));
  }
  // Q as A fragments, one per 16 of d: in registers, or from the shared Q
  // tile (rows of the warp: 16·warp + gq (+8)).
  if (m.qShared) {
    m.qTile = launch.getWorkgroupAttributions()[2];
    int64_t rows = m.warps * kTileRows;
    Value qElems = c(rows * d), qStep = c(m.warps * kWarp);
    loop(L.tid, qElems, qStep, ValueRange{},
         [&](Value idx, ValueRange) -> SmallVector<Value> {
           Value r = arith::DivUIOp::create(b, loc, idx, c(d));
           Value col = arith::RemUIOp::create(b, loc, idx, c(d));
           Value ok = cmp(arith::CmpIPredicate::slt, r, mul(c(group), L.qn));
           Value rs = select(ok, r, zero);
           Value groupHead0 = mul(L.g, c(group));
           Value hd =
               add(groupHead0, arith::DivUIOp::create(b, loc, rs, L.qn));
           Value ps = add(L.q0, arith::RemUIOp::create(b, loc, rs, L.qn));
           Value x = memref::LoadOp::create(b, loc, q,
                                            ValueRange{L.bi, hd, ps, col});
           Value scaled = fmul(x, m.qScale);
           memref::StoreOp::create(b, loc,
                                   toNarrow(select(ok, scaled, f32(0.0))),
                                   m.qTile, ValueRange{r, col});
           return {};
         });
    gpu::BarrierOp::create(b, loc);
  } else {
    for (int64_t ks = 0; ks < d / 16; ++ks)
      m.qFrag.push_back(mmaQFragment(m, q, ks));
  }
  return m;
}

SmallVector<Value> KernelEmitter::mmaQFragment(const MmaState &m, Value q,
                                               int64_t ks) {
  // {r0, c}, {r1, c}, {r0, c+8}, {r1, c+8} with c = 16·ks + 2·tq (two
  // consecutive columns each).
  const Launch &L = m.L;
  Value one = c(1);
  auto qElem = [&](int64_t h, Value col) -> Value {
    Value x = memref::LoadOp::create(
        b, loc, q, ValueRange{L.bi, m.head[h], m.pos[h], col});
    Value scaled = fmul(x, m.qScale);
    return toNarrow(select(m.valid[h], scaled, f32(0.0)));
  };
  SmallVector<Value> a;
  for (int64_t part = 0; part < 4; ++part) {
    int64_t h = part % 2;
    Value c0 = add(c(16 * ks + 8 * (part / 2)), m.col2);
    if (m.qShared) {
      Value row = add(mul(L.warp, c(kTileRows)), m.gq);
      row = add(row, c(8 * h));
      Value x0 = memref::LoadOp::create(b, loc, m.qTile, ValueRange{row, c0});
      Value x1 = memref::LoadOp::create(b, loc, m.qTile,
                                        ValueRange{row, add(c0, one)});
      a.push_back(pack(x0, x1));
    } else {
      Value lo = qElem(h, c0);
      Value hi = qElem(h, add(c0, one));
      a.push_back(pack(lo, hi));
    }
  }
  return a;
}

SmallVector<Value> KernelEmitter::mmaTile(const MmaState &m, Value k,
                                          Value v, Value kt, ValueRange st) {
  const Launch &L = m.L;
  int64_t nTilesS = kvBlock / 8;
  Value one = c(1);
  Value kn = min(c(kvBlock), sub(L.hi, kt));
  stageTile(L, k, m.kTile, d, kt, kn, m.warps * kWarp);
  stageTile(L, v, m.vTile, dv, kt, kn, m.warps * kWarp);
  gpu::BarrierOp::create(b, loc);
  // S = Q·Kᵀ: per 8 keys, C fragments {r0,c} {r0,c+1} {r1,c} {r1,c+1}.
  SmallVector<SmallVector<Value>> sFrag(nTilesS,
                                        SmallVector<Value>(4, f32(0.0)));
  for (int64_t ks = 0; ks < d / 16; ++ks) {
    SmallVector<Value> a = m.qShared ? mmaQFragment(m, Value(), ks)
                                     : m.qFrag[ks];
    for (int64_t j = 0; j < nTilesS; ++j) {
      Value keyRow = add(c(8 * j), m.gq);
      SmallVector<Value> bb;
      for (int64_t part = 0; part < 2; ++part) {
        Value c0 = add(c(16 * ks + 8 * part), m.col2);
        Value x0 =
            memref::LoadOp::create(b, loc, m.kTile, ValueRange{keyRow, c0});
        Value x1 = memref::LoadOp::create(b, loc, m.kTile,
                                          ValueRange{keyRow, add(c0, one)});
        bb.push_back(pack(x0, x1));
      }
      sFrag[j] = mma(a, bb, sFrag[j]);
    }
  }
  // Softcap, mask, row max over the quad.
  Value rowMax[2] = {f32(-kInf), f32(-kInf)};
  for (int64_t j = 0; j < nTilesS; ++j)
    for (int64_t e = 0; e < 4; ++e) {
      int64_t h = e / 2;
      Value &s = sFrag[j][e];
      s = softcapped(s);
      // Keys past hi are the tile's zero padding.
      Value key = add(kt, add(c(8 * j + e % 2), m.col2));
      Value inTile =
          andI(m.valid[h], cmp(arith::CmpIPredicate::slt, key, L.hi));
      Value rowPos = add(m.pos[h], L.offset);
      Value vis = visible(inTile, key, rowPos);
      s = select(vis, s, f32(-kInf));
      rowMax[h] = arith::MaximumFOp::create(b, loc, rowMax[h], s);
    }
  SmallVector<Value> next;
  Value shift[2], alpha[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value mNew = arith::MaximumFOp::create(
        b, loc, st[h], quadReduce(rowMax[h], /*isMax=*/true));
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       mNew, f32(-kInf));
    shift[h] = select(none, f32(0.0), mNew);
    alpha[h] = exp2(arith::SubFOp::create(b, loc, st[h], shift[h]));
    next.push_back(mNew);
  }
  // P = 2^(s - shift), this thread's part of the row sums.
  Value rowSum[2] = {f32(0.0), f32(0.0)};
  SmallVector<SmallVector<Value>> pNarrow;
  for (int64_t j = 0; j < nTilesS; ++j) {
    SmallVector<Value> p;
    for (int64_t e = 0; e < 4; ++e) {
      int64_t h = e / 2;
      Value x = exp2(arith::SubFOp::create(b, loc, sFrag[j][e], shift[h]));
      rowSum[h] = fadd(rowSum[h], x);
      p.push_back(toNarrow(x));
    }
    pNarrow.push_back(p);
  }
  for (int64_t h = 0; h < 2; ++h)
    next.push_back(fma(st[2 + h], alpha[h], rowSum[h]));
  mmaPV(m, pNarrow, alpha, st, next);
  gpu::BarrierOp::create(b, loc);
  return next;
}

void KernelEmitter::mmaPV(const MmaState &m,
                          ArrayRef<SmallVector<Value>> pNarrow,
                          const Value alpha[2], ValueRange st,
                          SmallVector<Value> &next) {
  // O = O·alpha + P·V: P's C fragments of keys 16t.. are the A fragment of
  // step t; V's B fragments {k = 2tq, 2tq+1 | +8} x n.
  int64_t nTilesO = dv / 8;
  Value one = c(1);
  SmallVector<SmallVector<Value>> o;
  for (int64_t n = 0; n < nTilesO; ++n) {
    SmallVector<Value> acc;
    for (int64_t e = 0; e < 4; ++e)
      acc.push_back(fmul(st[4 + 4 * n + e], alpha[e / 2]));
    o.push_back(acc);
  }
  for (int64_t t = 0; t < kvBlock / 16; ++t) {
    SmallVector<Value> a = {pack(pNarrow[2 * t][0], pNarrow[2 * t][1]),
                            pack(pNarrow[2 * t][2], pNarrow[2 * t][3]),
                            pack(pNarrow[2 * t + 1][0], pNarrow[2 * t + 1][1]),
                            pack(pNarrow[2 * t + 1][2], pNarrow[2 * t + 1][3])};
    for (int64_t n = 0; n < nTilesO; ++n) {
      Value vcol = add(c(8 * n), m.gq);
      SmallVector<Value> bb;
      for (int64_t part = 0; part < 2; ++part) {
        Value k0 = add(c(16 * t + 8 * part), m.col2);
        Value x0 =
            memref::LoadOp::create(b, loc, m.vTile, ValueRange{k0, vcol});
        Value x1 = memref::LoadOp::create(b, loc, m.vTile,
                                          ValueRange{add(k0, one), vcol});
        bb.push_back(pack(x0, x1));
      }
      o[n] = mma(a, bb, o[n]);
    }
  }
  for (auto &acc : o)
    next.append(acc.begin(), acc.end());
}

void KernelEmitter::mmaStore(const MmaState &m, scf::ForOp tiles, Value out) {
  // out = O / l (the quad's partial sums added; 0 for a row with no key).
  Value inv[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value l = quadReduce(tiles.getResult(2 + h), /*isMax=*/false);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, f32(0.0));
    Value zero = f32(0.0);
    Value recip = arith::DivFOp::create(b, loc, f32(1.0), l);
    inv[h] = select(empty, zero, recip);
  }
  for (int64_t n = 0; n < dv / 8; ++n)
    for (int64_t e = 0; e < 4; ++e) {
      int64_t h = e / 2;
      Value col = add(c(8 * n + e % 2), m.col2);
      auto ifOp =
          scf::IfOp::create(b, loc, m.valid[h], /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      memref::StoreOp::create(
          b, loc, fmul(tiles.getResult(4 + 4 * n + e), inv[h]), out,
          ValueRange{m.L.bi, m.head[h], m.pos[h], col});
    }
}

void KernelEmitter::emitMma(Value out, Value q, Value k, Value v, Value lens) {
  OpBuilder::InsertionGuard guard(b);
  MmaState m = beginMma(q, k, lens);
  // State: m[2], l[2] (this thread's partial row sums), o[dv / 8][4].
  SmallVector<Value> init = {f32(-kInf), f32(-kInf), f32(0.0), f32(0.0)};
  for (int64_t i = 0; i < dv / 8 * 4; ++i)
    init.push_back(f32(0.0));
  scf::ForOp tiles =
      loop(m.L.lo, m.L.hi, c(kvBlock), init, [&](Value kt, ValueRange st) {
        return mmaTile(m, k, v, kt, st);
      });
  mmaStore(m, tiles, out);
  gpu::TerminatorOp::create(b, loc);
}
