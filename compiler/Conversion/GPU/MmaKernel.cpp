//===- MmaKernel.cpp - the bf16/f16 tensor-core attention kernel ----------===//
//
// This file implements the tensor-core kernel of convert-attn-to-gpu, on
// bf16 or f16 operands (mmaElt), in FlashAttention-2's structure on the
// sm_80 instruction set (also what Hopper runs without wgmma):
//
//   - 16 or 32 rows per warp (one or two m16 tiles: the two share every
//     K/V fragment read from shared memory) of the group's heads x query
//     rows, flattened, up to 128 rows a block: the group's heads share every
//     K/V tile the block stages;
//   - Q rounded once into a shared tile, its fragments read by ldmatrix
//     (kept in registers for head dims up to 128);
//   - K and V tiles through a two-slot ring in dynamic shared memory:
//     a cache of the mma type is copied by cp.async (nvgpu.device_async_copy,
//     16 bytes per thread and chunk, zero-filled past the block's keys), the
//     next tile's copy in flight while the current one is computed; an f32
//     cache is rounded through registers into the same ring;
//   - S = Q·Kᵀ and O += P·V as mma.sync m16n8k16 with fp32 accumulators,
//     the B fragments read by ldmatrix (transposed for V) from rows padded
//     by 16 bytes (no bank conflicts);
//   - the online softmax on the C fragments, each row's max and sum reduced
//     over the quad of lanes that share it; the mask only on the tiles that
//     cross a row's diagonal or window (the key loop is split in two), and
//     the tiles past the block's last row skipped (its key range).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/KernelEmitter.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;

namespace {
constexpr int64_t kTileRows = 16;
/// Shared-memory rows are padded by 8 16-bit elements (16 bytes).
constexpr int64_t kPad = 8;
constexpr double kInf = std::numeric_limits<double>::infinity();
} // namespace

KernelEmitter::MmaSmem
KernelEmitter::mmaSharedMemory(int64_t rows, int64_t d, int64_t dv,
                               int64_t kvBlock, int64_t stages,
                               int64_t warpRows, bool wgmma) {
  MmaSmem s;
  if (wgmma) {
    // Every tile a whole number of 1024-byte swizzle atoms (8 rows of 128
    // bytes), from a base aligned at run time.
    s.qRows = llvm::alignTo(rows, 64);
    s.kOffset = llvm::alignTo(s.qRows * d * 2, 1024);
    s.vOffset = s.kOffset + llvm::alignTo(stages * kvBlock * d * 2, 1024);
    // (1024 to align the base, 128 past the static .shared variables.)
    s.bytes = s.vOffset + stages * kvBlock * dv * 2 + 1024 + 128;
    return s;
  }
  s.qRows = llvm::alignTo(rows, warpRows);
  s.kOffset = llvm::alignTo(s.qRows * (d + kPad) * 2, 128);
  s.vOffset = s.kOffset + llvm::alignTo(stages * kvBlock * (d + kPad) * 2, 128);
  // (dv = 0: V read from the K tile, no ring of its own.)
  s.bytes = s.vOffset + (dv ? stages * kvBlock * (dv + kPad) * 2 : 0);
  return s;
}

SmallVector<Value> KernelEmitter::ldmatrix4(Value tile, Value stage, Value row,
                                            Value col, bool transpose,
                                            int64_t swizzleRows,
                                            int64_t width) {
  SmallVector<Value> at = {row, col};
  if (stage)
    at.insert(at.begin(), stage);
  if (swizzleRows) {
    // A lane's row address is its 16-byte chunk where the swizzle put it.
    Value idx = swizzled(swizzleRows, row, col);
    if (stage)
      idx = add(mul(stage, c(swizzleRows * width)), idx);
    at = {idx};
  }
  auto resTy = VectorType::get({4, 2}, mmaElt);
  Value r = nvgpu::LdMatrixOp::create(b, loc, resTy, tile, at,
                                      b.getBoolAttr(transpose),
                                      b.getI32IntegerAttr(4));
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i) {
    Value pair = vector::ExtractOp::create(b, loc, r, ArrayRef<int64_t>{i});
    regs.push_back(LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair));
  }
  return regs;
}

