//===- GatedDeltaEmitter.h - the gated-delta CPU kernel's emitter -*- C++
//-*-===//
//
// Internal to compiler/Conversion/CPU: the emitter of the gated-delta
// micro-kernel (GatedDeltaKernel.cpp: the driver, the recurrent form, the
// scratch and the entry points; GatedDeltaChunk.cpp: the chunked form),
// its scratch buffers and the helpers both use. GatedDeltaKernel.cpp's
// header comment describes the algorithm.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_GATEDDELTAEMITTER_H
#define ATTN_COMPILER_CONVERSION_CPU_GATEDDELTAEMITTER_H

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"
#include "dialects/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <functional>
#include <utility>

namespace mlir::attn::gated_delta {

constexpr int64_t kChunk = 64;

inline int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// The scratch of one tile function, in allocation order.
enum Scratch {
  Qs,
  Ks,
  Kt,
  Vb,
  Kb,
  U,
  Wm,
  O,
  A,
  QK,
  Sp,
  Gc,
  Gl,
  Bt,
  /// The per-channel chunked form's: a band's rows of Ks and Qs scaled to
  /// its reference row, and the columns left of it transposed and scaled.
  Rk,
  Rq,
  Ct,
  /// The columns scaled, row-major (Ct's rows before the transpose).
  Cs,
  NumScratch
};
/// Rows per band of the per-channel form's A and QK.
constexpr int64_t kBand = 16;
/// A band whose prefix sums stay within this of its first row's takes its
/// diagonal block as a GEMM (factors e^(c_r − c_j) ≤ e^40 ≈ 2.4e17).
constexpr double kNarrowBand = 40.0;

struct GDEmitter {
  OpBuilder &b;
  Location loc;
  GatedDeltaChunkOp op;
  /// No delta correction (Mamba2's SSD): δ = β·v.
  bool noDelta;
  /// One decay per key channel (KDA): c is [chunk, d_k].
  bool channel;
  int64_t W, R, dk, dv, dkp, dvp;
  SmallVector<Value> s; ///< scratch buffers
  VectorType vt;
  Value state; ///< the state the code works on: the op's, or Sp (padded)
  /// The op's initial state while the code has not read it yet (null after
  /// it is copied into Sp or the state, and without one).
  Value init;

