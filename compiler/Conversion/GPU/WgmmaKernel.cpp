//===- WgmmaKernel.cpp - the tensor-core kernel's sm_90a products ---------===//
//
// This file implements the wgmma form of the tensor-core kernel
// (MmaKernel.cpp), for --gpu-arch=sm_90a: the same launch, cp.async ring
// and online softmax, with each warpgroup (4 warps, 64 rows) computing
//
//   - S = Q·Kᵀ as wgmma.mma_async m64n{kv-block}k16, A (its 64 rows of Q)
//     and B (the K tile) both from shared memory by descriptor, K-major;
//   - O += P·V as wgmma.mma_async m64n{dv}k16, A = P from registers (the
//     S accumulator's layout per warp is the m16n8 C fragment's, so P's
//     rounded pairs are the A fragments as mma.sync takes them), B = the V
//     tile by descriptor, N-major (transposed);
//
// on tiles in the 128-byte swizzled layout that wgmma's descriptors (and
// TMA) use: column blocks of 64 16-bit elements, each row of a block 128
// bytes whose 16-byte chunks are XORed with the row's index mod 8, every
// block 1024-byte aligned. The copies into the ring (generic proxy) are
// fenced (fence.proxy.async) before the warpgroup reads them.
//
// Matrix descriptors (PTX ISA, "Matrix Descriptor Format"): bits 0-13 the
// start address >> 4, 16-29 the leading dimension byte offset >> 4, 32-45
// the stride dimension byte offset >> 4, 62-63 the swizzle (1: 128 bytes).
// K-major (Q, K): 8-row groups 1024 bytes apart (stride), each k16 step 32
// bytes further in the 128-byte row, the next 64 columns one block further.
// N-major (V): 8-key groups 1024 bytes apart (stride), the next 64 columns
// one block (kv-block · 128 bytes) further (leading), each k16 step 16 keys
// (2048 bytes) further.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/KernelEmitter.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;

namespace {
/// Bytes of a swizzled row (64 16-bit elements) and of an 8-row atom.
constexpr int64_t kRowBytes = 128;
constexpr int64_t kAtomBytes = 1024;
/// Rows of a warpgroup's A operand.
constexpr int64_t kGroupRows = 64;
/// What the tiles skip past the dynamic shared memory's symbol: the static
/// .shared variables after it (the TMA mbarriers: 8 x 8 bytes at most,
/// warp-specialized).
constexpr int64_t kStaticBytes = 128;
} // namespace

Value KernelEmitter::swizzled(int64_t rows, Value row, Value col) {
  Value c8 = c(8), c64 = c(64);
  Value blk = arith::DivUIOp::create(b, loc, col, c64);
  Value inBlk = arith::RemUIOp::create(b, loc, col, c64);
  Value chunk = arith::DivUIOp::create(b, loc, inBlk, c8);
  Value within = arith::RemUIOp::create(b, loc, inBlk, c8);
  Value phase = arith::RemUIOp::create(b, loc, row, c8);
  Value swz = arith::XOrIOp::create(b, loc, chunk, phase);
  Value idx = mul(blk, c(rows * 64));
  idx = add(idx, mul(row, c64));
  idx = add(idx, mul(swz, c8));
  return add(idx, within);
}

