//===- AttnToGPU.cpp - attn.sdpa -> gpu.launch (fp32 SIMT kernel) ---------===//
//
// This file implements convert-attn-to-gpu: each fused attention of a kernel
// entry (an `attn.sdpa` whose result is materialized into the entry's output
// buffer) becomes one `gpu.launch` that writes the output in place:
//
//   grid  = (query blocks, KV heads, batch): one thread block per (batch,
//           KV head, query block), as in the tiled form;
//   block = 32 · ceil(G · qb / R) threads: the G query heads of the group
//           times qb query rows, R rows per warp (8 for head dims up to
//           32, 4 above: registers); lane l holds elements
//           l, l + 32, ... of each row's q and accumulator (registers);
//   K and V tiles of kv-block keys are staged in shared memory by all the
//           threads and read by every row of the group;
//   per key, a warp computes its rows' scores (lane partial dot products
//           summed by gpu.subgroup_reduce, xor shuffles in PTX), masks them by position, and folds them
//           into the row's online-softmax state in the log2 domain (scale ·
//           log2 e folded into q, `llvm.intr.exp2`, which NVPTX maps to
//           ex2.approx); a row that sees no key writes 0. The PTX needs
//           no libdevice.
//
// This is the fp32 (CUDA-core) path, the accuracy reference of the GPU
// backend; with precision=bf16 the same launch computes Q·Kᵀ and P·V on
// tensor cores (mma.sync m16n8k16 on bf16 inputs, fp32 accumulators).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LoopBuilder.h"
#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOGPUPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kWarp = 32;
constexpr double kLog2e = 1.4426950408889634;

/// What the kernels take from the tiled form: the forall (grid, block
/// ids), the values of its body that the kernel needs (cloned into the
/// launch), and the attention's parameters (from its online_attention ops).
struct TiledSource {
  scf::ForallOp forall;
  /// In the forall body: the block's first query row and row count (the
  /// query tile's offset and size), the key range [lo, hi) its key loops
  /// cover, and the position of its first row in key coordinates.
  Value q0, qn, lo, hi, qPos;
  /// The batch's key length (tensor.extract of kv_lengths), if any.
  tensor::ExtractOp kvLength;
  MaskKind mask = MaskKind::none;
  std::optional<int64_t> window;
  std::optional<APFloat> softcap;
  double scale = 1.0;
  int64_t qBlock = 1;
};

