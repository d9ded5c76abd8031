//===- GatedDeltaChunkChannel.cpp - the chunked kernel's per-channel gate -===//
//
// This file implements the chunked gated-delta GPU kernel's steps for a
// per-channel gate (Kimi Delta Attention: g [B, Hv, S, d_k], one decay per
// key channel), after flash-linear-attention's chunk_kda. With prefix sums
// c[t][k] per channel, the decay no longer factors out of the products:
//
//   A[i][j] = Σ_k k_i[k]·k_j[k]·e^(c_i[k] − c_j[k]),  QK the same with q_i;
//
// so the scores are computed per 16-token band (warp w's tokens, first token
// r = 16w), as the CPU kernel's bands:
//   - the bands left of the warp's by mma.sync on fragments scaled in
//     registers, the warp's rows by e^(c_i − c_r) and the keys by
//     e^(c_r − c_j): both exponents ≤ 0 (c decreases), so neither factor
//     overflows however strong the gates, and their product is the pair's
//     decay;
//   - the band's own 16 x 16 block element by element (its pairs straddle
//     no common reference without one factor growing), j ≤ i;
//   - zeros right of it.
// Without the delta correction (gated linear attention: no_delta) only QK.
// The rest is the scalar gate's steps with the decays per channel: Kb =
// β·e^c ⊙ k, and after the scores Qs ← scale·q ⊙ e^c, Ks ← Kd =
// e^(c_last − c) ⊙ k (the Kd tile's memory spared: the kernel fits an
// A100's 163 KB at d_k = 128), S ← diag(e^(c_last))·S + Kdᵀ·U.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/GPU/GatedDeltaChunkEmitter.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gpu_kernels;
using namespace mlir::attn::gpu_kernels::chunk;

void ChunkEmitter::channelPrefix(Value t0, Value n) {
  // β of token t < 64 (0 past the chunk's n tokens).
  Value inChunk = e.cmp(arith::CmpIPredicate::slt, tid, c(kChunk));
  e.ifThen(inChunk, [&] {
    Value valid = e.cmp(arith::CmpIPredicate::slt, tid, n);
    Value tok = e.min(e.add(t0, tid), lastToken);
    Value bt = ld(g.beta, {bi, h, tok});
    st(e.select(valid, bt, e.f32(0.0)), bS, {tid});
  });
  // The chunk's gates into cCh by every thread (coalesced, all in flight),
  // then channel i's prefix sums in place by thread i, hi + lo by TwoSum,
  // stored rounded once.
  Value zero = e.f32(0.0);
  overChunk(t0, n, [&](Value t, Value i, Value valid, Value tok) {
    Value gt = ld(g.g, {bi, h, tok, i});
    st(e.select(valid, gt, zero), cCh, {t, i});
  });
  barrier();
  Value inChannels = e.cmp(arith::CmpIPredicate::slt, tid, c(dk));
  e.ifThen(inChannels, [&] {
    e.loop(c(0), c(kChunk), c(1), ValueRange{zero, zero},
           [&](Value t, ValueRange sum) -> SmallVector<Value> {
             Value x = ld(cCh, {t, tid});
             Value hi0 = sum[0];
             Value s = e.fadd(hi0, x);
             Value bb = arith::SubFOp::create(b, loc, s, hi0);
             Value sLessB = arith::SubFOp::create(b, loc, s, bb);
             Value errA = arith::SubFOp::create(b, loc, hi0, sLessB);
             Value errB = arith::SubFOp::create(b, loc, x, bb);
             Value lo = e.fadd(sum[1], e.fadd(errA, errB));
             st(e.fadd(s, lo), cCh, {t, tid});
             return {s, lo};
           });
  });
  barrier();
}

Value ChunkEmitter::channelDecay(Value i, Value j, Value k) {
  Value ci = ld(cCh, {i, k});
  Value cj = ld(cCh, {j, k});
  return exp2e(arith::SubFOp::create(b, loc, ci, cj));
}

SmallVector<Value>
ChunkEmitter::scaledFrag(ArrayRef<Value> regs,
                         function_ref<Value(int64_t, int64_t)> factor) {
  auto pairTy = VectorType::get({2}, e.mmaElt);
  SmallVector<Value> out;
  for (auto [p, reg] : llvm::enumerate(regs)) {
    Value pair = LLVM::BitcastOp::create(b, loc, pairTy, reg);
    Value half[2];
    for (int64_t hh = 0; hh < 2; ++hh) {
      Value x = vector::ExtractOp::create(b, loc, pair, ArrayRef<int64_t>{hh});
      Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
      half[hh] = e.fmul(wide, factor(int64_t(p), hh));
    }
    out.push_back(e.packRounded(half[0], half[1]));
  }
  return out;
}

