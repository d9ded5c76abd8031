//===- SplitK.cpp - split-K of the GPU attention kernels ------------------===//
//
// This file implements split-K for convert-attn-to-gpu (FlashDecoding's
// scheme): a grid of few blocks (decode: one query block per KV head and
// sequence) leaves most SMs idle while each block walks a long cache, so
// each block's key range is cut into parts computed by blocks of their own
// (grid x = query blocks x parts). A part writes its rows normalized by
// their own sum, O_s = acc_s / l_s, and their log2-sum-exp lse_s = m_s +
// log2 l_s (-inf where it saw no key) to a workspace; a second kernel merges
// each row: M = max_s lse_s, w_s = 2^(lse_s - M), O = sum_s w_s O_s /
// sum_s w_s (0 where no part saw a key).
//
// The parts are chosen on the host at each call: ceil(split-blocks /
// blocks) (1 once the grid has split-blocks blocks), at most one per
// split-min-keys keys of the cache's capacity (contiguous: its length;
// paged: the block table's pages times the page size; the lengths of a
// batch are on the device) and at most 64. With one part the kernels write
// the output as before: no workspace is allocated (the kernel gets empty
// views of the output) and the merge is not launched.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/KernelEmitter.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;

namespace {
constexpr int64_t kMaxParts = 64;
constexpr int64_t kMergeThreads = 128;
} // namespace

void KernelEmitter::splitKeyRange(Launch &L) {
  // Parts of whole kv-block tiles: chunk = ceil(ceil(n / parts) / kvBlock)
  // tiles; part p covers [lo + p chunk, lo + (p + 1) chunk) within hi.
  Value span = sub(L.hi, L.lo);
  Value n = max(span, c(0));
  Value perPart = arith::CeilDivUIOp::create(b, loc, n, parts);
  Value tiles = arith::CeilDivUIOp::create(b, loc, perPart, c(kvBlock));
  Value chunk = mul(tiles, c(kvBlock));
  Value lo = min(add(L.lo, mul(L.part, chunk)), L.hi);
  L.hi = min(add(lo, chunk), L.hi);
  L.lo = lo;
}

