//===- GatedDeltaKernel.cpp - CPU code for attn.gated_delta_chunk ---------===//
//
// This file implements the CPU micro-kernel of the buffer form of
// `attn.gated_delta_chunk` (one value head, one chunk of n tokens, state
// [d_k, d_v] in place), emitted by attn-cpu-micro-kernel into a tile
// function. W f32 lanes; d_k, d_v padded to multiples of W (dkp, dvp) in
// the scratch, so that every shape takes the vector code.
//
// Chunked form, per sub-chunk of C = 64 tokens (the op's n tokens are
// normally one sub-chunk; padding tokens have k = v = 0, β = 0, g = 0 and
// leave the state alone):
//
//   1. load: Qs = scale·q, Ks = k, Kt = kᵀ, Vb = U = β·v, Kb = Wm = β·e^c·k,
//      c the gate's prefix sum, held as an unevaluated sum hi + lo of two
//      f32 (TwoSum) so that e^(c_i − c_j) keeps full precision after a
//      very negative gate (a state reset makes c large);
//   2. A = Ks·Kt, QK = Qs·Kt (register-tiled GEMMs, below);
//   3. the decay Γ[i,j] = e^(c_i − c_j) (j ≤ i) folded in, vector by vector:
//      A ← −β_i·A⊙Γ strictly below the diagonal (0 elsewhere),
//      QK ← QK⊙Γ on and below it;
//   4. T = (I − A)⁻¹ − I by forward substitution, one row in registers:
//      T[i,:] = A[i,:] + Σ_{m<i} A[i,m]·T[m,:];
//   5. U += T·Vb, Wm += T·Kb (so U = (I+T)·Vb, Wm = (I+T)·Kb);
//   6. U −= Wm·S (U is now V', the chunk's corrected values);
//   7. Qs ← e^c·Qs, O = Qs·S + QK·U;
//   8. S ← e^(c_last)·S + (e^(c_last − c)·Ks)ᵀ·U.
//
// Without the delta correction (`no_delta`, Mamba2's SSD) steps 2's A, 4,
// 5 and 6 vanish (T = I, W = 0): U = β·v is V'.
//
// A per-channel gate (Kimi Delta Attention) makes c a prefix sum per key
// channel, c_i[x], and the decay cannot leave the products of steps 2-3
// (flash-linear-attention's chunk_kda): A[i,j] = Σ_x k_i[x]·k_j[x]·
// e^(c_i[x] − c_j[x]), likewise QK with Qs. Per band of 16 rows starting
// at row r, the blocks left of the band's diagonal are one GEMM each,
// (K_i ⊙ e^(c_i − c_r))·(K_j ⊙ e^(c_r − c_j))ᵀ: both factors ≤ 1 (c only
// decreases), so no exponent overflows however strong the decay (the
// columns' rows scaled, then transposed by W×W blocks into the GEMM's B).
// A band whose c stays within 40 of c_r on every channel (bandIsNarrow:
// any model's gates over 16 tokens, short of a state reset) has its 16×16
// diagonal block in the same GEMM, its columns' factors e^(c_r − c_j) ≤
// e^40, the upper part then zeroed; a wider band takes e^(c_i − c_j)
// element by element there (≤ 1): one vector exp per pair of rows and W
// channels, and two horizontal sums per pair.
// Steps 1, 7 and 8 scale per channel: Kb = β·e^c⊙k, Qs ← e^c⊙Qs, Ks ←
// e^(c_last − c)⊙Ks, S[x, :] ← e^(c_last[x])·S[x, :].
//
// Each GEMM is C[M,N] (+)= A·B with B row-major (N contiguous) in a block of
// R rows × NV vectors of accumulators: per k, NV loads of B, R broadcasts
// of A, R·NV FMAs (R = 4, NV = 4 with 32 vector registers; R = 2 with 16).
//
// Recurrent form (decode, few tokens): per token and per block of up to 8
// vectors of state columns (columns are independent), one pass over the
// rows accumulates Sᵀk, and a second one writes S ← e^g·S + k ⊗ δ with
// δ = β(v − e^g·Sᵀk) and accumulates o = Sᵀ(scale·q): two reads (the
// second from the cache: a head's state is 64 KiB at d 128) and one write
// of the state per token. Without the delta correction δ = β·v and the
// first pass is skipped. The first token reads the op's initial state
// where it is (no copy into the destination). A one-token call (decode)
// into an aligned, unpadded state prefetches the rows 8 ahead and writes
// the new state with non-temporal stores: the state is read from memory
// once and written once, without the write's read-for-ownership (the
// next step's state comes after the other layers', out of the caches).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/GatedDeltaEmitter.h"
#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gated_delta;

