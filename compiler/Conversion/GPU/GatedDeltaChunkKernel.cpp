//===- GatedDeltaChunkKernel.cpp - chunked Gated DeltaNet on tensor cores -===//
//
// This file implements the chunked (WY/UT) form of the gated delta rule on
// the GPU's tensor cores (mma.sync m16n8k16, bf16 or f16 operands, fp32
// accumulators and state), the GPU twin of the CPU kernel's chunked form
// (compiler/Conversion/CPU/GatedDeltaKernel.cpp, steps 1 to 8, whose
// notation this follows) and of flash-linear-attention's
// chunk_gated_delta_rule:
//
//   grid  = (value head × d_v / Dvb column blocks, batch), Dvb = 64 (or d_v
//           where it is smaller): the state's columns are independent;
//   block = 4 warps; per chunk of C = 64 tokens, warp w owns tokens
//           [16w, 16w + 16) of the chunk's products and rows
//           [w·d_k/4, (w + 1)·d_k/4) of the state slice S [d_k, Dvb], kept
//           in fp32 in the entry's final-state buffer between chunks (each
//           thread reads back its own mma C fragments' elements: no
//           registers held across the chunk's other steps) with a bf16
//           copy in shared memory, every product's B operand;
//   per chunk:
//     1. g and β of the chunk's tokens (0 past its n tokens: padding tokens
//        leave the state alone) and, by one thread, the gate's prefix sums
//        c held as hi + lo (TwoSum, as the CPU kernel);
//     2. the tiles, rounded to bf16: Qs = scale·q, Ks = k, Kb = β·e^c·k,
//        Kd = e^(c_last − c)·k, Vb = β·v (the decays ≤ 1: c decreases);
//     3. A = Ks·Ksᵀ and QK = Qs·Ksᵀ (64 × 64); the decay Γ = e^(c_i − c_j)
//        folded in: A ← −β_i·A⊙Γ strictly below the diagonal, QK ← QK⊙Γ on
//        and below it;
//     4. T = (I − A)⁻¹ − I by forward substitution, one column per thread
//        of the first two warps, in registers (unrolled: 2,016 FMAs);
//     5. U = (I + T)·Vb, W = (I + T)·Kb;
//     6. U ← U − W·S (V', the chunk's corrected values);
//     7. O = e^c ⊙ (Qs·S) + QK·U, stored for the chunk's tokens;
//     8. S ← e^(c_last)·S + Kdᵀ·U.
//   Without the delta correction (Mamba2's SSD) steps 3's A, 4, 5's W and 6
//   vanish: U = Vb. A per-channel gate (Kimi Delta Attention) replaces
//   steps 1-3's prefix sums, scores and Kd, and the decays of steps 7-8,
//   by GatedDeltaChunkChannel.cpp's.
//
// Fragments come from shared memory by ldmatrix (rows padded by 16 bytes):
// row-major A operands (Qs, Ks, I + T, QK) as the attention kernel's Q,
// Kdᵀ transposed from Kd's rows, B operands of the k × n tiles (Vb, Kb, S,
// U) transposed as its V, Ksᵀ as its K; a C fragment becomes the next
// product's A operand in registers (W for step 6, as the attention
// kernel's P).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/GatedDeltaChunkEmitter.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;

