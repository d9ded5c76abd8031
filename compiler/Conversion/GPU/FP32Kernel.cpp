//===- FP32Kernel.cpp - the fp32 (CUDA-core) attention kernel -------------===//
//
// This file implements the launch shared by the GPU kernels and the fp32
// kernel of convert-attn-to-gpu (see AttnToGPU.cpp for the mapping): each
// warp holds R rows, lane l elements l, l + 32, ... of each row's q and
// accumulator; per key of a staged tile, lane partial dot products are
// summed over the warp (gpu.subgroup_reduce) and folded into the row's
// online-softmax state in the log2 domain.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/KernelEmitter.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;

KernelEmitter::Launch KernelEmitter::beginLaunch(Value k, Value lens,
                                                 int64_t threads,
                                                 TypeRange tileTypes,
                                                 int64_t dynamicSmem) {
  // The grid is the forall's iteration space, each dim where its
  // #gpu.block mapping says: (batch, KV head, query block) -> (z, y, x).
  Launch L;
  scf::ForallOp forall = src.forall;
  Value grid[3];
  for (auto [i, m] : llvm::enumerate(*forall.getMapping()))
    grid[static_cast<int>(cast<gpu::GPUBlockMappingAttr>(m).getBlock())] =
        forallBound(i);
  Value gridQ = grid[0], gridG = grid[1], gridB = grid[2];
  // Head chunks: each KV head's blocks along y.
  if (headChunks > 1)
    gridG = mul(gridG, c(headChunks));
  // Split-K: each query block's parts are blocks of their own along x.
  Value gridX = parts ? mul(gridQ, parts) : gridQ;
  Value one = c(1);
  Value blockX = c(threads);
  Value smem;
  if (dynamicSmem)
    smem = arith::ConstantIntOp::create(b, loc, dynamicSmem, 32);
  L.op =
      gpu::LaunchOp::create(b, loc, gridX, gridG, gridB, blockX, one, one, smem,
                            /*asyncTokenType=*/Type(),
                            /*asyncDependencies=*/ValueRange(), tileTypes);
  b.setInsertionPointToStart(&L.op.getBody().front());
  L.qb = L.op.getBlockIds().x;
  if (parts) {
    L.part = arith::DivUIOp::create(b, loc, L.qb, gridQ);
    L.qb = arith::RemUIOp::create(b, loc, L.qb, gridQ);
    L.split = cmp(arith::CmpIPredicate::sgt, parts, c(1));
  }
  L.g = L.op.getBlockIds().y;
  L.hc = c(0);
  if (headChunks > 1) {
    L.hc = arith::RemUIOp::create(b, loc, L.g, c(headChunks));
    L.g = arith::DivUIOp::create(b, loc, L.g, c(headChunks));
  }
  L.bi = L.op.getBlockIds().z;
  L.tid = L.op.getThreadIds().x;
  L.kvLen = memref::DimOp::create(b, loc, k, 2);
  L.lane = arith::RemUIOp::create(b, loc, L.tid, c(kWarp));
  L.warp = arith::DivUIOp::create(b, loc, L.tid, c(kWarp));
  // The block's index arithmetic of the tiled form, cloned with the forall's
  // ids mapped to the block's: query tile offset and size, key range,
  // first row's key position; the batch's key length read from the buffer.
  IRMapping map;
  Block *body = forall.getBody();
  map.map(body->getArgument(0), L.bi);
  map.map(body->getArgument(1), L.g);
  // Query blocks run last-first: under a causal mask the last blocks see
  // the most keys, and the lightest ones left for the end shorten the
  // grid's tail.
  map.map(body->getArgument(2), sub(sub(gridQ, c(1)), L.qb));
  for (Operation &o : body->without_terminator()) {
    tensor::ExtractOp kvLength = src.kvLength;
    if (kvLength && &o == kvLength.getOperation()) {
      Value len = memref::LoadOp::create(
          b, loc, lens, ValueRange{map.lookupOrDefault(kvLength.getIndices()[0])});
      map.map(kvLength.getResult(), len);
      continue;
    }
    bool scalar = llvm::all_of(o.getResultTypes(), [](Type t) {
      return t.isIntOrIndexOrFloat();
    });
    if (o.getNumRegions() == 0 && scalar && isMemoryEffectFree(&o))
      b.clone(o, map);
  }
  L.q0 = map.lookupOrDefault(src.q0);
  L.qn = map.lookupOrDefault(src.qn);
  L.lo = map.lookupOrDefault(src.lo);
  L.hi = map.lookupOrDefault(src.hi);
  // Row r of the block sits at key position qPos + r: offset = qPos - q0.
  L.offset = sub(map.lookupOrDefault(src.qPos), L.q0);
  if (parts)
    splitKeyRange(L);
  return L;
}

