//===- MicroKernel.cpp - register-tiled CPU code for attn tiles -----------===//
//
// This file implements the code of the CPU micro-kernel: the buffer form of
// `attn.online_attention` (after bufferization) as vector code, emitted by
// attn-cpu-micro-kernel (MicroKernelPass.cpp) into each tile function.
// The keys go by chunks of C = 4·W (W f32 lanes). Prefill (and any tile
// whose W does not divide d) has the query rows in the lanes:
//
//   0. Q pack, once per parallel iteration (its tiles share the query rows;
//      a tag in scratch records what is packed): the tile's rows (the heads
//      of the GQA group flattened) transposed into Qᵀ [d, rows] by W×W
//      vector transposes, times the softmax scale, with a table of each
//      row's indices and position.
//   1. Per chunk: an f32 K is read in place, a bf16/f16 (or paged) one
//      widened into an f32 scratch [C, d]; the V rows are copied (widened)
//      into [C, dv].
//   2. Per block of RB = 2·W rows: S = Q·Kᵀ by register tiles of 2 vectors
//      of rows × KB keys (per d step 2 loads of Qᵀ, KB broadcasts of K,
//      2·KB FMAs; no transpose of K), masked (lane compares of the rows'
//      positions against the key's) into a key-major scratch [C, RB] with
//      the running max; then elementwise over the block's rows: the new
//      max, alpha, e^(s - max) (expNonPositive: a polynomial for
//      arguments ≤ 0) and the row sums: no horizontal reduction and no
//      scalar code per row;
//   3. acc = acc·alpha + P·V per R rows in R×4 vector accumulators over dv,
//      per key 4 loads of V, R broadcasts of p, 4R FMAs.
//
// At most 16 rows in the tile (decode: one row per head of the group) take
// dot products along d instead: a block of R rows × W/R keys holds W
// accumulators, so each K vector loaded serves every row and K is read
// once, in address order; a shuffle tree (sumLanes) folds them into one
// vector of scores, and a loop over the rows does each row's softmax. While
// P·V runs over key n of the chunk, the K and V rows of key n of the next
// chunk are prefetched into L2 (decode reads K and V from memory once;
// without the prefetch the loads wait on DRAM); a paged tile also touches
// (a volatile byte load) the first row of each page of the next chunk at
// the start of each chunk, ahead of those prefetches.
// A paged tile (attn.online_attention with pages(...)) spans pages: per
// chunk, a table of the element offsets of its K and V rows in the page
// pools (this chunk's and the next chunk's, one division per chunk) stands
// in for the contiguous row index; the loops are otherwise the same.
//
// The scratch buffers are allocated once per iteration of the enclosing
// parallel loop (one query block, many tiles), so each thread has its own
// and no tile allocates.
// The query's leading dims (the heads of one GQA group) are rows like the
// others: they all use the same K and V rows of the chunk.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernelEmitter.h"

using namespace mlir;
using namespace mlir::attn;
using mlir::attn::microkernel::Emitter;
using mlir::attn::microkernel::hasF32Elements;

namespace mlir::attn::microkernel {

Value Emitter::loadF32(Value mem, ValueRange ix, Value mask) {
  Type elt = cast<MemRefType>(mem.getType()).getElementType();
  auto t = VectorType::get({W}, elt);
  Value x;
  if (mask) {
    Value pass = arith::ConstantOp::create(
        b, loc, t, DenseElementsAttr::get(t, b.getFloatAttr(elt, 0.0)));
    x = vector::MaskedLoadOp::create(b, loc, t, mem, ix, mask, pass);
  } else {
    x = vector::LoadOp::create(b, loc, t, mem, ix);
  }
  return elt.isF32() ? x : arith::ExtFOp::create(b, loc, vt, x);
}

void Emitter::copyRows(bool key, Value dst, int64_t width, Value n0, Value nc) {
  Value zero = idx(0), one = idx(1);
  loop(zero, nc, one, [&](Value j) {
    RowRef row = kvRow(key, n0, j);
    for (int64_t c = 0; c < width; c += W) {
      Value mask = width - c >= W
                       ? Value()
                       : vector::ConstantMaskOp::create(
                             b, loc, vmask, ArrayRef<int64_t>{width - c});
      Value x = loadF32(row.mem, colOf(row, idx(c)), mask);
      if (mask)
        vector::MaskedStoreOp::create(b, loc, dst, ValueRange{j, idx(c)},
                                      mask, x);
      else
        vector::StoreOp::create(b, loc, x, dst, ValueRange{j, idx(c)});
    }
  });
}

Value Emitter::visible(Value qPos, Value kvBase, Value nc, int64_t j) {
  SmallVector<int32_t> lanes;
  for (int64_t i = 0; i < W; ++i)
    lanes.push_back(int32_t(j * W + i));
  Value laneJ = arith::ConstantOp::create(
      b, loc, vi32, DenseElementsAttr::get(vi32, ArrayRef<int32_t>(lanes)));
  Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, laneJ,
                                   splat(toI32(nc), vi32));
  Value kPos = arith::AddIOp::create(b, loc, laneJ, splat(kvBase, vi32));
  if (Value seen = maskKeeps(kPos, splat(qPos, vi32)))
    ok = arith::AndIOp::create(b, loc, ok, seen);
  return ok;
}

