//===- MicroKernelLanes.cpp - the micro-kernel's lanes path ---------------===//
//
// The lanes path of the CPU micro-kernel (prefill, and any tile whose W does
// not divide d; MicroKernel.cpp describes the whole design): the query rows
// in the lanes, packed once into Qᵀ, keys by chunks, the scores of register
// tiles of rows × keys masked by lane compares, the softmax elementwise over
// each block's rows, then P·V.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernelEmitter.h"

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::microkernel {

Value Emitter::keysSeenBy(ArrayRef<Value> qPos, Value kvBase, Value nc) {
  if (op.getMask() == MaskKind::none)
    return nc;
  Value zero = idx(0), one = idx(1);
  Value top = qPos[0];
  for (Value p : qPos.drop_front())
    top = arith::MaxSIOp::create(b, loc, top, p);
  Value last =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXSI, top);
  Value span = arith::SubIOp::create(b, loc, last, kvBase);
  Value spanIdx = arith::IndexCastOp::create(b, loc, b.getIndexType(), span);
  Value count = add(spanIdx, one);
  Value atLeast = arith::MaxSIOp::create(b, loc, count, zero);
  return minI(atLeast, nc);
}

Value Emitter::firstKeySeenBy(ArrayRef<Value> qPos, Value kvBase,
                              Value seenKeys) {
  Value zero = idx(0);
  if (op.getMask() != MaskKind::sliding_window)
    return zero;
  // Row i sees keys after i - window: the block's first row the first.
  Value bottom = qPos[0];
  for (Value p : qPos.drop_front())
    bottom = arith::MinSIOp::create(b, loc, bottom, p);
  Value first =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::MINSI, bottom);
  Value w = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                      b.getI32IntegerAttr(*op.getWindow() - 1));
  Value lowest = arith::SubIOp::create(b, loc, first, w);
  Value rel = arith::SubIOp::create(b, loc, lowest, kvBase);
  Value relIdx = arith::IndexCastOp::create(b, loc, b.getIndexType(), rel);
  Value atLeast = arith::MaxSIOp::create(b, loc, relIdx, zero);
  Value within = minI(atLeast, seenKeys);
  // Down to a group of KB keys (the scores' register tile; U divides KB).
  Value step = idx(KB);
  Value groups = arith::DivSIOp::create(b, loc, within, step);
  return arith::MulIOp::create(b, loc, groups, step);
}