SmallVector<Value> KernelEmitter::wgmmaOp(ArrayRef<Value> acc, Value aDesc,
                                          ArrayRef<Value> aRegs, Value bDesc,
                                          bool transB, bool accumulate) {
  int64_t n = static_cast<int64_t>(acc.size());
  StringRef t = mmaElt.isF16() ? "f16" : "bf16";
  // Operands: the accumulators ($0..), tied to the first n inputs, then A
  // (a descriptor or 4 registers), B's descriptor, scale-d.
  std::string text, constraints;
  llvm::raw_string_ostream os(text), cs(constraints);
  int64_t aAt = 2 * n, bAt = aAt + (aDesc ? 1 : 4), scaleAt = bAt + 1;
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << scaleAt << ", 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << 2 * n << "k16.f32." << t << "."
     << t << " {";
  for (int64_t i = 0; i < n; ++i) {
    os << (i ? ", $" : "$") << i;
    cs << (i ? ",=f" : "=f");
  }
  os << "}, ";
  for (int64_t i = 0; i < n; ++i)
    cs << "," << i;
  SmallVector<Value> operands(acc);
  if (aDesc) {
    os << "$" << aAt;
    cs << ",l";
    operands.push_back(aDesc);
  } else {
    os << "{$" << aAt << ", $" << aAt + 1 << ", $" << aAt + 2 << ", $"
       << aAt + 3 << "}";
    cs << ",r,r,r,r";
    operands.append(aRegs.begin(), aRegs.end());
  }
  // scale-d (p), scale-a, scale-b, [transpose-a,] transpose-b.
  os << ", $" << bAt << ", p, 1, 1, " << (aDesc ? "0, " : "")
     << (transB ? 1 : 0) << ";\n}\n";
  cs << ",l,r";
  operands.push_back(bDesc);
  operands.push_back(arith::ConstantOp::create(
      b, loc, b.getI32Type(), b.getI32IntegerAttr(accumulate ? 1 : 0)));
  SmallVector<Type> fields(n, b.getF32Type());
  auto resTy = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
  auto op = LLVM::InlineAsmOp::create(
      b, loc, resTy, operands, text, constraints, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, op.getResult(0), i));
  return out;
}

Value KernelEmitter::i64Const(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64Type(),
                                   b.getI64IntegerAttr(v));
}

Value KernelEmitter::wgmmaDescriptor(Value addr, int64_t leading) {
  // (addr >> 4) & 0x3fff | leading >> 4 << 16 | stride >> 4 << 32 | 1 << 62.
  Value a = arith::IndexCastUIOp::create(b, loc, b.getI64Type(), addr);
  a = arith::ShRUIOp::create(b, loc, a, i64Const(4));
  a = arith::AndIOp::create(b, loc, a, i64Const(0x3fff));
  int64_t high = ((leading >> 4) & 0x3fff) << 16 |
                 ((kAtomBytes >> 4) & 0x3fff) << 32 | int64_t(1) << 62;
  return arith::OrIOp::create(b, loc, a, i64Const(high));
}

Value KernelEmitter::wgmmaAdvance(Value desc, int64_t bytes) {
  // Byte offsets stay inside the 14-bit address field (shared memory is
  // under 256 KB), so a descriptor plus offset >> 4 is the descriptor of
  // the offset address.
  if (!bytes)
    return desc;
  return arith::AddIOp::create(b, loc, desc, i64Const(bytes >> 4));
}

Value KernelEmitter::wgmmaQDescriptor(const MmaState &m) {
  Value warpgroup = arith::DivUIOp::create(b, loc, m.L.warp, c(4));
  Value qAddr = add(m.smemBase, mul(warpgroup, c(kGroupRows * kRowBytes)));
  return wgmmaDescriptor(qAddr, 16);
}

Value KernelEmitter::wgmmaRingDescriptor(const MmaState &m, bool values,
                                         Value stage) {
  int64_t width = values ? dv : d;
  Value slot = mul(stage, c(kvBlock * width * 2));
  Value ring = add(m.smemBase, c(values ? m.vOffset : m.kOffset));
  Value addr = add(ring, slot);
  // K: K-major, the leading offset unused; V: N-major, the next 64 columns
  // one block further.
  return wgmmaDescriptor(addr, values ? kvBlock * kRowBytes : 16);
}

SmallVector<Value> KernelEmitter::wgmmaScoresChain(const MmaState &m,
                                                   Value qDesc, Value kDesc) {
  // The first step overwrites the accumulators (scale-d 0): their inputs
  // are undefined, so nothing writes them between wgmma.fence and the
  // product.
  Value undef = LLVM::UndefOp::create(b, loc, b.getF32Type());
  SmallVector<Value> s(kvBlock / 2, undef);
  for (int64_t ks = 0; ks < d / 16; ++ks) {
    int64_t blk = ks / 4, inRow = (ks % 4) * 32;
    Value a = wgmmaAdvance(qDesc, blk * m.qRowsPad * kRowBytes + inRow);
    Value bk = wgmmaAdvance(kDesc, blk * kvBlock * kRowBytes + inRow);
    s = wgmmaOp(s, a, {}, bk, /*transB=*/false, /*accumulate=*/ks > 0);
  }
  return s;
}