Value Emitter::maskKeeps(Value kPos, Value qPos) {
  if (op.getMask() == MaskKind::none)
    return {};
  Value ok =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, kPos, qPos);
  if (op.getMask() == MaskKind::sliding_window) {
    Value w = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                        b.getI32IntegerAttr(*op.getWindow()));
    Value lowest = arith::SubIOp::create(b, loc, qPos, splat(w, vi32));
    Value inWindow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                           kPos, lowest);
    ok = arith::AndIOp::create(b, loc, ok, inWindow);
  }
  if (op.getMask() == MaskKind::chunked) {
    // In the query's chunk: k >= q - (q mod chunk), the mod non-negative.
    Value c = splat(arith::ConstantOp::create(
                        b, loc, b.getI32Type(),
                        b.getI32IntegerAttr(*op.getWindow())),
                    vi32);
    Value zero = splat(arith::ConstantOp::create(b, loc, b.getI32Type(),
                                                 b.getI32IntegerAttr(0)),
                       vi32);
    // With range_start, the chunks are multiples in the sequence's
    // positions: (q + range_start) mod chunk.
    Value abs = qPos;
    if (Value origin = op.getRangeStart())
      abs = arith::AddIOp::create(b, loc, qPos, splat(toI32(origin), vi32));
    Value rem = arith::RemSIOp::create(b, loc, abs, c);
    Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                      rem, zero);
    Value fixed = arith::AddIOp::create(b, loc, rem, c);
    rem = arith::SelectOp::create(b, loc, neg, fixed, rem);
    Value start = arith::SubIOp::create(b, loc, qPos, rem);
    Value inChunk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                          kPos, start);
    ok = arith::AndIOp::create(b, loc, ok, inChunk);
  }
  return ok;
}

void Emitter::rowBlock(Value t0, int64_t rows, Value M, ArrayRef<Value> leadUbs,
              Value n0, Value nc) {
  SmallVector<SmallVector<Value>> rowAt;
  for (int64_t r = 0; r < rows; ++r)
    rowAt.push_back(delinearize(add(t0, idx(r)), M, leadUbs));
  dotScores(rowAt, n0, nc);
  Value rowBegin = idx(0), rowEnd = idx(rows), rowStep = idx(1);
  // A chunk of at most W keys (a short key range, or a range's tail) has
  // one vector of scores per row: its softmax skips the other NV - 1
  // (whose lanes the mask would drop).
  Value oneVector = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                          nc, idx(W));
  loop(rowBegin, rowEnd, rowStep, [&](Value r) {
    SmallVector<Value> row = delinearize(add(t0, r), M, leadUbs);
    auto softmax = [&](int64_t vectors) {
      SmallVector<Value> scores;
      for (int64_t j = 0; j < vectors; ++j)
        scores.push_back(vector::LoadOp::create(b, loc, vt, P,
                                                ValueRange{r, idx(j * W)}));
      Value alpha = softmaxRow(row, scores, r, n0, nc);
      scf::YieldOp::create(b, loc, alpha);
    };
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{b.getF32Type()},
                                  oneVector, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      softmax(1);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      softmax(NV);
    }
    memref::StoreOp::create(b, loc, ifOp.getResult(0), A, ValueRange{r});
  });
  SmallVector<Value> alphas;
  for (int64_t r = 0; r < rows; ++r)
    alphas.push_back(memref::LoadOp::create(b, loc, A, ValueRange{idx(r)}));
  pvBlock(rowAt, alphas, n0, nc, CVD);
}