namespace mlir::attn::gpu_kernels::chunk {

void ChunkEmitter::setUp(gpu::LaunchOp launch) {
  tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(b, loc, tid, c(kWarp));
  warp = arith::DivUIOp::create(b, loc, tid, c(kWarp));
  Value bx = launch.getBlockIds().x;
  bi = launch.getBlockIds().y;
  int64_t colBlocks = g.dv / dvb;
  h = arith::DivUIOp::create(b, loc, bx, c(colBlocks));
  Value cb = arith::RemUIOp::create(b, loc, bx, c(colBlocks));
  col0 = e.mul(cb, c(dvb));
  hkIdx = arith::DivUIOp::create(b, loc, h, c(g.hv / g.hk));
  // Fragment coordinates and ldmatrix lane offsets (MmaKernel.cpp's).
  gq = arith::DivUIOp::create(b, loc, lane, c(4));
  Value tq = arith::RemUIOp::create(b, loc, lane, c(4));
  col2 = e.mul(tq, c(2));
  Value l8 = arith::RemUIOp::create(b, loc, lane, c(8));
  Value half = arith::DivUIOp::create(b, loc, lane, c(16));
  Value hi16 = e.mul(half, c(8));
  Value eighth = arith::DivUIOp::create(b, loc, lane, c(8));
  Value odd = arith::RemUIOp::create(b, loc, eighth, c(2));
  Value odd8 = e.mul(odd, c(8));
  aRow = arith::RemUIOp::create(b, loc, lane, c(16));
  aCol = hi16;
  kRow = e.add(l8, hi16);
  kCol = odd8;
  vRow = e.add(l8, odd8);
  vCol = hi16;
  // The tiles: views of the dynamic shared memory.
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto bytesTy = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                 MemRefLayoutAttrInterface(), wg);
  Value smem = gpu::DynamicSharedMemoryOp::create(b, loc, bytesTy);
  int64_t offset = 0;
  auto view = [&](ArrayRef<int64_t> shape, Type elt) {
    auto ty = MemRefType::get(shape, elt, MemRefLayoutAttrInterface(), wg);
    Value v = memref::ViewOp::create(b, loc, ty, smem, c(offset), ValueRange{});
    offset += llvm::alignTo(ty.getNumElements() * (elt.isF32() ? 4 : 2), 128);
    return v;
  };
  Type n16 = e.mmaElt, f32 = b.getF32Type();
  qs = view({kChunk, dk + kPad}, n16);
  ks = view({kChunk, dk + kPad}, n16);
  kd = channel ? ks : view({kChunk, dk + kPad}, n16);
  if (!g.noDelta)
    kb = view({kChunk, dk + kPad}, n16);
  vb = view({kChunk, dvb + kPad}, n16);
  ub = g.noDelta ? vb : view({kChunk, dvb + kPad}, n16);
  sb = view({dk, dvb + kPad}, n16);
  qk = view({kChunk, kChunk + kPad}, n16);
  if (!g.noDelta) {
    tb = view({kChunk, kChunk + kPad}, n16);
    af = view({kChunk, kChunk + 1}, f32);
  }
  cHi = view({kChunk}, f32);
  cLo = view({kChunk}, f32);
  gS = view({kChunk}, f32);
  bS = view({kChunk}, f32);
  if (channel)
    cCh = view({kChunk, dk + kChannelPad}, f32);
}

void ChunkEmitter::loadState() {
  // S's fragment elements (m-tile t of this warp's rows, 8-column tile n):
  // the initial state (or zeros) into the final-state buffer and, rounded,
  // into sb.
  for (int64_t t = 0; t < mtS; ++t) {
    Value r0 = stateRow0(t);
    for (int64_t n = 0; n < dvb / 8; ++n)
      for (int64_t x = 0; x < 4; ++x) {
        Value row = fragRow(r0, x), col = fragCol(n, x);
        Value at = e.add(col0, col);
        Value v = e.f32(0.0);
        if (g.init)
          v = ld(g.init, {bi, h, row, at});
        st(v, g.state, {bi, h, row, at});
        st(e.toNarrow(v), sb, {row, col});
      }
  }
}

SmallVector<Value> ChunkEmitter::stateAt(Value d0) {
  SmallVector<Value> f;
  for (int64_t n = 0; n < dvb / 8; ++n)
    for (int64_t x = 0; x < 4; ++x)
      f.push_back(
          ld(g.state, {bi, h, fragRow(d0, x), e.add(col0, fragCol(n, x))}));
  return f;
}