void Emitter::laneBlock(Value t0, Value ns, Value n0, Value nc, int64_t rvs) {
  Value zero = idx(0), one = idx(1);
  Value ninf = splat(negInf(), vt);
  Value qPos0 = splat(toI32(op.getQPos()), vi32);
  Value kvBase = toI32(add(op.getKvPos(), n0));
  SmallVector<Value> qPos, mOld, lOld;
  for (int64_t rv = 0; rv < rvs; ++rv) {
    Value col = add(t0, idx(rv * W));
    Value m = vector::LoadOp::create(b, loc, vi32, rowPos, ValueRange{col});
    qPos.push_back(arith::AddIOp::create(b, loc, m, qPos0));
    SmallVector<Value> ms, ls;
    for (int64_t i = 0; i < W; ++i) {
      SmallVector<Value> row = tabRow(add(col, idx(i)));
      ms.push_back(memref::LoadOp::create(b, loc, max, row));
      ls.push_back(memref::LoadOp::create(b, loc, sum, row));
    }
    mOld.push_back(vector::FromElementsOp::create(b, loc, vt, ms));
    lOld.push_back(vector::FromElementsOp::create(b, loc, vt, ls));
  }
  Value seenKeys = keysSeenBy(qPos, kvBase, nc);
  Value firstKey = firstKeySeenBy(qPos, kvBase, seenKeys);
  // Scores, masked, into Pt (key-major) and the running max.
  SmallVector<Value> runMax(rvs, ninf);
  Value groupsEnd = roundUp(seenKeys, KB);
  Value qRow0 = qtBlockRow(t0);
  runMax = loop(
      firstKey, groupsEnd, idx(KB), runMax, [&](Value g, ValueRange curMax) {
        SmallVector<Value> init(rvs * KB, splatF(0.0));
        SmallVector<Value> s =
            loop(zero, idx(d), one, init, [&](Value kk, ValueRange a) {
              SmallVector<Value> qv, next(a.begin(), a.end());
              Value qRow = add(qRow0, kk);
              for (int64_t rv = 0; rv < rvs; ++rv)
                qv.push_back(vector::LoadOp::create(
                    b, loc, vt, Qt, ValueRange{qRow, idx(rv * W)}));
              for (int64_t j = 0; j < KB; ++j) {
                Value kx = memref::LoadOp::create(
                    b, loc, kSrc, ValueRange{add(g, idx(j)), kk});
                Value kb = splat(kx, vt);
                for (int64_t rv = 0; rv < rvs; ++rv)
                  next[j * rvs + rv] = vector::FMAOp::create(
                      b, loc, qv[rv], kb, a[j * rvs + rv]);
              }
              return next;
            });
        SmallVector<Value> mx(curMax.begin(), curMax.end());
        for (int64_t j = 0; j < KB; ++j) {
          Value key = add(g, idx(j));
          Value inRange = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::slt, key, nc);
          Value kPos = arith::AddIOp::create(b, loc, kvBase, toI32(key));
          for (int64_t rv = 0; rv < rvs; ++rv) {
            Value x = s[j * rvs + rv];
            if (std::optional<APFloat> cap = op.getSoftcap()) {
              Value c = splatF(cap->convertToDouble());
              Value t = math::TanhOp::create(
                  b, loc, arith::DivFOp::create(b, loc, x, c));
              x = arith::MulFOp::create(b, loc, t, c);
            }
            Value seen = laneMask(qPos[rv], kPos, inRange);
            x = seen ? arith::SelectOp::create(b, loc, seen, x, ninf)
                     : arith::SelectOp::create(b, loc, inRange, x, ninf);
            mx[rv] = maxNoNaN(mx[rv], x);
            vector::StoreOp::create(b, loc, x, Pt,
                                    ValueRange{key, idx(rv * W)});
          }
        }
        return mx;
      });
  // The new max, alpha, the exps and their sums (U keys per iteration,
  // U sums: the adds are not one chain).
  constexpr int64_t U = 4;
  SmallVector<Value> shift, alpha, mNew;
  for (int64_t rv = 0; rv < rvs; ++rv) {
    mNew.push_back(maxNoNaN(mOld[rv], runMax[rv]));
    // A row with no visible key so far shifts by 0: exp(-inf) = 0.
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       mNew[rv], ninf);
    shift.push_back(
        arith::SelectOp::create(b, loc, none, splatF(0.0), mNew[rv]));
    alpha.push_back(
        expNonPositive(arith::SubFOp::create(b, loc, mOld[rv], shift[rv])));
  }
  SmallVector<Value> sums(U * rvs, splatF(0.0));
  Value keysEnd = roundUp(seenKeys, U);
  sums = loop(firstKey, keysEnd, idx(U), sums, [&](Value n, ValueRange cur) {
    SmallVector<Value> next(cur.begin(), cur.end());
    for (int64_t u = 0; u < U; ++u)
      for (int64_t rv = 0; rv < rvs; ++rv) {
        SmallVector<Value, 2> ix{add(n, idx(u)), idx(rv * W)};
        Value x = vector::LoadOp::create(b, loc, vt, Pt, ix);
        Value p = expNonPositive(arith::SubFOp::create(b, loc, x, shift[rv]));
        vector::StoreOp::create(b, loc, p, Pt, ix);
        next[u * rvs + rv] =
            arith::AddFOp::create(b, loc, cur[u * rvs + rv], p);
      }
    return next;
  });
  for (int64_t rv = 0; rv < rvs; ++rv) {
    Value l = sums[rv];
    for (int64_t u = 1; u < U; ++u)
      l = arith::AddFOp::create(b, loc, l, sums[u * rvs + rv]);
    Value lNew = vector::FMAOp::create(b, loc, lOld[rv], alpha[rv], l);
    Value col = idx(rv * W);
    vector::StoreOp::create(b, loc, alpha[rv], St, ValueRange{zero, col});
    vector::StoreOp::create(b, loc, mNew[rv], St, ValueRange{one, col});
    vector::StoreOp::create(b, loc, lNew, St, ValueRange{idx(2), col});
  }
  Value left = sub(ns, t0);
  Value blockRows = idx(rvs * W);
  Value valid = minI(blockRows, left);
  loop(zero, valid, one, [&](Value i) {
    SmallVector<Value> row = tabRow(add(t0, i));
    Value m = memref::LoadOp::create(b, loc, St, ValueRange{one, i});
    Value l = memref::LoadOp::create(b, loc, St, ValueRange{idx(2), i});
    memref::StoreOp::create(b, loc, m, max, row);
    memref::StoreOp::create(b, loc, l, sum, row);
  });
  // acc = acc·alpha + P·V, R rows at a time.
  Value fullEnd = sub(valid, arith::RemSIOp::create(b, loc, valid, idx(R)));
  auto pv = [&](Value i0, int64_t rows) {
    SmallVector<SmallVector<Value>> rowAt;
    SmallVector<Value> alphas;
    for (int64_t r = 0; r < rows; ++r) {
      Value i = add(i0, idx(r));
      rowAt.push_back(tabRow(add(t0, i)));
      alphas.push_back(
          memref::LoadOp::create(b, loc, St, ValueRange{zero, i}));
    }
    pRow0 = i0;
    pvFirst = firstKey;
    pvBlock(rowAt, alphas, n0, seenKeys, CV);
    pRow0 = pvFirst = Value();
  };
  loop(zero, fullEnd, idx(R), [&](Value i0) { pv(i0, R); });
  loop(fullEnd, valid, one, [&](Value i) { pv(i, 1); });
}