void GDEmitter::copyState(bool in) {
  Value st = op.getState(), sp = s[Sp];
  Value from = in && init ? init : st;
  loop(0, idx(dk), [&](Value i) {
    for (int64_t j0 = 0; j0 < dvp; j0 += W) {
      if (in) {
        Value x = readRow(from, i, j0, dv);
        vstore(x, sp, {i, idx(j0)});
      } else {
        writeRow(vload(sp, {i, idx(j0)}), st, i, j0, dv);
      }
    }
  });
}

void GDEmitter::emit() {
  // Padded state rows (dk..dkp) and columns stay zero: Sp is zeroed
  // first when d_k or d_v is not a multiple of W.
  bool padded = dk % W != 0 || dv % W != 0;
  if (padded) {
    loop(0, idx(dkp), [&](Value i) {
      for (int64_t j0 = 0; j0 < dvp; j0 += W) {
        Value z = zeros();
        vstore(z, s[Sp], {i, idx(j0)});
      }
    });
    copyState(/*in=*/true);
    state = s[Sp];
    init = Value();
  } else {
    state = op.getState();
  }
  Value n = memref::DimOp::create(b, loc, op.getQuery(), 0);
  if (op.getRecurrent())
    recurrent(n);
  else {
    if (init) {
      // The chunked form works on the state in place: start it from the
      // initial state.
      copyInit();
      init = Value();
    }
    Value zero = idx(0), step = idx(kChunk);
    loop(zero, n, step, [&](Value t0) {
      Value left = arith::SubIOp::create(b, loc, n, t0);
      Value len = arith::MinSIOp::create(b, loc, step, left);
      chunk(t0, len);
    });
  }
  if (padded)
    copyState(/*in=*/false);
}

Value GDEmitter::isAligned(Value m) {
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, m);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, m);
  Value bytes = arith::MulIOp::create(b, loc, md.getOffset(), idx(4));
  Value addr = arith::AddIOp::create(b, loc, base, bytes);
  Value rem = arith::RemUIOp::create(b, loc, addr, idx(W * 4));
  Value rowRem = arith::RemUIOp::create(b, loc, md.getStrides()[0], idx(W));
  Value sum = arith::OrIOp::create(b, loc, rem, rowRem);
  Value zero = idx(0);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, sum, zero);
}

void GDEmitter::copyInit() {
  loop(0, idx(dk), [&](Value i) {
    for (int64_t j0 = 0; j0 < dvp; j0 += W)
      vstore(vload(init, {i, idx(j0)}), state, {i, idx(j0)});
  });
}

void GDEmitter::recurrent(Value n) {
  if (state != op.getState()) {
    // Padded: the code works on the scratch copy Sp.
    recurrentTokens(n);
    return;
  }
  // One token (decode) into a state aligned to the vectors: the new
  // state is written with non-temporal stores, which skip reading its
  // lines first (a third of a decode step's memory traffic: the state is
  // not read again before the next step, the other layers' states in
  // between).
  Value one = idx(1);
  Value single =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, one);
  Value aligned = isAligned(state);
  Value stream = arith::AndIOp::create(b, loc, single, aligned);
  auto decode = scf::IfOp::create(b, loc, stream, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&decode.getThenRegion().front());
  // (attn-fence-streaming-stores fences them before the tile function
  // returns: they are weakly ordered.)
  recurrentToken(idx(0), init ? init : state, /*streaming=*/true);
  b.setInsertionPointToStart(&decode.getElseRegion().front());
  recurrentTokens(n);
}