std::pair<Frags, Frags> ChunkEmitter::channelDiagonal(Value r0) {
  // This lane's elements of tiles 2·band (n = 0) and 2·band + 1 (n = 1):
  // rows r0 + gq (x < 2) and r0 + gq + 8 (x ≥ 2), columns r0 + 8n + col2 +
  // x mod 2. (n = 1, x < 2) lies above the diagonal for every lane: not
  // computed.
  Value rows[2];
  rows[0] = e.add(r0, gq);
  rows[1] = e.add(rows[0], c(8));
  Value cols[2][2];
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t hh = 0; hh < 2; ++hh) {
      Value at = e.add(r0, c(8 * n + hh));
      cols[n][hh] = e.add(at, col2);
    }
  struct Elt {
    int64_t n, x;
  };
  SmallVector<Elt> elts;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t x = 0; x < 4; ++x)
      if (n == 0 || x >= 2)
        elts.push_back({n, x});
  // Sums per element: QK's and (with the delta correction) A's.
  int64_t per = g.noDelta ? 1 : 2;
  // An element above the diagonal (j > i) is discarded, but its exponent
  // c_i − c_j > 0 could overflow (0 · inf): 0 there.
  SmallVector<Value> below;
  for (const Elt &el : elts) {
    Value col = cols[el.n][el.x % 2];
    below.push_back(e.cmp(arith::CmpIPredicate::ule, col, rows[el.x / 2]));
  }
  Value zero = e.f32(0.0);
  SmallVector<Value> init(per * elts.size(), zero);
  auto widen = [&](Value tile, Value row, Value k) {
    Value x = ld(tile, {row, k});
    return arith::ExtFOp::create(b, loc, b.getF32Type(), x).getResult();
  };
  scf::ForOp sums =
      e.loop(c(0), c(dk), c(1), init, [&](Value k, ValueRange acc) {
        Value qr[2], kr[2], cr[2];
        for (int64_t r = 0; r < 2; ++r) {
          qr[r] = widen(qs, rows[r], k);
          if (!g.noDelta)
            kr[r] = widen(ks, rows[r], k);
          cr[r] = ld(cCh, {rows[r], k});
        }
        Value kc[2][2], cc[2][2];
        for (int64_t n = 0; n < 2; ++n)
          for (int64_t hh = 0; hh < 2; ++hh) {
            kc[n][hh] = widen(ks, cols[n][hh], k);
            cc[n][hh] = ld(cCh, {cols[n][hh], k});
          }
        SmallVector<Value> next;
        for (auto [idx, el] : llvm::enumerate(elts)) {
          int64_t r = el.x / 2, hh = el.x % 2;
          Value diff = arith::SubFOp::create(b, loc, cr[r], cc[el.n][hh]);
          Value d = e.select(below[idx], diff, zero);
          Value kj = e.fmul(kc[el.n][hh], exp2e(d));
          next.push_back(e.fma(qr[r], kj, acc[per * idx]));
          if (!g.noDelta)
            next.push_back(e.fma(kr[r], kj, acc[per * idx + 1]));
        }
        return next;
      });
  Frags s = zeroFrags(2), a = zeroFrags(2);
  for (auto [idx, el] : llvm::enumerate(elts)) {
    s[el.n][el.x] = sums.getResult(per * idx);
    if (!g.noDelta)
      a[el.n][el.x] = sums.getResult(per * idx + 1);
  }
  return {s, a};
}