void Emitter::chunkKeys(Value n0, Value nc) {
  auto kt = cast<MemRefType>(k.getType());
  int64_t off;
  SmallVector<int64_t> strides;
  bool inPlace = !paged && kt.getElementType().isF32() &&
                 succeeded(kt.getStridesAndOffset(strides, off)) &&
                 strides[0] == d;
  if (!inPlace) {
    copyRows(/*key=*/true, Kw, d, n0, nc);
    kSrc = Kw;
    return;
  }
  Value full = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, nc,
                                     idx(chunk()));
  auto ifOp = scf::IfOp::create(b, loc, full, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    copyRows(/*key=*/true, Kw, d, n0, nc);
  }
  auto rowsTy = MemRefType::get(
      {ShapedType::kDynamic, d}, b.getF32Type(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {d, 1}));
  Value rows = memref::SubViewOp::create(
      b, loc, rowsTy, k, ArrayRef<OpFoldResult>{n0, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{nc, b.getIndexAttr(d)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  Value copy = memref::CastOp::create(b, loc, rowsTy, Kw);
  kSrc = arith::SelectOp::create(b, loc, full, rows, copy);
}

std::pair<Value, Value> Emitter::staleTag(Value tagBuf, Value T) {
  Value zero = idx(0), one = idx(1);
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, q);
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, q);
  Value key = add(ptr, arith::MulIOp::create(b, loc, md.getOffset(), idx(4)));
  auto eq = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y)
        .getResult();
  };
  auto andI = [&](Value x, Value y) {
    return arith::AndIOp::create(b, loc, x, y).getResult();
  };
  Value tag0 = memref::LoadOp::create(b, loc, tagBuf, ValueRange{zero});
  Value tag1 = memref::LoadOp::create(b, loc, tagBuf, ValueRange{one});
  Value oneSlab =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, T, idx(Tcap));
  Value sameBuffer = eq(tag0, key);
  Value sameRows = eq(tag1, T);
  Value fresh = andI(andI(sameBuffer, sameRows), oneSlab);
  Value stale = arith::XOrIOp::create(
      b, loc, fresh,
      arith::ConstantOp::create(b, loc, b.getI1Type(), b.getBoolAttr(true)));
  return {stale, key};
}