struct KernelEmitter {
  OpBuilder &b;
  Location loc;
  const TiledSource &src;
  int64_t qRows = 0, kvBlock = 0;
  // Static shape facts.
  int64_t hkv = 1, group = 1, d = 0, dv = 0, epl = 1, eplV = 1;
  /// Query rows per warp: 8 for head dims up to 32, else 4 (registers).
  int64_t kRowsPerWarp = 8;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  /// x·y + z as a contractable multiply-add (NVPTX emits fma.rn.f32):
  /// math.fma would become a libdevice call, and the PTX should not need
  /// the CUDA toolkit's libdevice.
  Value fma(Value x, Value y, Value z) {
    auto contract = arith::FastMathFlagsAttr::get(
        b.getContext(), arith::FastMathFlags::contract);
    Value m = arith::MulFOp::create(b, loc, x, y, contract);
    return arith::AddFOp::create(b, loc, m, z, contract);
  }
  /// 2^x as PTX's ex2.approx.f32 (the NVVM intrinsic; math.exp2 and
  /// llvm.intr.exp2 would become libdevice calls). 2^-inf = +0.
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, Type(b.getF32Type()),
               b.getStringAttr("llvm.nvvm.ex2.approx"), ValueRange{x})
        .getResult(0);
  }

  /// What q is multiplied by on load: the scale, and log2 e (scores in the
  /// log2 domain for ex2) unless softcap needs the natural scores first.
  Value qPrescale() {
    return f32(src.softcap ? src.scale : src.scale * kLog2e);
  }
  /// A score as the kernels fold it: softcap (cap · tanh(s / cap), tanh
  /// from ex2: no libdevice) then in the log2 domain; `s` as it is without
  /// softcap (q was pre-scaled by log2 e).
  Value softcapped(Value s) {
    if (!src.softcap)
      return s;
    double cap = src.softcap->convertToDouble();
    Value ex = exp2(fmul(s, f32(2.0 * kLog2e / cap)));
    Value denom = fadd(ex, f32(1.0));
    Value two = f32(2.0);
    Value frac = arith::DivFOp::create(b, loc, two, denom);
    Value th = arith::SubFOp::create(b, loc, f32(1.0), frac);
    return fmul(th, f32(cap * kLog2e));
  }
  /// `ok` and key `key` visible to the row at key position `qPos` (causal,
  /// sliding window).
  Value visible(Value ok, Value key, Value qPos) {
    if (src.mask != MaskKind::none)
      ok = andI(ok, cmp(arith::CmpIPredicate::sle, key, qPos));
    if (src.window)
      ok = andI(ok, cmp(arith::CmpIPredicate::sgt, key,
                        sub(qPos, c(*src.window))));
    return ok;
  }

  /// scf.for whose body `body` builds at b's insertion point and whose
  /// yielded values it returns.
  scf::ForOp loop(Value lb, Value ub, Value step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return buildForLoop(b, loc, lb, ub, step, init, body);
  }

  /// The sum of `x` over the 32 lanes of the warp, in every lane
  /// (gpu.subgroup_reduce; attn-gpu-lower-subgroup-reduce makes it
  /// shuffles).
  Value warpSum(Value x) {
    return gpu::SubgroupReduceOp::create(b, loc, x,
                                         gpu::AllReduceOperation::ADD,
                                         /*uniform=*/true);
  }

  void emit(Value out, Value q, Value k, Value v, Value lens);
  /// The bf16 tensor-core kernel (mma.sync m16n8k16, fp32 accumulators).
  void emitMma(Value out, Value q, Value k, Value v, Value lens);

  /// Common prologue of both kernels: the launch, its ids and the block's
  /// key range. `tileTypes` are the workgroup buffers.
  struct Launch {
    gpu::LaunchOp op;
    Value bi, g, qb, tid, lane, warp, kvLen, q0, qn, offset, lo, hi;
  };
  Launch beginLaunch(Value k, Value lens, int64_t threads,
                     TypeRange tileTypes);

  /// Two bf16 as one i32 (the first in the low half), for mma operands.
  Value pack(Value lowBf16, Value highBf16) {
    auto i16 = b.getIntegerType(16), i32 = b.getI32Type();
    auto widen = [&](Value x) -> Value {
      return arith::ExtUIOp::create(
          b, loc, i32, arith::BitcastOp::create(b, loc, i16, x));
    };
    Value high = widen(highBf16);
    Value sixteen = arith::ConstantIntOp::create(b, loc, 16, 32);
    Value hiBits = arith::ShLIOp::create(b, loc, high, sixteen);
    return arith::OrIOp::create(b, loc, widen(lowBf16), hiBits);
  }
  Value toBf16(Value f) {
    return arith::TruncFOp::create(b, loc, b.getBF16Type(), f);
  }
  /// C += A·B for one m16n8k16 bf16 tile: A 4 x i32, B 2 x i32, C 4 x f32.
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bb,
                         ArrayRef<Value> cc) {
    Type f32 = b.getF32Type();
    auto resTy =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    Value r = NVVM::MmaOp::create(
        b, loc, resTy, a, bb, cc, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, r, i));
    return out;
  }
  /// `x` reduced over the 4 lanes of a quad (the lanes that share an
  /// mma row): a clustered gpu.subgroup_reduce of cluster size 4.
  Value quadReduce(Value x, bool isMax) {
    return gpu::SubgroupReduceOp::create(
        b, loc, x,
        isMax ? gpu::AllReduceOperation::MAXIMUMF : gpu::AllReduceOperation::ADD,
        /*uniform=*/true, /*cluster_size=*/uint32_t(4));
  }
};

