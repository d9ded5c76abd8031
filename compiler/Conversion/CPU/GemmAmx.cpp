//===- GemmAmx.cpp - f32 GEMMs on AMX tiles -------------------------------===//
//
// C[M, N] += A[M, K] · B[N, K]ᵀ in f32 on the AMX tile unit (Intel Sapphire
// Rapids and later: amx-tile, amx-bf16): the projections and feed-forward
// GEMMs of a prefill (nn.Linear weights, M = the tokens) when the generic
// GEMM function (GemmKernel.cpp) has at least kAmxGemmRows rows and
// kAmxGemmCols columns and the OS grants the tile state.
//
// A tile product (tdpbf16ps: 16×16 f32 += 16×32 bf16 · 32×16 bf16, one per
// 16 cycles, 1,024 FLOP/cycle against the FMAs' 64) multiplies bf16 pairs
// exactly and accumulates in f32. Each f32 operand is split into three
// bf16 parts, x = x0 + x1 + x2 to within 2^-27·|x|, and the six products
// of parts whose orders sum below 3 are kept (x0·y0, x0·y1, x1·y0, x0·y2,
// x2·y0, x1·y1): the result keeps f32 accuracy (tools/gemm-bench.py: as
// far from OpenBLAS sgemm as the AVX-512 kernel is).
//
// Per block of kBlockK of K (K padded with zeros to whole kUnitK):
//   1. A parallel loop packs A's rows, 32 at a time, into the tiles'
//      layout: per step of 32 k and part, 32 rows × 32 bf16 (two 1 KiB
//      tiles, consecutive: tiles loaded from A's rows, 4 KiB apart, would
//      share L1 sets), rows past M zero.
//   2. A parallel loop over chunks of at most kMaxSpan columns: each packs
//      its columns of B (per 16 columns, step and part, the VNNI tile of
//      tdpbf16ps: row kk holds the pairs (B[n, 2kk], B[n, 2kk + 1]), a
//      16×16 transpose of 32-bit pairs; each row split once) into its own
//      buffer, then calls a chunk function (attn_gemm_amx_chunk, or
//      _partial for a last block of fewer steps): per block of 32 rows of
//      C and 32 of its columns, 2 × 2 C tiles loaded, the block's 16 steps
//      unrolled (tiles cannot be carried through a loop), stored; per step
//      the six products of each tile, 6 B and 10 A tile loads for 24
//      products. Blocks that cross M or N go through a 32 × 32 scratch.
//      Meanwhile the chunk's rows of B for the next K block are prefetched
//      into L2 and the next block's C rows into L1 (memory loads that no
//      product would hide).
// Measured on an Intel core with AMX (docs/benchmarks.md, "The GEMM kernel
// shape by shape"): the projections of Qwen3-Next-80B and of the seed's
// config at S = 512 and 4096, 1.07-1.58× OpenBLAS sgemm (its AVX-512
// kernels), up to 112% of the FMA peak.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/GemmEmitter.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Parts of each f32 operand.
constexpr int64_t kParts = kBF16Parts;
/// K per block: a 32-row block of packed A is 96 KiB, a chunk's packed B
/// 768 KiB at kMaxSpan (the core's L2: 2 MiB).
constexpr int64_t kBlockK = 512;
/// Steps of 32 k between a C tile's load and store.
constexpr int64_t kStepsPerC = 4;
/// K is padded with zeros to a multiple of this.
constexpr int64_t kUnitK = 32 * kStepsPerC;
/// Steps of 32 k per block.
constexpr int64_t kSteps = kBlockK / 32;
/// How many steps of 32 k ahead the B pack prefetches each row.
constexpr int64_t kPackAhead = 4;
/// Columns of C per parallel chunk, at most.
constexpr int64_t kMaxSpan = 256;
/// The products (part of A, part of B), ordered so that each B part is
/// loaded once per step and A's part 0 is reused across B's parts 0 and 1.
constexpr std::pair<int64_t, int64_t> kProducts[] = {{2, 0}, {1, 0}, {0, 0},
                                                     {0, 1}, {1, 1}, {0, 2}};