void KernelEmitter::storeResult(const Launch &L, Value out, Value x, Value head,
                                Value pos, Value col) {
  if (!parts) {
    storeOutput(x, out, ValueRange{L.bi, head, pos, col});
    return;
  }
  auto ifOp = scf::IfOp::create(b, loc, L.split, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  memref::StoreOp::create(b, loc, x, ws,
                          ValueRange{L.part, L.bi, head, pos, col});
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  storeOutput(x, out, ValueRange{L.bi, head, pos, col});
}

void KernelEmitter::storeRowLse(const Launch &L, Value first, Value m, Value l,
                                Value head, Value pos) {
  if (!parts)
    return;
  auto ifOp = scf::IfOp::create(b, loc, andI(L.split, first),
                                /*withElseRegion=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  double inf = std::numeric_limits<double>::infinity();
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, f32(0.0));
  // log2 as PTX's lg2.approx.f32 (no libdevice).
  Value lg = LLVM::CallIntrinsicOp::create(
                 b, loc, Type(b.getF32Type()),
                 b.getStringAttr("llvm.nvvm.lg2.approx.f"), ValueRange{l})
                 .getResult(0);
  Value sum = fadd(m, lg);
  memref::StoreOp::create(b, loc, select(empty, f32(-inf), sum), lse,
                          ValueRange{L.part, L.bi, head, pos});
}

void KernelEmitter::planSplit(Value q, Value k, Value out, int64_t splitBlocks,
                              int64_t minKeys) {
  // (batch, KV head, query block) -> (z, y, x): the forall's dims 0, 1, 2.
  // (One op-creating call per statement: the IR must not depend on the
  // host compiler's order of evaluating arguments.)
  gridQ = forallBound(2);
  Value batches = forallBound(0);
  Value kvHeads = forallBound(1);
  Value heads = mul(kvHeads, c(headChunks));
  Value blocks = mul(mul(batches, heads), gridQ);
  // The cache's capacity in keys: what the block's key loops may cover.
  Value capacity = memref::DimOp::create(b, loc, k, 2);
  if (table)
    capacity = mul(memref::DimOp::create(b, loc, table, 1), capacity);
  Value target = c(splitBlocks);
  Value someBlocks = max(blocks, c(1));
  Value want = arith::CeilDivUIOp::create(b, loc, target, someBlocks);
  Value byKeys = arith::DivUIOp::create(b, loc, capacity, c(minKeys));
  // ceil(split-blocks / blocks) is already 1 once the grid has as many
  // blocks: no separate test.
  Value fewest = c(1);
  Value most = c(kMaxParts);
  parts = clamp(min(want, byKeys), fewest, most);
  // The workspace, allocated only where the keys are split (a call that
  // does not split makes no allocation and no extra stream): else empty
  // views (0 parts) of the output, never accessed.
  Value split = cmp(arith::CmpIPredicate::sgt, parts, c(1));
  auto qTy = cast<MemRefType>(q.getType());
  Value batch = memref::DimOp::create(b, loc, q, 0);
  Value seq = memref::DimOp::create(b, loc, q, 2);
  int64_t hq = qTy.getDimSize(1), kDyn = ShapedType::kDynamic;
  auto wsTy = MemRefType::get({kDyn, kDyn, hq, kDyn, dv}, b.getF32Type());
  auto lseTy = MemRefType::get({kDyn, kDyn, hq, kDyn}, b.getF32Type());
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{wsTy, lseTy}, split,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    auto tokenTy = gpu::AsyncTokenType::get(b.getContext());
    Value t0 =
        gpu::WaitOp::create(b, loc, tokenTy, ValueRange{}).getAsyncToken();
    auto wsAlloc = gpu::AllocOp::create(b, loc, wsTy, tokenTy, ValueRange{t0},
                                        ValueRange{parts, batch, seq},
                                        ValueRange{}, /*hostShared=*/false);
    // (No wait for the allocations: the runtime runs every call of a host
    // thread on the thread's one stream (runtime/abi/cuda.cpp,
    // mgpuStreamCreate), so the kernels launched next come after them in
    // stream order, and the host does not wait on the device for them.)
    auto lseAlloc = gpu::AllocOp::create(
        b, loc, lseTy, tokenTy, ValueRange{wsAlloc.getAsyncToken()},
        ValueRange{parts, batch, seq}, ValueRange{},
        /*hostShared=*/false);
    scf::YieldOp::create(b, loc,
                         ValueRange{wsAlloc.getMemref(), lseAlloc.getMemref()});
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    // Views of an fp32 buffer: the output, or one host float for a 16-bit
    // output (--qo-dtype).
    Value base = out;
    if (!cast<MemRefType>(out.getType()).getElementType().isF32())
      base = memref::AllocaOp::create(b, loc,
                                      MemRefType::get({1}, b.getF32Type()));
    auto emptyView = [&](MemRefType ty) -> Value {
      SmallVector<OpFoldResult> sizes = {c(0), batch, b.getIndexAttr(hq), seq};
      if (ty.getRank() == 5)
        sizes.push_back(b.getIndexAttr(dv));
      // The identity layout's strides: static while the inner sizes are.
      SmallVector<OpFoldResult> strides(sizes.size());
      OpFoldResult stride = b.getIndexAttr(1);
      for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
        strides[i] = stride;
        std::optional<int64_t> s = getConstantIntValue(stride),
                               n = getConstantIntValue(sizes[i]);
        if (s && n) {
          stride = b.getIndexAttr(*s * *n);
          continue;
        }
        Value inner = getValueOrCreateConstantIndexOp(b, loc, stride);
        Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[i]);
        stride = mul(inner, size);
      }
      return memref::ReinterpretCastOp::create(
          b, loc, ty, base, b.getIndexAttr(0), sizes, strides);
    };
    Value wsView = emptyView(wsTy);
    Value lseView = emptyView(lseTy);
    scf::YieldOp::create(b, loc, ValueRange{wsView, lseView});
  }
  ws = ifOp.getResult(0);
  lse = ifOp.getResult(1);
}