void KernelEmitter::emit(Value out, Value q, Value k, Value v, Value lens) {
  int64_t rows = group * qRows;
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
  Value bi = L.bi, g = L.g, tid = L.tid, lane = L.lane, warp = L.warp;
  Value q0 = L.q0, qn = L.qn, offset = L.offset, lo = L.lo, hi = L.hi;
  Value kvLen = L.kvLen;
  Value zero = c(0), one = c(1);

  // The warp's rows: flattened (head of the group, query row).
  Value qScale = qPrescale();
  SmallVector<Value> valid, pos, head;
  SmallVector<SmallVector<Value>> qReg;
  for (int64_t i = 0; i < kRowsPerWarp; ++i) {
    Value warpRow0 = mul(warp, c(kRowsPerWarp));
    Value r = add(warpRow0, c(i));
    Value ok = cmp(arith::CmpIPredicate::slt, r, mul(c(group), qn));
    Value rs = select(ok, r, zero);
    Value groupHead0 = mul(g, c(group));
    Value h = add(groupHead0, arith::DivUIOp::create(b, loc, rs, qn));
    Value p = add(q0, arith::RemUIOp::create(b, loc, rs, qn));
    valid.push_back(ok);
    head.push_back(h);
    pos.push_back(p);
    SmallVector<Value> regs;
    for (int64_t e = 0; e < epl; ++e) {
      Value col = add(c(e * kWarp), lane);
      Value in = andI(ok, cmp(arith::CmpIPredicate::slt, col, c(d)));
      Value colS = min(col, c(d - 1));
      Value x =
          memref::LoadOp::create(b, loc, q, ValueRange{bi, h, p, colS});
      Value scaled = fmul(x, qScale);
      regs.push_back(select(in, scaled, f32(0.0)));
    }
    qReg.push_back(regs);
  }

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
  Value nThreads = c(threads);
  scf::ForOp tiles = loop(
      lo, hi, c(kvBlock), init, [&](Value kt, ValueRange state) {
        // Stage the K and V tiles (zeros past hi) in shared memory.
        Value blockKeys = c(kvBlock);
        Value kn = min(blockKeys, sub(hi, kt));
        auto stage = [&](Value src, Value tile, int64_t width) {
          loop(tid, c(kvBlock * width), nThreads, ValueRange{},
               [&](Value idx, ValueRange) -> SmallVector<Value> {
                Value j = arith::DivUIOp::create(b, loc, idx, c(width));
                Value col = arith::RemUIOp::create(b, loc, idx, c(width));
                Value in = cmp(arith::CmpIPredicate::slt, j, kn);
                Value key = add(kt, j);
                key = min(key, sub(kvLen, one));
                Value x = memref::LoadOp::create(b, loc, src,
                                                 ValueRange{bi, g, key, col});
                memref::StoreOp::create(b, loc, select(in, x, f32(0.0)), tile,
                                        ValueRange{j, col});
                return {};
              });
        };
        stage(k, kTile, d);
        stage(v, vTile, dv);
        gpu::BarrierOp::create(b, loc);
        scf::ForOp keys = loop(
            zero, kn, one, state, [&](Value j, ValueRange st) {
              SmallVector<Value> kReg, vReg;
              for (int64_t e = 0; e < epl; ++e) {
                Value col = add(c(e * kWarp), lane);
                col = min(col, c(d - 1));
                kReg.push_back(
                    memref::LoadOp::create(b, loc, kTile, ValueRange{j, col}));
              }
              for (int64_t e = 0; e < eplV; ++e) {
                Value col = add(c(e * kWarp), lane);
                col = min(col, c(dv - 1));
                vReg.push_back(
                    memref::LoadOp::create(b, loc, vTile, ValueRange{j, col}));
              }
              Value key = add(kt, j);
              SmallVector<Value> next;
              for (int64_t i = 0; i < kRowsPerWarp; ++i) {
                Value part = f32(0.0);
                for (int64_t e = 0; e < epl; ++e)
                  part = fma(qReg[i][e], kReg[e], part);
                Value s = softcapped(warpSum(part));
                Value vis = visible(valid[i], key, add(pos[i], offset));
                s = select(vis, s, f32(-inf));
                Value m = st[i * stride], l = st[i * stride + 1];
                Value mNew = arith::MaximumFOp::create(b, loc, m, s);
                Value none = arith::CmpFOp::create(
                    b, loc, arith::CmpFPredicate::OEQ, mNew, f32(-inf));
                Value shift = select(none, f32(0.0), mNew);
                Value alpha = exp2(arith::SubFOp::create(b, loc, m, shift));
                Value p = exp2(arith::SubFOp::create(b, loc, s, shift));
                next.push_back(mNew);
                next.push_back(fma(l, alpha, p));
                for (int64_t e = 0; e < eplV; ++e)
                  next.push_back(fma(p, vReg[e],
                                     fmul(st[i * stride + 2 + e], alpha)));
              }
              return next;
            });
        gpu::BarrierOp::create(b, loc);
        return SmallVector<Value>(keys.getResults());
      });

  // out = acc / sum (0 for a row that saw no key).
  for (int64_t i = 0; i < kRowsPerWarp; ++i) {
    Value l = tiles.getResult(i * stride + 1);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, f32(0.0));
    Value zero = f32(0.0);
    Value recip = arith::DivFOp::create(b, loc, f32(1.0), l);
    Value inv = select(empty, zero, recip);
    for (int64_t e = 0; e < eplV; ++e) {
      Value col = add(c(e * kWarp), lane);
      Value in = andI(valid[i], cmp(arith::CmpIPredicate::slt, col, c(dv)));
      auto ifOp = scf::IfOp::create(b, loc, in, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      memref::StoreOp::create(
          b, loc, fmul(tiles.getResult(i * stride + 2 + e), inv), out,
          ValueRange{bi, head[i], pos[i], col});
    }
  }
  gpu::TerminatorOp::create(b, loc);
}

