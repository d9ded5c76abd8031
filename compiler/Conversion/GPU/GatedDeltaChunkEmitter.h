//===- GatedDeltaChunkEmitter.h - chunked gated-delta emitter -*- C++ -*-===//
//
// Internal to compiler/Conversion/GPU: the chunked gated-delta kernel's
// emitter (GatedDeltaChunkKernel.cpp, its header comment), shared with the
// per-channel gate's steps (GatedDeltaChunkChannel.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_GPU_GATEDDELTACHUNKEMITTER_H
#define ATTN_COMPILER_CONVERSION_GPU_GATEDDELTACHUNKEMITTER_H

#include "compiler/Conversion/GPU/GatedDeltaGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir {
namespace attn {
namespace gpu_kernels {
namespace chunk {

constexpr int64_t kChunk = 64;
constexpr int64_t kPad = 8;
constexpr int64_t kWarps = 4;
/// The per-channel prefix sums' rows padded by 4 floats: a fragment's 8
/// rows x 4 columns of lanes fall in distinct banks but for pairs.
constexpr int64_t kChannelPad = 4;

/// A C fragment per 8-column tile: fragments[tile][4].
using Frags = SmallVector<SmallVector<Value>>;

struct ChunkEmitter {
  KernelEmitter &e;
  OpBuilder &b;
  Location loc;
  const GatedDeltaBuffers &g;
  int64_t dk, dvb, mtS;
  bool channel;
  // Launch ids and fragment coordinates.
  Value tid, warp, bi, h, hkIdx, col0, seq, len, lastToken;
  Value gq, col2, aRow, aCol, kRow, kCol, vRow, vCol;
  // Shared-memory tiles (a per-channel gate: cCh, the prefix sums per
  // token and key channel; no kd tile, Kd replaces Ks after the scores).
  Value qs, ks, kb, kd, vb, ub, sb, qk, tb, af, cHi, cLo, gS, bS, cCh;

  ChunkEmitter(KernelEmitter &e, const GatedDeltaBuffers &g)
      : e(e), b(e.b), loc(e.loc), g(g), dk(g.dk), dvb(chunkColumns(g.dv)),
        mtS(g.dk / 16 / kWarps), channel(g.channel) {}

  // (One op created per statement, here as in the other kernels: the IR
  // must not depend on the host compiler's order of evaluating arguments,
  // tools/check-host-compiler.sh.)
  Value c(int64_t v) { return e.c(v); }
  Value ld(Value m, ValueRange idx) {
    return memref::LoadOp::create(b, loc, m, idx);
  }
  void st(Value x, Value m, ValueRange idx) {
    memref::StoreOp::create(b, loc, x, m, idx);
  }
  void barrier() { gpu::BarrierOp::create(b, loc); }
  Value exp2e(Value x) { return e.exp2(e.fmul(x, e.f32(kLog2e))); }
  /// c_i − c_j from the prefix sums' hi and lo parts.
  Value cDiff(Value i, Value j) {
    Value hiI = ld(cHi, {i});
    Value hiJ = ld(cHi, {j});
    Value loI = ld(cLo, {i});
    Value loJ = ld(cLo, {j});
    Value hi = arith::SubFOp::create(b, loc, hiI, hiJ);
    Value lo = arith::SubFOp::create(b, loc, loI, loJ);
    return e.fadd(hi, lo);
  }
  Value cAt(Value i) {
    Value hi = ld(cHi, {i});
    Value lo = ld(cLo, {i});
    return e.fadd(hi, lo);
  }
  Frags zeroFrags(int64_t tiles) {
    return Frags(tiles, SmallVector<Value>(4, e.f32(0.0)));
  }
  /// The A fragment of rows [r0, r0 + 16) x columns [16ks, 16ks + 16) of a
  /// row-major tile.
  SmallVector<Value> aFrag(Value tile, Value r0, int64_t ks) {
    Value row = e.add(r0, aRow);
    Value col = e.add(c(16 * ks), aCol);
    return e.ldmatrix4(tile, Value(), row, col, /*transpose=*/false);
  }
  /// acc[n] += A·B over `ksteps` k16 steps, B's fragments of the k x n tile
  /// `tile` (row-major, n contiguous; rows from k0) by ldmatrix.trans, A's
  /// from `aOf(ks)`.
  void accumulateKN(Frags &acc, function_ref<SmallVector<Value>(int64_t)> aOf,
                    Value tile, int64_t ksteps, int64_t k0 = 0) {
    for (int64_t ks = 0; ks < ksteps; ++ks) {
      SmallVector<Value> a = aOf(ks);
      for (int64_t n = 0; n < int64_t(acc.size()); n += 2) {
        Value row = e.add(c(k0 + 16 * ks), vRow);
        Value col = e.add(c(8 * n), vCol);
        SmallVector<Value> r = e.ldmatrix4(tile, Value(), row, col,
                                           /*transpose=*/true);
        acc[n] = e.mma(a, {r[0], r[1]}, acc[n]);
        acc[n + 1] = e.mma(a, {r[2], r[3]}, acc[n + 1]);
      }
    }
  }
  /// A C fragment set (16 rows x 16·ks columns), negated, as the A
  /// operands of the next product (the attention kernel's P packing).
  SmallVector<SmallVector<Value>> asNegatedA(const Frags &f) {
    SmallVector<SmallVector<Value>> a;
    auto s = [&](Value x) { return arith::NegFOp::create(b, loc, x); };
    for (int64_t k2 = 0; 2 * k2 + 1 < int64_t(f.size()); ++k2) {
      SmallVector<Value> x;
      for (const SmallVector<Value> *t : {&f[2 * k2], &f[2 * k2 + 1]})
        for (int64_t p = 0; p < 4; p += 2) {
          Value first = s((*t)[p]);
          Value second = s((*t)[p + 1]);
          x.push_back(e.packRounded(first, second));
        }
      a.push_back(x);
    }
    return a;
  }
  /// Fragment element (tile n, element x) of rows r0..: its row and column.
  Value fragRow(Value r0, int64_t x) {
    Value r = e.add(r0, gq);
    return x >= 2 ? e.add(r, c(8)) : r;
  }
  Value fragCol(int64_t n, int64_t x) { return e.add(c(8 * n + x % 2), col2); }
  /// Stores fragments rounded into a 16-bit tile at rows r0...
  void storeFrags(const Frags &f, Value tile, Value r0) {
    for (int64_t n = 0; n < int64_t(f.size()); ++n)
      for (int64_t x = 0; x < 4; ++x) {
        Value v = e.toNarrow(f[n][x]);
        st(v, tile, {fragRow(r0, x), fragCol(n, x)});
      }
  }