SmallVector<Value>
KernelEmitter::wgmmaPVChain(SmallVector<Value> o,
                            ArrayRef<SmallVector<Value>> pPacked, Value vDesc) {
  for (int64_t s2 = 0; s2 < kvBlock / 16; ++s2) {
    Value bv = wgmmaAdvance(vDesc, s2 * 16 * kRowBytes);
    o = wgmmaOp(o, Value(), pPacked[s2], bv, /*transB=*/true);
  }
  return o;
}

SmallVector<SmallVector<SmallVector<Value>>>
KernelEmitter::wgmmaFragments(ArrayRef<Value> s) {
  // The accumulator of the warp's 16 rows in the m16n8 C fragments' order:
  // register 4j + e is element e of 8-key tile j.
  SmallVector<SmallVector<SmallVector<Value>>> sFrag(1);
  for (int64_t j = 0; j < kvBlock / 8; ++j)
    sFrag[0].push_back(
        SmallVector<Value>(s.begin() + 4 * j, s.begin() + 4 * j + 4));
  return sFrag;
}

SmallVector<Value> KernelEmitter::wgmmaTile(const MmaState &m, Value kt,
                                            Value stage, bool masked,
                                            ValueRange st) {
  Value qDesc = wgmmaQDescriptor(m);
  Value kDesc = wgmmaRingDescriptor(m, /*values=*/false, stage);
  Value vDesc = wgmmaRingDescriptor(m, /*values=*/true, stage);
  // S = Q·Kᵀ: d / 16 steps of m64n{kv-block}k16.
  SmallVector<SmallVector<SmallVector<Value>>> sFrag;
  if (m.wgmmaQK) {
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    SmallVector<Value> s = wgmmaScoresChain(m, qDesc, kDesc);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    sFrag = wgmmaFragments(wgmmaFenceOperands(s));
  } else {
    sFrag = mmaScores(m, stage);
  }
  SmallVector<Value> next, alpha;
  SmallVector<SmallVector<SmallVector<Value>>> pPacked;
  mmaSoftmax(m, kt, masked, st, sFrag, next, pPacked, alpha);
  if (!m.wgmmaPV) {
    mmaPV(m, stage, pPacked, alpha, st, next);
    return next;
  }

  // O = O·alpha + P·V: kv-block / 16 steps of m64n{dv}k16, P from registers.
  int64_t base = 4;
  SmallVector<Value> o;
  for (int64_t i = 0; i < dv / 2; ++i)
    o.push_back(fmul(st[base + i], alpha[(i % 4) / 2]));
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  o = wgmmaPVChain(o, pPacked[0], vDesc);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  // P's registers stay live (unwritten) until the products that read them
  // are done, and O is read only after.
  SmallVector<Value> pRegs;
  for (const auto &frag : pPacked[0])
    pRegs.append(frag.begin(), frag.end());
  wgmmaFenceOperands(pRegs);
  o = wgmmaFenceOperands(o);
  next.append(o.begin(), o.end());
  return next;
}

SmallVector<Value> KernelEmitter::wgmmaFenceOperands(ArrayRef<Value> regs) {
  // An empty asm that reads and redefines each register, ordered after the
  // wait_group before it (both have side effects): LLVM may move plain
  // arithmetic on the products' results above the wait, and reuse the
  // registers of an A operand the asynchronous product still reads, since it
  // does not know wgmma is asynchronous (CUTLASS's warpgroup_fence_operand).
  std::string constraints;
  llvm::raw_string_ostream cs(constraints);
  SmallVector<Type> types;
  for (auto [i, r] : llvm::enumerate(regs)) {
    cs << (i ? "," : "") << (r.getType().isF32() ? "=f" : "=r");
    types.push_back(r.getType());
  }
  for (size_t i = 0; i < regs.size(); ++i)
    cs << "," << i;
  auto resTy = LLVM::LLVMStructType::getLiteral(b.getContext(), types);
  auto op = LLVM::InlineAsmOp::create(
      b, loc, resTy, regs, "", constraints, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr(), ArrayAttr());
  SmallVector<Value> out;
  for (size_t i = 0; i < regs.size(); ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, op.getResult(0), i));
  return out;
}