void GDEmitter::recurrentTokens(Value n) {
  if (!init) {
    loop(0, n, [&](Value t) { recurrentToken(t, state); });
    return;
  }
  Value zero = idx(0);
  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, n, zero);
  auto first = scf::IfOp::create(b, loc, any, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&first.getThenRegion().front());
    recurrentToken(zero, init);
    // No tokens (a padding row of a batch): the state is the initial one.
    b.setInsertionPointToStart(&first.getElseRegion().front());
    copyInit();
  }
  loop(1, n, [&](Value t) { recurrentToken(t, state); });
}

void GDEmitter::recurrentToken(Value t, Value from, bool streaming) {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  Value scale = f32(op.getScale().convertToDouble());
  int64_t vecs = dvp / W;
  // The decay: one factor per token, or per key channel (row i) with a
  // per-channel gate (KDA), folded into k_i for Sᵀk.
  bool channel = op.hasChannelGate();
  Value ev;
  if (!channel)
    ev = splat(exp(load(op.getGate(), {t})));
  auto rowDecay = [&](Value i) {
    return channel ? exp(load(op.getGate(), {t, i})) : Value();
  };
  Value beta = splat(load(op.getBeta(), {t}));
  for (int64_t v0 = 0; v0 < vecs; v0 += 8) {
    int64_t nv = std::min<int64_t>(8, vecs - v0);
    SmallVector<Value> acc0(nv, zeros());
    Value zero = idx(0), dkEnd = idx(dk);
    // The state's reads, 8 rows ahead when it streams from memory.
    auto prefetch = [&](Value i) {
      if (!streaming)
        return;
      // A cache line per prefetch.
      Value ahead = arith::AddIOp::create(b, loc, i, idx(8));
      Value last = idx(dk - 1);
      Value row = arith::MinSIOp::create(b, loc, ahead, last);
      int64_t perLine = std::max<int64_t>(1, 64 / (W * 4));
      for (int64_t x = 0; x < nv; x += perLine)
        memref::PrefetchOp::create(b, loc, from,
                                   ValueRange{row, idx((v0 + x) * W)},
                                   /*isWrite=*/false,
                                   /*localityHint=*/3,
                                   /*isDataCache=*/true);
    };
    SmallVector<Value> delta;
    if (noDelta) {
      // δ = β·v: one pass over the state.
      for (int64_t x = 0; x < nv; ++x) {
        Value vt_ = readRow(v, t, (v0 + x) * W, dv);
        delta.push_back(fmul(vt_, beta));
      }
    } else {
      SmallVector<Value> kv =
          loop(zero, dkEnd, acc0, [&](Value i, ValueRange a) {
            Value kRaw = load(k, {t, i});
            if (Value d = rowDecay(i))
              kRaw = fmul(kRaw, d);
            Value ki = splat(kRaw);
            SmallVector<Value> next;
            prefetch(i);
            for (int64_t x = 0; x < nv; ++x) {
              Value sx = vload(from, {i, idx((v0 + x) * W)});
              next.push_back(fma(ki, sx, a[x]));
            }
            return next;
          });
      for (int64_t x = 0; x < nv; ++x) {
        Value vt_ = readRow(v, t, (v0 + x) * W, dv);
        Value decayed = channel ? kv[x] : fmul(ev, kv[x]);
        delta.push_back(fmul(fsub(vt_, decayed), beta));
      }
    }
    SmallVector<Value> o = loop(zero, dkEnd, acc0, [&](Value i, ValueRange a) {
      Value ki = splat(load(k, {t, i}));
      Value qi = splat(fmul(load(q, {t, i}), scale));
      Value evi = channel ? splat(rowDecay(i)) : ev;
      SmallVector<Value> next;
      if (noDelta)
        prefetch(i);
      for (int64_t x = 0; x < nv; ++x) {
        Value col = idx((v0 + x) * W);
        Value at[] = {i, col};
        Value old = fmul(evi, vload(from, at));
        Value sNew = fma(ki, delta[x], old);
        if (streaming)
          vector::StoreOp::create(b, loc, sNew, state, at,
                                  /*nontemporal=*/true, llvm::Align(W * 4));
        else
          vstore(sNew, state, at);
        next.push_back(fma(qi, sNew, a[x]));
      }
      return next;
    });
    for (int64_t x = 0; x < nv; ++x)
      writeRow(o[x], op.getOut(), t, (v0 + x) * W, dv);
  }
}