SmallVector<Value> KernelEmitter::kvIndices(const Launch &L, Value src,
                                            Value key, Value col) {
  Value one = c(1);
  if (!table) {
    Value last = sub(L.kvLen, one);
    return {L.bi, L.g, min(key, last), col};
  }
  // Key `key` is row key % page_size of page table[b, key / page_size].
  Value last = sub(L.hi, one);
  key = min(key, last);
  Value pageSize = memref::DimOp::create(b, loc, src, 2);
  Value slot = arith::DivUIOp::create(b, loc, key, pageSize);
  Value entry = memref::LoadOp::create(b, loc, table, ValueRange{L.bi, slot});
  Value page = arith::IndexCastOp::create(b, loc, b.getIndexType(), entry);
  Value row = arith::RemUIOp::create(b, loc, key, pageSize);
  return {page, L.g, row, col};
}

void KernelEmitter::stageTile(const Launch &L, Value src, Value tile,
                              int64_t width, Value kt, Value kn,
                              int64_t threads, Value stage) {
  Type tileElt = cast<MemRefType>(tile.getType()).getElementType();
  Type srcElt = cast<MemRefType>(src.getType()).getElementType();
  loop(L.tid, c(kvBlock * width), c(threads), ValueRange{},
       [&](Value idx, ValueRange) -> SmallVector<Value> {
         Value j = arith::DivUIOp::create(b, loc, idx, c(width));
         Value col = arith::RemUIOp::create(b, loc, idx, c(width));
         Value in = cmp(arith::CmpIPredicate::slt, j, kn);
         Value key = add(kt, j);
         Value x =
             memref::LoadOp::create(b, loc, src, kvIndices(L, src, key, col));

         // A cache of the tile's type is copied as it is; otherwise
         // through f32 (widened from a 16-bit cache, or rounded into a
         // 16-bit tile).
         Value staged;
         if (srcElt == tileElt) {
           Value zero = arith::ConstantOp::create(b, loc, tileElt,
                                                  b.getFloatAttr(tileElt, 0.0));
           staged = select(in, x, zero);
         } else {
           if (!srcElt.isF32())
             x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
           staged = select(in, x, f32(0.0));
           if (!tileElt.isF32())
             staged = toNarrow(staged);
         }
         SmallVector<Value> at = {j, col};
         if (stage)
           at.insert(at.begin(), stage);
         memref::StoreOp::create(b, loc, staged, tile, at);
         return {};
       });
}

KernelEmitter::WarpRows KernelEmitter::loadWarpRows(const Launch &L,
                                                    Value q) {
  // The warp's rows: flattened (head of the group, query row).
  Value qScale = qPrescale();
  WarpRows rows;
  for (int64_t i = 0; i < kRowsPerWarp; ++i) {
    Value warpRow0 = mul(L.warp, c(kRowsPerWarp));
    Value r = add(warpRow0, c(i));
    Row row = rowOf(L, r);
    Value ok = row.valid, h = row.head, p = row.pos;
    rows.valid.push_back(ok);
    rows.head.push_back(h);
    rows.pos.push_back(p);
    SmallVector<Value> regs;
    for (int64_t e = 0; e < epl; ++e) {
      Value col = add(c(e * kWarp), L.lane);
      Value in = andI(ok, cmp(arith::CmpIPredicate::slt, col, c(d)));
      Value colS = min(col, c(d - 1));
      Value x = loadQuery(q, ValueRange{L.bi, h, p, colS});
      Value scaled = fmul(x, qScale);
      regs.push_back(select(in, scaled, f32(0.0)));
    }
    rows.qReg.push_back(regs);
  }
  return rows;
}