void KernelEmitter::wgmmaTiles(MmaState &m, Value smem, const MmaSmem &layout,
                               Value k, Value kMap, Value vMap) {
  const Launch &L = m.L;
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  int64_t rows = layout.qRows;
  // Flat views from the first 1024-byte boundary at least kStaticBytes past
  // the dynamic shared memory's symbol (its address in the shared window,
  // as the descriptors take): MLIR declares that symbol as a 1-byte
  // .shared variable, and ptxas places the mbarriers' variables right after
  // it, inside what the kernel uses as its dynamic memory.
  Value addr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem);
  Value past = add(addr, c(kStaticBytes));
  Value neg = sub(c(0), past);
  Value align = arith::AndIOp::create(b, loc, neg, c(1023));
  Value pad = add(align, c(kStaticBytes));
  m.smemBase = add(addr, pad);
  m.smem = smem;
  m.pad = pad;
  m.qRowsPad = rows;
  m.kOffset = layout.kOffset;
  m.vOffset = layout.vOffset;
  auto flat = [&](int64_t offset, int64_t elems) -> Value {
    auto ty = MemRefType::get({elems}, mmaElt, MemRefLayoutAttrInterface(), wg);
    Value at = add(pad, c(offset));
    return memref::ViewOp::create(b, loc, ty, smem, at, ValueRange{});
  };
  m.qTile = flat(0, rows * d);
  m.kRing = flat(m.kOffset, m.stages * kvBlock * d);
  m.vRing = flat(m.vOffset, m.stages * kvBlock * dv);
  if (m.tma) {
    // One mbarrier per ring slot, armed by thread 0 with the tile's bytes
    // (its one arrival); the tensor maps were copied to the device before
    // the launch.
    // The maps cross into the kernel as pointers (the outlined kernel's
    // arguments must be LLVM-convertible before the nvgpu lowering).
    auto fromPointer = [&](Value p) -> Value {
      auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
      Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrTy, p);
      return UnrealizedConversionCastOp::create(
                 b, loc, tmaMapType(cast<MemRefType>(k.getType())), ptr)
          .getResult(0);
    };
    m.kMap = fromPointer(kMap);
    m.vMap = fromPointer(vMap);
    auto group =
        nvgpu::MBarrierGroupType::get(b.getContext(), wg, unsigned(m.stages));
    Value first = cmp(arith::CmpIPredicate::eq, L.tid, c(0));
    auto barriers = [&](int64_t arrivals) -> Value {
      Value bars = nvgpu::MBarrierCreateOp::create(b, loc, group);
      Value count = c(arrivals);
      for (int64_t st = 0; st < m.stages; ++st) {
        Value slot = c(st);
        nvgpu::MBarrierInitOp::create(b, loc, bars, count, slot, first);
      }
      return bars;
    };
    m.mbar = barriers(1);
    // Overlapped: V's loads run a tile behind K's, on their own barriers.
    if (m.overlap)
      m.vBar = barriers(1);
    // Warp-specialized: each consumer warp releases the slots it read.
    if (m.warpSpecialized) {
      m.kEmpty = barriers(m.warps);
      m.vEmpty = barriers(m.warps);
    }
    // The initialized barriers visible to the TMA unit (then the barrier
    // after Q's tile).
    NVVM::FenceMbarrierInitOp::create(b, loc);
    nvgpu::TmaFenceOp::create(b, loc, m.kMap);
    nvgpu::TmaFenceOp::create(b, loc, m.vMap);
  }
}