void Emitter::packQueries(Value s0, Value ns, Value T, Value M,
                          ArrayRef<Value> leadUbs) {
  Value zero = idx(0), one = idx(1);
  auto [stale, key] = staleTag(tag, T);
  auto ifOp = scf::IfOp::create(b, loc, stale, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value last = sub(T, one);
  Value scale = splatF(op.getScale().convertToDouble());
  auto square = VectorType::get({W, W}, b.getF32Type());
  Value packEnd = roundUp(ns, RB());
  loop(zero, packEnd, idx(W), [&](Value tb) {
    SmallVector<SmallVector<Value>> rows;
    for (int64_t i = 0; i < W; ++i) {
      Value t = add(tb, idx(i));
      rows.push_back(delinearize(minI(add(s0, t), last), M, leadUbs));
      for (int64_t c = 0; c <= lead; ++c)
        memref::StoreOp::create(b, loc, rows[i][c], rowTab,
                                ValueRange{t, idx(c)});
      memref::StoreOp::create(b, loc, toI32(rows[i][lead]), rowPos,
                              ValueRange{t});
    }
    Value dEnd = idx(d);
    Value blockRow = qtBlockRow(tb);
    Value blockCol = arith::RemUIOp::create(b, loc, tb, idx(RB()));
    loop(zero, dEnd, idx(W), [&](Value k0) {
      Value mask;
      if (d % W != 0)
        mask = vector::CreateMaskOp::create(b, loc, vmask,
                                            ValueRange{sub(idx(d), k0)});
      storeTransposedBlock(
          b, loc, square,
          [&](int64_t i) {
            Value x = loadF32(q, at(rows[i], {k0}), mask);
            return arith::MulFOp::create(b, loc, x, scale).getResult();
          },
          Qt, add(blockRow, k0), blockCol);
    });
  });
  memref::StoreOp::create(b, loc, key, tag, ValueRange{zero});
  memref::StoreOp::create(b, loc, T, tag, ValueRange{one});
}

void Emitter::lanesPath(Value T, Value M, ArrayRef<Value> leadUbs, Value N) {
  Value zero = idx(0), C = idx(chunk());
  loop(zero, T, idx(Tcap), [&](Value s0) {
    Value left = sub(T, s0);
    Value ns = minI(idx(Tcap), left);
    packQueries(s0, ns, T, M, leadUbs);
    loop(zero, N, C, [&](Value n0) {
      Value nc = minI(sub(N, n0), C);
      if (paged)
        fillRowTables(n0);
      chunkKeys(n0, nc);
      copyRows(/*key=*/false, Vw, dv, n0, nc);
      vWidened = true;
      // Blocks of RV vectors of rows, but a last block of at most W rows
      // (MQA decode: 71 rows are 2 blocks of 32 and one of 16, not 3 of
      // 32) takes one vector: its scores and softmax then cost half.
      Value rb = idx(RB());
      Value rem = arith::RemUIOp::create(b, loc, ns, rb);
      Value w = idx(W);
      Value shortTail =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, rem, w);
      Value tailStart = sub(ns, rem);
      Value wideEnd =
          RV > 1 ? arith::SelectOp::create(b, loc, shortTail, tailStart, ns)
                 : ns;
      loop(zero, wideEnd, rb,
           [&](Value t0) { laneBlock(t0, ns, n0, nc, RV); });
      if (RV > 1)
        loop(wideEnd, ns, rb,
             [&](Value t0) { laneBlock(t0, ns, n0, nc, 1); });
      vWidened = false;
    });
  });
}