void ChunkEmitter::gatesAndPrefix(Value t0, Value n) {
  if (channel) {
    channelPrefix(t0, n);
    return;
  }
  // g and β of token t (0 past the chunk's n tokens).
  Value inChunk = e.cmp(arith::CmpIPredicate::slt, tid, c(kChunk));
  e.ifThen(inChunk, [&] {
    Value valid = e.cmp(arith::CmpIPredicate::slt, tid, n);
    Value tok = e.min(e.add(t0, tid), lastToken);
    Value gt = ld(g.g, {bi, h, tok});
    Value bt = ld(g.beta, {bi, h, tok});
    st(e.select(valid, gt, e.f32(0.0)), gS, {tid});
    st(e.select(valid, bt, e.f32(0.0)), bS, {tid});
  });
  barrier();
  // The prefix sums c = hi + lo, by thread 0 (TwoSum per step).
  Value first = e.cmp(arith::CmpIPredicate::eq, tid, c(0));
  e.ifThen(first, [&] {
    Value hi = e.f32(0.0), lo = e.f32(0.0);
    for (int64_t t = 0; t < kChunk; ++t) {
      Value x = ld(gS, {c(t)});
      Value s = e.fadd(hi, x);
      Value bb = arith::SubFOp::create(b, loc, s, hi);
      Value sLessB = arith::SubFOp::create(b, loc, s, bb);
      Value errA = arith::SubFOp::create(b, loc, hi, sLessB);
      Value errB = arith::SubFOp::create(b, loc, x, bb);
      lo = e.fadd(lo, e.fadd(errA, errB));
      hi = s;
      st(hi, cHi, {c(t)});
      st(lo, cLo, {c(t)});
    }
  });
  barrier();
}

void ChunkEmitter::overChunk(
    Value t0, Value n, function_ref<void(Value, Value, Value, Value)> body) {
  e.loop(tid, c(kChunk * dk), c(kWarps * kWarp), ValueRange{},
         [&](Value idx, ValueRange) -> SmallVector<Value> {
           Value t = arith::DivUIOp::create(b, loc, idx, c(dk));
           Value i = arith::RemUIOp::create(b, loc, idx, c(dk));
           Value valid = e.cmp(arith::CmpIPredicate::slt, t, n);
           Value tok = e.min(e.add(t0, t), lastToken);
           body(t, i, valid, tok);
           return {};
         });
}

std::pair<Value, Value> ChunkEmitter::maskedQK(Value valid, Value tok,
                                               Value i) {
  Value zero = e.f32(0.0);
  Value scale = e.f32(g.scale);
  Value qv = ld(g.q, {bi, hkIdx, tok, i});
  Value kv = ld(g.k, {bi, hkIdx, tok, i});
  Value q = e.select(valid, e.fmul(qv, scale), zero);
  Value k = e.select(valid, kv, zero);
  return {q, k};
}

void ChunkEmitter::stageTiles(Value t0, Value n) {
  Value threads = c(kWarps * kWarp);
  Value zero = e.f32(0.0);
  Value last = c(kChunk - 1);
  overChunk(t0, n, [&](Value t, Value i, Value valid, Value tok) {
    auto [q, k] = maskedQK(valid, tok, i);
    st(e.toNarrow(q), qs, {t, i});
    st(e.toNarrow(k), ks, {t, i});
    // (A per-channel gate: Kd after the scores, into ks.)
    if (!channel)
      st(e.toNarrow(e.fmul(exp2e(cDiff(last, t)), k)), kd, {t, i});
    if (!g.noDelta) {
      Value bt = ld(bS, {t});
      Value ec = channel ? exp2e(ld(cCh, {t, i})) : exp2e(cAt(t));
      Value w = e.fmul(bt, ec);
      st(e.toNarrow(e.fmul(w, k)), kb, {t, i});
    }
  });
  e.loop(tid, c(kChunk * dvb), threads, ValueRange{},
         [&](Value idx, ValueRange) -> SmallVector<Value> {
           Value t = arith::DivUIOp::create(b, loc, idx, c(dvb));
           Value j = arith::RemUIOp::create(b, loc, idx, c(dvb));
           Value tok = e.min(e.add(t0, t), lastToken);
           Value vv = ld(g.v, {bi, h, tok, e.add(col0, j)});
           // (β is 0 past the chunk's tokens.)
           Value bt = ld(bS, {t});
           Value valid = e.cmp(arith::CmpIPredicate::slt, t, n);
           st(e.toNarrow(e.select(valid, e.fmul(bt, vv), zero)), vb, {t, j});
           return {};
         });
  barrier();
}