SmallVector<Value> KernelEmitter::foldKey(const Launch &L,
                                          const WarpRows &rows, Value kTile,
                                          Value vTile, Value kt, Value j,
                                          ValueRange st) {
  double inf = std::numeric_limits<double>::infinity();
  int64_t stride = 2 + eplV;
  SmallVector<Value> kReg, vReg;
  for (int64_t e = 0; e < epl; ++e) {
    Value col = add(c(e * kWarp), L.lane);
    col = min(col, c(d - 1));
    kReg.push_back(memref::LoadOp::create(b, loc, kTile, ValueRange{j, col}));
  }
  for (int64_t e = 0; e < eplV; ++e) {
    Value col = add(c(e * kWarp), L.lane);
    col = min(col, c(dv - 1));
    vReg.push_back(memref::LoadOp::create(b, loc, vTile, ValueRange{j, col}));
  }
  Value key = add(kt, j);
  SmallVector<Value> next;
  for (int64_t i = 0; i < kRowsPerWarp; ++i) {
    Value part = f32(0.0);
    for (int64_t e = 0; e < epl; ++e)
      part = fma(rows.qReg[i][e], kReg[e], part);
    Value s = softcapped(warpSum(part));
    Value vis = visible(rows.valid[i], key, add(rows.pos[i], L.offset));
    s = select(vis, s, f32(-inf));
    Value m = st[i * stride], l = st[i * stride + 1];
    Value mNew = arith::MaximumFOp::create(b, loc, m, s);
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       mNew, f32(-inf));
    Value shift = select(none, f32(0.0), mNew);
    Value alpha = exp2(arith::SubFOp::create(b, loc, m, shift));
    Value p = exp2(arith::SubFOp::create(b, loc, s, shift));
    next.push_back(mNew);
    next.push_back(fma(l, alpha, p));
    for (int64_t e = 0; e < eplV; ++e)
      next.push_back(fma(p, vReg[e], fmul(st[i * stride + 2 + e], alpha)));
  }
  return next;
}

void KernelEmitter::emit(Value out, Value q, Value k, Value v, Value lens) {
  int64_t rows = blockHeads() * qRows;
  int64_t warps = (rows + kRowsPerWarp - 1) / kRowsPerWarp;
  int64_t threads = warps * kWarp;
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  auto kTileTy = MemRefType::get({kvBlock, d}, b.getF32Type(),
                                 MemRefLayoutAttrInterface(), wg);
  auto vTileTy = MemRefType::get({kvBlock, dv}, b.getF32Type(),
                                 MemRefLayoutAttrInterface(), wg);
  OpBuilder::InsertionGuard guard(b);
  Launch L = beginLaunch(k, lens, threads, TypeRange{kTileTy, vTileTy});
  Value kTile = L.op.getWorkgroupAttributions()[0];
  Value vTile = L.op.getWorkgroupAttributions()[1];
  WarpRows warpRows = loadWarpRows(L, q);

  // State per row: max, sum, acc[eplV] (log2 domain).
  double inf = std::numeric_limits<double>::infinity();
  SmallVector<Value> init;
  for (int64_t i = 0; i < kRowsPerWarp; ++i) {
    init.push_back(f32(-inf));
    init.push_back(f32(0.0));
    for (int64_t e = 0; e < eplV; ++e)
      init.push_back(f32(0.0));
  }
  int64_t stride = 2 + eplV;
  scf::ForOp tiles = loop(
      L.lo, L.hi, c(kvBlock), init, [&](Value kt, ValueRange state) {
        // Stage the K and V tiles (zeros past hi) in shared memory.
        Value kn = min(c(kvBlock), sub(L.hi, kt));
        stageTile(L, k, kTile, d, kt, kn, threads);
        stageTile(L, v, vTile, dv, kt, kn, threads);
        gpu::BarrierOp::create(b, loc);
        scf::ForOp keys = loop(
            c(0), kn, c(1), state, [&](Value j, ValueRange st) {
              return foldKey(L, warpRows, kTile, vTile, kt, j, st);
            });
        gpu::BarrierOp::create(b, loc);
        return SmallVector<Value>(keys.getResults());
      });

  // out = acc / sum (0 for a row that saw no key); with split keys the
  // part's row and its log2-sum-exp (lane 0) to the workspace.
  for (int64_t i = 0; i < kRowsPerWarp; ++i) {
    Value l = tiles.getResult(i * stride + 1);
    Value lane0 = cmp(arith::CmpIPredicate::eq, L.lane, c(0));
    storeRowLse(L, andI(warpRows.valid[i], lane0), tiles.getResult(i * stride),
                l, warpRows.head[i], warpRows.pos[i]);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, f32(0.0));
    Value zero = f32(0.0);
    Value recip = arith::DivFOp::create(b, loc, f32(1.0), l);
    Value inv = select(empty, zero, recip);
    for (int64_t e = 0; e < eplV; ++e) {
      Value col = add(c(e * kWarp), L.lane);
      Value in =
          andI(warpRows.valid[i], cmp(arith::CmpIPredicate::slt, col, c(dv)));
      auto ifOp = scf::IfOp::create(b, loc, in, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      storeResult(L, out, fmul(tiles.getResult(i * stride + 2 + e), inv),
                  warpRows.head[i], warpRows.pos[i], col);
    }
  }
  gpu::TerminatorOp::create(b, loc);
}