void KernelEmitter::finishSplit(Value out) {
  double inf = std::numeric_limits<double>::infinity();
  Value split = cmp(arith::CmpIPredicate::sgt, parts, c(1));
  auto ifOp = scf::IfOp::create(b, loc, split, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    // One thread per output element (b, head, pos, col).
    Value batch = memref::DimOp::create(b, loc, out, 0);
    Value seq = memref::DimOp::create(b, loc, out, 2);
    int64_t hq = cast<MemRefType>(out.getType()).getDimSize(1);
    Value rows = mul(mul(batch, c(hq)), seq);
    Value total = mul(rows, c(dv));
    Value grid = arith::CeilDivUIOp::create(b, loc, total, c(kMergeThreads));
    Value one = c(1);
    auto launch =
        gpu::LaunchOp::create(b, loc, grid, one, one, c(kMergeThreads), one,
                              one, /*dynamicSharedMemorySize=*/Value(),
                              /*asyncTokenType=*/Type(),
                              /*asyncDependencies=*/ValueRange());
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value idx = add(mul(launch.getBlockIds().x, c(kMergeThreads)),
                    launch.getThreadIds().x);
    Value in = cmp(arith::CmpIPredicate::slt, idx, total);
    auto body = scf::IfOp::create(b, loc, in, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard g3(b);
      b.setInsertionPointToStart(&body.getThenRegion().front());
      Value col = arith::RemUIOp::create(b, loc, idx, c(dv));
      Value row = arith::DivUIOp::create(b, loc, idx, c(dv));
      Value pos = arith::RemUIOp::create(b, loc, row, seq);
      Value bh = arith::DivUIOp::create(b, loc, row, seq);
      Value head = arith::RemUIOp::create(b, loc, bh, c(hq));
      Value bi = arith::DivUIOp::create(b, loc, bh, c(hq));
      Value zero = c(0);
      Value step = c(1);
      Value noMax = f32(-inf);
      scf::ForOp maxLoop =
          loop(zero, parts, step, ValueRange{noMax},
               [&](Value p, ValueRange st) -> SmallVector<Value> {
                 Value x = memref::LoadOp::create(b, loc, lse,
                                                  ValueRange{p, bi, head, pos});
                 return {arith::MaximumFOp::create(b, loc, st[0], x)};
               });
      Value mx = maxLoop.getResult(0);
      Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mx,
                                         f32(-inf));
      Value shift = select(none, f32(0.0), mx);
      Value wSum0 = f32(0.0);
      Value acc0 = f32(0.0);
      scf::ForOp sumLoop =
          loop(zero, parts, step, ValueRange{wSum0, acc0},
               [&](Value p, ValueRange st) -> SmallVector<Value> {
                 Value x = memref::LoadOp::create(b, loc, lse,
                                                  ValueRange{p, bi, head, pos});
                 // 2^(-inf) = +0: a part that saw no key weighs nothing.
                 Value w = exp2(arith::SubFOp::create(b, loc, x, shift));
                 Value o = memref::LoadOp::create(
                     b, loc, ws, ValueRange{p, bi, head, pos, col});
                 return {fadd(st[0], w), fma(w, o, st[1])};
               });
      Value wSum = sumLoop.getResult(0);
      Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                          wSum, f32(0.0));
      Value ratio = arith::DivFOp::create(b, loc, sumLoop.getResult(1), wSum);
      storeOutput(select(empty, f32(0.0), ratio), out,
                  ValueRange{bi, head, pos, col});
    }
    gpu::TerminatorOp::create(b, loc);
  }
  // The workspace is freed once the kernels are done: in stream order after
  // them, without a wait (as the allocation).
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(ifOp.getThenRegion().front().getTerminator());
  auto tokenTy = gpu::AsyncTokenType::get(b.getContext());
  Value t0 = gpu::WaitOp::create(b, loc, tokenTy, ValueRange{}).getAsyncToken();
  Value t1 = gpu::DeallocOp::create(b, loc, tokenTy, ValueRange{t0}, ws)
                 .getAsyncToken();
  gpu::DeallocOp::create(b, loc, tokenTy, ValueRange{t1}, lse);
}