void ChunkEmitter::scores(Value r0) {
  // A = Ks·Ksᵀ and QK = Qs·Ksᵀ for this warp's 16 tokens x the chunk's 64,
  // two 8-token column tiles at a time (their accumulators only: the A
  // fragments are read again per pair), each pair finished at once: the
  // decay folded in (its exponent 0 above the diagonal: no overflow), QK
  // on and below the diagonal into qk (bf16), −β_i·A strictly below it
  // into af (fp32).
  Value zero = e.f32(0.0);
  for (int64_t j = 0; j < kChunk / 8; j += 2) {
    Frags a = zeroFrags(2), s = zeroFrags(2);
    for (int64_t kstep = 0; kstep < dk / 16; ++kstep) {
      SmallVector<Value> qa = aFrag(qs, r0, kstep);
      Value row = e.add(c(8 * j), kRow);
      Value col = e.add(c(16 * kstep), kCol);
      SmallVector<Value> r =
          e.ldmatrix4(ks, Value(), row, col, /*transpose=*/false);
      s[0] = e.mma(qa, {r[0], r[1]}, s[0]);
      s[1] = e.mma(qa, {r[2], r[3]}, s[1]);
      if (!g.noDelta) {
        SmallVector<Value> ka = aFrag(ks, r0, kstep);
        a[0] = e.mma(ka, {r[0], r[1]}, a[0]);
        a[1] = e.mma(ka, {r[2], r[3]}, a[1]);
      }
    }
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t x = 0; x < 4; ++x) {
        Value i = fragRow(r0, x), jc = fragCol(j + n, x);
        Value lower = e.cmp(arith::CmpIPredicate::sle, jc, i);
        Value diff = cDiff(i, jc);
        Value gamma = exp2e(e.select(lower, diff, zero));
        Value q = e.select(lower, e.fmul(s[n][x], gamma), zero);
        st(e.toNarrow(q), qk, {i, jc});
        if (g.noDelta)
          continue;
        Value strict = e.cmp(arith::CmpIPredicate::slt, jc, i);
        Value bRow = ld(bS, {i});
        Value nb = e.fmul(bRow, e.f32(-1.0));
        Value av = e.fmul(e.fmul(a[n][x], gamma), nb);
        st(e.select(strict, av, zero), af, {i, jc});
      }
  }
}

void ChunkEmitter::substitute() {
  // Column j of T = (I − A)⁻¹ − I, by thread j < 64: T[i][j] = A[i][j] +
  // Σ_{m<i} A[i][m]·T[m][j] (zero for i ≤ j by itself), in registers;
  // I + T into tb.
  Value inChunk = e.cmp(arith::CmpIPredicate::slt, tid, c(kChunk));
  e.ifThen(inChunk, [&] {
    Value j = tid;
    SmallVector<Value> col;
    for (int64_t i = 0; i < kChunk; ++i) {
      Value acc = ld(af, {c(i), j});
      for (int64_t m = 0; m < i; ++m)
        acc = e.fma(ld(af, {c(i), c(m)}), col[m], acc);
      col.push_back(acc);
      Value diag = e.cmp(arith::CmpIPredicate::eq, j, c(i));
      Value one = e.toNarrow(e.select(diag, e.f32(1.0), acc));
      st(one, tb, {c(i), j});
    }
  });
  barrier();
}

void ChunkEmitter::correctedValues(Value r0) {
  // U = (I + T)·Vb and W = (I + T)·Kb for this warp's 16 tokens, then
  // U ← U − W·S; U (bf16) into ub for every warp's steps 7 and 8.
  Frags u = zeroFrags(dvb / 8), w = zeroFrags(dk / 8);
  auto tA = [&](int64_t ks) { return aFrag(tb, r0, ks); };
  accumulateKN(u, tA, vb, kChunk / 16);
  accumulateKN(w, tA, kb, kChunk / 16);
  SmallVector<SmallVector<Value>> wa = asNegatedA(w);
  accumulateKN(
      u, [&](int64_t ks) { return wa[ks]; }, sb, dk / 16);
  storeFrags(u, ub, r0);
  barrier();
}

