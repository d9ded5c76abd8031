//===- GatedDeltaChunk.cpp - the gated-delta kernel's chunked form ------===//
//
// This file implements the chunked form of the gated-delta CPU kernel
// (GatedDeltaKernel.cpp's header comment: steps 1 to 8, and the
// per-channel gate's bands): a chunk's loads and prefix sums, its
// products, the forward substitution, the outputs and the state update.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/GatedDeltaEmitter.h"
#include "compiler/Conversion/LoopBuilder.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::gated_delta;

std::pair<Value, Value> GDEmitter::twoSum(Value hi0, Value lo0, Value g) {
  Value hi = fadd(hi0, g);
  Value bb = fsub(hi, hi0);
  Value hiLessB = fsub(hi, bb);
  Value errA = fsub(hi0, hiLessB);
  Value errB = fsub(g, bb);
  Value err = fadd(errA, errB);
  return {hi, fadd(lo0, err)};
}

void GDEmitter::loadChannelGates(Value t0, Value len) {
  int64_t nv = dkp / W;
  SmallVector<Value> c0;
  for (int64_t x = 0; x < 2 * nv; ++x)
    c0.push_back(zeros());
  Value zero = idx(0), cEnd = idx(kChunk);
  loop(zero, cEnd, c0, [&](Value t, ValueRange c) {
    Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, t, len);
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

Value GDEmitter::expDiffAt(Value i, Value j, Value j0) {
  // One op per statement: the IR must not depend on the host compiler's
  // order of evaluating arguments (tools/check-host-compiler.sh).
  Value hiI = vload(s[Gc], {i, j0});
  Value hiJ = vload(s[Gc], {j, j0});
  Value loI = vload(s[Gl], {i, j0});
  Value loJ = vload(s[Gl], {j, j0});
  Value hi = fsub(hiI, hiJ);
  Value lo = fsub(loI, loJ);
  return exp(fadd(hi, lo));
}

void GDEmitter::loadChunk(Value t0, Value len) {
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
        Value lo = expLo(vload(s[Gl], {t, idx(j0)}));
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
  });
  padChunk(len);
  if (channel)
    return;
  // Kt = Ksᵀ by W×W blocks (padding rows are zero by now). A scalar
  // transposing store per element became a scatter (vscatterqps): 11% of
  // Mamba2's SSD chunk on a Zen 4.
  auto square = VectorType::get({W, W}, b.getF32Type());
  Value from = idx(0);
  Value to = idx(kChunk);
  Value step = idx(W);
  loop(from, to, step, [&](Value t) {
    for (int64_t j0 = 0; j0 < dkp; j0 += W)
      storeTransposedBlock(
          b, loc, square,
          [&](int64_t l) {
            Value row = add(t, idx(l));
            return vload(s[Ks], {row, idx(j0)});
          },
          s[Kt], idx(j0), t);
  });
}

void GDEmitter::loadScalarGates(Value t0, Value len) {
  // Prefix sum of the gate, kept as hi + lo (TwoSum): differences
  // c_i − c_j of a long sum (a gate of −60 is a state reset) would lose
  // their low bits in one f32; β (0 for padding tokens).
  Value hi0 = f32(0.0), lo0 = f32(0.0);
  SmallVector<Value> c0 = {hi0, lo0};
  Value zero = idx(0), cEnd = idx(kChunk);
  loop(zero, cEnd, c0, [&](Value t, ValueRange c) {
    Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, t, len);
    auto ifOp =
        scf::IfOp::create(b, loc, TypeRange{b.getF32Type(), b.getF32Type()}, in,
                          /*withElseRegion=*/true);
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

void GDEmitter::padChunk(Value len) {
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
  });
}

Value GDEmitter::expC(Value t) {
  Value hi = exp(load(s[Gc], {t}));
  Value lo = exp(load(s[Gl], {t}));
  return fmul(hi, lo);
}

void GDEmitter::applyDecay() {
  auto vi = VectorType::get({W}, b.getI32Type());
  Value iota = laneIota();
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
      Value lower =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, j, iv);
      Value strict =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, j, iv);
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