void Emitter::emit() {
  vt = VectorType::get({W}, b.getF32Type());
  vi32 = VectorType::get({W}, b.getI32Type());
  vmask = VectorType::get({W}, b.getI1Type());
  Value zero = idx(0), one = idx(1);
  if (paged)
    flattenPools();
  Value N = numKeys();
  Value M = memref::DimOp::create(b, loc, q, lead);
  SmallVector<Value> leadUbs;
  for (int64_t i = 0; i < lead; ++i)
    leadUbs.push_back(memref::DimOp::create(b, loc, q, i));
  // The group's heads and rows flattened: a register block of rows may
  // span heads (decode has one row per head).
  Value T = M;
  for (Value ub : leadUbs)
    T = arith::MulIOp::create(b, loc, T, ub);
  if (d % W != 0) {
    lanesPath(T, M, leadUbs, N);
    return;
  }
  // Few rows (decode): dot products along d (dotScores), K streamed.
  Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, T,
                                    idx(kDotRows));
  auto ifOp = scf::IfOp::create(b, loc, few, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  // Blocks of RD rows, then (when RD > R) of R, then single rows.
  Value tFull = sub(T, arith::RemSIOp::create(b, loc, T, idx(RD)));
  Value tMid = tFull;
  if (R < RD) {
    Value left = sub(T, tFull);
    tMid = add(tFull, sub(left, arith::RemSIOp::create(b, loc, left, idx(R))));
  }
  Value C = idx(chunk());
  auto dotPath = [&] {
    loop(zero, N, C, [&](Value n0) {
      Value nc = minI(sub(N, n0), C);
      if (paged)
        fillRowTables(n0, /*touchNext=*/true);
      prefetchBase = add(n0, C);
      prefetchLast = sub(N, one);
      auto block = [&](Value t0, int64_t rows) {
        rowBlock(t0, rows, M, leadUbs, n0, nc);
      };
      loop(zero, tFull, idx(RD), [&](Value t0) { block(t0, RD); });
      if (R < RD)
        loop(tFull, tMid, idx(R), [&](Value t0) { block(t0, R); });
      loop(tMid, T, one, [&](Value t) { block(t, 1); });
      prefetchBase = prefetchLast = Value();
    });
  };
  if (!amx) {
    dotPath();
  } else {
    // 9 to 16 rows (the tile's 16 more than half used), on the tile unit
    // when the OS grants it. 8 rows stay on the dot products: a group of 8
    // in decode measured 0.94x (64/8, d 128, 32k keys) and 1.01x (16/2,
    // d 256, 64k keys) there, 16 rows 1.51x (64/4) and 1.57x (64/8, two
    // query rows).
    Value atMost =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, T, idx(16));
    Value over =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, T, idx(8));
    Value fits = arith::AndIOp::create(b, loc, atMost, over);
    Value ready = amxReady();
    Value useAmx = arith::AndIOp::create(b, loc, fits, ready);
    auto amxIf = scf::IfOp::create(b, loc, useAmx, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPointToStart(&amxIf.getThenRegion().front());
    amxPath(T, M, leadUbs, N);
    b.setInsertionPointToStart(&amxIf.getElseRegion().front());
    dotPath();
  }
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  if (!amxPrefill) {
    lanesPath(T, M, leadUbs, N);
    return;
  }
  // More than 16 rows on the tile unit when the OS grants it.
  Value ready = amxReady();
  auto amxIf = scf::IfOp::create(b, loc, ready, /*withElseRegion=*/true);
  b.setInsertionPointToStart(&amxIf.getThenRegion().front());
  amxPrefillPath(T, M, leadUbs, N);
  b.setInsertionPointToStart(&amxIf.getElseRegion().front());
  lanesPath(T, M, leadUbs, N);
}

int64_t Emitter::packRows(OnlineAttentionOp tile, int64_t w) {
  auto qt = cast<ShapedType>(tile.getQuery().getType());
  int64_t lead = 1, rows = 256;
  bool leadStatic = true;
  for (int64_t i = 0; i + 2 < qt.getRank(); ++i) {
    leadStatic &= !ShapedType::isDynamic(qt.getDimSize(i));
    if (leadStatic)
      lead *= qt.getDimSize(i);
  }
  int64_t m = qt.getDimSize(qt.getRank() - 2);
  if (leadStatic && !ShapedType::isDynamic(m)) {
    rows = lead * m;
  } else {
    for (Operation *p = tile->getParentOp(); p; p = p->getParentOp())
      if (auto qb = p->getAttrOfType<IntegerAttr>("attn.q_block")) {
        if (leadStatic)
          rows = lead * qb.getInt();
        break;
      }
  }
  int64_t rb = microKernelScoreVectors(w) * w;
  rows = std::min<int64_t>(std::max<int64_t>(rows, 1), 4096);
  return (rows + rb - 1) / rb * rb;
}

} // namespace mlir::attn::microkernel