Value Emitter::sumLanes(SmallVector<Value> v) {
  // labels[x][l]: which input lane l of vector x partially sums.
  SmallVector<SmallVector<int64_t>> labels;
  for (int64_t i = 0; i < W; ++i)
    labels.push_back(SmallVector<int64_t>(W, i));
  while (v.size() > 1) {
    SmallVector<Value> next;
    SmallVector<SmallVector<int64_t>> nextLabels;
    for (size_t x = 0; x + 1 < v.size(); x += 2) {
      // Lanes of each label in order of appearance, in A then in B.
      SmallVector<int64_t> lo, hi, lab;
      for (int side = 0; side < 2; ++side) {
        const SmallVector<int64_t> &L = labels[x + side];
        SmallVector<int64_t> seen;
        for (int64_t l = 0; l < W; ++l)
          if (!llvm::is_contained(seen, L[l]))
            seen.push_back(L[l]);
        for (int64_t label : seen) {
          SmallVector<int64_t> lanes;
          for (int64_t l = 0; l < W; ++l)
            if (L[l] == label)
              lanes.push_back(l + side * W);
          size_t half = lanes.size() / 2;
          for (size_t i = 0; i < half; ++i) {
            lo.push_back(lanes[i]);
            hi.push_back(lanes[half + i]);
            lab.push_back(label);
          }
        }
      }
      Value a = vector::ShuffleOp::create(b, loc, v[x], v[x + 1], lo);
      Value c = vector::ShuffleOp::create(b, loc, v[x], v[x + 1], hi);
      next.push_back(arith::AddFOp::create(b, loc, a, c));
      nextLabels.push_back(lab);
    }
    v = next;
    labels = nextLabels;
  }
  SmallVector<int64_t> order(W);
  for (int64_t l = 0; l < W; ++l)
    order[labels[0][l]] = l;
  return vector::ShuffleOp::create(b, loc, v[0], v[0], order);
}

void Emitter::dotScores(ArrayRef<SmallVector<Value>> rowAt, Value n0, Value nc) {
  int64_t rows = rowAt.size(), KR = W / rows;
  Value zero = idx(0);
  Value keys = numKeys();
  Value last = arith::SubIOp::create(b, loc, keys, idx(1));
  // A loop, not unrolled: LLVM would interleave the tiles and spill.
  Value chunkEnd = roundUp(nc, KR);
  loop(zero, chunkEnd, idx(KR), [&](Value j0) {
    Value base = add(n0, j0);
    if (prefetchBase) {
      // A loop over the KR keys too: unrolled, their d / 16 prefetches
      // each (and the row arithmetic) were a third of a decode tile's code.
      Value kEnd = add(j0, idx(KR));
      loop(j0, kEnd, idx(1),
           [&](Value n) { prefetchRow(/*key=*/true, n, idx(0), d); });
    }
    SmallVector<RowRef> keyRows;
    for (int64_t i = 0; i < KR; ++i) {
      Value r = arith::MinSIOp::create(b, loc, add(base, idx(i)), last);
      keyRows.push_back(
          kvRow(/*key=*/true, n0, arith::SubIOp::create(b, loc, r, n0)));
    }
    SmallVector<Value> init(W, splatF(0.0));
    Value dEnd = idx(d), wStep = idx(W);
    SmallVector<Value> part = loop(
        zero, dEnd, wStep, init, [&](Value kb, ValueRange a) {
          SmallVector<Value> kv, next(a.begin(), a.end());
          for (int64_t i = 0; i < KR; ++i)
            kv.push_back(loadF32(keyRows[i].mem, colOf(keyRows[i], kb)));
          for (int64_t r = 0; r < rows; ++r) {
            Value qv =
                vector::LoadOp::create(b, loc, vt, q, at(rowAt[r], {kb}));
            for (int64_t i = 0; i < KR; ++i)
              next[r * KR + i] =
                  vector::FMAOp::create(b, loc, kv[i], qv, a[r * KR + i]);
          }
          return next;
        });
    Value sums = sumLanes(part);
    for (int64_t r = 0; r < rows; ++r) {
      Value piece = vector::ExtractStridedSliceOp::create(
          b, loc, sums, ArrayRef<int64_t>{r * KR}, ArrayRef<int64_t>{KR},
          ArrayRef<int64_t>{1});
      vector::StoreOp::create(b, loc, piece, P, ValueRange{idx(r), j0});
    }
  });
}