/// The AVX-512 GEMM emitter's helpers and operands (A, B, C, M, N, K, vt,
/// vmask), with the tiles' types.
struct AmxGemm : gemm::GemmEmitter {
  Value threads;
  Type f32, bf16;
  amx::TileType tileAB, tileC;
  /// The chunk functions (chunkBody): whole K blocks, partial ones.
  func::FuncOp wholeFn, partialFn;

  AmxGemm(OpBuilder &b, Location loc) : GemmEmitter(b, loc, 16) {
    f32 = b.getF32Type();
    bf16 = b.getBF16Type();
    tileAB = amx::TileType::get({16, 32}, bf16);
    tileC = amx::TileType::get({16, 16}, f32);
  }

  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value divUp(Value x, int64_t d) {
    Value up = add(x, idx(d - 1));
    return arith::DivUIOp::create(b, loc, up, idx(d));
  }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value le(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
  /// A 64-byte aligned buffer of `rows` rows of 64 bytes, as [rows, 32]
  /// bf16 (the tiles) and [rows, 16] f32 (the transposes' stores).
  std::pair<Value, Value> tileBuffer(Value rows) {
    Value bytes = mul(rows, idx(64));
    auto rawTy = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    Value raw = memref::AllocOp::create(b, loc, rawTy, ValueRange{bytes},
                                        b.getI64IntegerAttr(64));
    Value zero = idx(0);
    auto asBF16 = MemRefType::get({ShapedType::kDynamic, 32}, bf16);
    auto asF32 = MemRefType::get({ShapedType::kDynamic, 16}, f32);
    Value tiles =
        memref::ViewOp::create(b, loc, asBF16, raw, zero, ValueRange{rows});
    Value words =
        memref::ViewOp::create(b, loc, asF32, raw, zero, ValueRange{rows});
    return {tiles, words};
  }

  /// mem[row, col .. col + 16) where row < rows and col + lane < cols,
  /// zero elsewhere (row clamped into mem: no lane is read past it).
  Value loadClamped(Value mem, Value row, Value rows, Value col, Value cols) {
    Value inRows = lt(row, rows);
    Value lastRow = sub(rows, idx(1));
    Value r = min(row, lastRow);
    Value left = sub(cols, col);
    Value zero = idx(0);
    Value lanes = max(left, zero);
    Value n = arith::SelectOp::create(b, loc, inRows, lanes, zero);
    Value mask = vector::CreateMaskOp::create(b, loc, vmask, ValueRange{n});
    Value pass = arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getF32FloatAttr(0.0)));
    return vector::MaskedLoadOp::create(b, loc, vt, mem, ValueRange{r, col},
                                        mask, pass);
  }

  /// mem[row, col .. col + 16): clamped (loadClamped) or not.
  Value loadRow(Value mem, Value row, Value rows, Value col, Value cols,
                bool clamped) {
    if (clamped)
      return loadClamped(mem, row, rows, col, cols);
    return vector::LoadOp::create(b, loc, vt, mem, ValueRange{row, col});
  }

  /// The packed A block of rows [32·mb, 32·mb + 32) and k [k0, k0 + 32·
  /// steps): row ((mb·kSteps + s)·kParts + p)·32 + r of `ap` holds part p
  /// of A[32·mb + r, k0 + 32·s .. + 32).
  void packA(Value ap, Value mb, Value k0, Value steps) {
    Value zero = idx(0), one = idx(1);
    Value m0 = mul(mb, idx(32));
    loop(zero, steps, one, [&](Value s) {
      Value ks = mul(s, idx(32));
      Value k = add(k0, ks);
      Value blockStep = add(mul(mb, idx(kSteps)), s);
      Value base = mul(blockStep, idx(kParts * 32));
      loop(zero, idx(32), one, [&](Value r) {
        Value m = add(m0, r);
        Value x0 = loadClamped(A, m, M, k, K);
        Value k16 = add(k, idx(16));
        Value x1 = loadClamped(A, m, M, k16, K);
        SmallVector<Value> p0 = splitToBF16(b, loc, x0, kParts);
        SmallVector<Value> p1 = splitToBF16(b, loc, x1, kParts);
        for (int64_t p = 0; p < kParts; ++p) {
          Value row = add(base, add(idx(p * 32), r));
          vector::StoreOp::create(b, loc, p0[p], ap, ValueRange{row, zero});
          Value c16 = idx(16);
          vector::StoreOp::create(b, loc, p1[p], ap, ValueRange{row, c16});
        }
      });
    });
  }

  /// B's columns [c0, c0 + 32·panels) and k [k0, k0 + 32·steps) packed
  /// into `bw` (the f32 view of the chunk's buffer): row ((j·kSteps + s)·
  /// kParts + p)·32 + 16h + kk holds, for the 16 columns n = c0 + 32j +
  /// 16h + i, the pairs of part p of B[n, k0 + 32s + 2kk .. + 2].
  void packB(Value bw, Value c0, Value panels, Value k0, Value steps) {
    Value zero = idx(0), one = idx(1), c16 = idx(16);
    Value lastCol = sub(K, one);
    auto square = VectorType::get({16, 16}, f32);
    // The 16 rows' parts, split once: [kParts·16, 32] bf16 (rows of 32
    // bf16, read back as 16 f32 words by the transposes).
    std::pair<Value, Value> rowsBuf = tileBuffer(idx(kParts * 16));
    Value rowsTiles = rowsBuf.first, rowsWords = rowsBuf.second;
    SmallVector<int64_t> order(32);
    for (int64_t i = 0; i < 32; ++i)
      order[i] = i;
    loop(zero, panels, one, [&](Value j) {
      loop(zero, steps, one, [&](Value s) {
        Value ks = mul(s, idx(32));
        Value k = add(k0, ks);
        Value k16 = add(k, c16);
        Value kEnd = add(k, idx(32));
        Value fullK = le(kEnd, K);
        Value panelStep = add(mul(j, idx(kSteps)), s);
        Value base = mul(panelStep, idx(kParts * 32));
        Value jc = mul(j, idx(32));
        Value panelCol = add(c0, jc);
        for (int64_t h = 0; h < 2; ++h) {
          Value n0 = add(panelCol, idx(16 * h));
          Value nEnd = add(n0, c16);
          Value fullN = le(nEnd, N);
          Value inside = arith::AndIOp::create(b, loc, fullN, fullK);
          auto split = [&](bool clamped) {
            loop(zero, c16, one, [&](Value i) {
              Value n = add(n0, i);
              // The row's lines kPackAhead steps on (clamped into B): the
              // pack otherwise waits on memory row by row (60% of its
              // samples on its loads).
              if (!clamped)
                for (int64_t l = 0; l < 2; ++l) {
                  Value ahead = add(k, idx(32 * kPackAhead + 16 * l));
                  Value col = min(ahead, lastCol);
                  memref::PrefetchOp::create(b, loc, B, ValueRange{n, col},
                                             /*isWrite=*/false,
                                             /*localityHint=*/3,
                                             /*isDataCache=*/true);
                }
              Value x0 = loadRow(B, n, N, k, K, clamped);
              Value x1 = loadRow(B, n, N, k16, K, clamped);
              SmallVector<Value> p0 = splitToBF16(b, loc, x0, kParts);
              SmallVector<Value> p1 = splitToBF16(b, loc, x1, kParts);
              for (int64_t p = 0; p < kParts; ++p) {
                Value pairs =
                    vector::ShuffleOp::create(b, loc, p0[p], p1[p], order);
                Value row = add(idx(16 * p), i);
                vector::StoreOp::create(b, loc, pairs, rowsTiles,
                                        ValueRange{row, zero});
              }
            });
          };
          ifElse(
              inside, [&] { split(false); }, [&] { split(true); });
          for (int64_t p = 0; p < kParts; ++p)
            storeTransposedBlock(
                b, loc, square,
                [&](int64_t i) {
                  return vector::LoadOp::create(
                             b, loc, vt, rowsWords,
                             ValueRange{idx(16 * p + i), zero})
                      .getResult();
                },
                bw, add(base, idx(p * 32 + 16 * h)), zero);
        }
      });
    });
  }

  /// Per step s, the six products of each of the 2 × 2 C tiles `c`, A's
  /// tiles from row aRow + s·kParts·32 of `ap`, B's from bRow + ... of `bp`.
  void step(SmallVectorImpl<Value> &c, Value ap, Value bp, Value aRow,
            Value bRow, Value s) {
    Value zero = idx(0);
    Value stepRows = idx(kParts * 32);
    Value sRows = mul(s, stepRows);
    Value aStep = add(aRow, sRows);
    Value bStep = add(bRow, sRows);
    // The two tiles (16 rows each) of part `part` from row `base` of `mem`.
    auto tile = [&](Value mem, Value base, int64_t part, int64_t t) -> Value {
      Value row = add(base, idx(part * 32 + 16 * t));
      return amx::TileLoadOp::create(b, loc, tileAB, mem, ValueRange{row, zero},
                                     Value());
    };
    emitAmxPairProducts(
        b, loc, kProducts, c,
        [&](int64_t part, int64_t t) { return tile(ap, aStep, part, t); },
        [&](int64_t part, int64_t t) { return tile(bp, bStep, part, t); });
  }

  /// C tiles [r0, r0 + 32) × [c0, c0 + 32) of `cmem` += the products of
  /// kSteps steps (no `units`: unrolled, the C tiles loaded and stored
  /// once) or of units × kStepsPerC steps (the C tiles loaded and stored
  /// every kStepsPerC: tiles do not cross a loop), A's tiles from row aRow
  /// of `ap`, B's from row bRow of `bp`.
  void block(Value cmem, Value r0, Value c0, Value ap, Value bp, Value aRow,
             Value bRow, Value units) {
    SmallVector<Value> rows, cols;
    for (int64_t h = 0; h < 2; ++h) {
      rows.push_back(add(r0, idx(16 * h)));
      cols.push_back(add(c0, idx(16 * h)));
    }
    auto run = [&](Value s0, int64_t steps) {
      SmallVector<Value> c;
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t g = 0; g < 2; ++g)
          c.push_back(amx::TileLoadOp::create(
              b, loc, tileC, cmem, ValueRange{rows[h], cols[g]}, Value()));
      for (int64_t t = 0; t < steps; ++t) {
        Value s = add(s0, idx(t));
        step(c, ap, bp, aRow, bRow, s);
      }
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t g = 0; g < 2; ++g)
          amx::TileStoreOp::create(b, loc, cmem, ValueRange{rows[h], cols[g]},
                                   c[2 * h + g], Value());
    };
    if (!units) {
      run(idx(0), kSteps);
      return;
    }
    loop(idx(0), units, idx(1), [&](Value u) {
      Value s0 = mul(u, idx(kStepsPerC));
      run(s0, kStepsPerC);
    });
  }

  /// C[m0 .. m0 + 32, n0 .. n0 + 32) (its part inside C) into `scratch`,
  /// zero elsewhere (`in`), or back.
  void copyEdge(Value scratch, Value m0, Value n0, bool in) {
    Value zero = idx(0), one = idx(1);
    loop(zero, idx(32), one, [&](Value r) {
      Value m = add(m0, r);
      for (int64_t v = 0; v < 2; ++v) {
        Value col = add(n0, idx(16 * v));
        Value sc = idx(16 * v);
        if (in) {
          Value x = loadClamped(C, m, M, col, N);
          vector::StoreOp::create(b, loc, x, scratch, ValueRange{r, sc});
          continue;
        }
        Value inRows = lt(m, M);
        Value left = max(sub(N, col), zero);
        Value n = arith::SelectOp::create(b, loc, inRows, left, zero);
        Value mask = vector::CreateMaskOp::create(b, loc, vmask, ValueRange{n});
        Value lastRow = sub(M, one);
        Value row = min(m, lastRow);
        Value x =
            vector::LoadOp::create(b, loc, vt, scratch, ValueRange{r, sc});
        vector::MaskedStoreOp::create(b, loc, C, ValueRange{row, col}, mask, x);
      }
    });
  }

  /// The rows of C's next block (the next panel, or the first of the next
  /// block of rows), clamped into C, prefetched into L1 while this block
  /// runs: its tile loads, 16 rows a row stride apart, otherwise wait on
  /// memory row by row (C is read once per K block).
  void prefetchNextC(Value m0, Value n0, Value c0, Value j, Value panels) {
    Value one = idx(1), c32 = idx(32);
    Value j1 = add(j, one);
    Value more = lt(j1, panels);
    Value nNext = add(n0, c32);
    Value mNext = add(m0, c32);
    Value n = arith::SelectOp::create(b, loc, more, nNext, c0);
    Value m = arith::SelectOp::create(b, loc, more, m0, mNext);
    Value lastRow = sub(M, one), lastCol = sub(N, one);
    Value n16 = add(n, idx(16));
    SmallVector<Value> cols = {min(n, lastCol), min(n16, lastCol)};
    loop(idx(0), c32, one, [&](Value r) {
      Value row = min(add(m, r), lastRow);
      for (Value col : cols)
        memref::PrefetchOp::create(b, loc, C, ValueRange{row, col},
                                   /*isWrite=*/true, /*localityHint=*/3,
                                   /*isDataCache=*/true);
    });
  }

  /// The body of a chunk function (args: C, ap, bp, c0, panels, mBlocks,
  /// B, nextK[, units]): per block of 32 rows and panel of 32 columns,
  /// the block's products (`block`; whole K blocks without `units`), blocks
  /// that cross M or N through the 32 × 32 scratch. One call per chunk and
  /// K block: the tile configuration is loaded once per call.
  void chunkBody(ValueRange args, bool whole) {
    C = args[0];
    Value ap = args[1], bp = args[2], c0 = args[3], panels = args[4],
          mBlocks = args[5];
    B = args[6];
    Value nextK = args[7];
    Value units = whole ? Value() : args[8];
    // Blocks that cross M or N: C's part copied in and out of this.
    Value scratchTile = memref::AllocaOp::create(
        b, loc, MemRefType::get({32, 32}, f32), b.getI64IntegerAttr(64));
    Value scratch = memref::CastOp::create(b, loc, C.getType(), scratchTile);
    M = memref::DimOp::create(b, loc, C, 0);
    N = memref::DimOp::create(b, loc, C, 1);
    K = memref::DimOp::create(b, loc, B, 1);
    Value zero = idx(0), one = idx(1);
    Value blockRows = idx(kSteps * kParts * 32);
    Type matrix = C.getType(), index = b.getIndexType();
    // The chunk's rows of B for the next K block, prefetched into L2 a few
    // rows per block of C (`per` rows: all of them over the chunk's
    // blocks), so that the next pack reads them from cache: its loads from
    // memory, not overlapped with any product, were ~20% of the time.
    Value chunkEnd = add(c0, mul(panels, idx(32)));
    Value cEnd = min(chunkEnd, N);
    Value chunkRows = sub(cEnd, c0);
    Value blocks = mul(mBlocks, panels);
    Value someBlocks = max(blocks, one);
    Value rowsUp = add(chunkRows, sub(someBlocks, one));
    Value per = arith::DivUIOp::create(b, loc, rowsUp, someBlocks);
    Value hasNext = lt(nextK, K);
    Value nextEnd = min(add(nextK, idx(kBlockK)), K);
    loop(zero, mBlocks, one, [&](Value mb) {
      Value m0 = mul(mb, idx(32));
      Value mEnd = add(m0, idx(32));
      Value fullRows = le(mEnd, M);
      Value aRow = mul(mb, blockRows);
      loop(zero, panels, one, [&](Value j) {
        auto next =
            scf::IfOp::create(b, loc, hasNext, /*withElseRegion=*/false);
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(&next.getThenRegion().front());
          Value t = add(mul(mb, panels), j);
          Value r0 = add(c0, mul(t, per));
          Value r1 = min(add(r0, per), cEnd);
          loop(r0, r1, one, [&](Value n) {
            loop(nextK, nextEnd, idx(16), [&](Value k) {
              memref::PrefetchOp::create(b, loc, B, ValueRange{n, k},
                                         /*isWrite=*/false, /*localityHint=*/2,
                                         /*isDataCache=*/true);
            });
          });
        }
        Value n0 = add(c0, mul(j, idx(32)));
        Value nEnd = add(n0, idx(32));
        Value fullCols = le(nEnd, N);
        Value full = arith::AndIOp::create(b, loc, fullRows, fullCols);
        Value bRow = mul(j, blockRows);
        prefetchNextC(m0, n0, c0, j, panels);
        auto where = scf::IfOp::create(b, loc, TypeRange{matrix, index, index},
                                       full, /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(&where.getThenRegion().front());
          scf::YieldOp::create(b, loc, ValueRange{C, m0, n0});
          b.setInsertionPointToStart(&where.getElseRegion().front());
          copyEdge(scratch, m0, n0, /*in=*/true);
          scf::YieldOp::create(b, loc, ValueRange{scratch, zero, zero});
        }
        block(where.getResult(0), where.getResult(1), where.getResult(2), ap,
              bp, aRow, bRow, units);
        auto back = scf::IfOp::create(b, loc, full, /*withElseRegion=*/true);
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(&back.getElseRegion().front());
        copyEdge(scratch, m0, n0, /*in=*/false);
      });
    });
  }

  /// The function's body (A, B, C, threads set).
  void emit() {
    M = memref::DimOp::create(b, loc, C, 0);
    N = memref::DimOp::create(b, loc, C, 1);
    K = memref::DimOp::create(b, loc, A, 1);
    Value zero = idx(0), one = idx(1);
    Value unitK = idx(kUnitK);
    Value kPadded = mul(divUp(K, kUnitK), unitK);
    Value mBlocks = divUp(M, 32);
    // Chunks of whole 32-column panels, at most kMaxSpan columns, at least
    // as many as there are threads when N allows.
    Value someThreads = max(threads, one);
    Value nUp = add(N, sub(someThreads, one));
    Value perThread = arith::DivUIOp::create(b, loc, nUp, someThreads);
    Value c32 = idx(32), maxSpan = idx(kMaxSpan);
    Value span0 = mul(divUp(perThread, 32), c32);
    Value span = max(min(span0, maxSpan), c32);
    Value spanUp = add(N, sub(span, one));
    Value chunks = arith::DivUIOp::create(b, loc, spanUp, span);
    Value apRows = mul(mBlocks, idx(kSteps * kParts * 32));
    Value ap = tileBuffer(apRows).first;
    loop(zero, kPadded, idx(kBlockK), [&](Value k0) {
      Value blockK = idx(kBlockK);
      Value kc = min(sub(kPadded, k0), blockK);
      Value steps = arith::DivUIOp::create(b, loc, kc, idx(32));
      parallel(mBlocks, [&](Value mb) { packA(ap, mb, k0, steps); });
      parallel(chunks, [&](Value chunk) {
        Value c0 = mul(chunk, span);
        Value cEnd = min(add(c0, span), N);
        Value panels = divUp(sub(cEnd, c0), 32);
        Value bpRows = mul(panels, idx(kSteps * kParts * 32));
        auto [bpTiles, bpWords] = tileBuffer(bpRows);
        Value bp = bpTiles;
        packB(bpWords, c0, panels, k0, steps);
        Value nextK = add(k0, idx(kBlockK));
        SmallVector<Value> args = {C, ap, bp, c0, panels, mBlocks, B, nextK};
        Value isWhole = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              steps, idx(kSteps));
        ifElse(
            isWhole, [&] { func::CallOp::create(b, loc, wholeFn, args); },
            [&] {
              Value units =
                  arith::DivUIOp::create(b, loc, steps, idx(kStepsPerC));
              args.push_back(units);
              func::CallOp::create(b, loc, partialFn, args);
            });
      });
    });
  }
};

} // namespace

