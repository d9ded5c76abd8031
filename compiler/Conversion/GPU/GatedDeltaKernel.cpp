//===- GatedDeltaKernel.cpp - Gated DeltaNet on the GPU (fp32 SIMT) -------===//
//
// This file implements the GPU kernel of the tiled gated delta rule: the
// (batch, value head) forall of attn-tile-gated-delta becomes the grid
// (value head × C column blocks, batch) of one gpu.launch whose block
// carries d_v / C columns of that head's state [d_k, d_v] in registers
// through the sequence, token by token (the recurrent form: every length;
// with bf16/f16 precision and linear-chunked, the sequences shorter than 32
// tokens, the longer ones taking the chunked kernel on tensor cores,
// GatedDeltaChunkKernel.cpp, where it takes the shape). The
// columns are independent, so C (a power of two, at least 32 columns per
// block) grows until the heads' blocks reach 264, two per SM of an H100/H200:
// a decode step of one sequence is no longer a handful of blocks.
//
//   block   = (d_v / C) · P threads, P = ceil(d_k / 32): thread (p, j)
//             holds column j of the state, rows [p·R, p·R + R),
//             R = ceil(d_k / P) registers;
//   per token, q_t (scaled) and k_t are staged in shared memory (zeros past
//             d_k, so padding rows stay 0), with a per-channel gate (KDA)
//             also each key channel's decay e^{g_t[i]} (row i of the state
//             decays by its own factor below, folded into k_i for kv), then
//             kv_j = Σ_i S_ij k_i          partial sums over each thread's
//                                          rows, combined through shared
//                                          memory,
//             δ_j  = β (v_j − e^g kv_j),
//             S_ij ← e^g S_ij + k_i δ_j,   in registers,
//             o_j  = Σ_i S_ij q_i          combined the same way, written by
//                                          the threads of p = 0;
//   three barriers per token; e^g as ex2.approx (no libdevice). Without the
//   delta correction (Mamba2's SSD) δ_j = β v_j: no kv, two barriers.
//
// The operands are read off the tiled form: the chunk ops' slices give q,
// k, v, g and β, the forall's destinations (materialized into the kernel
// entry's buffers) the output and the final state, the recurrent chunk's
// initial_state (or the linalg.copy that starts the chunked form's state)
// the initial state, the tensor.extract of the
// lengths (if any) the batch row's length: tokens past it are not run and
// their outputs are 0.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/GatedDeltaGPU.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;

namespace {

/// What the kernel takes from the tiled forall.
struct GatedDeltaSource {
  Value q, k, v, g, beta, init; ///< tensors (init may be null: zeros)
  Value lengths;                ///< [batch] integers, or null (all whole)
  Value out, state;             ///< the entry's destination buffers
  double scale = 1.0;
  bool channel = false; ///< a per-channel gate [.., seq, d_k] (KDA)
  bool noDelta = false; ///< no delta correction (Mamba2's SSD)
  SmallVector<bufferization::MaterializeInDestinationOp> dests;
};

LogicalResult readSource(scf::ForallOp forall, GatedDeltaSource &s) {
  GatedDeltaChunkOp chunk;
  forall.getBody()->walk([&](GatedDeltaChunkOp op) {
    if (!chunk)
      chunk = op;
  });
  if (!chunk)
    return forall.emitOpError("a gated-delta forall without "
                              "attn.gated_delta_chunk");
  auto sourceOf = [&](Value x, Value &into) -> LogicalResult {
    auto slice = x.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice)
      return chunk.emitOpError("expects its inputs to be slices of the "
                               "sequence's tensors (attn-tile-gated-delta)");
    into = slice.getSource();
    return success();
  };
  s.channel = chunk.hasChannelGate();
  s.noDelta = chunk.getNoDelta();
  if (failed(sourceOf(chunk.getQuery(), s.q)) ||
      failed(sourceOf(chunk.getKey(), s.k)) ||
      failed(sourceOf(chunk.getValue(), s.v)) ||
      failed(sourceOf(chunk.getGate(), s.g)) ||
      failed(sourceOf(chunk.getBeta(), s.beta)))
    return failure();
  s.scale = chunk.getScale().convertToDouble();
  // The sequence's length: `tensor.extract %lengths[b]` in the forall.
  forall.getBody()->walk([&](tensor::ExtractOp e) {
    auto t = cast<RankedTensorType>(e.getTensor().getType());
    if (t.getRank() == 1 && isa<IntegerType>(t.getElementType()))
      s.lengths = e.getTensor();
  });
  // The initial state: the recurrent chunk op's initial_state, or the
  // linalg.copy that starts the chunked form's.
  if (Value init = chunk.getInitialState()) {
    if (failed(sourceOf(init, s.init)))
      return failure();
  } else {
    forall.getBody()->walk([&](linalg::CopyOp copy) {
      if (auto slice =
              copy.getInputs()[0].getDefiningOp<tensor::ExtractSliceOp>())
        s.init = slice.getSource();
    });
  }
  for (unsigned i = 0; i < 2; ++i) {
    Value r = forall.getResult(i);
    bufferization::MaterializeInDestinationOp dest;
    if (r.hasOneUse())
      dest = dyn_cast<bufferization::MaterializeInDestinationOp>(
          *r.getUsers().begin());
    if (!dest || !isa<BaseMemRefType>(dest.getDest().getType()))
      return forall.emitOpError(
          "the GPU backend compiles kernel entries: the output and the final "
          "state must be materialized into the entry's buffers");
    (i == 0 ? s.out : s.state) = dest.getDest();
    s.dests.push_back(dest);
  }
  return success();
}

} // namespace