  void emitLaunch();
  void setUp(gpu::LaunchOp launch);
  void loadState();
  SmallVector<Value> stateAt(Value d0);
  void gatesAndPrefix(Value t0, Value n);
  void stageTiles(Value t0, Value n);
  void scores(Value r0);
  void substitute();
  void correctedValues(Value r0);
  void outputs(Value r0, Value t0, Value n);
  void updateState();
  void chunk(Value t0);
  /// Every thread over the chunk's (token t, key channel i) pairs:
  /// body(t, i, valid: t < n, tok: t0 + t clamped to the sequence).
  void overChunk(Value t0, Value n,
                 function_ref<void(Value, Value, Value, Value)> body);
  /// scale·q and k at (tok, i), 0 where not valid.
  std::pair<Value, Value> maskedQK(Value valid, Value tok, Value i);

  // A per-channel gate (Kimi Delta Attention; GatedDeltaChunkChannel.cpp).
  /// β of the chunk's tokens and, by thread i < d_k, channel i's prefix
  /// sums c[t][i] (TwoSum, stored rounded to one f32).
  void channelPrefix(Value t0, Value n);
  /// e^(c[i][k] − c[j][k]) for tokens i, j and channel k.
  Value channelDecay(Value i, Value j, Value k);
  /// A fragment's 4 registers (2 packed 16-bit values each) with value
  /// (p, half) multiplied by `factor(p, half)`, rounded again.
  SmallVector<Value> scaledFrag(ArrayRef<Value> regs,
                                function_ref<Value(int64_t, int64_t)> factor);
  /// A and QK for this warp's 16 tokens (band r0 / 16) with the decay
  /// inside the channel sums: bands left of the warp's by mma on fragments
  /// scaled to the band's first token (both factors ≤ 1), the diagonal
  /// block element by element, zeros right of it.
  void channelScores(Value r0);
  /// The band's diagonal 16 x 16 block (tiles 2·band, 2·band + 1): S
  /// (QK) and A per fragment element, j ≤ i, else 0.
  std::pair<Frags, Frags> channelDiagonal(Value r0);
  /// After the scores: Qs ← scale·q·e^c and Ks ← Kd = e^(c_last − c)·k
  /// (read again from the inputs, rounded once).
  void channelRestage(Value t0, Value n);
  Value stateRow0(int64_t t) {
    Value tile = e.add(e.mul(warp, c(mtS)), c(t));
    return e.mul(tile, c(16));
  }
};

} // namespace chunk
} // namespace gpu_kernels
} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_GPU_GATEDDELTACHUNKEMITTER_H