KernelEmitter::Launch KernelEmitter::beginLaunch(Value k, Value lens,
                                                 int64_t threads,
                                                 TypeRange tileTypes) {
  // The grid is the forall's iteration space, each dim where its
  // #gpu.block mapping says: (batch, KV head, query block) -> (z, y, x).
  Launch L;
  scf::ForallOp forall = src.forall;
  SmallVector<OpFoldResult> ubs = forall.getMixedUpperBound();
  auto value = [&](OpFoldResult f) -> Value {
    if (auto v = dyn_cast<Value>(f))
      return v;
    return c(cast<IntegerAttr>(cast<Attribute>(f)).getInt());
  };
  Value grid[3];
  for (auto [i, m] : llvm::enumerate(*forall.getMapping()))
    grid[static_cast<int>(cast<gpu::GPUBlockMappingAttr>(m).getBlock())] =
        value(ubs[i]);
  Value gridQ = grid[0], gridG = grid[1], gridB = grid[2];
  Value one = c(1);
  L.op = gpu::LaunchOp::create(b, loc, gridQ, gridG, gridB, c(threads), one,
                               one, /*dynamicSharedMemorySize=*/Value(),
                               /*asyncTokenType=*/Type(),
                               /*asyncDependencies=*/ValueRange(), tileTypes);
  L.op->setAttr("attn.kernel", b.getUnitAttr());
  b.setInsertionPointToStart(&L.op.getBody().front());
  L.qb = L.op.getBlockIds().x;
  L.g = L.op.getBlockIds().y;
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
  map.map(body->getArgument(2), L.qb);
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
  return L;
}