Value Emitter::expNonPositive(Value t) {
  Type ty = t.getType();
  auto vty = dyn_cast<VectorType>(ty);
  bool scalef = vty && vty.getNumElements() == 16;
  auto cst = [&](double c) -> Value {
    Value s = f32(c);
    return vty ? splat(s, vty) : s;
  };
  auto fma = [&](Value x, Value y, Value z) -> Value {
    return vty ? vector::FMAOp::create(b, loc, x, y, z).getResult()
               : math::FmaOp::create(b, loc, x, y, z).getResult();
  };
  // Clamped from below by a compare and a select rather than a max
  // without NaNs: a NaN t (a NaN in q or K) stays NaN through the
  // polynomial and 2^n, so its row's output is NaN, as PyTorch's, not a
  // masked key's 0. LLVM makes it one vmaxps with the operands in the order
  // that passes a NaN t on.
  Value lo = cst(scalef ? -150.0 : -88.0);
  Value below = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, t, lo);
  t = arith::SelectOp::create(b, loc, below, lo, t);
  Value n = math::RoundEvenOp::create(
      b, loc, arith::MulFOp::create(b, loc, t, cst(M_LOG2E)));
  Value r = fma(n, cst(-M_LN2), t);
  Value p = cst(1.0 / 720);
  for (double c : {1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0})
    p = fma(p, r, cst(c));
  if (scalef) {
    // p · 2^n, all lanes. LLVM 22 passes the op's operands to
    // llvm.x86.avx512.mask.scalef.ps.512(a, b, passthru, mask, rounding)
    // in their order (src, a, b, ...): src is the value scaled, a the
    // exponents, b the pass-through of masked-off lanes (none here).
    Value all = arith::ConstantOp::create(b, loc, b.getI16Type(),
                                          b.getI16IntegerAttr(-1));
    Value curDirection = arith::ConstantOp::create(
        b, loc, b.getI32Type(), b.getI32IntegerAttr(4));
    return x86vector::MaskScaleFOp::create(b, loc, vty, p, n, p, all,
                                           curDirection);
  }
  Type i32 = b.getI32Type();
  Type ity = vty ? Type(VectorType::get(vty.getShape(), i32)) : i32;
  auto icst = [&](int32_t c) -> Value {
    Value s = arith::ConstantOp::create(b, loc, i32,
                                        b.getI32IntegerAttr(c));
    return vty ? splat(s, cast<VectorType>(ity)) : s;
  };
  // One op per statement: argument order would depend on the compiler.
  // n (an integer in [-127, 0]) + 1.5·2^23 has the bits 0x4B400000 + n:
  // the exponent's bits without fptosi, whose result for a NaN n is
  // poison (here a NaN n gives some scale, and p, NaN, stays NaN).
  Value magic = cst(12582912.0);
  Value shifted = arith::AddFOp::create(b, loc, n, magic);
  Value ni = arith::BitcastOp::create(b, loc, ity, shifted);
  Value bias = icst(127 - 0x4B400000);
  Value biased = arith::AddIOp::create(b, loc, ni, bias);
  Value shift = icst(23);
  Value bits = arith::ShLIOp::create(b, loc, biased, shift);
  Value scale = arith::BitcastOp::create(b, loc, ty, bits);
  return arith::MulFOp::create(b, loc, p, scale);
}

Value Emitter::softmaxRow(ArrayRef<Value> row, ArrayRef<Value> scores, Value pRow,
                 Value n0, Value nc) {
  SmallVector<Value> s(scores.begin(), scores.end());
  Value scale = splatF(op.getScale().convertToDouble());
  Value kvBase = toI32(add(op.getKvPos(), n0));
  {
    Value qPos = toI32(add(op.getQPos(), row.back()));
    Value rowMax;
    for (int64_t j = 0; j < int64_t(s.size()); ++j) {
      Value &x = s[j];
      x = arith::MulFOp::create(b, loc, x, scale);
      if (std::optional<APFloat> cap = op.getSoftcap()) {
        Value c = splatF(cap->convertToDouble());
        Value t = math::TanhOp::create(
            b, loc, arith::DivFOp::create(b, loc, x, c));
        x = arith::MulFOp::create(b, loc, t, c);
      }
      Value seen = visible(qPos, kvBase, nc, j);
      Value hidden = splat(negInf(), vt);
      x = arith::SelectOp::create(b, loc, seen, x, hidden);
      rowMax = rowMax ? maxNoNaN(rowMax, x) : x;
    }
    Value mx = vector::ReductionOp::create(
        b, loc, vector::CombiningKind::MAXIMUMF, rowMax, Value(),
        noNaNs().getValue());
    SmallVector<Value> ri = at(row);
    Value mOld = memref::LoadOp::create(b, loc, max, ri);
    Value mNew = maxNoNaN(mOld, mx);
    // A row with no visible key so far shifts by 0: exp(-inf) = 0.
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       mNew, negInf());
    Value shift = arith::SelectOp::create(b, loc, none, f32(0.0), mNew);
    Value shiftV = splat(shift, vt);
    Value rowSum;
    for (int64_t j = 0; j < int64_t(s.size()); ++j) {
      Value p =
          expNonPositive(arith::SubFOp::create(b, loc, s[j], shiftV));
      vector::StoreOp::create(b, loc, p, P, ValueRange{pRow, idx(j * W)});
      rowSum = rowSum ? arith::AddFOp::create(b, loc, rowSum, p) : p;
    }
    Value rs = vector::ReductionOp::create(b, loc,
                                           vector::CombiningKind::ADD, rowSum);
    Value alpha =
        expNonPositive(arith::SubFOp::create(b, loc, mOld, shift));
    Value lOld = memref::LoadOp::create(b, loc, sum, ri);
    Value lNew = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, lOld, alpha), rs);
    memref::StoreOp::create(b, loc, lNew, sum, ri);
    memref::StoreOp::create(b, loc, mNew, max, ri);
    return alpha;
  }
}

