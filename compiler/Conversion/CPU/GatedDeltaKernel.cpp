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
// decreases), so no exponent overflows however strong the decay; the
// 16×16 diagonal blocks take e^(c_i − c_j) element by element (≤ 1 there).
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

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kChunk = 64;

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

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
  NumScratch
};
/// Rows per band of the per-channel form's A and QK.
constexpr int64_t kBand = 16;

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
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fma(Value x, Value y, Value z) {
    return vector::FMAOp::create(b, loc, x, y, z);
  }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
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
        SmallVector<Value> acc = loop(
            kBegin, kEnd, init, [&](Value k, ValueRange a) {
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
  void copyState(bool in) {
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

  void emit() {
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

  /// TwoSum: (hi, lo) + g as hi' + lo' (scalars or vectors).
  std::pair<Value, Value> twoSum(Value hi0, Value lo0, Value g) {
    Value hi = fadd(hi0, g);
    Value bb = fsub(hi, hi0);
    Value hiLessB = fsub(hi, bb);
    Value errA = fsub(hi0, hiLessB);
    Value errB = fsub(g, bb);
    Value err = fadd(errA, errB);
    return {hi, fadd(lo0, err)};
  }

  /// The per-channel prefix sums c[t, :] (hi in Gc, lo in Gl) and β of the
  /// chunk's tokens, the gate 0 and β 0 past len.
  void loadChannelGates(Value t0, Value len) {
    int64_t nv = dkp / W;
    SmallVector<Value> c0;
    for (int64_t x = 0; x < 2 * nv; ++x)
      c0.push_back(zeros());
    Value zero = idx(0), cEnd = idx(kChunk);
    loop(zero, cEnd, c0, [&](Value t, ValueRange c) {
      Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, t,
                                       len);
      SmallVector<Type> types(nv, vt);
      types.push_back(b.getF32Type());
      auto ifOp = scf::IfOp::create(b, loc, types, in,
                                    /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        Value row = add(t0, t);
        SmallVector<Value> vals;
        for (int64_t x = 0; x < nv; ++x)
          vals.push_back(readRow(op.getGate(), row, x * W, dk));
        vals.push_back(load(op.getBeta(), {row}));
        scf::YieldOp::create(b, loc, vals);
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        SmallVector<Value> none;
        for (int64_t x = 0; x < nv; ++x)
          none.push_back(zeros());
        none.push_back(f32(0.0));
        scf::YieldOp::create(b, loc, none);
      }
      SmallVector<Value> next(2 * nv);
      for (int64_t x = 0; x < nv; ++x) {
        auto [hi, lo] = twoSum(c[x], c[nv + x], ifOp.getResult(x));
        vstore(hi, s[Gc], {t, idx(x * W)});
        vstore(lo, s[Gl], {t, idx(x * W)});
        next[x] = hi;
        next[nv + x] = lo;
      }
      store(ifOp.getResult(nv), s[Bt], {t});
      return next;
    });
  }

  /// e^(c_i − c_j) over channels [j0, j0 + W) (per-channel prefix sums).
  Value expDiffAt(Value i, Value j, int64_t j0) {
    Value hi = fsub(vload(s[Gc], {i, idx(j0)}), vload(s[Gc], {j, idx(j0)}));
    Value lo = fsub(vload(s[Gl], {i, idx(j0)}), vload(s[Gl], {j, idx(j0)}));
    return exp(fadd(hi, lo));
  }

  /// Loads tokens [t0, t0 + len) into the scratch, zero past len.
  void loadChunk(Value t0, Value len) {
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    Value scale = f32(op.getScale().convertToDouble());
    if (channel)
      loadChannelGates(t0, len);
    else
      loadScalarGates(t0, len);
    loop(0, len, [&](Value t) {
      Value row = add(t0, t);
      Value beta = load(s[Bt], {t});
      Value bv = splat(beta);
      Value bk;
      if (!noDelta && !channel) {
        Value ec = expC(t);
        bk = splat(fmul(beta, ec));
      }
      Value sc = splat(scale);
      for (int64_t j0 = 0; j0 < dkp; j0 += W) {
        Value kr = readRow(k, row, j0, dk);
        Value qr = readRow(q, row, j0, dk);
        vstore(fmul(qr, sc), s[Qs], {t, idx(j0)});
        vstore(kr, s[Ks], {t, idx(j0)});
        if (noDelta)
          continue;
        // β·e^c·k, e^c per channel with a per-channel gate.
        Value kbScale = bk;
        if (channel) {
          Value hi = exp(vload(s[Gc], {t, idx(j0)}));
          Value lo = exp(vload(s[Gl], {t, idx(j0)}));
          kbScale = fmul(fmul(hi, lo), bv);
        }
        Value kb = fmul(kr, kbScale);
        vstore(kb, s[Kb], {t, idx(j0)});
        vstore(kb, s[Wm], {t, idx(j0)});
      }
      for (int64_t j0 = 0; j0 < dvp; j0 += W) {
        Value vr = readRow(v, row, j0, dv);
        Value vb = fmul(vr, bv);
        if (!noDelta)
          vstore(vb, s[Vb], {t, idx(j0)});
        vstore(vb, s[U], {t, idx(j0)});
      }
      if (!channel)
        loop(0, idx(dkp), [&](Value j) {
          store(load(s[Ks], {t, j}), s[Kt], {j, t});
        });
    });
    padChunk(len);
  }

  /// The gate's prefix sum and β of a per-token gate.
  void loadScalarGates(Value t0, Value len) {
    // Prefix sum of the gate, kept as hi + lo (TwoSum): differences
    // c_i − c_j of a long sum (a gate of −60 is a state reset) would lose
    // their low bits in one f32; β (0 for padding tokens).
    Value hi0 = f32(0.0), lo0 = f32(0.0);
    SmallVector<Value> c0 = {hi0, lo0};
    Value zero = idx(0), cEnd = idx(kChunk);
    loop(zero, cEnd, c0, [&](Value t, ValueRange c) {
      Value in =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, t, len);
      auto ifOp =
          scf::IfOp::create(b, loc, TypeRange{b.getF32Type(), b.getF32Type()},
                            in, /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        Value row = add(t0, t);
        Value gv = load(op.getGate(), {row});
        Value bv = load(op.getBeta(), {row});
        scf::YieldOp::create(b, loc, ValueRange{gv, bv});
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        Value z0 = f32(0.0), z1 = f32(0.0);
        scf::YieldOp::create(b, loc, ValueRange{z0, z1});
      }
      auto [hi, lo] = twoSum(c[0], c[1], ifOp.getResult(0));
      store(hi, s[Gc], {t});
      store(lo, s[Gl], {t});
      store(ifOp.getResult(1), s[Bt], {t});
      return SmallVector<Value>{hi, lo};
    });
  }

  /// Padding tokens [len, chunk): zero rows (and zero columns of Kt).
  void padChunk(Value len) {
    Value padEnd = idx(kChunk), one = idx(1);
    loop(len, padEnd, one, [&](Value t) {
      Value z = zeros();
      for (int64_t j0 = 0; j0 < dkp; j0 += W)
        for (Scratch x : {Qs, Ks, Kb, Wm})
          if (!noDelta || (x != Kb && x != Wm))
            vstore(z, s[x], {t, idx(j0)});
      for (int64_t j0 = 0; j0 < dvp; j0 += W)
        for (Scratch x : {Vb, U})
          if (!noDelta || x != Vb)
            vstore(z, s[x], {t, idx(j0)});
      if (channel)
        return;
      Value zs = f32(0.0);
      loop(0, idx(dkp), [&](Value j) { store(zs, s[Kt], {j, t}); });
    });
  }

  /// e^(c_t) of the prefix sum hi + lo: e^hi · e^lo.
  Value expC(Value t) {
    Value hi = exp(load(s[Gc], {t}));
    Value lo = exp(load(s[Gl], {t}));
    return fmul(hi, lo);
  }

  /// Γ folded into A (strictly lower, −β_i·A⊙Γ) and QK (lower, QK⊙Γ).
  void applyDecay() {
    SmallVector<int32_t> lanes;
    for (int64_t l = 0; l < W; ++l)
      lanes.push_back(int32_t(l));
    auto vi = VectorType::get({W}, b.getI32Type());
    Value iota = arith::ConstantOp::create(
        b, loc, vi, DenseElementsAttr::get(vi, ArrayRef<int32_t>(lanes)));
    loop(0, idx(kChunk), [&](Value i) {
      Value ci = splat(load(s[Gc], {i}));
      Value li = splat(load(s[Gl], {i}));
      Value nb;
      if (!noDelta)
        nb = splat(arith::NegFOp::create(b, loc, load(s[Bt], {i})));
      Value i32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), i);
      Value iv = vector::BroadcastOp::create(b, loc, vi, i32);
      Value z = zeros();
      for (int64_t j0 = 0; j0 < kChunk; j0 += W) {
        Value j0v = arith::ConstantOp::create(
            b, loc, vi, DenseElementsAttr::get(vi, b.getI32IntegerAttr(j0)));
        Value j = arith::AddIOp::create(b, loc, iota, j0v);
        Value lower = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                            j, iv);
        Value strict = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, j, iv);
        Value hiDiff = fsub(ci, vload(s[Gc], {idx(j0)}));
        Value loDiff = fsub(li, vload(s[Gl], {idx(j0)}));
        Value diff = fadd(hiDiff, loDiff);
        // exp only of visible differences (≤ 0 there): no overflow.
        Value gamma = exp(arith::SelectOp::create(b, loc, lower, diff, z));
        if (!noDelta) {
          Value a = fmul(fmul(vload(s[A], {i, idx(j0)}), gamma), nb);
          vstore(arith::SelectOp::create(b, loc, strict, a, z), s[A],
                 {i, idx(j0)});
        }
        Value qk = fmul(vload(s[QK], {i, idx(j0)}), gamma);
        vstore(arith::SelectOp::create(b, loc, lower, qk, z), s[QK],
               {i, idx(j0)});
      }
    });
  }

  /// T[i,:] = A[i,:] + Σ_{m<i} A[i,m]·T[m,:], in place in A.
  void solve() {
    int64_t nv = kChunk / W;
    loop(1, idx(kChunk), [&](Value i) {
      SmallVector<Value> init;
      for (int64_t v = 0; v < nv; ++v)
        init.push_back(vload(s[A], {i, idx(v * W)}));
      SmallVector<Value> row =
          loop(idx(0), i, init, [&](Value m, ValueRange r) {
            Value a = splat(load(s[A], {i, m}));
            SmallVector<Value> next;
            for (int64_t v = 0; v < nv; ++v) {
              Value row = vload(s[A], {m, idx(v * W)});
              next.push_back(fma(a, row, r[v]));
            }
            return next;
          });
      for (int64_t v = 0; v < nv; ++v)
        vstore(row[v], s[A], {i, idx(v * W)});
    });
  }

  /// The per-channel form's A (−β_i·Σ_x k_i[x]k_j[x]e^(c_i[x]−c_j[x]),
  /// j < i) and QK (Σ_x Qs_i[x]k_j[x]e^(c_i[x]−c_j[x]), j ≤ i), zero
  /// elsewhere: per band of kBand rows from r, the blocks left of the band
  /// as GEMMs against the reference row r, the diagonal block exactly.
  void channelProducts() {
    Value z = zeros();
    loop(0, idx(kChunk), [&](Value i) {
      for (int64_t j0 = 0; j0 < kChunk; j0 += W) {
        if (!noDelta)
          vstore(z, s[A], {i, idx(j0)});
        vstore(z, s[QK], {i, idx(j0)});
      }
    });
    for (int64_t r = 0; r < kChunk; r += kBand) {
      Value rv = idx(r);
      if (r > 0) {
        // Rows of the band scaled by e^(c_i − c_r) ≤ 1, columns left of it
        // by e^(c_r − c_j) ≤ 1 (transposed into Ct).
        Value bandEnd = idx(r + kBand);
        Value one = idx(1);
        loop(rv, bandEnd, one, [&](Value i) {
          for (int64_t j0 = 0; j0 < dkp; j0 += W) {
            Value e = expDiffAt(i, rv, j0);
            if (!noDelta)
              vstore(fmul(vload(s[Ks], {i, idx(j0)}), e), s[Rk], {i, idx(j0)});
            vstore(fmul(vload(s[Qs], {i, idx(j0)}), e), s[Rq], {i, idx(j0)});
          }
        });
        loop(0, rv, [&](Value j) {
          for (int64_t j0 = 0; j0 < dkp; j0 += W) {
            Value e = expDiffAt(rv, j, j0);
            Value kj = fmul(vload(s[Ks], {j, idx(j0)}), e);
            for (int64_t l = 0; l < W; ++l) {
              Value x = vector::ExtractOp::create(b, loc, kj, l);
              Value row = idx(j0 + l);
              store(x, s[Ct], {row, j});
            }
          }
        });
        // The band's rows × columns [0, r): M = kBand, N = r, K = d_k.
        auto band = [&](Scratch m) {
          SmallVector<OpFoldResult> offs = {b.getIndexAttr(r),
                                            b.getIndexAttr(0)},
                                    sizes = {b.getIndexAttr(kBand),
                                             b.getIndexAttr(r)},
                                    strides = {b.getIndexAttr(1),
                                               b.getIndexAttr(1)};
          return memref::SubViewOp::create(b, loc, s[m], offs, sizes, strides)
              .getResult();
        };
        SmallVector<OpFoldResult> ctOffs = {b.getIndexAttr(0),
                                            b.getIndexAttr(0)},
                                  ctSizes = {b.getIndexAttr(dkp),
                                             b.getIndexAttr(r)},
                                  ctStrides = {b.getIndexAttr(1),
                                               b.getIndexAttr(1)};
        Value ct = memref::SubViewOp::create(b, loc, s[Ct], ctOffs, ctSizes,
                                             ctStrides);
        auto rowsFrom = [this, rv](Scratch m) {
          Value buf = s[m];
          return [this, rv, buf](Value i, Value k) {
            Value at = add(i, rv);
            return load(buf, {at, k});
          };
        };
        if (!noDelta)
          gemm(band(A), kBand, r, dkp, rowsFrom(Rk), ct, Acc::Set);
        gemm(band(QK), kBand, r, dkp, rowsFrom(Rq), ct, Acc::Set);
      }
      // The diagonal block: e^(c_i − c_j) ≤ 1 for j ≤ i, element by element.
      Value bandEnd = idx(r + kBand);
      Value one = idx(1);
      loop(rv, bandEnd, one, [&](Value i) {
        Value past = add(i, one);
        loop(rv, past, one, [&](Value j) {
          Value accA = zeros(), accQ = zeros();
          for (int64_t j0 = 0; j0 < dkp; j0 += W) {
            Value e = expDiffAt(i, j, j0);
            Value kj = fmul(vload(s[Ks], {j, idx(j0)}), e);
            accQ = fma(vload(s[Qs], {i, idx(j0)}), kj, accQ);
            if (!noDelta)
              accA = fma(vload(s[Ks], {i, idx(j0)}), kj, accA);
          }
          Value q = vector::ReductionOp::create(
              b, loc, vector::CombiningKind::ADD, accQ);
          store(q, s[QK], {i, j});
          if (noDelta)
            return;
          Value a = vector::ReductionOp::create(
              b, loc, vector::CombiningKind::ADD, accA);
          Value strict =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, i);
          Value zs = f32(0.0);
          store(arith::SelectOp::create(b, loc, strict, a, zs), s[A], {i, j});
        });
      });
    }
    if (noDelta)
      return;
    // A ← −β_i·A.
    loop(0, idx(kChunk), [&](Value i) {
      Value nb = splat(arith::NegFOp::create(b, loc, load(s[Bt], {i})));
      for (int64_t j0 = 0; j0 < kChunk; j0 += W)
        vstore(fmul(vload(s[A], {i, idx(j0)}), nb), s[A], {i, idx(j0)});
    });
  }

  /// Qs ← e^c⊙Qs and Ks ← e^(c_last − c)⊙Ks, per channel.
  void channelScale(Value last) {
    loop(0, idx(kChunk), [&](Value t) {
      for (int64_t j0 = 0; j0 < dkp; j0 += W) {
        Value eq = fmul(exp(vload(s[Gc], {t, idx(j0)})),
                        exp(vload(s[Gl], {t, idx(j0)})));
        vstore(fmul(vload(s[Qs], {t, idx(j0)}), eq), s[Qs], {t, idx(j0)});
        Value ek = expDiffAt(last, t, j0);
        vstore(fmul(vload(s[Ks], {t, idx(j0)}), ek), s[Ks], {t, idx(j0)});
      }
    });
  }

  /// S[x, :] ← e^(c_last[x])·S[x, :].
  void channelDecayState(Value last) {
    loop(0, idx(dkp), [&](Value i) {
      Value hi = load(s[Gc], {last, i});
      Value lo = load(s[Gl], {last, i});
      Value decay = splat(fmul(exp(hi), exp(lo)));
      for (int64_t j0 = 0; j0 < dvp; j0 += W) {
        Value x = fmul(vload(state, {i, idx(j0)}), decay);
        vstore(x, state, {i, idx(j0)});
      }
    });
  }

  void chunk(Value t0, Value len) {
    loadChunk(t0, len);
    if (channel) {
      channelProducts();
    } else {
      // A and QK are needed on and below the diagonal only (applyDecay
      // zeroes the rest), T and QK·Γ are lower triangular: the products skip
      // the blocks above the diagonal (10 of 16 bands × vectors computed
      // with 16 lanes).
      if (!noDelta)
        gemm(s[A], kChunk, kChunk, dkp, rowsOf(s[Ks]), s[Kt], Acc::Set,
             Tri::LowerOut);
      gemm(s[QK], kChunk, kChunk, dkp, rowsOf(s[Qs]), s[Kt], Acc::Set,
           Tri::LowerOut);
      applyDecay();
    }
    if (!noDelta) {
      solve();
      gemm(s[U], kChunk, dvp, kChunk, rowsOf(s[A]), s[Vb], Acc::Add,
           Tri::LowerA);
      gemm(s[Wm], kChunk, dkp, kChunk, rowsOf(s[A]), s[Kb], Acc::Add,
           Tri::LowerA);
      gemm(s[U], kChunk, dvp, dkp, rowsOf(s[Wm]), state, Acc::Sub);
    }
    // Qs ← e^c·Qs; Ks ← e^(c_last − c)·Ks.
    Value last = idx(kChunk - 1);
    if (channel) {
      channelScale(last);
    } else {
      Value cLast = load(s[Gc], {last});
      Value lLast = load(s[Gl], {last});
      loop(0, idx(kChunk), [&](Value t) {
        Value eq = splat(expC(t));
        Value hiDiff = fsub(cLast, load(s[Gc], {t}));
        Value loDiff = fsub(lLast, load(s[Gl], {t}));
        Value ek = splat(exp(fadd(hiDiff, loDiff)));
        for (int64_t j0 = 0; j0 < dkp; j0 += W) {
          Value qs = fmul(vload(s[Qs], {t, idx(j0)}), eq);
          vstore(qs, s[Qs], {t, idx(j0)});
          Value ks = fmul(vload(s[Ks], {t, idx(j0)}), ek);
          vstore(ks, s[Ks], {t, idx(j0)});
        }
      });
    }
    gemm(s[O], kChunk, dvp, dkp, rowsOf(s[Qs]), state, Acc::Set);
    gemm(s[O], kChunk, dvp, kChunk, rowsOf(s[QK]), s[U], Acc::Add, Tri::LowerA);
    // S ← e^(c_last)·S + Ksᵀ·U (per row of S with a per-channel gate).
    if (channel) {
      channelDecayState(last);
    } else {
      Value decay = splat(expC(last));
      loop(0, idx(dkp), [&](Value i) {
        for (int64_t j0 = 0; j0 < dvp; j0 += W) {
          Value x = fmul(vload(state, {i, idx(j0)}), decay);
          vstore(x, state, {i, idx(j0)});
        }
      });
    }
    Value ks = s[Ks];
    gemm(state, dkp, dvp, kChunk,
         [&](Value i, Value k) { return load(ks, {k, i}); }, s[U], Acc::Add);
    // The chunk's outputs.
    loop(0, len, [&](Value t) {
      Value row = add(t0, t);
      for (int64_t j0 = 0; j0 < dvp; j0 += W)
        writeRow(vload(s[O], {t, idx(j0)}), op.getOut(), row, j0, dv);
    });
  }

  /// Whether every row of a state buffer starts at a multiple of the vector
  /// size: its first element, and its row stride (d_v when the layout is
  /// the identity; any stride a strided view gives it otherwise).
  Value isAligned(Value m) {
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

  /// state ← initial state (unpadded: d_k, d_v multiples of W).
  void copyInit() {
    loop(0, idx(dk), [&](Value i) {
      for (int64_t j0 = 0; j0 < dvp; j0 += W)
        vstore(vload(init, {i, idx(j0)}), state, {i, idx(j0)});
    });
  }

  /// Token by token. With an initial state, the first token reads it (and
  /// writes the state), the others the state.
  void recurrent(Value n) {
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

  /// Tokens [0, n), the first from the initial state if there is one.
  void recurrentTokens(Value n) {
    if (!init) {
      loop(0, n, [&](Value t) { recurrentToken(t, state); });
      return;
    }
    Value zero = idx(0);
    Value any =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, n, zero);
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

  /// Token t, in blocks of up to 8 vectors of state columns: reads the
  /// state before the token from `from` and writes the new one to `state`.
  void recurrentToken(Value t, Value from, bool streaming = false) {
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
      SmallVector<Value> o =
          loop(zero, dkEnd, acc0, [&](Value i, ValueRange a) {
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
                                        /*nontemporal=*/true,
                                        llvm::Align(W * 4));
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
};

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
    if (!channel && (x == Rk || x == Rq || x == Ct))
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
  shapes[Rk] = shapes[Rq] = {C, dkp};
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