  Value idx(int64_t c) { return arith::ConstantIndexOp::create(b, loc, c); }
  Value f32(double c) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(c));
  }
  Value zeros() {
    return arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getF32FloatAttr(0.0)));
  }
  Value splat(Value x) { return vector::BroadcastOp::create(b, loc, vt, x); }
  /// The i32 vector 0, 1, ..., W − 1.
  Value laneIota() {
    auto vi = VectorType::get({W}, b.getI32Type());
    SmallVector<int32_t> lanes;
    for (int64_t l = 0; l < W; ++l)
      lanes.push_back(int32_t(l));
    return arith::ConstantOp::create(
        b, loc, vi, DenseElementsAttr::get(vi, ArrayRef<int32_t>(lanes)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fma(Value x, Value y, Value z) {
    return vector::FMAOp::create(b, loc, x, y, z);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  /// e^lo of a prefix sum's low part (a vector): 1 + lo + lo²/2. Where e^hi
  /// is a normal float (|hi| < 128), |lo| ≤ 64 TwoSum errors of ulp(hi)/2
  /// ≤ 2^-12, and the next term lo³/6 is below 2^-38; beyond, e^hi is 0 (or
  /// overflows) whatever e^lo is.
  Value expLo(Value lo) {
    Value one = splat(f32(1.0)), half = splat(f32(0.5));
    return fma(lo, fma(lo, half, one), one);
  }
  Value load(Value m, ValueRange at) {
    return memref::LoadOp::create(b, loc, m, at);
  }
  void store(Value x, Value m, ValueRange at) {
    memref::StoreOp::create(b, loc, x, m, at);
  }
  Value vload(Value m, ValueRange at) {
    return vector::LoadOp::create(b, loc, vt, m, at);
  }
  void vstore(Value x, Value m, ValueRange at) {
    vector::StoreOp::create(b, loc, x, m, at);
  }
  /// W elements of row `row` of an operand [n, cols] from column j0, zero
  /// past `cols` (a masked read only for the tail vector).
  Value readRow(Value m, Value row, int64_t j0, int64_t cols) {
    bool inBounds = j0 + W <= cols;
    auto map = AffineMap::getMinorIdentityMap(2, 1, b.getContext());
    // One op created per statement: the IR must not depend on the host
    // compiler's order of evaluating arguments (tools/check-host-compiler.sh).
    Value col = idx(j0);
    Value pad = f32(0.0);
    return vector::TransferReadOp::create(
        b, loc, vt, m, ValueRange{row, col}, AffineMapAttr::get(map), pad,
        /*mask=*/Value(), b.getBoolArrayAttr({inBounds}));
  }
  void writeRow(Value x, Value m, Value row, int64_t j0, int64_t cols) {
    bool inBounds = j0 + W <= cols;
    auto map = AffineMap::getMinorIdentityMap(2, 1, b.getContext());
    vector::TransferWriteOp::create(b, loc, x, m, ValueRange{row, idx(j0)},
                                    AffineMapAttr::get(map), /*mask=*/Value(),
                                    b.getBoolArrayAttr({inBounds}));
  }
  void loop(int64_t lb, Value ub, function_ref<void(Value)> body) {
    Value l = idx(lb);
    Value one = idx(1);
    loop(l, ub, one, body);
  }
  void loop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    buildForLoop(b, loc, lb, ub, step, body);
  }
  SmallVector<Value>
  loop(Value lb, Value ub, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    Value one = idx(1);
    return SmallVector<Value>(
        buildForLoop(b, loc, lb, ub, one, init, body).getResults());
  }

  /// How a GEMM treats its destination.
  enum class Acc { Set, Add, Sub };
  /// Which part of a chunk-sized GEMM is not known to be zero.
  enum class Tri {
    None,
    /// Only C's lower triangle (with the diagonal) is needed: per band of
    /// W rows, the column vectors up to the band's last row (the rest of C
    /// is left as it was).
    LowerOut,
    /// A is lower triangular (with the diagonal): rows i0 .. i0+R−1 stop
    /// at k = i0 + R.
    LowerA,
  };
  /// C[M, N] (=, +=, −=) A·B over k < K. `aAt(i, k)` loads one element of
  /// A; B is a row-major buffer [K, ≥ N]. M % R == 0 and N % W == 0;
  /// LowerOut needs M == N, a multiple of W.
  void gemm(Value C, int64_t M, int64_t N, int64_t K,
            function_ref<Value(Value, Value)> aAt, Value B, Acc mode,
            Tri tri = Tri::None) {
    // Rows [rBegin, rEnd) × column vectors [v0, v0 + nv).
    auto rowBlocks = [&](int64_t rBegin, int64_t rEnd, int64_t v0, int64_t nv) {
      Value first = idx(rBegin), mEnd = idx(rEnd), rStep = idx(R);
      loop(first, mEnd, rStep, [&](Value i0) {
        SmallVector<Value> rows;
        for (int64_t r = 0; r < R; ++r) {
          Value off = idx(r);
          rows.push_back(add(i0, off));
        }
        SmallVector<Value> init;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t v = 0; v < nv; ++v)
            init.push_back(mode == Acc::Set
                               ? zeros()
                               : vload(C, {rows[r], idx((v0 + v) * W)}));
        Value kBegin = idx(0), kEnd = idx(K);
        if (tri == Tri::LowerA) {
          Value past = add(i0, rStep);
          kEnd = arith::MinSIOp::create(b, loc, past, kEnd);
        }
        SmallVector<Value> acc =
            loop(kBegin, kEnd, init, [&](Value k, ValueRange a) {
              SmallVector<Value> bv, next(a.begin(), a.end());
              for (int64_t v = 0; v < nv; ++v)
                bv.push_back(vload(B, {k, idx((v0 + v) * W)}));
              for (int64_t r = 0; r < R; ++r) {
                Value x = aAt(rows[r], k);
                if (mode == Acc::Sub)
                  x = arith::NegFOp::create(b, loc, x);
                Value xb = splat(x);
                for (int64_t v = 0; v < nv; ++v)
                  next[r * nv + v] = fma(xb, bv[v], a[r * nv + v]);
              }
              return next;
            });
        for (int64_t r = 0; r < R; ++r)
          for (int64_t v = 0; v < nv; ++v)
            vstore(acc[r * nv + v], C, {rows[r], idx((v0 + v) * W)});
      });
    };
    if (tri == Tri::LowerOut) {
      assert(M == N && M % W == 0 && "LowerOut: square, bands of W rows");
      for (int64_t band = 0; band < M / W; ++band)
        for (int64_t v0 = 0; v0 <= band; v0 += 4)
          rowBlocks(band * W, (band + 1) * W, v0,
                    std::min<int64_t>(4, band + 1 - v0));
      return;
    }
    int64_t vecs = N / W;
    for (int64_t v0 = 0; v0 < vecs; v0 += 4)
      rowBlocks(0, M, v0, std::min<int64_t>(4, vecs - v0));
  }
  /// Row-major access to a scratch buffer as a GEMM's A operand.
  std::function<Value(Value, Value)> rowsOf(Value m) {
    return [this, m](Value i, Value k) { return load(m, {i, k}); };
  }

  /// Copies the state before the chunk (the initial state's, else the
  /// state's own) into Sp (padded), or Sp back into the state.
  void copyState(bool in);

  void emit();

  /// TwoSum: (hi, lo) + g as hi' + lo' (scalars or vectors).
  std::pair<Value, Value> twoSum(Value hi0, Value lo0, Value g);

  /// The per-channel prefix sums c[t, :] (hi in Gc, lo in Gl) and β of the
  /// chunk's tokens, the gate 0 and β 0 past len.
  void loadChannelGates(Value t0, Value len);

  /// e^(c_i − c_j) over channels [j0, j0 + W) (per-channel prefix sums).
  Value expDiffAt(Value i, Value j, Value j0);
  /// A loop over the key channels' vectors of the scratch, j0 = 0, W, ...
  /// dkp − W: one exp per vector in its body, not d_k / W copies of it
  /// (KDA's chunk kernel held 120 of them, 8,800 lines of LLVM IR).
  /// (The bounds one per statement: the IR must not depend on the host
  /// compiler's order of evaluating arguments.)
  void overChannels(function_ref<void(Value)> body) {
    Value zero = idx(0);
    Value end = idx(dkp);
    Value step = idx(W);
    loop(zero, end, step, body);
  }

  /// Loads tokens [t0, t0 + len) into the scratch, zero past len.
  void loadChunk(Value t0, Value len);

  /// The gate's prefix sum and β of a per-token gate.
  void loadScalarGates(Value t0, Value len);

  /// Padding tokens [len, chunk): zero rows (Kt is transposed from Ks after).
  void padChunk(Value len);

  /// e^(c_t) of the prefix sum hi + lo: e^hi · e^lo.
  Value expC(Value t);

  /// Γ folded into A (strictly lower, −β_i·A⊙Γ) and QK (lower, QK⊙Γ).
  void applyDecay();

  /// T[i,:] = A[i,:] + Σ_{m<i} A[i,m]·T[m,:], in place in A.
  void solve();

  /// The per-channel form's A (−β_i·Σ_x k_i[x]k_j[x]e^(c_i[x]−c_j[x]),
  /// j < i) and QK (Σ_x Qs_i[x]k_j[x]e^(c_i[x]−c_j[x]), j ≤ i), zero
  /// elsewhere: per band of kBand rows from r, the blocks left of the band
  /// as GEMMs against the reference row r, the diagonal block exactly.
  void channelProducts();
  /// Whether the band from row rv has max |c_j[x] − c_r[x]| < kNarrowBand.
  Value bandIsNarrow(Value rv);
  /// A narrow band's diagonal block (from the GEMM): zero above the
  /// diagonal in QK, on and above it in A.
  void zeroAboveDiagonal(int64_t r);
  /// A wide band's diagonal block element by element (A strictly below the
  /// diagonal, QK with it).
  void diagonalByElements(Value rv);

  /// Qs ← e^c⊙Qs and Ks ← e^(c_last − c)⊙Ks, per channel.
  void channelScale(Value last);

  /// S[x, :] ← e^(c_last[x])·S[x, :].
  void channelDecayState(Value last);

  void chunk(Value t0, Value len);

  /// Whether every row of a state buffer starts at a multiple of the vector
  /// size: its first element, and its row stride (d_v when the layout is
  /// the identity; any stride a strided view gives it otherwise).
  Value isAligned(Value m);

  /// state ← initial state (unpadded: d_k, d_v multiples of W).
  void copyInit();

  /// Token by token. With an initial state, the first token reads it (and
  /// writes the state), the others the state.
  void recurrent(Value n);

  /// Tokens [0, n), the first from the initial state if there is one.
  void recurrentTokens(Value n);

  /// Token t, in blocks of up to 8 vectors of state columns: reads the
  /// state before the token from `from` and writes the new one to `state`.
  void recurrentToken(Value t, Value from, bool streaming = false);
};

} // namespace mlir::attn::gated_delta

#endif // ATTN_COMPILER_CONVERSION_CPU_GATEDDELTAEMITTER_H