void Emitter::pvBlock(ArrayRef<SmallVector<Value>> rowAt,
                      ArrayRef<Value> alphas, Value n0, Value nc, int64_t cv) {
  int64_t groups = dv / (cv * W);
  if (groups == 1) {
    pvGroup(rowAt, alphas, n0, nc, idx(0), SmallVector<Value>(cv));
  } else if (groups > 1) {
    Value begin = idx(0), end = idx(groups * cv * W), step = idx(cv * W);
    loop(begin, end, step, [&](Value col) {
      pvGroup(rowAt, alphas, n0, nc, col, SmallVector<Value>(cv));
    });
  }
  SmallVector<Value> masks;
  for (int64_t c = groups * cv * W; c < dv; c += W)
    masks.push_back(dv - c >= W ? Value()
                                : vector::ConstantMaskOp::create(
                                      b, loc, vmask,
                                      ArrayRef<int64_t>{dv - c}));
  if (!masks.empty())
    pvGroup(rowAt, alphas, n0, nc, idx(groups * cv * W), masks);
}

void Emitter::pvGroup(ArrayRef<SmallVector<Value>> rowAt, ArrayRef<Value> alphas,
             Value n0, Value nc, Value col, ArrayRef<Value> masks) {
  int64_t rows = rowAt.size(), cw = masks.size();
  Value zero = idx(0), one = idx(1);
  SmallVector<Value> cols;
  for (int64_t c = 0; c < cw; ++c)
    cols.push_back(add(col, idx(c * W)));
  auto load = [&](Value mem, ValueRange ix, int64_t c) -> Value {
    return loadF32(mem, ix, masks[c]);
  };
  SmallVector<Value> a;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cw; ++c) {
      Value x = load(acc, at(rowAt[r], {cols[c]}), c);
      a.push_back(arith::MulFOp::create(b, loc, x, splat(alphas[r], vt)));
    }
  // The group's columns of a V row, within dv.
  int64_t width = masks.back() ? (cw - 1) * W + (dv % W) : cw * W;
  Value first = pvFirst ? pvFirst : zero;
  a = loop(first, nc, one, a, [&](Value n, ValueRange cur) {
    if (prefetchBase)
      prefetchRow(/*key=*/false, n, col, width);
    SmallVector<Value> vv, next(cur.begin(), cur.end());
    RowRef row = vWidened ? RowRef{Vw, n, false} : kvRow(false, n0, n);
    for (int64_t c = 0; c < cw; ++c)
      vv.push_back(load(row.mem, colOf(row, cols[c]), c));
    for (int64_t r = 0; r < rows; ++r) {
      Value pb = splat(pAt(r, n), vt);
      for (int64_t c = 0; c < cw; ++c)
        next[r * cw + c] =
            vector::FMAOp::create(b, loc, pb, vv[c], cur[r * cw + c]);
    }
    return next;
  });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cw; ++c) {
      SmallVector<Value> ix = at(rowAt[r], {cols[c]});
      if (masks[c])
        vector::MaskedStoreOp::create(b, loc, acc, ix, masks[c],
                                      a[r * cw + c]);
      else
        vector::StoreOp::create(b, loc, a[r * cw + c], acc, ix);
    }
}

void Emitter::prefetchRow(bool key, Value n, Value col, int64_t width) {
  RowRef row =
      paged ? RowRef{key ? kFlat : vFlat,
                     memref::LoadOp::create(b, loc, key ? kRows : vRows,
                                            ValueRange{add(idx(chunk()), n)}),
                     true}
            : RowRef{key ? k : v,
                     arith::MinSIOp::create(b, loc, add(prefetchBase, n),
                                            prefetchLast),
                     false};
  int64_t perLine = 512 / cast<MemRefType>(row.mem.getType())
                              .getElementType()
                              .getIntOrFloatBitWidth(); // 64-byte lines
  for (int64_t c = 0; c < width; c += perLine)
    memref::PrefetchOp::create(b, loc, row.mem,
                               colOf(row, add(col, idx(c))),
                               /*isWrite=*/false, /*localityHint=*/2,
                               /*isDataCache=*/true);
}

Emitter::FlatPool Emitter::flatten(Value pool) {
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, pool);
  Type elt = cast<MemRefType>(pool.getType()).getElementType();
  // Up to the pool's last element, whatever order its strides nest in
  // (a head's [pages, P, d] of an NHD or head-major pool): offset +
  // Σ (size - 1)·stride + 1, or the offset when it is empty.
  Value extent = md.getOffset();
  for (auto [size, stride] : llvm::zip(md.getSizes(), md.getStrides())) {
    Value last = arith::MaxSIOp::create(b, loc, sub(size, idx(1)), idx(0));
    extent = add(extent, arith::MulIOp::create(b, loc, last, stride));
  }
  extent = add(extent, idx(1));
  Value flat = memref::ReinterpretCastOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, elt),
      md.getBaseBuffer(), OpFoldResult(b.getIndexAttr(0)),
      ArrayRef<OpFoldResult>{extent}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, flat);
  return {flat, md.getOffset(), md.getStrides()[0], md.getStrides()[1], base};
}