KernelEmitter::MmaState KernelEmitter::beginMma(Value q, Value k, Value lens,
                                                bool asyncCopy, bool wgmma,
                                                Value kMap, Value vMap) {
  MmaState m;
  m.tma = kMap != Value();
  m.mt = warpRows / kTileRows;
  m.rowWarps = (blockHeads() * qRows + warpRows - 1) / warpRows;
  m.warps = m.rowWarps * dvSplit;
  m.asyncCopy = asyncCopy;
  // Q's fragments stay in registers next to one m-tile's accumulators up to
  // head dim 128; otherwise they are read from the Q tile per step.
  m.wgmma = wgmma;
  m.wgmmaQK = wgmma && wgmmaQK;
  m.wgmmaPV = wgmma && wgmmaPV;
  // (Value head dims up to 128: at 256, O's 128 accumulators next to S's
  // and two tiles' P spill.)
  m.overlap = (overlap || warpSpecialized) && m.tma && m.wgmmaQK && m.wgmmaPV &&
              dv <= 128;
  m.qInRegisters = m.mt == 1 && d <= 128 && !m.wgmmaQK;
  // wgmma: whole warpgroups of 4 warps (64 rows).
  if (m.wgmma)
    m.warps = llvm::alignTo(m.warps, 4);
  // Warp-specialized: two consumer warpgroups (240 registers each after
  // setmaxnreg, the producer's 24) and the producer. (With one, the
  // producer would hold the launch's registers for nothing and halve the
  // resident blocks: the overlapped kernel instead.)
  m.warpSpecialized = warpSpecialized && m.overlap && m.warps == 8;
  m.threads = (m.warps + (m.warpSpecialized ? 4 : 0)) * kWarp;
  MmaSmem smemLayout = mmaSharedMemory(blockHeads() * qRows, d, vInK ? 0 : dv,
                                       kvBlock, m.stages, warpRows, m.wgmma);
  int64_t rows = smemLayout.qRows;
  m.L = beginLaunch(k, lens, m.threads, TypeRange{}, smemLayout.bytes);
  const Launch &L = m.L;
  // The tiles are views of the launch's dynamic shared memory.
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  auto bytesTy = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                 MemRefLayoutAttrInterface(), wg);
  Value smem = gpu::DynamicSharedMemoryOp::create(b, loc, bytesTy);
  auto view = [&](int64_t offset, ArrayRef<int64_t> shape) -> Value {
    auto ty = MemRefType::get(shape, mmaElt, MemRefLayoutAttrInterface(), wg);
    return memref::ViewOp::create(b, loc, ty, smem, c(offset), ValueRange{});
  };
  if (m.wgmma) {
    wgmmaTiles(m, smem, smemLayout, k, kMap, vMap);
  } else {
    m.qTile = view(0, {rows, d + kPad});
    m.kRing = view(smemLayout.kOffset, {m.stages, kvBlock, d + kPad});
    m.vRing = vInK ? m.kRing
                   : view(smemLayout.vOffset, {m.stages, kvBlock, dv + kPad});
  }
  // Fragment coordinates: group (row within 8) and thread in group.
  m.gq = arith::DivUIOp::create(b, loc, L.lane, c(4));
  m.tq = arith::RemUIOp::create(b, loc, L.lane, c(4));
  m.col2 = mul(m.tq, c(2));
  m.qScale = qPrescale();
  // ldmatrix.x4 addresses, one row per lane: matrix i is read from the row
  // addresses of lanes 8i..8i+7. A (16x16 of Q): rows lane % 16, columns
  // +8 for lanes 16..31. B of Kᵀ (two n8 tiles x k16): keys lane % 8
  // (+8 for lanes 16..31), columns +8 for lanes 8..15 and 24..31. B of V
  // (transposed; k16 x two n8 tiles): keys lane % 8 (+8 for lanes 8..15 and
  // 24..31), columns +8 for lanes 16..31.
  // (One op per statement: the IR's order must not depend on the host
  // compiler's argument evaluation order.)
  Value c2 = c(2), c8 = c(8), c16 = c(16);
  Value l8 = arith::RemUIOp::create(b, loc, L.lane, c8);
  Value half = arith::DivUIOp::create(b, loc, L.lane, c16);
  Value hi16 = mul(half, c8);
  Value eighth = arith::DivUIOp::create(b, loc, L.lane, c8);
  Value odd = arith::RemUIOp::create(b, loc, eighth, c2);
  Value odd8 = mul(odd, c8);
  // Column groups: warp w takes rows of warp w mod rowWarps and O's
  // columns from colBase.
  Value rowWarp = L.warp;
  m.colBase = c(0);
  if (dvSplit > 1) {
    rowWarp = arith::RemUIOp::create(b, loc, L.warp, c(m.rowWarps));
    Value cg = arith::DivUIOp::create(b, loc, L.warp, c(m.rowWarps));
    m.colBase = mul(cg, c(dvPerWarp()));
  }
  Value warpRow0 = mul(rowWarp, c(warpRows));
  Value l16 = arith::RemUIOp::create(b, loc, L.lane, c16);
  m.aRow = add(warpRow0, l16);
  m.aCol = hi16;
  m.kRow = add(l8, hi16);
  m.kCol = odd8;
  m.vRow = add(l8, odd8);
  m.vCol = hi16;

  // The thread's rows: gq and gq + 8 of each of the warp's m-tiles.
  for (int64_t r = 0; r < 2 * m.mt; ++r) {
    Value t = add(warpRow0, m.gq);
    t = add(t, c(8 * r));
    Row row = rowOf(L, t);
    m.valid.push_back(row.valid);
    m.head.push_back(row.head);
    m.pos.push_back(row.pos);
  }
  // Q pre-scaled and rounded into the shared tile (zeros in the rows past
  // the block's), once.
  Value qElems = c(rows * d), qStep = c(m.threads);
  loop(L.tid, qElems, qStep, ValueRange{},
       [&](Value idx, ValueRange) -> SmallVector<Value> {
         Value r = arith::DivUIOp::create(b, loc, idx, c(d));
         Value col = arith::RemUIOp::create(b, loc, idx, c(d));
         Row row = rowOf(L, r);
         Value ok = row.valid;
         Value x = loadQuery(q, ValueRange{L.bi, row.head, row.pos, col});
         Value scaled = fmul(x, m.qScale);
         SmallVector<Value> at = {r, col};
         if (m.wgmma)
           at = {swizzled(rows, r, col)};
         memref::StoreOp::create(b, loc, toNarrow(select(ok, scaled, f32(0.0))),
                                 m.qTile, at);
         return {};
       });
  // The wgmma reads the tile through the async proxy.
  if (m.wgmma)
    fenceAsyncProxy();
  gpu::BarrierOp::create(b, loc);
  if (m.qInRegisters) {
    m.qFrag.emplace_back();
    for (int64_t ks = 0; ks < d / 16; ++ks)
      m.qFrag[0].push_back(mmaQFragment(m, 0, ks));
  }
  return m;
}