void KernelEmitter::emitMma(Value out, Value q, Value k, Value v, Value lens) {
  // 16 rows per warp (heads of the group x query rows, flattened).
  constexpr int64_t kTileRows = 16;
  int64_t kWarps = (group * qRows + kTileRows - 1) / kTileRows;
  Type bf16 = b.getBF16Type();
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  auto kTileTy = MemRefType::get({kvBlock, d}, bf16,
                                 MemRefLayoutAttrInterface(), wg);
  auto vTileTy = MemRefType::get({kvBlock, dv}, bf16,
                                 MemRefLayoutAttrInterface(), wg);
  // Head dims above 128: Q's fragments would not fit in registers next to
  // the accumulators; Q is staged in shared memory once and its fragments
  // read per step.
  bool qShared = d > 128;
  auto qTileTy = MemRefType::get({kWarps * kTileRows, d}, bf16,
                                 MemRefLayoutAttrInterface(), wg);
  SmallVector<Type> tileTypes = {kTileTy, vTileTy};
  if (qShared)
    tileTypes.push_back(qTileTy);
  OpBuilder::InsertionGuard guard(b);
  Launch L = beginLaunch(k, lens, kWarps * kWarp, tileTypes);
  Value kTile = L.op.getWorkgroupAttributions()[0];
  Value vTile = L.op.getWorkgroupAttributions()[1];
  Value zero = c(0), one = c(1);
  // Fragment coordinates: group (row within 8) and thread in group.
  Value gq = arith::DivUIOp::create(b, loc, L.lane, c(4));
  Value tq = arith::RemUIOp::create(b, loc, L.lane, c(4));
  Value col2 = mul(tq, c(2));
  Value qScale = qPrescale();

  // The thread's two rows: r0 = group, r1 = group + 8 of the warp's 16.
  Value valid[2], head[2], pos[2];
  for (int64_t h = 0; h < 2; ++h) {
    Value t = add(mul(L.warp, c(kTileRows)), gq);
    t = add(t, c(8 * h));
    valid[h] = cmp(arith::CmpIPredicate::slt, t, mul(c(group), L.qn));
    Value ts = select(valid[h], t, zero);
    Value groupHead0 = mul(L.g, c(group));
    head[h] = add(groupHead0, arith::DivUIOp::create(b, loc, ts, L.qn));
    pos[h] = add(L.q0, arith::RemUIOp::create(b, loc, ts, L.qn));
  }
  auto qElem = [&](int64_t h, Value col) -> Value {
    Value x = memref::LoadOp::create(b, loc, q,
                                     ValueRange{L.bi, head[h], pos[h], col});
    Value scaled = fmul(x, qScale);
    return toBf16(select(valid[h], scaled, f32(0.0)));
  };
  // Q as A fragments, one per 16 of d: {r0, c}, {r1, c}, {r0, c+8}, {r1, c+8}
  // with c = 16·ks + 2·tq (two consecutive columns each): in registers, or
  // from the shared Q tile (rows of the warp: 16·warp + gq (+8)).
  Value qTile;
  if (qShared) {
    qTile = L.op.getWorkgroupAttributions()[2];
    int64_t rows = kWarps * kTileRows;
    Value qElems = c(rows * d), qStep = c(kWarps * kWarp);
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
           Value scaled = fmul(x, qScale);
           memref::StoreOp::create(
               b, loc, toBf16(select(ok, scaled, f32(0.0))), qTile,
               ValueRange{r, col});
           return {};
         });
    gpu::BarrierOp::create(b, loc);
  }
  auto qFragAt = [&](int64_t ks) -> SmallVector<Value> {
    SmallVector<Value> a;
    for (int64_t part = 0; part < 4; ++part) {
      int64_t h = part % 2;
      Value c0 = add(c(16 * ks + 8 * (part / 2)), col2);
      if (qShared) {
        Value row = add(mul(L.warp, c(kTileRows)), gq);
        row = add(row, c(8 * h));
        Value x0 = memref::LoadOp::create(b, loc, qTile, ValueRange{row, c0});
        Value x1 = memref::LoadOp::create(b, loc, qTile,
                                          ValueRange{row, add(c0, one)});
        a.push_back(pack(x0, x1));
      } else {
        Value lo = qElem(h, c0);
        Value hi = qElem(h, add(c0, one));
        a.push_back(pack(lo, hi));
      }
    }
    return a;
  };
  SmallVector<SmallVector<Value>> qFrag;
  if (!qShared)
    for (int64_t ks = 0; ks < d / 16; ++ks)
      qFrag.push_back(qFragAt(ks));

  double inf = std::numeric_limits<double>::infinity();
  int64_t nTilesS = kvBlock / 8, nTilesO = dv / 8;
  // State: m[2], l[2] (this thread's partial row sums), o[nTilesO][4].
  SmallVector<Value> init = {f32(-inf), f32(-inf), f32(0.0), f32(0.0)};
  for (int64_t i = 0; i < nTilesO * 4; ++i)
    init.push_back(f32(0.0));
  Value nThreads = c(kWarps * kWarp);
  scf::ForOp tiles = loop(
      L.lo, L.hi, c(kvBlock), init, [&](Value kt, ValueRange st) {
        Value blockKeys = c(kvBlock);
        Value kn = min(blockKeys, sub(L.hi, kt));
        auto stage = [&](Value src, Value tile, int64_t width) {
          loop(L.tid, c(kvBlock * width), nThreads, ValueRange{},
               [&](Value idx, ValueRange) -> SmallVector<Value> {
                 Value j = arith::DivUIOp::create(b, loc, idx, c(width));
                 Value col = arith::RemUIOp::create(b, loc, idx, c(width));
                 Value in = cmp(arith::CmpIPredicate::slt, j, kn);
                 Value key = add(kt, j);
                 key = min(key, sub(L.kvLen, one));
                 Value x = memref::LoadOp::create(
                     b, loc, src, ValueRange{L.bi, L.g, key, col});
                 memref::StoreOp::create(b, loc,
                                         toBf16(select(in, x, f32(0.0))),
                                         tile, ValueRange{j, col});
                 return {};
               });
        };
        stage(k, kTile, d);
        stage(v, vTile, dv);
        gpu::BarrierOp::create(b, loc);
        // S = Q·Kᵀ: per 8 keys, C fragments {r0,c} {r0,c+1} {r1,c} {r1,c+1}.
        SmallVector<SmallVector<Value>> sFrag(
            nTilesS, SmallVector<Value>(4, f32(0.0)));
        for (int64_t ks = 0; ks < d / 16; ++ks) {
          SmallVector<Value> a = qShared ? qFragAt(ks) : qFrag[ks];
          for (int64_t j = 0; j < nTilesS; ++j) {
            Value keyRow = add(c(8 * j), gq);
            SmallVector<Value> bb;
            for (int64_t part = 0; part < 2; ++part) {
              Value c0 = add(c(16 * ks + 8 * part), col2);
              Value x0 = memref::LoadOp::create(b, loc, kTile,
                                                ValueRange{keyRow, c0});
              Value x1 = memref::LoadOp::create(
                  b, loc, kTile, ValueRange{keyRow, add(c0, one)});
              bb.push_back(pack(x0, x1));
            }
            sFrag[j] = mma(a, bb, sFrag[j]);
          }
        }
        // Softcap, mask, row max over the quad.
        Value rowMax[2] = {f32(-inf), f32(-inf)};
        for (int64_t j = 0; j < nTilesS; ++j)
          for (int64_t e = 0; e < 4; ++e) {
            int64_t h = e / 2;
            Value &s = sFrag[j][e];
            s = softcapped(s);
            // Keys past hi are the tile's zero padding.
            Value key = add(kt, add(c(8 * j + e % 2), col2));
            Value inTile =
                andI(valid[h], cmp(arith::CmpIPredicate::slt, key, L.hi));
            Value rowPos = add(pos[h], L.offset);
            Value vis = visible(inTile, key, rowPos);
            s = select(vis, s, f32(-inf));
            rowMax[h] = arith::MaximumFOp::create(b, loc, rowMax[h], s);
          }
        SmallVector<Value> next;
        Value shift[2], alpha[2];
        for (int64_t h = 0; h < 2; ++h) {
          Value mNew = arith::MaximumFOp::create(
              b, loc, st[h], quadReduce(rowMax[h], /*isMax=*/true));
          Value none = arith::CmpFOp::create(
              b, loc, arith::CmpFPredicate::OEQ, mNew, f32(-inf));
          shift[h] = select(none, f32(0.0), mNew);
          alpha[h] = exp2(arith::SubFOp::create(b, loc, st[h], shift[h]));
          next.push_back(mNew);
        }
        // P = 2^(s - shift), this thread's part of the row sums.
        Value rowSum[2] = {f32(0.0), f32(0.0)};
        SmallVector<SmallVector<Value>> pBf16;
        for (int64_t j = 0; j < nTilesS; ++j) {
          SmallVector<Value> p;
          for (int64_t e = 0; e < 4; ++e) {
            int64_t h = e / 2;
            Value x = exp2(arith::SubFOp::create(b, loc, sFrag[j][e],
                                                 shift[h]));
            rowSum[h] = fadd(rowSum[h], x);
            p.push_back(toBf16(x));
          }
          pBf16.push_back(p);
        }
        for (int64_t h = 0; h < 2; ++h)
          next.push_back(fma(st[2 + h], alpha[h], rowSum[h]));
        // O = O·alpha + P·V: P's C fragments of keys 16t.. are the A
        // fragment of step t; V's B fragments {k = 2tq, 2tq+1 | +8} x n.
        SmallVector<SmallVector<Value>> o;
        for (int64_t n = 0; n < nTilesO; ++n) {
          SmallVector<Value> acc;
          for (int64_t e = 0; e < 4; ++e)
            acc.push_back(fmul(st[4 + 4 * n + e], alpha[e / 2]));
          o.push_back(acc);
        }
        for (int64_t t = 0; t < kvBlock / 16; ++t) {
          SmallVector<Value> a = {pack(pBf16[2 * t][0], pBf16[2 * t][1]),
                                  pack(pBf16[2 * t][2], pBf16[2 * t][3]),
                                  pack(pBf16[2 * t + 1][0], pBf16[2 * t + 1][1]),
                                  pack(pBf16[2 * t + 1][2],
                                       pBf16[2 * t + 1][3])};
          for (int64_t n = 0; n < nTilesO; ++n) {
            Value vcol = add(c(8 * n), gq);
            SmallVector<Value> bb;
            for (int64_t part = 0; part < 2; ++part) {
              Value k0 = add(c(16 * t + 8 * part), col2);
              Value x0 = memref::LoadOp::create(b, loc, vTile,
                                                ValueRange{k0, vcol});
              Value x1 = memref::LoadOp::create(
                  b, loc, vTile, ValueRange{add(k0, one), vcol});
              bb.push_back(pack(x0, x1));
            }
            o[n] = mma(a, bb, o[n]);
          }
        }
        for (auto &acc : o)
          next.append(acc.begin(), acc.end());
        gpu::BarrierOp::create(b, loc);
        return next;
      });

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
  for (int64_t n = 0; n < nTilesO; ++n)
    for (int64_t e = 0; e < 4; ++e) {
      int64_t h = e / 2;
      Value col = add(c(8 * n + e % 2), col2);
      auto ifOp = scf::IfOp::create(b, loc, valid[h], /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      memref::StoreOp::create(b, loc,
                              fmul(tiles.getResult(4 + 4 * n + e), inv[h]),
                              out, ValueRange{L.bi, head[h], pos[h], col});
    }
  gpu::TerminatorOp::create(b, loc);
}