void ChunkEmitter::outputs(Value r0, Value t0, Value n) {
  // O = e^c ⊙ (Qs·S) + QK·U for this warp's 16 tokens, stored where they
  // are the chunk's.
  Frags o = zeroFrags(dvb / 8);
  accumulateKN(
      o, [&](int64_t ks) { return aFrag(qs, r0, ks); }, sb, dk / 16);
  // (A per-channel gate: e^c inside Qs already.)
  if (!channel) {
    Value ec[2] = {exp2e(cAt(fragRow(r0, 0))), exp2e(cAt(fragRow(r0, 2)))};
    for (auto &f : o)
      for (int64_t x = 0; x < 4; ++x)
        f[x] = e.fmul(f[x], ec[x / 2]);
  }
  accumulateKN(
      o, [&](int64_t ks) { return aFrag(qk, r0, ks); }, ub, kChunk / 16);
  for (int64_t nt = 0; nt < dvb / 8; ++nt)
    for (int64_t x = 0; x < 4; ++x) {
      Value t = fragRow(r0, x);
      Value valid = e.cmp(arith::CmpIPredicate::slt, t, n);
      e.ifThen(valid, [&] {
        Value col = e.add(col0, fragCol(nt, x));
        st(o[nt][x], g.out, {bi, h, e.add(t0, t), col});
      });
    }
}

void ChunkEmitter::updateState() {
  // S ← e^(c_last)·S + Kdᵀ·U: this warp's m-tiles of S's rows, read back
  // from the final-state buffer and written there again (a per-channel
  // gate: row k of S decayed by e^(c_last[k])).
  Value last = c(kChunk - 1);
  Value decay = channel ? Value() : exp2e(cAt(last));
  int64_t nTiles = dvb / 8;
  SmallVector<Frags> next;
  for (int64_t t = 0; t < mtS; ++t) {
    Value d0 = stateRow0(t);
    SmallVector<Value> old = stateAt(d0);
    Value rowDecay[2] = {decay, decay};
    if (channel)
      for (int64_t hr = 0; hr < 2; ++hr)
        rowDecay[hr] = exp2e(ld(cCh, {last, fragRow(d0, 2 * hr)}));
    Frags acc(nTiles);
    for (int64_t nt = 0; nt < nTiles; ++nt)
      for (int64_t x = 0; x < 4; ++x)
        acc[nt].push_back(e.fmul(old[nt * 4 + x], rowDecay[x / 2]));
    // Kdᵀ's A fragments: ldmatrix.trans of Kd's rows (tokens) at columns
    // d0 + ... (lanes as for Kᵀ's B fragments in the attention kernel).
    auto kdT = [&](int64_t ks) {
      Value row = e.add(c(16 * ks), kRow);
      Value col = e.add(d0, kCol);
      return e.ldmatrix4(kd, Value(), row, col, /*transpose=*/true);
    };
    accumulateKN(acc, kdT, ub, kChunk / 16);
    for (int64_t nt = 0; nt < nTiles; ++nt)
      for (int64_t x = 0; x < 4; ++x)
        st(acc[nt][x], g.state,
           {bi, h, fragRow(d0, x), e.add(col0, fragCol(nt, x))});
    next.push_back(acc);
  }
  // Every warp is done with sb (steps 6, 7): its bf16 copy renewed.
  barrier();
  for (int64_t t = 0; t < mtS; ++t)
    storeFrags(next[t], sb, stateRow0(t));
}

void ChunkEmitter::chunk(Value t0) {
  Value left = e.sub(len, t0);
  Value n = e.min(left, c(kChunk));
  gatesAndPrefix(t0, n);
  stageTiles(t0, n);
  Value r0 = e.mul(warp, c(16));
  if (channel)
    channelScores(r0);
  else
    scores(r0);
  barrier();
  // (A per-channel gate: Qs and Ks rewritten; substitute's barrier orders
  // them before the outputs and the state's update, or this one without
  // the delta correction.)
  if (channel) {
    channelRestage(t0, n);
    if (g.noDelta)
      barrier();
  }
  if (!g.noDelta) {
    substitute();
    correctedValues(r0);
  }
  outputs(r0, t0, n);
  updateState();
}