void ChunkEmitter::channelScores(Value r0) {
  // Long: the three cases of a column band share its epilogue.
  Value zero = e.f32(0.0);
  SmallVector<Type> types(16, b.getF32Type());
  auto flat = [](const Frags &s, const Frags &a) {
    SmallVector<Value> v;
    for (const Frags *f : {&s, &a})
      for (const auto &t : *f)
        v.append(t.begin(), t.end());
    return v;
  };
  for (int64_t band = 0; band < kChunk / 16; ++band) {
    Value left = e.cmp(arith::CmpIPredicate::ult, c(band), warp);
    auto ifLeft = scf::IfOp::create(b, loc, types, left,
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifLeft.getThenRegion().front());
      Frags s = zeroFrags(2), a = zeroFrags(2);
      // (The last band has no warp right of it: no products.)
      int64_t ksteps = band + 1 < kChunk / 16 ? dk / 16 : 0;
      for (int64_t kstep = 0; kstep < ksteps; ++kstep) {
        // A (rows r0..): element (p, half) at row r0 + gq + 8(p mod 2),
        // channel 16·kstep + 8(p / 2) + col2 + half, scaled by
        // e^(c_row − c_r0).
        SmallVector<Value> rowFactor;
        for (int64_t p = 0; p < 4; ++p)
          for (int64_t hh = 0; hh < 2; ++hh) {
            Value row = fragRow(r0, 2 * (p % 2));
            Value at = e.add(c(16 * kstep + 8 * (p / 2) + hh), col2);
            rowFactor.push_back(channelDecay(row, r0, at));
          }
        auto byRow = [&](int64_t p, int64_t hh) {
          return rowFactor[2 * p + hh];
        };
        SmallVector<Value> qa = scaledFrag(aFrag(qs, r0, kstep), byRow);
        // B (keys of tiles 2·band, 2·band + 1): register m at key 16·band +
        // gq + 8(m / 2), channel 16·kstep + 8(m mod 2) + col2 + half,
        // scaled by e^(c_r0 − c_key).
        Value row = e.add(c(16 * band), kRow);
        Value col = e.add(c(16 * kstep), kCol);
        SmallVector<Value> raw =
            e.ldmatrix4(ks, Value(), row, col, /*transpose=*/false);
        SmallVector<Value> r = scaledFrag(raw, [&](int64_t m, int64_t hh) {
          Value key = e.add(c(16 * band + 8 * (m / 2)), gq);
          Value at = e.add(c(16 * kstep + 8 * (m % 2) + hh), col2);
          return channelDecay(r0, key, at);
        });
        s[0] = e.mma(qa, {r[0], r[1]}, s[0]);
        s[1] = e.mma(qa, {r[2], r[3]}, s[1]);
        if (g.noDelta)
          continue;
        SmallVector<Value> ka = scaledFrag(aFrag(ks, r0, kstep), byRow);
        a[0] = e.mma(ka, {r[0], r[1]}, a[0]);
        a[1] = e.mma(ka, {r[2], r[3]}, a[1]);
      }
      scf::YieldOp::create(b, loc, flat(s, a));
      b.setInsertionPointToStart(&ifLeft.getElseRegion().front());
      Value diagonal = e.cmp(arith::CmpIPredicate::eq, c(band), warp);
      auto ifDiag = scf::IfOp::create(b, loc, types, diagonal,
                                      /*withElseRegion=*/true);
      b.setInsertionPointToStart(&ifDiag.getThenRegion().front());
      auto [ds, da] = channelDiagonal(r0);
      scf::YieldOp::create(b, loc, flat(ds, da));
      b.setInsertionPointToStart(&ifDiag.getElseRegion().front());
      scf::YieldOp::create(b, loc, SmallVector<Value>(16, zero));
      b.setInsertionPointAfter(ifDiag);
      scf::YieldOp::create(b, loc, ifDiag.getResults());
    }
    // QK on and below the diagonal into qk, −β_i·A strictly below it into
    // af (the decays inside the sums).
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t x = 0; x < 4; ++x) {
        Value sv = ifLeft.getResult(4 * n + x);
        Value av = ifLeft.getResult(8 + 4 * n + x);
        Value i = fragRow(r0, x), jc = fragCol(2 * band + n, x);
        Value lower = e.cmp(arith::CmpIPredicate::sle, jc, i);
        st(e.toNarrow(e.select(lower, sv, zero)), qk, {i, jc});
        if (g.noDelta)
          continue;
        Value strict = e.cmp(arith::CmpIPredicate::slt, jc, i);
        Value bRow = ld(bS, {i});
        Value nb = e.fmul(bRow, e.f32(-1.0));
        st(e.select(strict, e.fmul(av, nb), zero), af, {i, jc});
      }
  }
}

void ChunkEmitter::channelRestage(Value t0, Value n) {
  Value last = c(kChunk - 1);
  overChunk(t0, n, [&](Value t, Value i, Value valid, Value tok) {
    auto [q, k] = maskedQK(valid, tok, i);
    Value ec = exp2e(ld(cCh, {t, i}));
    st(e.toNarrow(e.fmul(q, ec)), qs, {t, i});
    st(e.toNarrow(e.fmul(k, channelDecay(last, t, i))), ks, {t, i});
  });
}