/// (batch, KV head, query block) mapped to blocks z, y, x.
bool isGridMapping(scf::ForallOp forall) {
  std::optional<ArrayAttr> mapping = forall.getMapping();
  if (!mapping || mapping->size() != 3)
    return false;
  const gpu::MappingId expected[] = {gpu::MappingId::DimZ,
                                     gpu::MappingId::DimY,
                                     gpu::MappingId::DimX};
  for (auto [m, id] : llvm::zip(*mapping, expected)) {
    auto block = dyn_cast<gpu::GPUBlockMappingAttr>(m);
    if (!block || block.getBlock() != id)
      return false;
  }
  return true;
}

struct ConvertAttnToGPUPass
    : attn::impl::ConvertAttnToGPUPassBase<ConvertAttnToGPUPass> {
  using ConvertAttnToGPUPassBase::ConvertAttnToGPUPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn->hasAttr("attn.reference"))
      return;
    // Not tiled: run attn-tile-attention first.
    WalkResult r = fn.walk([&](SDPAOp op) {
      op.emitOpError("convert-attn-to-gpu lowers the tiled form: run "
                     "attn-tile-attention (target=gpu, split-target=0) first");
      return WalkResult::interrupt();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    SmallVector<scf::ForallOp> foralls;
    fn.walk([&](scf::ForallOp f) {
      if (f->hasAttr("attn.tiled"))
        foralls.push_back(f);
    });
    for (scf::ForallOp f : foralls)
      if (failed(convert(f)))
        return signalPassFailure();
  }

  /// Reads what the kernel needs off the tiled forall: its query tile, its
  /// key loops (their range and the mask of their attn.online_attention),
  /// the batch's key length, the attention's parameters.
  LogicalResult readTiled(scf::ForallOp forall, TiledSource &src,
                          OnlineAttentionOp &first) {
    src.forall = forall;
    auto qBlock = forall->getAttrOfType<IntegerAttr>("attn.q_block");
    if (!qBlock)
      return forall.emitOpError("a tiled forall without attn.q_block");
    src.qBlock = qBlock.getInt();
    SmallVector<scf::ForOp> loops;
    for (Operation &o : forall.getBody()->without_terminator()) {
      if (auto e = dyn_cast<tensor::ExtractOp>(o))
        src.kvLength = e;
      if (auto loop = dyn_cast<scf::ForOp>(o))
        loops.push_back(loop);
    }
    for (scf::ForOp loop : loops) {
      OnlineAttentionOp oa;
      loop.getBody()->walk([&](OnlineAttentionOp op) { oa = op; });
      if (!oa)
        return loop.emitOpError("a key loop without attn.online_attention");
      if (!first)
        first = oa;
      if (oa.getBiasTable() || oa.getRelativeBiasAttr())
        return oa.emitOpError("relative position bias (T5) is not supported "
                              "by the GPU backend yet; compile for the CPU");
      if (oa.getMask() != MaskKind::none) {
        src.mask = oa.getMask();
        src.window = oa.getWindow();
      }
      src.scale = oa.getScale().convertToDouble();
      src.softcap = oa.getSoftcap();
      src.qPos = oa.getQPos();
    }
    if (!first)
      return forall.emitOpError("a tiled forall without key loops");
    // The loops partition the block's key range in order.
    src.lo = loops.front().getLowerBound();
    src.hi = loops.back().getUpperBound();
    auto qTile = first.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
    if (!qTile || qTile->getParentOp() != forall)
      return first.emitOpError("the query tile is not a slice in the forall");
    OpBuilder qb(qTile);
    src.q0 = getValueOrCreateConstantIndexOp(qb, qTile.getLoc(),
                                             qTile.getMixedOffsets()[2]);
    src.qn = getValueOrCreateConstantIndexOp(qb, qTile.getLoc(),
                                             qTile.getMixedSizes()[2]);
    return success();
  }

  LogicalResult convert(scf::ForallOp forall) {
    if (forall.getRank() != 3)
      return forall.emitOpError(
          "split-K is not lowered to the GPU yet: tile with split-target=0");
    if (!isGridMapping(forall))
      return forall.emitOpError(
          "expects the tiled forall mapped to the grid (mapping = "
          "[#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]: batch, KV head, "
          "query block), as attn-tile-attention{target=gpu} makes it");
    // The kernel entry form: the result goes straight into an output buffer.
    bufferization::MaterializeInDestinationOp dest;
    Value result = forall.getResult(0);
    if (result.hasOneUse())
      dest = dyn_cast<bufferization::MaterializeInDestinationOp>(
          *result.getUsers().begin());
    if (!dest || !isa<BaseMemRefType>(dest.getDest().getType()))
      return forall.emitOpError(
          "the GPU backend compiles attention kernel entries (attn-compile "
          "--kernels): the result must be materialized into an output "
          "buffer; blocks and models run on the CPU for now");
    TiledSource src;
    OnlineAttentionOp first;
    if (failed(readTiled(forall, src, first)))
      return failure();
    auto qSlice = first.getQuery().getDefiningOp<tensor::ExtractSliceOp>();
    auto kSlice = first.getKey().getDefiningOp<tensor::ExtractSliceOp>();
    auto vSlice = first.getValue().getDefiningOp<tensor::ExtractSliceOp>();
    if (!kSlice || !vSlice)
      return first.emitOpError("K and V tiles must be slices of K and V");
    Value qT = qSlice.getSource(), kT = kSlice.getSource(),
          vT = vSlice.getSource();
    Operation *op = first;
    auto qTy = cast<RankedTensorType>(qT.getType());
    for (Value t : {qT, kT, vT})
      if (!cast<ShapedType>(t.getType()).getElementType().isF32())
        return op->emitOpError("the GPU kernels take fp32 tensors for now");
    int64_t hq = qTy.getDimSize(1);
    int64_t d = qTy.getDimSize(3);
    int64_t dv = cast<RankedTensorType>(vT.getType()).getDimSize(3);
    int64_t hkv = cast<RankedTensorType>(kT.getType()).getDimSize(1);
    if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) ||
        ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
      return op->emitOpError("the GPU kernel needs static head counts and "
                             "head dims");
    int64_t group = hq / hkv;
    OpBuilder b(dest);
    Location loc = forall.getLoc();
    KernelEmitter e{b, loc, src};
    e.hkv = hkv;
    e.group = group;
    e.d = d;
    e.dv = dv;
    e.epl = (d + kWarp - 1) / kWarp;
    e.eplV = (dv + kWarp - 1) / kWarp;
    e.kRowsPerWarp = std::max(e.epl, e.eplV) <= 1 ? 8 : 4;
    bool bf16 = precision == GPUPrecision::bf16;
    if (bf16 && (d % 16 || dv % 16))
      return op->emitOpError("the bf16 tensor-core kernel needs head dims "
                            "that are multiples of 16, got ")
             << d << " and " << dv << " (the fp32 kernel takes any)";
    // fp32: about 32 rows (heads x query rows) per block, 4-byte K and V
    // tiles; bf16: about 64 rows (4 warps of 16), 2-byte tiles of a
    // multiple of 16 keys; both at most 32 KB of shared memory by default.
    int64_t elt = bf16 ? 2 : 4;
    e.qRows = src.qBlock;
    // bf16 with d > 128 also keeps the Q tile (16 rows per warp) in
    // shared memory.
    int64_t qTileBytes =
        bf16 && d > 128 ? (group * e.qRows + 15) / 16 * 16 * d * 2 : 0;
    e.kvBlock = kvBlock ? kvBlock
                : bf16  ? std::clamp<int64_t>((49152 - qTileBytes) /
                                                  ((d + dv) * 2) / 16 * 16,
                                              16, 64)
                        : std::max<int64_t>(8, 4096 / std::max(d, dv));
    if (e.kvBlock <= 0)
      return op->emitOpError("kv-block must be positive");
    if (bf16 && e.kvBlock % 16)
      return op->emitOpError("the bf16 kernel's kv-block must be a multiple "
                            "of 16, got ")
             << e.kvBlock;
    if (e.kvBlock * (d + dv) * elt + qTileBytes > 48 * 1024)
      return op->emitOpError("kv-block ")
             << e.kvBlock << " needs " << e.kvBlock * (d + dv) * elt + qTileBytes
             << " bytes of shared memory (K, V"
             << (qTileBytes ? ", Q" : "") << " tiles); at most 49152";
    auto buffer = [&](Value t) -> Value {
      auto ty = cast<RankedTensorType>(t.getType());
      return bufferization::ToBufferOp::create(
          b, loc, MemRefType::get(ty.getShape(), ty.getElementType()), t,
          /*readOnly=*/true);
    };
    Value lens = src.kvLength ? buffer(src.kvLength.getTensor()) : Value();
    Value qBuf = buffer(qT);
    Value kBuf = buffer(kT);
    Value vBuf = buffer(vT);
    if (bf16)
      e.emitMma(dest.getDest(), qBuf, kBuf, vBuf, lens);
    else
      e.emit(dest.getDest(), qBuf, kBuf, vBuf, lens);
    dest.erase();
    forall.erase();
    return success();
  }
};

} // namespace