MemRefType KernelEmitter::tmaBoxType(Type elt) {
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return MemRefType::get({1, 1, kvBlock, 64}, elt, MemRefLayoutAttrInterface(),
                         wg);
}

Type KernelEmitter::tmaMapType(MemRefType srcTy) {
  return nvgpu::TensorMapDescriptorType::get(
      b.getContext(), tmaBoxType(srcTy.getElementType()),
      nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_128B,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

Value KernelEmitter::tmaDescriptor(Value src) {
  auto srcTy = cast<MemRefType>(src.getType());
  Type mapTy = tmaMapType(srcTy);
  auto unranked =
      UnrankedMemRefType::get(srcTy.getElementType(), srcTy.getMemorySpace());
  Value cast = memref::CastOp::create(b, loc, unranked, src);
  SmallVector<Value> box = {c(1), c(1), c(kvBlock), c(64)};
  return nvgpu::TmaCreateDescriptorOp::create(b, loc, mapTy, cast, box);
}

void KernelEmitter::tmaIssueTile(const MmaState &m, Value kt, Value stage,
                                 bool keys, bool values) {
  const Launch &L = m.L;
  Value first = cmp(arith::CmpIPredicate::eq, L.tid, c(0));
  ifThen(first, [&] { tmaIssueByThread0(m, kt, stage, keys, values); });
}

void KernelEmitter::tmaIssueByThread0(const MmaState &m, Value kt, Value stage,
                                      bool keys, bool values) {
  const Launch &L = m.L;
  // Each barrier armed with the bytes of the boxes that complete on it.
  Value kBar = m.mbar, vBar = m.overlap ? m.vBar : m.mbar;
  int64_t kBytes = keys ? kvBlock * d * 2 : 0;
  int64_t vBytes = values ? kvBlock * dv * 2 : 0;
  if (kBar == vBar) {
    nvgpu::MBarrierArriveExpectTxOp::create(b, loc, kBar, c(kBytes + vBytes),
                                            stage, Value());
  } else {
    if (keys)
      nvgpu::MBarrierArriveExpectTxOp::create(b, loc, kBar, c(kBytes), stage,
                                              Value());
    if (values)
      nvgpu::MBarrierArriveExpectTxOp::create(b, loc, vBar, c(vBytes), stage,
                                              Value());
  }
  MemRefType boxTy = tmaBoxType(mmaElt);
  // Column block `blk` of the slot: its own 1024-byte aligned [kv-block, 64]
  // swizzled tile, as the box lands.
  auto load = [&](Value map, Value bar, int64_t offset, int64_t width) {
    Value slot = mul(stage, c(kvBlock * width * 2));
    Value at = add(add(m.pad, c(offset)), slot);
    for (int64_t blk = 0; blk < width / 64; ++blk) {
      Value byteShift = add(at, c(blk * kvBlock * kRowBytes));
      Value dst = memref::ViewOp::create(b, loc, boxTy, m.smem, byteShift,
                                         ValueRange{});
      // Coordinates innermost first: column, key, KV head, batch.
      SmallVector<Value> coords = {c(64 * blk), kt, L.g, L.bi};
      nvgpu::TmaAsyncLoadOp::create(b, loc, dst, bar, map, coords, stage,
                                    Value(), Value());
    }
  };
  if (keys)
    load(m.kMap, kBar, m.kOffset, d);
  if (values)
    load(m.vMap, vBar, m.vOffset, dv);
}

void KernelEmitter::tmaWait(const MmaState &m, Value bar, Value j,
                            Value stage) {
  Value use = arith::DivUIOp::create(b, loc, j, c(m.stages));
  Value odd = arith::RemUIOp::create(b, loc, use, c(2));
  Value parity = cmp(arith::CmpIPredicate::ne, odd, c(0));
  nvgpu::MBarrierTryWaitParityOp::create(b, loc, bar, parity, c(10000000),
                                         stage);
}

void KernelEmitter::tmaZeroTail(const MmaState &m, Value kt, Value stage) {
  const Launch &L = m.L;
  int64_t threads = m.warps * kWarp;
  Value zero =
      arith::ConstantOp::create(b, loc, mmaElt, b.getFloatAttr(mmaElt, 0.0));
  Value slot = mul(stage, c(kvBlock * dv));
  // Only the tile that runs past hi has such rows.
  Value end = add(kt, c(kvBlock));
  Value runsPast = cmp(arith::CmpIPredicate::sgt, end, L.hi);
  ifThen(runsPast, [&] {
    loop(L.tid, c(kvBlock * dv), c(threads), ValueRange{},
         [&](Value idx, ValueRange) -> SmallVector<Value> {
           Value row = arith::DivUIOp::create(b, loc, idx, c(dv));
           Value col = arith::RemUIOp::create(b, loc, idx, c(dv));
           Value key = add(kt, row);
           Value past = cmp(arith::CmpIPredicate::sge, key, L.hi);
           ifThen(past, [&] {
             Value at = add(slot, swizzled(kvBlock, row, col));
             memref::StoreOp::create(b, loc, zero, m.vRing, ValueRange{at});
           });
           return {};
         });
  });
}

void KernelEmitter::emitWgmmaOverlap(MmaState &m, Value out) {
  const Launch &L = m.L;
  // V's slot 1 zeroed once (by every thread, before the warpgroups part):
  // the first tile's P·V step multiplies P = 0 by it (0 · NaN would be
  // NaN).
  Value zero =
      arith::ConstantOp::create(b, loc, mmaElt, b.getFloatAttr(mmaElt, 0.0));
  Value slot1 = c(kvBlock * dv);
  loop(L.tid, c(kvBlock * dv), c(m.threads), ValueRange{},
       [&](Value idx, ValueRange) -> SmallVector<Value> {
         Value at = add(slot1, idx);
         memref::StoreOp::create(b, loc, zero, m.vRing, ValueRange{at});
         return {};
       });
  fenceAsyncProxy();
  gpu::BarrierOp::create(b, loc);
  if (!m.warpSpecialized) {
    // Tile 0's K and V.
    Value any = cmp(arith::CmpIPredicate::slt, L.lo, L.hi);
    ifThen(any, [&] { tmaIssueTile(m, L.lo, c(0)); });
    wgmmaOverlapLoops(m, out);
    return;
  }
  // Warp-specialized: the last warpgroup produces, the two others consume,
  // and the registers move to them (FlashAttention-3's 24 / 240). The pool
  // is the launch's: 384 threads x 168 registers (ptxas's count for
  // .maxntid 384, which ptx-wgmma.test checks) = 128 · 24 + 256 · 240; with
  // fewer at the launch the consumers' setmaxnreg.inc would wait forever.
  Value producer = cmp(arith::CmpIPredicate::uge, L.warp, c(m.warps));
  auto split = scf::IfOp::create(b, loc, TypeRange{}, producer,
                                 /*withElseRegion=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&split.getThenRegion().front());
  NVVM::SetMaxRegisterOp::create(b, loc, 24,
                                 NVVM::SetMaxRegisterAction::decrease);
  Value issuer = cmp(arith::CmpIPredicate::eq, L.tid, c(m.warps * kWarp));
  ifThen(issuer, [&] { wgmmaProducer(m); });
  b.setInsertionPointToStart(&split.getElseRegion().front());
  NVVM::SetMaxRegisterOp::create(b, loc, 240,
                                 NVVM::SetMaxRegisterAction::increase);
  wgmmaOverlapLoops(m, out);
}

void KernelEmitter::releaseSlot(const MmaState &m, Value bars, Value slot) {
  // After a wait_group (.sync.aligned: every lane of the warp is past it),
  // lane 0 arrives for its warp.
  Value lead = cmp(arith::CmpIPredicate::eq, m.L.lane, c(0));
  ifThen(lead, [&] { nvgpu::MBarrierArriveOp::create(b, loc, bars, slot); });
}

void KernelEmitter::consumerBarrier(const MmaState &m) {
  if (!m.warpSpecialized) {
    gpu::BarrierOp::create(b, loc);
    return;
  }
  // Named barrier 1 over the consumer threads (0 is the whole block's).
  Value id =
      arith::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(1));
  Value count = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                          b.getI32IntegerAttr(m.warps * kWarp));
  NVVM::BarrierOp::create(b, loc, Type(), id, count,
                          NVVM::BarrierReductionAttr(), Value());
}

void KernelEmitter::wgmmaProducer(const MmaState &m) {
  const Launch &L = m.L;
  loop(L.lo, L.hi, c(kvBlock), ValueRange{},
       [&](Value kt, ValueRange) -> SmallVector<Value> {
         Value done = sub(kt, L.lo);
         Value t = arith::DivUIOp::create(b, loc, done, c(kvBlock));
         Value slot = arith::RemUIOp::create(b, loc, t, c(2));
         // K_t: the slot's previous K (tile t - 2) released after its S.
         Value reused = cmp(arith::CmpIPredicate::uge, t, c(2));
         ifThen(reused, [&] {
           Value older = sub(t, c(2));
           tmaWait(m, m.kEmpty, older, slot);
         });
         tmaIssueByThread0(m, kt, slot, /*keys=*/true, /*values=*/false);
         // V_t: released by tile t - 1's step (the P·V of V_{t-2}, or of
         // slot 1's zeros at t = 1).
         Value later = cmp(arith::CmpIPredicate::uge, t, c(1));
         ifThen(later, [&] {
           Value before = sub(t, c(1));
           tmaWait(m, m.vEmpty, before, slot);
         });
         tmaIssueByThread0(m, kt, slot, /*keys=*/false, /*values=*/true);
         return {};
       });
}