func::FuncOp mlir::attn::getOrCreateAmxGemm(OpBuilder &b, Location loc,
                                            ModuleOp module) {
  StringRef name = "attn_gemm_amx";
  int64_t dyn = ShapedType::kDynamic;
  auto layout = StridedLayoutAttr::get(b.getContext(), dyn, {dyn, 1});
  auto matrix = MemRefType::get({dyn, dyn}, b.getF32Type(), layout);
  auto type = b.getFunctionType({matrix, matrix, matrix, b.getIndexType()}, {});
  if (auto fn = module.lookupSymbol<func::FuncOp>(name);
      fn && fn.getFunctionType() == type)
    return fn;
  SymbolTable symbols(module);
  // The chunk functions: (C, ap, bp, c0, panels, mBlocks, B, nextK[,
  // units]).
  Type index = b.getIndexType();
  auto tiles = MemRefType::get({dyn, 32}, b.getBF16Type());
  SmallVector<Type> blockArgs = {matrix, tiles, tiles,  index,
                                 index,  index, matrix, index};
  auto makeBlock = [&](StringRef blockName, bool whole) {
    SmallVector<Type> argTypes = blockArgs;
    if (!whole)
      argTypes.push_back(index);
    func::FuncOp f = createKernelFunction(symbols, loc, blockName,
                                          b.getFunctionType(argTypes, {}));
    Block *entry = &f.getBody().front();
    OpBuilder bb = OpBuilder::atBlockBegin(entry);
    AmxGemm e(bb, loc);
    e.chunkBody(entry->getArguments(), whole);
    func::ReturnOp::create(bb, loc);
    return f;
  };
  func::FuncOp wholeFn = makeBlock("attn_gemm_amx_chunk", true);
  func::FuncOp partialFn = makeBlock("attn_gemm_amx_chunk_partial", false);
  func::FuncOp fn = createKernelFunction(symbols, loc, name, type);
  Block *body = &fn.getBody().front();
  OpBuilder fb = OpBuilder::atBlockBegin(body);
  AmxGemm g(fb, loc);
  g.wholeFn = wholeFn;
  g.partialFn = partialFn;
  g.A = body->getArgument(0);
  g.B = body->getArgument(1);
  g.C = body->getArgument(2);
  g.threads = body->getArgument(3);
  g.emit();
  func::ReturnOp::create(fb, loc);
  return fn;
}