void GDEmitter::solve() {
  int64_t nv = kChunk / W;
  loop(1, idx(kChunk), [&](Value i) {
    SmallVector<Value> init;
    for (int64_t v = 0; v < nv; ++v)
      init.push_back(vload(s[A], {i, idx(v * W)}));
    SmallVector<Value> row = loop(idx(0), i, init, [&](Value m, ValueRange r) {
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

Value GDEmitter::bandIsNarrow(Value rv) {
  // max over the band's rows j and the channels x of |c_j[x] − c_r[x]|
  // (hi parts: a bound, not a value the products use).
  Value end = add(rv, idx(kBand));
  SmallVector<Value> init(1, zeros());
  Value spread = loop(rv, end, init, [&](Value j, ValueRange m) {
    Value acc = m[0];
    for (int64_t j0 = 0; j0 < dkp; j0 += W) {
      Value at = idx(j0);
      // One op per statement (tools/check-host-compiler.sh).
      Value cj = vload(s[Gc], {j, at});
      Value cr = vload(s[Gc], {rv, at});
      Value dj = fsub(cj, cr);
      acc = arith::MaximumFOp::create(b, loc, acc,
                                      math::AbsFOp::create(b, loc, dj));
    }
    return SmallVector<Value>{acc};
  })[0];
  Value most = vector::ReductionOp::create(
      b, loc, vector::CombiningKind::MAXIMUMF, spread);
  // Ordered: a NaN gate takes the element-by-element path.
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, most,
                               f32(kNarrowBand));
}

void GDEmitter::zeroAboveDiagonal(int64_t r) {
  // The band's diagonal block above the diagonal (j > i; A also j = i).
  auto vi = VectorType::get({W}, b.getI32Type());
  Value iota = laneIota();
  Value z = zeros();
  Value rv = idx(r), bandEnd = idx(r + kBand), one = idx(1);
  loop(rv, bandEnd, one, [&](Value i) {
    Value i32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), i);
    Value iv = vector::BroadcastOp::create(b, loc, vi, i32);
    for (int64_t c0 = r; c0 < r + kBand; c0 += W) {
      Value first = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                              b.getI32IntegerAttr(int32_t(c0)));
      Value col = arith::AddIOp::create(
          b, loc, iota, vector::BroadcastOp::create(b, loc, vi, first));
      Value at = idx(c0);
      Value lower =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, col, iv);
      Value qk = vload(s[QK], {i, at});
      vstore(arith::SelectOp::create(b, loc, lower, qk, z), s[QK], {i, at});
      if (noDelta)
        continue;
      Value strict =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, col, iv);
      Value a = vload(s[A], {i, at});
      vstore(arith::SelectOp::create(b, loc, strict, a, z), s[A], {i, at});
    }
  });
}

void GDEmitter::diagonalByElements(Value rv) {
  // e^(c_i − c_j) ≤ 1 for j ≤ i, element by element.
  Value one = idx(1);
  Value bandEnd = add(rv, idx(kBand));
  loop(rv, bandEnd, one, [&](Value i) {
    Value past = add(i, one);
    loop(rv, past, one, [&](Value j) {
      Value accA = zeros(), accQ = zeros();
      // Unrolled: the d_k / W exps of a pair are independent chains that
      // overlap (a loop over them ran 4.5% slower at S = 1024).
      for (int64_t j0 = 0; j0 < dkp; j0 += W) {
        Value at = idx(j0);
        Value e = expDiffAt(i, j, at);
        Value kj = fmul(vload(s[Ks], {j, at}), e);
        accQ = fma(vload(s[Qs], {i, at}), kj, accQ);
        if (!noDelta)
          accA = fma(vload(s[Ks], {i, at}), kj, accA);
      }
      Value q =
          vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, accQ);
      store(q, s[QK], {i, j});
      if (noDelta)
        return;
      Value a =
          vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, accA);
      Value strict =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, i);
      Value zs = f32(0.0);
      store(arith::SelectOp::create(b, loc, strict, a, zs), s[A], {i, j});
    });
  });
}