void Emitter::fillRowTables(Value n0, bool touchNext) {
  auto mul = [&](Value x, Value y) {
    return arith::MulIOp::create(b, loc, x, y).getResult();
  };
  Value pos = add(arith::RemSIOp::create(b, loc, op.getKvPos(), pageSize),
                  n0);
  Value slot0 = arith::DivSIOp::create(b, loc, pos, pageSize);
  Value row0 = arith::RemSIOp::create(b, loc, pos, pageSize);
  Value pages = op.getPages();
  Value numPages = memref::DimOp::create(b, loc, pages, 0);
  Value lastSlot = sub(numPages, idx(1));
  Value zero = idx(0), one = idx(1), end = idx(2 * chunk());
  // Table entry j of page s (from slot0) is row j - (s·P - row0) of it.
  Value spans = arith::CeilDivSIOp::create(b, loc, add(row0, end), pageSize);
  loop(zero, spans, one, [&](Value s) {
    Value first = sub(mul(s, pageSize), row0); // entry of the page's row 0
    Value jb = arith::MaxSIOp::create(b, loc, first, zero);
    Value je = minI(add(first, pageSize), end);
    Value page = memref::LoadOp::create(
        b, loc, pages, ValueRange{minI(add(slot0, s), lastSlot)});
    if (!page.getType().isIndex())
      page = arith::IndexCastOp::create(b, loc, b.getIndexType(), page);
    Value rowB = sub(jb, first);
    auto baseOf = [&](const FlatPool &p) {
      Value pageOff = mul(page, p.pageStride);
      Value rowOff = mul(rowB, p.rowStride);
      return add(p.offset, add(pageOff, rowOff));
    };
    Value kb = baseOf(kPool), vb = baseOf(vPool);
    loop(jb, je, one, [&](Value j) {
      Value i = sub(j, jb);
      memref::StoreOp::create(b, loc, add(kb, mul(i, kPool.rowStride)),
                              kRows, ValueRange{j});
      memref::StoreOp::create(b, loc, add(vb, mul(i, vPool.rowStride)),
                              vRows, ValueRange{j});
    });
  });
  if (touchNext) {
    touchNextChunk(kPool, kRows);
    touchNextChunk(vPool, vRows);
  }
}

} // namespace mlir::attn::microkernel

SmallVector<Value>
mlir::attn::allocateMicroKernelScratch(OpBuilder &b, Location loc,
                                       OnlineAttentionOp tile, int64_t lanes,
                                       bool amx, bool amxF32) {
  IntegerAttr align = b.getI64IntegerAttr(64);
  Type f32 = b.getF32Type(), index = b.getIndexType();
  int64_t d = cast<ShapedType>(tile.getQuery().getType()).getShape().back();
  int64_t dv = cast<ShapedType>(tile.getValue().getType()).getShape().back();
  int64_t lead = cast<ShapedType>(tile.getQuery().getType()).getRank() - 2;
  int64_t chunk = Emitter::kChunkVectors * lanes,
          rows = microKernelDecodeRows(tile, lanes);
  int64_t dPad = (d + lanes - 1) / lanes * lanes;
  int64_t tcap = Emitter::packRows(tile, lanes);
  int64_t rb = microKernelScoreVectors(lanes) * lanes;
  auto alloc = [&](ArrayRef<int64_t> shape, Type elt) -> Value {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, elt), align);
  };
  SmallVector<Value> scratch = {alloc({rows, chunk}, f32),          // P
                                alloc({rows}, f32),                 // A
                                alloc({chunk, d}, f32),             // Kw
                                alloc({chunk, dv}, f32),            // Vw
                                alloc({tcap / rb * dPad, rb}, f32), // Qt
                                alloc({chunk, rb}, f32),            // Pt
                                alloc({3, rb}, f32),                // St
                                alloc({tcap, lead + 1}, index),     // rowTab
                                alloc({tcap}, b.getI32Type()),      // rowPos
                                alloc({2}, index)};                 // tag
  // No query rows packed yet (no buffer is at address -1).
  Value none = arith::ConstantIndexOp::create(b, loc, -1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  memref::StoreOp::create(b, loc, none, scratch.back(), ValueRange{zero});
  // A paged tile's row tables (this chunk's and the next chunk's rows).
  if (tile.isPaged())
    for (int i = 0; i < 2; ++i)
      scratch.push_back(alloc({2 * chunk}, index));
  if (amxDecodeApplies(tile, lanes, amx))
    llvm::append_range(scratch, allocateAmxScratch(b, loc, tile));
  if (amxPrefillApplies(tile, lanes, amx, amxF32))
    llvm::append_range(scratch, allocateAmxPrefillScratch(b, loc, tile, tcap));
  return scratch;
}