void ChunkEmitter::emitLaunch() {
  Value gridX = c(g.hv * (g.dv / dvb));
  Value batch = memref::DimOp::create(b, loc, g.v, 0);
  seq = memref::DimOp::create(b, loc, g.v, 2);
  Value one = c(1);
  auto smemBytes = arith::ConstantIntOp::create(
      b, loc, gatedDeltaChunkSharedMemory(g.dk, g.dv, g.noDelta, g.channel),
      32);
  auto launch = gpu::LaunchOp::create(
      b, loc, gridX, batch, one, c(kWarps * kWarp), one, one, smemBytes,
      /*asyncTokenType=*/Type(), /*asyncDependencies=*/ValueRange(),
      TypeRange{});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  setUp(launch);
  lastToken = e.sub(seq, c(1));
  // This sequence's tokens [0, len): len = clamp(lengths[b], 0, seq).
  len = sequenceLength(e, g.lengths, bi, seq);
  loadState();
  Value zero = c(0);
  Value step = c(kChunk);
  e.loop(zero, len, step, ValueRange{},
         [&](Value t0, ValueRange) -> SmallVector<Value> {
           chunk(t0);
           return {};
         });
  // (The final state is in its buffer.) Zeros for the tokens past len.
  Value pastLenTokens = e.sub(seq, len);
  Value pastLen = e.mul(pastLenTokens, c(dvb));
  e.loop(tid, pastLen, c(kWarps * kWarp), ValueRange{},
         [&](Value idx, ValueRange) -> SmallVector<Value> {
           Value t = arith::DivUIOp::create(b, loc, idx, c(dvb));
           Value j = arith::RemUIOp::create(b, loc, idx, c(dvb));
           Value zeroF = e.f32(0.0);
           st(zeroF, g.out, {bi, h, e.add(len, t), e.add(col0, j)});
           return {};
         });
  gpu::TerminatorOp::create(b, loc);
}

} // namespace mlir::attn::gpu_kernels::chunk

using namespace mlir::attn::gpu_kernels::chunk;

int64_t mlir::attn::gpu_kernels::chunkColumns(int64_t dv) {
  return dv % 64 == 0 ? 64 : dv;
}

int64_t mlir::attn::gpu_kernels::gatedDeltaChunkSharedMemory(int64_t dk,
                                                             int64_t dv,
                                                             bool noDelta,
                                                             bool channel) {
  int64_t dvb = chunkColumns(dv), bytes = 0;
  auto tile = [&](int64_t elems, int64_t eltBytes) {
    bytes += llvm::alignTo(elems * eltBytes, 128);
  };
  // (A per-channel gate: no Kd tile, the prefix sums per channel.)
  int64_t kTiles = (noDelta ? 3 : 4) - (channel ? 1 : 0);
  int64_t vTiles = noDelta ? 1 : 2;
  if (channel)
    tile(kChunk * (dk + kChannelPad), 4);
  for (int64_t i = 0; i < kTiles; ++i)
    tile(kChunk * (dk + kPad), 2);
  for (int64_t i = 0; i < vTiles; ++i)
    tile(kChunk * (dvb + kPad), 2);
  tile(dk * (dvb + kPad), 2);
  tile(kChunk * (kChunk + kPad), 2);
  if (!noDelta) {
    tile(kChunk * (kChunk + kPad), 2);
    tile(kChunk * (kChunk + 1), 4);
  }
  for (int64_t i = 0; i < 4; ++i)
    tile(kChunk, 4);
  return bytes;
}

void mlir::attn::gpu_kernels::emitGatedDeltaChunked(
    KernelEmitter &e, const GatedDeltaBuffers &g) {
  ChunkEmitter(e, g).emitLaunch();
}