void KernelEmitter::wgmmaOverlapLoops(MmaState &m, Value out) {
  // Long: the loop body and its epilogue share the ring's state.
  const Launch &L = m.L;
  int64_t nO = dv / 2, nP = kvBlock / 16 * 4;
  Value any = cmp(arith::CmpIPredicate::slt, L.lo, L.hi);
  Value full = unmaskedEnd(L);
  Value qDesc = wgmmaQDescriptor(m);
  auto packed = [&](ValueRange p) {
    SmallVector<SmallVector<Value>> frags;
    for (int64_t i = 0; i < nP; i += 4)
      frags.push_back(SmallVector<Value>(p.begin() + i, p.begin() + i + 4));
    return frags;
  };
  // State: m[2], l[2], O[dv / 2], P[kv-block / 16][4] (the previous tile's,
  // not yet multiplied by its V).
  auto body = [&](Value kt, ValueRange st, bool masked) -> SmallVector<Value> {
    Value done = sub(kt, L.lo);
    Value j = arith::DivUIOp::create(b, loc, done, c(kvBlock));
    Value stage = arith::RemUIOp::create(b, loc, j, c(2));
    Value prev = sub(c(1), stage);
    Value nextKt = add(kt, c(kvBlock));
    Value more = cmp(arith::CmpIPredicate::slt, nextKt, L.hi);
    // K of tile j + 1 into the slot tile j - 1's K left (warp-specialized:
    // the producer's).
    if (!m.warpSpecialized)
      ifThen(more, [&] {
        tmaIssueTile(m, nextKt, prev, /*keys=*/true, /*values=*/false);
      });
    tmaWait(m, m.mbar, j, stage);
    // V of tile j - 1 (none before tile 0: slot 1's zeros).
    Value later = cmp(arith::CmpIPredicate::ne, j, c(0));
    ifThen(later, [&] {
      Value jPrev = sub(j, c(1));
      tmaWait(m, m.vBar, jPrev, prev);
    });
    // (V_{j-1} has no keys past hi: only the last tile can, whose V the
    // epilogue zeroes.)
    if (!m.warpSpecialized) {
      fenceAsyncProxy();
      gpu::BarrierOp::create(b, loc);
    }
    // S_j = Q·K_jᵀ and O += P_{j-1}·V_{j-1}, issued together; S first.
    Value kDesc = wgmmaRingDescriptor(m, /*values=*/false, stage);
    Value vDesc = wgmmaRingDescriptor(m, /*values=*/true, prev);
    SmallVector<Value> o(st.begin() + 4, st.begin() + 4 + nO);
    ValueRange p = st.drop_front(4 + nO);
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    SmallVector<Value> s = wgmmaScoresChain(m, qDesc, kDesc);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    o = wgmmaPVChain(o, packed(p), vDesc);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    // S done (the older group); its softmax runs while P·V does. K_j's
    // slot is free.
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
    if (m.warpSpecialized)
      releaseSlot(m, m.kEmpty, stage);
    SmallVector<SmallVector<SmallVector<Value>>> sFrag =
        wgmmaFragments(wgmmaFenceOperands(s));
    SmallVector<Value> next, alpha;
    SmallVector<SmallVector<SmallVector<Value>>> pPacked;
    mmaSoftmax(m, kt, masked, st, sFrag, next, pPacked, alpha);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    wgmmaFenceOperands(SmallVector<Value>(p.begin(), p.end()));
    o = wgmmaFenceOperands(o);
    // V_{j-1}'s slot (slot 1's zeros at j = 0) is free.
    if (m.warpSpecialized)
      releaseSlot(m, m.vEmpty, prev);
    for (int64_t i = 0; i < nO; ++i)
      next.push_back(fmul(o[i], alpha[(i % 4) / 2]));
    for (const auto &frag : pPacked[0])
      next.append(frag.begin(), frag.end());
    // Every warpgroup is done with V_{j-1} and K_j: V of tile j + 1 into
    // V_{j-1}'s slot.
    if (!m.warpSpecialized) {
      gpu::BarrierOp::create(b, loc);
      ifThen(more, [&] {
        tmaIssueTile(m, nextKt, prev, /*keys=*/false, /*values=*/true);
      });
    }
    return next;
  };
  SmallVector<Value> init(2, f32(-std::numeric_limits<double>::infinity()));
  for (int64_t i = 0; i < 2 + nO; ++i)
    init.push_back(f32(0.0));
  Value zeroI32 =
      arith::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(0));
  init.append(nP, zeroI32);
  scf::ForOp whole =
      loop(L.lo, full, c(kvBlock), init, [&](Value kt, ValueRange st) {
        return body(kt, st, /*masked=*/false);
      });
  scf::ForOp edge = loop(
      full, L.hi, c(kvBlock), whole.getResults(),
      [&](Value kt, ValueRange st) { return body(kt, st, /*masked=*/true); });
  // The last tile's P·V.
  ValueRange st = edge.getResults();
  SmallVector<Value> o(st.begin() + 4, st.begin() + 4 + nO);
  ValueRange p = st.drop_front(4 + nO);
  SmallVector<Type> oTypes(nO, b.getF32Type());
  auto ifOp = scf::IfOp::create(b, loc, oTypes, any, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value span = sub(L.hi, L.lo);
    Value rounded = add(span, c(kvBlock - 1));
    Value n = arith::DivUIOp::create(b, loc, rounded, c(kvBlock));
    Value last = sub(n, c(1));
    Value slot = arith::RemUIOp::create(b, loc, last, c(2));
    Value offset = mul(last, c(kvBlock));
    Value ktLast = add(L.lo, offset);
    tmaWait(m, m.vBar, last, slot);
    tmaZeroTail(m, ktLast, slot);
    fenceAsyncProxy();
    consumerBarrier(m);
    Value vDesc = wgmmaRingDescriptor(m, /*values=*/true, slot);
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    SmallVector<Value> oLast = wgmmaPVChain(o, packed(p), vDesc);
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
    wgmmaFenceOperands(SmallVector<Value>(p.begin(), p.end()));
    oLast = wgmmaFenceOperands(oLast);
    scf::YieldOp::create(b, loc, oLast);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, o);
  }
  SmallVector<Value> results(st.begin(), st.begin() + 4);
  results.append(ifOp.getResults().begin(), ifOp.getResults().end());
  mmaStore(m, results, out);
}