SmallVector<Value> KernelEmitter::mmaQFragment(const MmaState &m, int64_t t,
                                               int64_t ks) {
  // a0..a3 = {rows 0-7, 8-15} x {columns 16ks.., 16ks + 8..} of m-tile t,
  // the m16n8k16 A fragment's order.
  Value row = add(m.aRow, c(kTileRows * t));
  Value col = add(c(16 * ks), m.aCol);
  return ldmatrix4(m.qTile, Value(), row, col, /*transpose=*/false,
                   m.wgmma ? m.qRowsPad : 0, d);
}

void KernelEmitter::mmaIssueTile(const MmaState &m, Value k, Value v, Value kt,
                                 Value stage) {
  const Launch &L = m.L;
  int64_t threads = m.warps * kWarp;
  if (m.tma) {
    tmaIssueTile(m, kt, stage);
    return;
  }
  if (!m.asyncCopy) {
    Value left = sub(L.hi, kt);
    Value kn = min(c(kvBlock), left);
    stageTile(L, k, m.kRing, d, kt, kn, threads, stage);
    if (!vInK)
      stageTile(L, v, m.vRing, dv, kt, kn, threads, stage);
    return;
  }
  auto tokenTy = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  auto copyRows = [&](Value srcBuf, Value ring, int64_t width) {
    // 8 elements (16 bytes) per chunk; chunk idx = row · (width / 8) + ch.
    int64_t perRow = width / 8, total = kvBlock * perRow;
    for (int64_t i = 0; i * threads < total; ++i) {
      auto body = [&]() {
        Value idx = add(L.tid, c(i * threads));
        Value row = arith::DivUIOp::create(b, loc, idx, c(perRow));
        Value chunk = arith::RemUIOp::create(b, loc, idx, c(perRow));
        Value col = mul(chunk, c(8));
        Value key = add(kt, row);
        Value in = cmp(arith::CmpIPredicate::slt, key, L.hi);
        // Keys past hi: a valid address, nothing read, zeros written.
        SmallVector<Value> at = kvIndices(L, srcBuf, key, col);
        Value eight = c(8), none = c(0);
        Value n = select(in, eight, none);
        SmallVector<Value> dst = {stage, row, col};
        if (m.wgmma) {
          Value slot = mul(stage, c(kvBlock * width));
          dst = {add(slot, swizzled(kvBlock, row, col))};
        }
        nvgpu::DeviceAsyncCopyOp::create(b, loc, tokenTy, ring, dst, srcBuf, at,
                                         b.getIndexAttr(8), n, b.getUnitAttr());
      };
      if ((i + 1) * threads <= total) {
        body();
        continue;
      }
      Value chunkIdx = add(L.tid, c(i * threads));
      Value inRange = cmp(arith::CmpIPredicate::slt, chunkIdx, c(total));
      auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      body();
    }
  };
  copyRows(k, m.kRing, d);
  if (!vInK)
    copyRows(v, m.vRing, dv);
}