void mlir::attn::emitMicroKernel(OpBuilder &b, OnlineAttentionOp tile,
                                 ValueRange scratch, int64_t lanes, bool amx,
                                 bool amxF32) {
  Emitter e{b, tile.getLoc(), tile};
  e.q = tile.getQuery();
  e.k = tile.getKey();
  e.v = tile.getValue();
  e.acc = tile.getAcc();
  e.max = tile.getMax();
  e.sum = tile.getSum();
  e.W = lanes;
  e.R = microKernelRows(lanes);
  e.RD = microKernelDecodeRows(tile, lanes);
  e.CVD = e.RD > e.R ? 3 : e.CV;
  auto qt = cast<ShapedType>(tile.getQuery().getType());
  e.lead = qt.getRank() - 2;
  e.d = qt.getShape().back();
  e.dv = cast<ShapedType>(tile.getValue().getType()).getShape().back();
  e.RV = microKernelScoreVectors(lanes);
  e.KB = microKernelScoreKeys(lanes);
  auto qtType = cast<MemRefType>(scratch[4].getType());
  e.Tcap = qtType.getDimSize(0) / e.dPad() * qtType.getDimSize(1);
  e.P = scratch[0];
  e.A = scratch[1];
  e.Kw = scratch[2];
  e.Vw = scratch[3];
  e.Qt = scratch[4];
  e.Pt = scratch[5];
  e.St = scratch[6];
  e.rowTab = scratch[7];
  e.rowPos = scratch[8];
  e.tag = scratch[9];
  if (tile.isPaged()) {
    e.paged = true;
    e.kRows = scratch[10];
    e.vRows = scratch[11];
  }
  size_t first = tile.isPaged() ? 12 : 10;
  if (amxDecodeApplies(tile, lanes, amx)) {
    e.amx = true;
    size_t n = kAmxDecodeScratch;
    e.amxBufs.assign(scratch.begin() + first, scratch.begin() + first + n);
    first += n;
  }
  if (amxPrefillApplies(tile, lanes, amx, amxF32)) {
    e.amxPrefill = true;
    e.amxPrefillBufs.assign(scratch.begin() + first, scratch.end());
  }
  e.emit();
}

int64_t mlir::attn::microKernelDecodeRows(OnlineAttentionOp tile,
                                          int64_t lanes) {
  auto qt = cast<ShapedType>(tile.getQuery().getType());
  int64_t group = 1;
  for (int64_t i = 0; i + 2 < qt.getRank(); ++i)
    group = qt.isDynamicDim(i) ? 0 : group * qt.getDimSize(i);
  return lanes >= 16 && group >= 8 ? 8 : microKernelRows(lanes);
}

bool mlir::attn::microKernelHandles(Operation *op) {
  auto oa = dyn_cast<OnlineAttentionOp>(op);
  if (!oa || oa.getBiasTable() || oa.getRelativeBiasAttr())
    return false;
  for (Value v : {oa.getQuery(), oa.getAcc(), oa.getMax(), oa.getSum()})
    if (!hasF32Elements(v.getType()))
      return false;
  // K and V: f32, or a bf16/f16 cache widened in registers.
  for (Value v : {oa.getKey(), oa.getValue()}) {
    Type elt = cast<ShapedType>(v.getType()).getElementType();
    if (!elt.isF32() && !elt.isBF16() && !elt.isF16())
      return false;
  }
  auto q = cast<ShapedType>(oa.getQuery().getType());
  auto v = cast<ShapedType>(oa.getValue().getType());
  if (q.getRank() < 2 || ShapedType::isDynamic(q.getShape().back()) ||
      ShapedType::isDynamic(v.getShape().back()))
    return false;
  return true;
}