void mlir::attn::emitAmxGemmOr(OpBuilder &b, Location loc, Value A, Value B,
                               Value C, Value threads,
                               function_ref<void()> otherwise) {
  // Enough rows for the B pack to pay and columns for the A pack (split
  // into parts once per GEMM, ~1 cycle per element: at 64 columns it cost
  // more than the products), and the tile state granted (asked only then:
  // decode never asks).
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  Value M = memref::DimOp::create(b, loc, C, 0);
  Value N = memref::DimOp::create(b, loc, C, 1);
  Value rowBound = arith::ConstantIndexOp::create(b, loc, kAmxGemmRows);
  Value colBound = arith::ConstantIndexOp::create(b, loc, kAmxGemmCols);
  Value rows =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, M, rowBound);
  Value cols =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, N, colBound);
  Value many = arith::AndIOp::create(b, loc, rows, cols);
  auto tiles = scf::IfOp::create(b, loc, TypeRange{b.getI1Type()}, many,
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&tiles.getThenRegion().front());
    Value ready = emitAmxReady(b, loc, module);
    scf::YieldOp::create(b, loc, ready);
    b.setInsertionPointToStart(&tiles.getElseRegion().front());
    Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    scf::YieldOp::create(b, loc, no);
  }
  auto use = scf::IfOp::create(b, loc, tiles.getResult(0),
                               /*withElseRegion=*/true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&use.getThenRegion().front());
  func::FuncOp fn = getOrCreateAmxGemm(b, loc, module);
  SmallVector<Value> args = {A, B, C};
  for (auto [v, t] : llvm::zip(args, fn.getArgumentTypes()))
    if (v.getType() != t)
      v = memref::CastOp::create(b, loc, t, v);
  args.push_back(threads);
  func::CallOp::create(b, loc, fn, args);
  b.setInsertionPointToStart(&use.getElseRegion().front());
  otherwise();
}