SmallVector<Value> KernelEmitter::mmaTile(const MmaState &m, Value kt,
                                          Value stage, bool masked,
                                          ValueRange st) {
  SmallVector<SmallVector<SmallVector<Value>>> sFrag = mmaScores(m, stage);
  SmallVector<Value> next, alpha;
  SmallVector<SmallVector<SmallVector<Value>>> pPacked;
  mmaSoftmax(m, kt, masked, st, sFrag, next, pPacked, alpha);
  mmaPV(m, stage, pPacked, alpha, st, next);
  return next;
}

SmallVector<SmallVector<SmallVector<Value>>>
KernelEmitter::mmaScores(const MmaState &m, Value stage) {
  int64_t mt = m.mt;
  int64_t nTilesS = kvBlock / 8;
  // S = Q·Kᵀ: per m-tile t and 8 keys j, C fragments {r0,c} {r0,c+1}
  // {r1,c} {r1,c+1}; each ldmatrix of K feeds 2·mt mma.
  SmallVector<SmallVector<SmallVector<Value>>> sFrag(
      mt, SmallVector<SmallVector<Value>>(nTilesS,
                                          SmallVector<Value>(4, f32(0.0))));
  for (int64_t ks = 0; ks < d / 16; ++ks) {
    SmallVector<SmallVector<Value>> a;
    for (int64_t t = 0; t < mt; ++t)
      a.push_back(m.qInRegisters ? m.qFrag[t][ks] : mmaQFragment(m, t, ks));
    for (int64_t j = 0; j < nTilesS; j += 2) {
      Value row = add(c(8 * j), m.kRow);
      Value col = add(c(16 * ks), m.kCol);
      SmallVector<Value> r =
          ldmatrix4(m.kRing, stage, row, col,
                    /*transpose=*/false, m.wgmma ? kvBlock : 0, d);
      for (int64_t t = 0; t < mt; ++t) {
        sFrag[t][j] = mma(a[t], {r[0], r[1]}, sFrag[t][j]);
        sFrag[t][j + 1] = mma(a[t], {r[2], r[3]}, sFrag[t][j + 1]);
      }
    }
  }
  return sFrag;
}