void GDEmitter::channelProducts() {
  Value z = zeros();
  loop(0, idx(kChunk), [&](Value i) {
    for (int64_t j0 = 0; j0 < kChunk; j0 += W) {
      if (!noDelta)
        vstore(z, s[A], {i, idx(j0)});
      vstore(z, s[QK], {i, idx(j0)});
    }
  });
  auto vmask = VectorType::get({W}, b.getI1Type());
  for (int64_t r = 0; r < kChunk; r += kBand) {
    Value rv = idx(r);
    Value one = idx(1);
    Value bandEnd = idx(r + kBand);
    // A band whose prefix sums stay within kNarrowBand of its first row's
    // (any real model's gates over 16 tokens) takes its diagonal block in
    // the same GEMM as the blocks left of it: the band's rows scaled by
    // e^(c_i − c_r) ≤ 1, the columns j ≤ r + 15 by e^(c_r − c_j), ≤ 1 left
    // of the band and below e^kNarrowBand in it. Else (a state reset's
    // gate) the diagonal block goes element by element, e^(c_i − c_j) ≤ 1.
    Value narrow = bandIsNarrow(rv);
    Value narrowV = vector::BroadcastOp::create(b, loc, vmask, narrow);
    loop(rv, bandEnd, one, [&](Value i) {
      overChannels([&](Value j0) {
        Value e = expDiffAt(i, rv, j0);
        if (!noDelta)
          vstore(fmul(vload(s[Ks], {i, j0}), e), s[Rk], {i, j0});
        vstore(fmul(vload(s[Qs], {i, j0}), e), s[Rq], {i, j0});
      });
    });
    loop(0, bandEnd, [&](Value j) {
      Value left =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, rv);
      Value leftV = vector::BroadcastOp::create(b, loc, vmask, left);
      Value keep = arith::OrIOp::create(b, loc, leftV, narrowV);
      overChannels([&](Value j0) {
        // Zero for the band's own columns on the element-by-element path
        // (their e^(c_r − c_j) may overflow there).
        Value e =
            arith::SelectOp::create(b, loc, keep, expDiffAt(rv, j, j0), z);
        vstore(fmul(vload(s[Ks], {j, j0}), e), s[Cs], {j, j0});
      });
    });
    // Ct = Csᵀ over the columns [0, r + kBand), by W×W blocks.
    auto square = VectorType::get({W, W}, b.getF32Type());
    Value w = idx(W);
    loop(idx(0), bandEnd, w, [&](Value j) {
      overChannels([&](Value j0) {
        storeTransposedBlock(
            b, loc, square,
            [&](int64_t l) {
              Value row = add(j, idx(l));
              return vload(s[Cs], {row, j0});
            },
            s[Ct], j0, j);
      });
    });
    // The band's rows × columns [0, r + kBand): M = kBand, K = d_k.
    int64_t cols = r + kBand;
    auto band = [&](Scratch m) {
      SmallVector<OpFoldResult> offs = {b.getIndexAttr(r), b.getIndexAttr(0)},
                                sizes = {b.getIndexAttr(kBand),
                                         b.getIndexAttr(cols)},
                                strides = {b.getIndexAttr(1),
                                           b.getIndexAttr(1)};
      return memref::SubViewOp::create(b, loc, s[m], offs, sizes, strides)
          .getResult();
    };
    SmallVector<OpFoldResult> ctOffs = {b.getIndexAttr(0), b.getIndexAttr(0)},
                              ctSizes = {b.getIndexAttr(dkp),
                                         b.getIndexAttr(cols)},
                              ctStrides = {b.getIndexAttr(1),
                                           b.getIndexAttr(1)};
    Value ct =
        memref::SubViewOp::create(b, loc, s[Ct], ctOffs, ctSizes, ctStrides);
    auto rowsFrom = [this, rv](Scratch m) {
      Value buf = s[m];
      return [this, rv, buf](Value i, Value k) {
        Value at = add(i, rv);
        return load(buf, {at, k});
      };
    };
    if (!noDelta)
      gemm(band(A), kBand, cols, dkp, rowsFrom(Rk), ct, Acc::Set);
    gemm(band(QK), kBand, cols, dkp, rowsFrom(Rq), ct, Acc::Set);
    auto ifOp = scf::IfOp::create(b, loc, narrow, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    zeroAboveDiagonal(r);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    diagonalByElements(rv);
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

void GDEmitter::channelScale(Value last) {
  loop(0, idx(kChunk), [&](Value t) {
    overChannels([&](Value j0) {
      Value ehi = exp(vload(s[Gc], {t, j0}));
      Value elo = expLo(vload(s[Gl], {t, j0}));
      Value eq = fmul(ehi, elo);
      vstore(fmul(vload(s[Qs], {t, j0}), eq), s[Qs], {t, j0});
      Value ek = expDiffAt(last, t, j0);
      vstore(fmul(vload(s[Ks], {t, j0}), ek), s[Ks], {t, j0});
    });
  });
}

void GDEmitter::channelDecayState(Value last) {
  loop(0, idx(dkp), [&](Value i) {
    Value hi = load(s[Gc], {last, i});
    Value lo = load(s[Gl], {last, i});
    Value ehi = exp(hi);
    Value elo = exp(lo);
    Value decay = splat(fmul(ehi, elo));
    for (int64_t j0 = 0; j0 < dvp; j0 += W) {
      Value x = fmul(vload(state, {i, idx(j0)}), decay);
      vstore(x, state, {i, idx(j0)});
    }
  });
}

void GDEmitter::chunk(Value t0, Value len) {
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
    gemm(s[U], kChunk, dvp, kChunk, rowsOf(s[A]), s[Vb], Acc::Add, Tri::LowerA);
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
  gemm(
      state, dkp, dvp, kChunk,
      [&](Value i, Value k) {
        return load(ks, {k, i});
      },
      s[U], Acc::Add);
  // The chunk's outputs.
  loop(0, len, [&](Value t) {
    Value row = add(t0, t);
    for (int64_t j0 = 0; j0 < dvp; j0 += W)
      writeRow(vload(s[O], {t, idx(j0)}), op.getOut(), row, j0, dv);
  });
}