namespace {

/// The scratch buffers a form uses, in allocation order: the recurrent
/// form's padded state (none when d_k and d_v are multiples of the lanes);
/// the chunked form's all, but A, Kb, Wm and Vb without the delta
/// correction (no solve, no W).
SmallVector<Scratch> scratchUsed(bool recurrent, bool noDelta, bool padded,
                                 bool channel) {
  if (recurrent)
    return padded ? SmallVector<Scratch>{Sp} : SmallVector<Scratch>{};
  SmallVector<Scratch> used;
  for (int x = 0; x < NumScratch; ++x) {
    if (noDelta && (x == A || x == Kb || x == Wm || x == Vb || x == Rk))
      continue;
    if (!channel && (x == Rk || x == Rq || x == Ct || x == Cs))
      continue;
    if (channel && x == Kt)
      continue;
    used.push_back(Scratch(x));
  }
  return used;
}

} // namespace

SmallVector<Value>
mlir::attn::allocateGatedDeltaScratch(OpBuilder &b, Location loc, int64_t dk,
                                      int64_t dv, int64_t lanes, bool recurrent,
                                      bool noDelta, bool channel) {
  IntegerAttr align = b.getI64IntegerAttr(64);
  Type f32 = b.getF32Type();
  int64_t dkp = roundUp(dk, lanes), dvp = roundUp(dv, lanes), C = kChunk;
  SmallVector<SmallVector<int64_t, 2>> shapes(NumScratch);
  shapes[Qs] = shapes[Ks] = shapes[Kb] = shapes[Wm] = {C, dkp};
  shapes[Kt] = {dkp, C};
  shapes[Vb] = shapes[U] = shapes[O] = {C, dvp};
  shapes[A] = shapes[QK] = {C, C};
  shapes[Sp] = {dkp, dvp};
  shapes[Gc] = shapes[Gl] = shapes[Bt] = {C};
  // Per-channel prefix sums, and the band buffers.
  if (channel)
    shapes[Gc] = shapes[Gl] = {C, dkp};
  shapes[Rk] = shapes[Rq] = shapes[Cs] = {C, dkp};
  shapes[Ct] = {dkp, C};
  SmallVector<Value> out;
  for (Scratch x :
       scratchUsed(recurrent, noDelta, dkp != dk || dvp != dv, channel))
    out.push_back(memref::AllocOp::create(
        b, loc, MemRefType::get(shapes[x], f32), align));
  return out;
}

void mlir::attn::emitGatedDeltaKernel(OpBuilder &b, GatedDeltaChunkOp tile,
                                      ValueRange scratch, int64_t lanes) {
  auto q = cast<ShapedType>(tile.getQuery().getType());
  auto v = cast<ShapedType>(tile.getValue().getType());
  int64_t dk = q.getDimSize(1), dv = v.getDimSize(1);
  // The buffers allocateGatedDeltaScratch made, at their places (null
  // for those the form does not use).
  SmallVector<Value> buffers(NumScratch, Value());
  SmallVector<Scratch> used =
      scratchUsed(tile.getRecurrent(), tile.getNoDelta(),
                  dk % lanes != 0 || dv % lanes != 0, tile.hasChannelGate());
  assert(used.size() == scratch.size() && "scratch of another form");
  for (auto [x, buffer] : llvm::zip_equal(used, scratch))
    buffers[x] = buffer;
  GDEmitter e{b,
              tile.getLoc(),
              tile,
              tile.getNoDelta(),
              tile.hasChannelGate(),
              lanes,
              microKernelRows(lanes),
              dk,
              dv,
              roundUp(dk, lanes),
              roundUp(dv, lanes),
              buffers,
              VectorType::get({lanes}, b.getF32Type()),
              Value(),
              tile.getInitialState()};
  e.emit();
}

bool mlir::attn::gatedDeltaKernelHandles(Operation *op) {
  auto chunk = dyn_cast<GatedDeltaChunkOp>(op);
  if (!chunk)
    return false;
  for (Value x : chunk->getOperands())
    if (!cast<ShapedType>(x.getType()).getElementType().isF32())
      return false;
  return true;
}