void KernelEmitter::mmaSoftmax(
    const MmaState &m, Value kt, bool masked, ValueRange st,
    SmallVector<SmallVector<SmallVector<Value>>> &sFrag,
    SmallVector<Value> &next,
    SmallVector<SmallVector<SmallVector<Value>>> &pPacked,
    SmallVector<Value> &alpha) {
  const Launch &L = m.L;
  int64_t mt = m.mt, nRows = 2 * mt;
  int64_t nTilesS = kvBlock / 8;
  // Softcap, the mask where the tile needs it, row max over the quad.
  SmallVector<Value> rowMax(nRows, f32(-kInf));
  for (int64_t t = 0; t < mt; ++t)
    for (int64_t j = 0; j < nTilesS; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        int64_t r = 2 * t + e / 2;
        Value &s = sFrag[t][j][e];
        s = softcapped(s);
        if (masked) {
          // Keys past hi are the tile's zero padding.
          Value key = add(kt, add(c(8 * j + e % 2), m.col2));
          Value inTile =
              andI(m.valid[r], cmp(arith::CmpIPredicate::slt, key, L.hi));
          Value rowPos = add(m.pos[r], L.offset);
          Value vis = visible(inTile, key, rowPos);
          s = select(vis, s, f32(-kInf));
        }
        rowMax[r] = arith::MaximumFOp::create(b, loc, rowMax[r], s);
      }
  // State: m[nRows], l[nRows], o[mt][dv / 8][4].
  SmallVector<Value> shift(nRows);
  alpha.assign(nRows, Value());
  for (int64_t r = 0; r < nRows; ++r) {
    Value mNew = arith::MaximumFOp::create(
        b, loc, st[r], quadReduce(rowMax[r], /*isMax=*/true));
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       mNew, f32(-kInf));
    shift[r] = select(none, f32(0.0), mNew);
    alpha[r] = exp2(arith::SubFOp::create(b, loc, st[r], shift[r]));
    next.push_back(mNew);
  }
  // P = 2^(s - shift) rounded in pairs into m-tile t's A fragments of each
  // 16-key step: {r0: keys 2tq.., r1: 2tq.., r0: 2tq+8.., r1: 2tq+8..};
  // this thread's part of the row sums.
  SmallVector<Value> rowSum(nRows, f32(0.0));
  pPacked.assign(mt, {});
  for (int64_t t = 0; t < mt; ++t) {
    SmallVector<SmallVector<Value>> p(nTilesS);
    for (int64_t j = 0; j < nTilesS; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        int64_t r = 2 * t + e / 2;
        Value x = exp2(arith::SubFOp::create(b, loc, sFrag[t][j][e], shift[r]));
        rowSum[r] = fadd(rowSum[r], x);
        p[j].push_back(x);
      }
    for (int64_t s2 = 0; s2 < kvBlock / 16; ++s2) {
      const auto &lo = p[2 * s2], &hi = p[2 * s2 + 1];
      pPacked[t].push_back(
          {packRounded(lo[0], lo[1]), packRounded(lo[2], lo[3]),
           packRounded(hi[0], hi[1]), packRounded(hi[2], hi[3])});
    }
  }
  for (int64_t r = 0; r < nRows; ++r)
    next.push_back(fma(st[nRows + r], alpha[r], rowSum[r]));
}