LogicalResult mlir::attn::gpu_kernels::emitGatedDeltaGPU(scf::ForallOp forall,
                                                         Type mmaElt) {
  // Long: one kernel body in program order; its parts share many values.
  GatedDeltaSource s;
  if (failed(readSource(forall, s)))
    return failure();
  auto vTy = cast<RankedTensorType>(s.v.getType()),
       kTy = cast<RankedTensorType>(s.k.getType());
  for (Value t : {s.q, s.k, s.v, s.g, s.beta})
    if (!cast<ShapedType>(t.getType()).getElementType().isF32())
      return forall.emitOpError("the GPU kernels take fp32 tensors for now");
  int64_t hv = vTy.getDimSize(1), hk = kTy.getDimSize(1),
          dk = kTy.getDimSize(3), dv = vTy.getDimSize(3);
  int64_t parts = (dk + 31) / 32, rows = (dk + parts - 1) / parts;
  // The state's columns are independent (each its own δ_j, o_j): a value
  // head's columns go to `colBlocks` blocks of `cols` (at least a warp's
  // 32, whole divisors of d_v) until the heads' blocks reach kGridBlocks,
  // so that a decode step of a few sequences keeps the SMs busy.
  constexpr int64_t kGridBlocks = 264;
  int64_t colBlocks = 1;
  while (dv % (colBlocks * 2) == 0 && dv / (colBlocks * 2) >= 32 &&
         hv * colBlocks < kGridBlocks)
    colBlocks *= 2;
  int64_t cols = dv / colBlocks;
  int64_t threads = cols * parts;
  if (threads > 1024)
    return forall.emitOpError("the GPU gated-delta kernel holds a state column "
                              "per thread: a block's columns · ceil(d_k / "
                              "32) = ")
           << threads << " threads, more than a block's 1024";
  OpBuilder b(s.dests.front());
  Location loc = forall.getLoc();
  TiledSource unused;
  KernelEmitter e{b, loc, unused};
  auto buffer = [&](Value t) -> Value {
    auto ty = cast<RankedTensorType>(t.getType());
    return bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(ty.getShape(), ty.getElementType()), t,
        /*readOnly=*/true);
  };
  Value q = buffer(s.q);
  Value k = buffer(s.k);
  Value v = buffer(s.v);
  Value g = buffer(s.g);
  Value beta = buffer(s.beta);
  Value init = s.init ? buffer(s.init) : Value();
  Value lengths = s.lengths ? buffer(s.lengths) : Value();
  Value seq = memref::DimOp::create(b, loc, v, 2);
  Value batch = memref::DimOp::create(b, loc, v, 0);
  // Tensor cores (bf16/f16 precision) where the chunked kernel takes the
  // shape: it runs sequences of kChunkedFrom tokens or more, the recurrent
  // kernel below the shorter ones (decode).
  if (mmaElt && gatedDeltaChunkFits(dk, dv)) {
    GatedDeltaBuffers bufs{q, k, v, g, beta, init, lengths, s.out, s.state};
    bufs.scale = s.scale;
    bufs.noDelta = s.noDelta;
    bufs.channel = s.channel;
    bufs.hv = hv;
    bufs.hk = hk;
    bufs.dk = dk;
    bufs.dv = dv;
    constexpr int64_t kChunkedFrom = 32;
    Value from = e.c(kChunkedFrom);
    Value chunked = e.cmp(arith::CmpIPredicate::sge, seq, from);
    auto ifOp = scf::IfOp::create(b, loc, chunked, /*withElseRegion=*/true);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    e.mmaElt = mmaElt;
    emitGatedDeltaChunked(e, bufs);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  }
  auto wg = gpu::AddressSpaceAttr::get(b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  Type f32 = b.getF32Type();
  // Staged per token: q (scaled), k and, with a per-channel gate, each
  // key channel's decay e^{g_t[i]}.
  int64_t stagedRows = s.channel ? 3 : 2;
  auto qkTy = MemRefType::get({stagedRows, parts * rows}, f32,
                              MemRefLayoutAttrInterface(), wg);
  auto redTy =
      MemRefType::get({parts, cols}, f32, MemRefLayoutAttrInterface(), wg);
  // One op created per statement below: the IR must not depend on the host
  // compiler's order of evaluating arguments (tools/check-host-compiler.sh).
  Value one = e.c(1);
  Value gridX = e.c(hv * colBlocks);
  Value blockX = e.c(threads);
  auto launch = gpu::LaunchOp::create(
      b, loc, gridX, batch, one, blockX, one, one,
      /*dynamicSharedMemorySize=*/Value(), /*asyncTokenType=*/Type(),
      /*asyncDependencies=*/ValueRange(), TypeRange{qkTy, redTy, redTy});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value qk = launch.getWorkgroupAttributions()[0];
    Value red = launch.getWorkgroupAttributions()[1];
    Value red2 = launch.getWorkgroupAttributions()[2];
    Value bx = launch.getBlockIds().x, bi = launch.getBlockIds().y;
    Value tid = launch.getThreadIds().x;
    // Block x: value head h, its column block; thread: part p (rows) and
    // column jl of the block (j of the state).
    Value colBlocksC = e.c(colBlocks);
    Value h = arith::DivUIOp::create(b, loc, bx, colBlocksC);
    Value cb = arith::RemUIOp::create(b, loc, bx, colBlocksC);
    Value colsC = e.c(cols);
    Value jl = arith::RemUIOp::create(b, loc, tid, colsC);
    Value p = arith::DivUIOp::create(b, loc, tid, colsC);
    Value col0 = e.mul(cb, colsC);
    Value j = e.add(col0, jl);
    Value ratio = e.c(hv / hk);
    Value hkIdx = arith::DivUIOp::create(b, loc, h, ratio);
    Value rowsC = e.c(rows);
    Value row0 = e.mul(p, rowsC);
    auto rowOf = [&](int64_t r) {
      Value off = e.c(r);
      return e.add(row0, off);
    };
    Value zeroF = e.f32(0.0);
    Value zeroI = e.c(0);
    Value dkC = e.c(dk);
    Value stride = e.c(threads);
    // Zero the staged q/k (the padding rows stay 0), then the state.
    Value width = e.c(parts * rows);
    Value staged = e.c(stagedRows * parts * rows);
    e.loop(tid, staged, stride, ValueRange{},
           [&](Value idx, ValueRange) -> SmallVector<Value> {
             Value w = arith::DivUIOp::create(b, loc, idx, width);
             Value col = arith::RemUIOp::create(b, loc, idx, width);
             memref::StoreOp::create(b, loc, zeroF, qk, ValueRange{w, col});
             return {};
           });
    SmallVector<Value> st;
    Value lastRow = e.c(dk - 1);
    for (int64_t r = 0; r < rows; ++r) {
      if (!init) {
        st.push_back(zeroF);
        continue;
      }
      Value i = rowOf(r);
      Value valid = e.cmp(arith::CmpIPredicate::slt, i, dkC);
      Value clamped = e.min(i, lastRow);
      Value x = memref::LoadOp::create(b, loc, init,
                                       ValueRange{bi, h, clamped, j});
      st.push_back(e.select(valid, x, zeroF));
    }
    gpu::BarrierOp::create(b, loc);
    Value scale = e.f32(s.scale);
    Value log2e = e.f32(kLog2e);
    // This sequence's own tokens, [0, len): len = clamp(lengths[b], 0, seq).
    Value len = sequenceLength(e, lengths, bi, seq);
    scf::ForOp tokens = e.loop(
        zeroI, len, one, st, [&](Value t, ValueRange S) {
          // q_t (scaled) and k_t into shared memory.
          e.loop(tid, dkC, stride, ValueRange{},
                 [&](Value i, ValueRange) -> SmallVector<Value> {
                   Value qi = memref::LoadOp::create(
                       b, loc, q, ValueRange{bi, hkIdx, t, i});
                   Value ki = memref::LoadOp::create(
                       b, loc, k, ValueRange{bi, hkIdx, t, i});
                   Value qs = e.fmul(qi, scale);
                   memref::StoreOp::create(b, loc, qs, qk,
                                           ValueRange{zeroI, i});
                   memref::StoreOp::create(b, loc, ki, qk,
                                           ValueRange{one, i});
                   if (s.channel) {
                     Value gi = memref::LoadOp::create(b, loc, g,
                                                       ValueRange{bi, h, t, i});
                     Value di = e.exp2(e.fmul(gi, log2e));
                     Value two = e.c(2);
                     memref::StoreOp::create(b, loc, di, qk,
                                             ValueRange{two, i});
                   }
                   return {};
                 });
          gpu::BarrierOp::create(b, loc);
          SmallVector<Value> kr, qr, dr;
          for (int64_t r = 0; r < rows; ++r) {
            Value i = rowOf(r);
            kr.push_back(
                memref::LoadOp::create(b, loc, qk, ValueRange{one, i}));
            qr.push_back(
                memref::LoadOp::create(b, loc, qk, ValueRange{zeroI, i}));
            if (s.channel) {
              Value two = e.c(2);
              dr.push_back(
                  memref::LoadOp::create(b, loc, qk, ValueRange{two, i}));
            }
          }
          // kv_j over this thread's rows (each row decayed by its channel's
          // factor with a per-channel gate), then over the P parts.
          // (None without the delta correction.)
          Value kv = zeroF;
          if (!s.noDelta) {
            Value part = zeroF;
            for (int64_t r = 0; r < rows; ++r) {
              Value kd = s.channel ? e.fmul(kr[r], dr[r]) : kr[r];
              part = e.fma(S[r], kd, part);
            }
            memref::StoreOp::create(b, loc, part, red, ValueRange{p, jl});
            gpu::BarrierOp::create(b, loc);
            for (int64_t x = 0; x < parts; ++x) {
              Value xi = e.c(x);
              Value px =
                  memref::LoadOp::create(b, loc, red, ValueRange{xi, jl});
              kv = e.fadd(kv, px);
            }
          }
          Value decay;
          if (!s.channel) {
            Value gt = memref::LoadOp::create(b, loc, g, ValueRange{bi, h, t});
            decay = e.exp2(e.fmul(gt, log2e));
          }
          Value bt = memref::LoadOp::create(b, loc, beta, ValueRange{bi, h, t});
          Value vj = memref::LoadOp::create(b, loc, v, ValueRange{bi, h, t, j});
          Value delta;
          if (s.noDelta) {
            delta = e.fmul(bt, vj);
          } else {
            Value decayedKv = s.channel ? kv : e.fmul(decay, kv);
            Value err = arith::SubFOp::create(b, loc, vj, decayedKv);
            delta = e.fmul(bt, err);
          }
          SmallVector<Value> next;
          Value po = zeroF;
          for (int64_t r = 0; r < rows; ++r) {
            Value old = e.fmul(s.channel ? dr[r] : decay, S[r]);
            Value sNew = e.fma(kr[r], delta, old);
            next.push_back(sNew);
            po = e.fma(sNew, qr[r], po);
          }
          memref::StoreOp::create(b, loc, po, red2, ValueRange{p, jl});
          gpu::BarrierOp::create(b, loc);
          Value first = e.cmp(arith::CmpIPredicate::eq, p, zeroI);
          auto ifOp = scf::IfOp::create(b, loc, first, false);
          {
            OpBuilder::InsertionGuard g2(b);
            b.setInsertionPointToStart(&ifOp.getThenRegion().front());
            Value o = zeroF;
            for (int64_t x = 0; x < parts; ++x) {
              Value xi = e.c(x);
              Value px =
                  memref::LoadOp::create(b, loc, red2, ValueRange{xi, jl});
              o = e.fadd(o, px);
            }
            memref::StoreOp::create(b, loc, o, s.out,
                                    ValueRange{bi, h, t, j});
          }
          return next;
        });
    // Padding tokens' outputs are 0.
    if (lengths) {
      Value first = e.cmp(arith::CmpIPredicate::eq, p, zeroI);
      auto ifOp = scf::IfOp::create(b, loc, first, false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      e.loop(len, seq, one, ValueRange{},
             [&](Value t, ValueRange) -> SmallVector<Value> {
               memref::StoreOp::create(b, loc, zeroF, s.out,
                                       ValueRange{bi, h, t, j});
               return {};
             });
    }
    // The final state.
    for (int64_t r = 0; r < rows; ++r) {
      Value i = rowOf(r);
      Value valid = e.cmp(arith::CmpIPredicate::slt, i, dkC);
      auto ifOp = scf::IfOp::create(b, loc, valid, false);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      memref::StoreOp::create(b, loc, tokens.getResult(r), s.state,
                              ValueRange{bi, h, i, j});
    }
    gpu::TerminatorOp::create(b, loc);
  }
  for (auto dest : s.dests)
    dest.erase();
  forall.erase();
  return success();
}