/// The transpose of the W×W block whose rows are `rows` (W = 4, 8 or 16)
/// as 1-D shuffles in the unpack / 128-bit-lane pattern of x86: pairs of
/// rows interleaved by 32 then 64 bits within each 128-bit lane (2W
/// shuffles), then, for W > 4, the lanes of 4 rows gathered (W / 2 · log2
/// (W / 4) · 2 more): 64 shuffles for 16×16, each one unpck or vshuff
/// instruction. (A vector.transpose of the inserted rows is not kept as
/// such: the canonicalizer folds insert / transpose / extract into
/// per-element from_elements, which LLVM lowered to ~400 instructions
/// per 16×16 block.)
static SmallVector<Value> transposeRows(OpBuilder &b, Location loc,
                                        ArrayRef<Value> rows) {
  int64_t w = rows.size();
  auto shuffle = [&](Value x, Value y, ArrayRef<int64_t> mask) {
    return vector::ShuffleOp::create(b, loc, x, y, mask).getResult();
  };
  // Per 128-bit lane l, from x (0..w) and y (w..2w): `pick(l)`.
  auto laneMask = [&](function_ref<SmallVector<int64_t>(int64_t)> pick) {
    SmallVector<int64_t> mask;
    for (int64_t l = 0; l < w / 4; ++l)
      llvm::append_range(mask, pick(l));
    return mask;
  };
  SmallVector<int64_t> lo32 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l, w + 4 * l, 4 * l + 1, w + 4 * l + 1};
  });
  SmallVector<int64_t> hi32 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l + 2, w + 4 * l + 2, 4 * l + 3,
                                w + 4 * l + 3};
  });
  SmallVector<int64_t> lo64 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l, 4 * l + 1, w + 4 * l, w + 4 * l + 1};
  });
  SmallVector<int64_t> hi64 = laneMask([&](int64_t l) {
    return SmallVector<int64_t>{4 * l + 2, 4 * l + 3, w + 4 * l + 2,
                                w + 4 * l + 3};
  });
  // t[2i], t[2i+1]: rows 2i and 2i+1 interleaved (low, high halves).
  SmallVector<Value> t(w);
  for (int64_t i = 0; i < w; i += 2) {
    t[i] = shuffle(rows[i], rows[i + 1], lo32);
    t[i + 1] = shuffle(rows[i], rows[i + 1], hi32);
  }
  // u[4g + j], lane l: column 4l + j of rows 4g .. 4g+3.
  SmallVector<Value> u(w);
  for (int64_t i = 0; i < w; i += 4) {
    u[i] = shuffle(t[i], t[i + 2], lo64);
    u[i + 1] = shuffle(t[i], t[i + 2], hi64);
    u[i + 2] = shuffle(t[i + 1], t[i + 3], lo64);
    u[i + 3] = shuffle(t[i + 1], t[i + 3], hi64);
  }
  if (w == 4)
    return u;
  // Whole 128-bit lanes: even / odd lanes of x then of y.
  SmallVector<int64_t> evenLanes, oddLanes;
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t l = 0; l < w / 4; l += 2)
      for (int64_t e = 0; e < 4; ++e) {
        evenLanes.push_back(half * w + 4 * l + e);
        oddLanes.push_back(half * w + 4 * (l + 1) + e);
      }
  SmallVector<Value> cols(w);
  if (w == 8) {
    // Column 4l + j: lane l of u[j] then of u[4 + j].
    for (int64_t j = 0; j < 4; ++j) {
      cols[j] = shuffle(u[j], u[4 + j], evenLanes);
      cols[4 + j] = shuffle(u[j], u[4 + j], oddLanes);
    }
    return cols;
  }
  // w == 16: column 4l + j is lane l of u[j], u[4+j], u[8+j], u[12+j].
  for (int64_t j = 0; j < 4; ++j) {
    Value v0 = shuffle(u[j], u[4 + j], evenLanes); // lanes 0, 2
    Value v1 = shuffle(u[j], u[4 + j], oddLanes);  // lanes 1, 3
    Value w0 = shuffle(u[8 + j], u[12 + j], evenLanes);
    Value w1 = shuffle(u[8 + j], u[12 + j], oddLanes);
    cols[j] = shuffle(v0, w0, evenLanes);
    cols[8 + j] = shuffle(v0, w0, oddLanes);
    cols[4 + j] = shuffle(v1, w1, evenLanes);
    cols[12 + j] = shuffle(v1, w1, oddLanes);
  }
  return cols;
}

void mlir::attn::storeTransposedBlock(OpBuilder &b, Location loc,
                                      VectorType square,
                                      function_ref<Value(int64_t)> loadRow,
                                      Value dst, Value row0, Value col0) {
  int64_t w = square.getDimSize(0);
  SmallVector<Value> rows;
  for (int64_t i = 0; i < w; ++i)
    rows.push_back(loadRow(i));
  // The micro-kernel pass accepts 4, 8 or 16 lanes only.
  assert((w == 4 || w == 8 || w == 16) && "square of 4, 8 or 16 lanes");
  SmallVector<Value> cols = transposeRows(b, loc, rows);
  for (int64_t i = 0; i < w; ++i) {
    Value at = arith::ConstantIndexOp::create(b, loc, i);
    Value row = arith::AddIOp::create(b, loc, row0, at);
    vector::StoreOp::create(b, loc, cols[i], dst, ValueRange{row, col0});
  }
}