void KernelEmitter::mmaPV(const MmaState &m, Value stage,
                          ArrayRef<SmallVector<SmallVector<Value>>> pPacked,
                          ArrayRef<Value> alpha, ValueRange st,
                          SmallVector<Value> &next) {
  // O = O·alpha + P·V: V's B fragments (k = keys, n = columns) by
  // ldmatrix.trans, two n8 tiles per x4, each feeding every m-tile.
  int64_t mt = m.mt, nTilesO = dvPerWarp() / 8;
  int64_t base = 4 * mt;
  SmallVector<SmallVector<SmallVector<Value>>> o(mt);
  for (int64_t t = 0; t < mt; ++t)
    for (int64_t n = 0; n < nTilesO; ++n) {
      SmallVector<Value> acc;
      for (int64_t e = 0; e < 4; ++e)
        acc.push_back(
            fmul(st[base + (t * nTilesO + n) * 4 + e], alpha[2 * t + e / 2]));
      o[t].push_back(acc);
    }
  for (int64_t s2 = 0; s2 < kvBlock / 16; ++s2)
    for (int64_t n = 0; n < nTilesO; n += 2) {
      Value row = add(c(16 * s2), m.vRow);
      Value col = add(add(c(8 * n), m.vCol), m.colBase);
      SmallVector<Value> r =
          ldmatrix4(m.vRing, stage, row, col,
                    /*transpose=*/true, m.wgmma ? kvBlock : 0, dv);
      for (int64_t t = 0; t < mt; ++t) {
        o[t][n] = mma(pPacked[t][s2], {r[0], r[1]}, o[t][n]);
        o[t][n + 1] = mma(pPacked[t][s2], {r[2], r[3]}, o[t][n + 1]);
      }
    }
  for (auto &tile : o)
    for (auto &acc : tile)
      next.append(acc.begin(), acc.end());
}

void KernelEmitter::mmaStore(const MmaState &m, ValueRange tiles, Value out) {
  // out = O / l (the quad's partial sums added; 0 for a row with no key).
  int64_t mt = m.mt, nRows = 2 * mt, nTilesO = dvPerWarp() / 8;
  SmallVector<Value> inv;
  Value quadLead = cmp(arith::CmpIPredicate::eq, m.tq, c(0));
  // (Every column group has the rows' statistics: the first stores them.)
  if (dvSplit > 1)
    quadLead = andI(quadLead, cmp(arith::CmpIPredicate::eq, m.colBase, c(0)));
  for (int64_t r = 0; r < nRows; ++r) {
    Value l = quadReduce(tiles[nRows + r], /*isMax=*/false);
    // Split keys: the row's log2-sum-exp, by the first lane of its quad.
    storeRowLse(m.L, andI(m.valid[r], quadLead), tiles[r], l, m.head[r],
                m.pos[r]);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, f32(0.0));
    Value zero = f32(0.0);
    Value recip = arith::DivFOp::create(b, loc, f32(1.0), l);
    inv.push_back(select(empty, zero, recip));
  }
  for (int64_t t = 0; t < mt; ++t)
    for (int64_t n = 0; n < nTilesO; ++n)
      for (int64_t e = 0; e < 4; ++e) {
        int64_t r = 2 * t + e / 2;
        Value col = add(add(c(8 * n + e % 2), m.col2), m.colBase);
        auto ifOp =
            scf::IfOp::create(b, loc, m.valid[r], /*withElseRegion=*/false);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        Value acc = tiles[4 * mt + (t * nTilesO + n) * 4 + e];
        storeResult(m.L, out, fmul(acc, inv[r]), m.head[r], m.pos[r], col);
      }
}

Value KernelEmitter::unmaskedEnd(const Launch &L) {
  // Tiles every row of the block sees whole (below the diagonal of its
  // first row, no padding, no window) need no mask: [lo, full), the rest
  // [full, hi) does.
  if (src.window)
    return L.lo;
  Value end = L.hi;
  if (src.mask != MaskKind::none) {
    Value diag = add(L.q0, L.offset);
    Value past = add(diag, c(1));
    end = min(past, L.hi);
    // Chunked: where the block's rows share one chunk (lo its start) the
    // same; a block across a chunk boundary masks every tile.
    if (src.chunk) {
      Value rowsLeft = sub(L.qn, c(1));
      Value lastRow = add(diag, rowsLeft);
      Value firstStart = chunkStart(diag);
      Value lastStart = chunkStart(lastRow);
      Value one = cmp(arith::CmpIPredicate::eq, firstStart, lastStart);
      end = select(one, end, L.lo);
    }
  }
  Value span = sub(end, L.lo);
  Value n = max(span, c(0));
  n = arith::DivUIOp::create(b, loc, n, c(kvBlock));
  Value whole = mul(n, c(kvBlock));
  return add(L.lo, whole);
}

