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
//           summed by xor shuffles), masks them by position, and folds them
//           into the row's online-softmax state in the log2 domain (scale ·
//           log2 e folded into q, `llvm.intr.exp2`, which NVPTX maps to
//           ex2.approx); a row that sees no key writes 0. The PTX needs
//           no libdevice.
//
// This is the fp32 (CUDA-core) path: the accuracy reference of the GPU
// backend. Tensor cores (mma.sync on bf16/fp16) are the next step.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CONVERTATTNTOGPUPASS
#define GEN_PASS_DEF_GPUKERNELOCCUPANCYPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kWarp = 32;

struct KernelEmitter {
  OpBuilder &b;
  Location loc;
  SDPAOp op;
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

  /// scf.for whose body `body` builds at b's insertion point and whose
  /// yielded values it returns.
  scf::ForOp loop(Value lb, Value ub, Value step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto f = scf::ForOp::create(b, loc, lb, ub, step, init);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(f.getBody());
    SmallVector<Value> next = body(f.getInductionVar(), f.getRegionIterArgs());
    if (f.getBody()->mightHaveTerminator())
      f.getBody()->getTerminator()->erase();
    b.setInsertionPointToEnd(f.getBody());
    scf::YieldOp::create(b, loc, next);
    return f;
  }

  /// The sum of `x` over the 32 lanes of the warp, in every lane.
  Value warpSum(Value x) {
    for (int64_t off = kWarp / 2; off >= 1; off /= 2) {
      Value o = arith::ConstantIntOp::create(b, loc, off, 32);
      Value w = arith::ConstantIntOp::create(b, loc, kWarp, 32);
      Value y = gpu::ShuffleOp::create(b, loc, x, o, w, gpu::ShuffleMode::XOR)
                    .getShuffleResult();
      x = fadd(x, y);
    }
    return x;
  }

  void emit(Value out, Value q, Value k, Value v, Value lens);
};