void KernelEmitter::emitMma(Value out, Value q, Value k, Value v, Value lens) {
  OpBuilder::InsertionGuard guard(b);
  bool asyncCopy = cast<MemRefType>(k.getType()).getElementType() == mmaElt;
  // TMA for a contiguous cache (a paged one keeps cp.async through the
  // block table): the tensor maps are made on the host, before the launch.
  Value kMap, vMap;
  if (wgmma && asyncCopy && tma && !table) {
    // Into the kernel as an address (i64): the outlined kernel's arguments
    // must convert to LLVM without the nvgpu types, and a cast pair would
    // fold away.
    auto toAddress = [&](Value map) -> Value {
      auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
      Value ptr =
          UnrealizedConversionCastOp::create(b, loc, ptrTy, map).getResult(0);
      return LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), ptr);
    };
    kMap = toAddress(tmaDescriptor(k));
    vMap = toAddress(tmaDescriptor(v));
  }
  MmaState m = beginMma(q, k, lens, asyncCopy, wgmma && asyncCopy, kMap, vMap);
  if (m.overlap) {
    emitWgmmaOverlap(m, out);
    gpu::TerminatorOp::create(b, loc);
    return;
  }
  const Launch &L = m.L;
  auto tokenTy = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  // One cp.async group per tile (empty past the last one), so that
  // "all but the newest group done" is always "the current tile is in".
  auto commit = [&]() -> Value {
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenTy,
                                                   ValueRange{});
  };
  // The first tile's copy.
  Value any = cmp(arith::CmpIPredicate::slt, L.lo, L.hi);
  ifThen(any, [&] { mmaIssueTile(m, k, v, L.lo, c(0)); });
  if (m.asyncCopy && !m.tma)
    commit();
  Value full = unmaskedEnd(L);
  auto body = [&](Value kt, ValueRange st, bool masked) {
    Value done = sub(kt, L.lo);
    Value j = arith::DivUIOp::create(b, loc, done, c(kvBlock));
    Value stage = arith::RemUIOp::create(b, loc, j, c(m.stages));
    Value nextKt = add(kt, c(kvBlock));
    Value more = cmp(arith::CmpIPredicate::slt, nextKt, L.hi);
    ifThen(more, [&] {
      Value nextStage = sub(c(m.stages - 1), stage);
      mmaIssueTile(m, k, v, nextKt, nextStage);
    });
    if (m.tma) {
      tmaWait(m, m.mbar, j, stage);
      if (masked)
        tmaZeroTail(m, kt, stage);
    } else if (m.asyncCopy) {
      nvgpu::DeviceAsyncWaitOp::create(b, loc, commit(),
                                       b.getI32IntegerAttr(1));
    }
    // The copies (generic proxy) made visible to the wgmma (async proxy).
    if (m.wgmma)
      fenceAsyncProxy();
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> res = m.wgmma ? wgmmaTile(m, kt, stage, masked, st)
                                     : mmaTile(m, kt, stage, masked, st);
    // The slot is refilled two tiles later: every warp is done with it.
    gpu::BarrierOp::create(b, loc);
    return res;
  };
  // State: m[2·mt], l[2·mt] (this thread's partial row sums),
  // o[mt][dv / 8][4].
  SmallVector<Value> init(2 * m.mt, f32(-kInf));
  for (int64_t i = 0; i < 2 * m.mt + m.mt * dvPerWarp() / 8 * 4; ++i)
    init.push_back(f32(0.0));
  scf::ForOp whole =
      loop(L.lo, full, c(kvBlock), init, [&](Value kt, ValueRange st) {
        return body(kt, st, /*masked=*/false);
      });
  scf::ForOp edge = loop(
      full, L.hi, c(kvBlock), whole.getResults(),
      [&](Value kt, ValueRange st) { return body(kt, st, /*masked=*/true); });
  mmaStore(m, edge.getResults(), out);
  gpu::TerminatorOp::create(b, loc);
}