void KernelEmitter::emit(Value out, Value q, Value k, Value v, Value lens) {
  Value batch = memref::DimOp::create(b, loc, q, 0);
  Value qLen = memref::DimOp::create(b, loc, q, 2);
  Value kvLen = memref::DimOp::create(b, loc, k, 2);
  Value zero = c(0), one = c(1);
  Value numQBlocks = arith::CeilDivSIOp::create(b, loc, qLen, c(qRows));
  int64_t rows = group * qRows;
  int64_t warps = (rows + kRowsPerWarp - 1) / kRowsPerWarp;
  int64_t threads = warps * kWarp;
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  auto kTileTy = MemRefType::get({kvBlock, d}, b.getF32Type(),
                                 MemRefLayoutAttrInterface(), wg);
  auto vTileTy = MemRefType::get({kvBlock, dv}, b.getF32Type(),
                                 MemRefLayoutAttrInterface(), wg);
  auto launch = gpu::LaunchOp::create(
      b, loc, numQBlocks, c(hkv), batch, c(threads), one, one,
      /*dynamicSharedMemorySize=*/Value(), /*asyncTokenType=*/Type(),
      /*asyncDependencies=*/ValueRange(),
      /*workgroupAttributions=*/TypeRange{kTileTy, vTileTy});
  launch->setAttr("attn.kernel", b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  Value kTile = launch.getWorkgroupAttributions()[0];
  Value vTile = launch.getWorkgroupAttributions()[1];
  Value qb = launch.getBlockIds().x, g = launch.getBlockIds().y,
        bi = launch.getBlockIds().z, tid = launch.getThreadIds().x;
  zero = c(0);
  one = c(1);
  Value lane = arith::RemUIOp::create(b, loc, tid, c(kWarp));
  Value warp = arith::DivUIOp::create(b, loc, tid, c(kWarp));
  Value q0 = mul(qb, c(qRows));
  Value qn = min(c(qRows), sub(qLen, q0));
  bool causal = op.getMask() != MaskKind::none;
  std::optional<int64_t> window = op.getWindow();
  bool aligned = causal && op.getAlign() == CausalAlignment::bottom_right;
  Value offset = aligned ? sub(kvLen, qLen) : zero;

  // Keys visible to the block: padding limit, causal end, window start.
  Value kvLimit = kvLen;
  if (lens) {
    Value len = memref::LoadOp::create(b, loc, lens, ValueRange{bi});
    len = arith::IndexCastOp::create(b, loc, b.getIndexType(), len);
    kvLimit = clamp(len, zero, kvLen);
  }
  Value hi = kvLimit, lo = zero;
  if (causal)
    hi = clamp(add(add(q0, qn), offset), zero, kvLimit);
  if (window)
    lo = clamp(add(sub(add(q0, offset), c(*window)), one), zero, hi);

  // The warp's rows: flattened (head of the group, query row).
  double log2e = 1.4426950408889634;
  std::optional<APFloat> softcap = op.getSoftcap();
  double scale = op.getScale().convertToDouble();
  Value qScale = f32(softcap ? scale : scale * log2e);
  SmallVector<Value> valid, pos, head;
  SmallVector<SmallVector<Value>> qReg;
  for (int64_t i = 0; i < kRowsPerWarp; ++i) {
    Value r = add(mul(warp, c(kRowsPerWarp)), c(i));
    Value ok = cmp(arith::CmpIPredicate::slt, r, mul(c(group), qn));
    Value rs = select(ok, r, zero);
    Value h = add(mul(g, c(group)), arith::DivUIOp::create(b, loc, rs, qn));
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
      regs.push_back(select(in, fmul(x, qScale), f32(0.0)));
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
        Value kn = min(c(kvBlock), sub(hi, kt));
        auto stage = [&](Value src, Value tile, int64_t width) {
          loop(tid, c(kvBlock * width), nThreads, ValueRange{},
               [&](Value idx, ValueRange) -> SmallVector<Value> {
                Value j = arith::DivUIOp::create(b, loc, idx, c(width));
                Value col = arith::RemUIOp::create(b, loc, idx, c(width));
                Value in = cmp(arith::CmpIPredicate::slt, j, kn);
                Value key = min(add(kt, j), sub(kvLen, one));
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
                Value col = min(add(c(e * kWarp), lane), c(d - 1));
                kReg.push_back(
                    memref::LoadOp::create(b, loc, kTile, ValueRange{j, col}));
              }
              for (int64_t e = 0; e < eplV; ++e) {
                Value col = min(add(c(e * kWarp), lane), c(dv - 1));
                vReg.push_back(
                    memref::LoadOp::create(b, loc, vTile, ValueRange{j, col}));
              }
              Value key = add(kt, j);
              SmallVector<Value> next;
              for (int64_t i = 0; i < kRowsPerWarp; ++i) {
                Value part = f32(0.0);
                for (int64_t e = 0; e < epl; ++e)
                  part = fma(qReg[i][e], kReg[e], part);
                Value s = warpSum(part);
                if (softcap) {
                  // cap · tanh(s / cap), tanh from exp2 (no libdevice).
                  double cap = softcap->convertToDouble();
                  Value t2 = fmul(s, f32(2.0 * log2e / cap));
                  Value ex = exp2(t2);
                  Value th = arith::SubFOp::create(
                      b, loc, f32(1.0),
                      arith::DivFOp::create(b, loc, f32(2.0),
                                            fadd(ex, f32(1.0))));
                  s = fmul(th, f32(cap * log2e));
                }
                Value vis = valid[i];
                Value qPos = add(pos[i], offset);
                if (causal)
                  vis = andI(vis, cmp(arith::CmpIPredicate::sle, key, qPos));
                if (window)
                  vis = andI(vis, cmp(arith::CmpIPredicate::sgt, key,
                                      sub(qPos, c(*window))));
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
    Value inv = select(empty, f32(0.0),
                       arith::DivFOp::create(b, loc, f32(1.0), l));
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

struct ConvertAttnToGPUPass
    : attn::impl::ConvertAttnToGPUPassBase<ConvertAttnToGPUPass> {
  using ConvertAttnToGPUPassBase::ConvertAttnToGPUPassBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn->hasAttr("attn.reference"))
      return;
    SmallVector<SDPAOp> ops;
    fn.walk([&](SDPAOp op) { ops.push_back(op); });
    for (SDPAOp op : ops)
      if (failed(convert(op)))
        return signalPassFailure();
  }

  LogicalResult convert(SDPAOp op) {
    // The kernel entry form: the result goes straight into an output buffer.
    bufferization::MaterializeInDestinationOp dest;
    if (op->hasOneUse())
      dest = dyn_cast<bufferization::MaterializeInDestinationOp>(
          *op->getUsers().begin());
    if (!dest || !isa<BaseMemRefType>(dest.getDest().getType()))
      return op.emitOpError(
          "the GPU backend compiles attention kernel entries (attn-compile "
          "--kernels): the result must be materialized into an output "
          "buffer; blocks and models run on the CPU for now");
    auto qTy = op.getQuery().getType();
    for (Value t : {op.getQuery(), op.getKey(), op.getValue()})
      if (!cast<ShapedType>(t.getType()).getElementType().isF32())
        return op.emitOpError("the GPU backend's kernel is fp32 for now; "
                              "bf16/fp16 tensor-core kernels are not built "
                              "yet");
    if (op.getBiasTable() || op.getRelativeBiasAttr())
      return op.emitOpError("relative position bias (T5) is not supported "
                            "by the GPU backend yet; compile for the CPU");
    int64_t hq = qTy.getDimSize(1);
    int64_t d = qTy.getDimSize(3);
    int64_t dv = op.getValue().getType().getDimSize(3);
    int64_t hkv = op.getKey().getType().getDimSize(1);
    if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) ||
        ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
      return op.emitOpError("the GPU kernel needs static head counts and "
                            "head dims");
    int64_t group = hq / hkv;
    OpBuilder b(dest);
    Location loc = op.getLoc();
    KernelEmitter e{b, loc, op};
    e.hkv = hkv;
    e.group = group;
    e.d = d;
    e.dv = dv;
    e.epl = (d + kWarp - 1) / kWarp;
    e.eplV = (dv + kWarp - 1) / kWarp;
    e.kRowsPerWarp = std::max(e.epl, e.eplV) <= 1 ? 8 : 4;
    // About 32 rows (heads x query rows) per block; K + V tiles of at most
    // 32 KB of shared memory.
    e.qRows = qBlock ? qBlock : std::max<int64_t>(1, 32 / group);
    e.kvBlock = kvBlock ? kvBlock
                        : std::max<int64_t>(8, 4096 / std::max(d, dv));
    if (e.qRows <= 0 || e.kvBlock <= 0)
      return op.emitOpError("q-block and kv-block must be positive");
    if (e.kvBlock * (d + dv) * 4 > 48 * 1024)
      return op.emitOpError("kv-block ")
             << e.kvBlock << " needs " << e.kvBlock * (d + dv) * 4
             << " bytes of shared memory for K and V; at most 49152";
    auto buffer = [&](Value t) -> Value {
      auto ty = cast<RankedTensorType>(t.getType());
      return bufferization::ToBufferOp::create(
          b, loc, MemRefType::get(ty.getShape(), ty.getElementType()), t,
          /*readOnly=*/true);
    };
    Value lens = op.getKvLengths() ? buffer(op.getKvLengths()) : Value();
    e.emit(dest.getDest(), buffer(op.getQuery()), buffer(op.getKey()),
           buffer(op.getValue()), lens);
    dest.erase();
    op.erase();
    return success();
  }
};

struct GPUKernelOccupancyPass
    : attn::impl::GPUKernelOccupancyPassBase<GPUKernelOccupancyPass> {
  void runOnOperation() override {
    getOperation().walk([](gpu::GPUFuncOp f) {
      if (f.isKernel())
        f->setAttr("nvvm.minctasm",
                   IntegerAttr::get(IntegerType::get(f.getContext(), 32), 1));
    });
  }
};

} // namespace
