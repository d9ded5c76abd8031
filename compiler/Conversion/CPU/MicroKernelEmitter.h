//===- MicroKernelEmitter.h - the CPU micro-kernel's emitter ----*- C++ -*-===//
//
// The emitter of the CPU micro-kernel (MicroKernel.cpp: the shared helpers,
// decode's dot-product path, the paged row tables and the entry points;
// MicroKernelLanes.cpp: the lanes path of prefill; MicroKernelAmx.cpp and
// MicroKernelAmxPrefill.cpp: decode and prefill on AMX tiles). Internal to
// compiler/Conversion/CPU.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_MICROKERNELEMITTER_H
#define ATTN_COMPILER_CONVERSION_CPU_MICROKERNELEMITTER_H

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/LoopBuilder.h"
#include "dialects/Attn/IR/AttnOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn::microkernel {

inline bool hasF32Elements(Type t) {
  auto s = dyn_cast<ShapedType>(t);
  return s && s.getElementType().isF32();
}

/// Emits the micro-kernel for one op on its buffers.
struct Emitter {
  OpBuilder &b;
  Location loc;
  OnlineAttentionOp op;
  Value q = {}, k = {}, v = {}, acc = {}, max = {}, sum = {}; ///< memrefs
  /// Vectors of W keys per chunk of keys.
  static constexpr int64_t kChunkVectors = kMicroKernelChunkVectors;
  int64_t W = 16, R = 4, NV = kChunkVectors, CV = 4;
  /// Decode's rows per block and P · V's vectors per row there
  /// (microKernelDecodeRows); R and CV are the lanes path's.
  int64_t RD = 4, CVD = 4;
  int64_t d = 0, dv = 0, lead = 0;
  VectorType vt = {}, vi32 = {}, vmask = {};
  /// Scratch of decode's path: [R, C] probabilities, [R] alphas.
  Value P = {}, A = {};
  /// Scratch of the lanes path (prefill, or d % W != 0): the chunk's K and
  /// V rows as f32 [C, d] and [C, dv] (copied, widened from bf16/f16, once
  /// per chunk); the query rows transposed and scaled, by blocks of RB rows,
  /// Qt [Tcap / RB · dPad, RB]: element (k, t) at row (t / RB) · dPad + k,
  /// column t % RB, so a register block's rows are one contiguous span
  /// (a [dPad, Tcap] layout put the block's d steps Tcap · 4 bytes apart,
  /// on a few L1 sets: at Tcap = 256, 1 KiB, 8 sets for 256 lines);
  /// key-major probabilities Pt [C, RB]; per block row alpha, new max and
  /// new sum St [3, RB]; per packed row its indices in q/acc/max/sum
  /// (rowTab [Tcap, lead + 1]) and its position m (rowPos [Tcap], i32);
  /// and `tag` [2]: the query buffer (address) and row count Qt holds.
  Value Kw = {}, Vw = {}, Qt = {}, Pt = {}, St = {}, rowTab = {}, rowPos = {},
        tag = {};
  /// Rows per block of the lanes path (RV vectors of W rows), keys per
  /// register tile of its scores (RV·KB accumulators), rows Qt holds.
  int64_t RV = 2, KB = 8, Tcap = 0;
  int64_t RB() const { return RV * W; }
  int64_t dPad() const { return (d + W - 1) / W * W; }
  /// The row of Qt that holds d step 0 of the block of packed row t0 (a
  /// multiple of RB).
  Value qtBlockRow(Value t0) {
    Value blk = arith::DivUIOp::create(b, loc, t0, idx(RB()));
    return arith::MulIOp::create(b, loc, blk, idx(dPad()));
  }
  /// Set while the lanes path's P·V runs: P·V reads Pt[n, pRow0 + r].
  Value pRow0 = {};
  /// Set while the lanes path's P·V runs: its first key (firstKeySeenBy).
  Value pvFirst = {};
  /// p of block row r and key n for P·V: P[r, n] (decode) or Pt.
  Value pAt(int64_t r, Value n) {
    if (pRow0)
      return memref::LoadOp::create(b, loc, Pt,
                                    ValueRange{n, add(pRow0, idx(r))});
    return memref::LoadOp::create(b, loc, P, ValueRange{idx(r), n});
  }
  /// Where P · V reads the chunk's V rows: `v` itself (rows n0 + n), or
  /// the widened copy Vw (rows n) while the packed path runs.
  bool vWidened = false;
  /// Decode: the next chunk's first row and the tile's last row (where
  /// the prefetches stop), for prefetches of K and V rows.
  Value prefetchBase = {}, prefetchLast = {};
  /// A paged tile (`pages(...)`): K and V are one KV head's page pools,
  /// read as flat buffers at the element offsets of each key row that
  /// fillRowTables writes per chunk into kRows/vRows ([2C]: this chunk's
  /// rows, then the next chunk's, which the decode path prefetches).
  bool paged = false;
  Value kFlat = {}, vFlat = {}, kRows = {}, vRows = {};

  int64_t chunk() const { return NV * W; }
  /// Below this many rows per tile, Q·Kᵀ uses dot products, not the pack:
  /// up to 16, so that decode with a group of 16 query heads per KV head
  /// (the seed model's) streams K like the smaller groups (1.5x faster
  /// than the pack there: 38.4 -> 25.6 ms against 65,536 keys).
  static constexpr int64_t kDotRows = 17;
  Value idx(int64_t c) { return arith::ConstantIndexOp::create(b, loc, c); }
  Value f32(double c) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(c));
  }
  Value splatF(double c) {
    return arith::ConstantOp::create(
        b, loc, vt, DenseElementsAttr::get(vt, b.getF32FloatAttr(c)));
  }
  Value splat(Value scalar, VectorType t) {
    return vector::BroadcastOp::create(b, loc, t, scalar);
  }
  Value negInf() {
    return f32(-std::numeric_limits<double>::infinity());
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value minI(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  /// x rounded up to a multiple of m. (One op per statement here and
  /// below: the order of ops created in one argument list would depend on
  /// the C++ compiler; tools/dev.sh gcc-check.)
  Value roundUp(Value x, int64_t m) {
    Value step = idx(m);
    Value n = arith::CeilDivSIOp::create(b, loc, x, step);
    return arith::MulIOp::create(b, loc, n, step);
  }
  /// The scores' max: no NaN to propagate (scores are finite or -inf for a
  /// masked key) and the sign of a zero max does not matter, so `nnan nsz`
  /// lets LLVM emit one vmaxps instead of IEEE maximum's NaN and ±0
  /// handling (six instructions per step: 17% of P1's time went there).
  arith::FastMathFlagsAttr noNaNs() {
    return arith::FastMathFlagsAttr::get(
        b.getContext(), arith::FastMathFlags::nnan | arith::FastMathFlags::nsz);
  }
  Value maxNoNaN(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y, noNaNs());
  }
  /// W f32 lanes of `mem` at `ix` (masked lanes 0): a bf16 or f16 buffer (a
  /// narrow K/V cache) is loaded as such and widened in registers (bf16: a
  /// shift; f16: vcvtph2ps), never copied to f32 memory.
  Value loadF32(Value mem, ValueRange ix, Value mask = {});
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
  }
  /// The tile's number of keys.
  Value numKeys() {
    return paged ? op.getNumKeys() : memref::DimOp::create(b, loc, k, 0);
  }
  /// Key row n0 + rel of K (`key`) or V: the buffer and what indexes it
  /// before the column (the row, or a paged tile's element offset).
  struct RowRef {
    Value mem, row;
    bool flat;
  };
  RowRef kvRow(bool key, Value n0, Value rel) {
    if (!paged)
      return {key ? k : v, add(n0, rel), false};
    Value off =
        memref::LoadOp::create(b, loc, key ? kRows : vRows, ValueRange{rel});
    return {key ? kFlat : vFlat, off, true};
  }
  SmallVector<Value> colOf(const RowRef &r, Value col) {
    if (r.flat)
      return {add(r.row, col)};
    return {r.row, col};
  }

  /// scf.for with loop-carried vectors; `body` returns the next values.
  SmallVector<Value>
  loop(Value lb, Value ub, Value step, ValueRange init,
       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    scf::ForOp f = buildForLoop(b, loc, lb, ub, step, init, body);
    return SmallVector<Value>(f.getResults());
  }
  void loop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    buildForLoop(b, loc, lb, ub, step, body);
  }

  /// Copies the chunk's K (`key`) or V rows [n0, n0 + nc) into rows
  /// [0, nc) of the f32 scratch `dst` ([C, width]), widening bf16/f16,
  /// once per chunk: every block of query rows (and every head of the
  /// group) then reads f32 from the same hot 64-byte aligned scratch, at a
  /// static row stride. A bf16 V converted at each use cost prefill 13%
  /// (P1); an f32 V read in place rather than from the copy, 5-12% (P1 55%
  /// -> 63%, P4 59% -> 63% of the FMA peak on a Zen 5).
  void copyRows(bool key, Value dst, int64_t width, Value n0, Value nc);

  /// Index list [lead..., m, extra...] of a row into a buffer.
  static SmallVector<Value> at(ArrayRef<Value> row,
                               std::initializer_list<Value> extra = {}) {
    SmallVector<Value> r(row.begin(), row.end());
    r.append(extra.begin(), extra.end());
    return r;
  }

  /// Row `t` of the flattened [lead..., M] rows as [lead..., m].
  SmallVector<Value> delinearize(Value t, Value M, ArrayRef<Value> leadUbs) {
    SmallVector<Value> row(lead + 1);
    row[lead] = arith::RemSIOp::create(b, loc, t, M);
    Value rest = arith::DivSIOp::create(b, loc, t, M);
    for (int64_t i = lead - 1; i >= 0; --i) {
      row[i] = i == 0 ? rest : arith::RemSIOp::create(b, loc, rest, leadUbs[i]);
      if (i > 0)
        rest = arith::DivSIOp::create(b, loc, rest, leadUbs[i]);
    }
    return row;
  }

  /// The visible-key mask of row position `qPos` (key coordinates) for the
  /// key vector starting at chunk lane `j*W`; null when every lane is
  /// visible by construction (never: padding lanes are always checked).
  Value visible(Value qPos, Value kvBase, Value nc, int64_t j);

  /// The op's mask on lanes of key positions `kPos` against query positions
  /// `qPos` (i32 vectors alike): a key at or before the query's position
  /// (causal), and within the window (sliding_window); null without a mask.
  /// The one definition for both paths (decode's lanes are keys, prefill's
  /// rows).
  Value maskKeeps(Value kPos, Value qPos);

  /// Decode's online-softmax update of the block of `rows` query rows
  /// from flattened row `t0` (rows of one block may belong to different
  /// heads of the group: in decode every head has a single row) against the
  /// chunk: the block's scores into the P scratch (dotScores), then each
  /// row's softmax in a loop (one copy of its code whatever R is), alpha
  /// through scratch, then P · V for the block.
  void rowBlock(Value t0, int64_t rows, Value M, ArrayRef<Value> leadUbs,
                Value n0, Value nc);

  /// Sums each of the W vectors `v` across its lanes: the result's lane i is
  /// the sum of v[i]. A shuffle tree (log2 W levels of two shuffles and an
  /// add per output) instead of W horizontal reductions.
  Value sumLanes(SmallVector<Value> v);

  /// S = Q · Kᵀ without the pack, for few rows (decode), into P's rows.
  /// A tile is the block's rows × KR = W / rows keys: W accumulators, each
  /// a dot product along d, so that every K vector loaded serves all the
  /// rows (the heads of the GQA group) and each key row is read once, in
  /// address order (the hardware prefetcher follows). sumLanes folds the
  /// W accumulators into one vector, lane r·KR + i the score of row r and
  /// key i. In a partial chunk, keys past its end read the last key
  /// instead and the padding mask drops them (one code for full and
  /// partial chunks: a copy without the clamp for full chunks was no faster
  /// and made the tile a third larger). The loop stops at the chunk's last
  /// block of keys: a short tile (a sequence's last few keys) does
  /// not compute the chunk's empty lanes, whose scores the padding mask
  /// drops whatever the scratch holds.
  void dotScores(ArrayRef<SmallVector<Value>> rowAt, Value n0, Value nc);

  /// e^t for the softmax's arguments, t ≤ 0 or -inf (a score minus its
  /// row's max, an old max minus the new), vector or scalar f32: n =
  /// round(t·log2 e), r = t - n·ln 2 in [-ln2/2, ln2/2], e^r by its Taylor
  /// polynomial of degree 6 (relative error below 1.3e-7 there), times 2^n.
  /// With 16 lanes (AVX-512) 2^n is applied by vscalefps, t clamped at
  /// -150 first (scalef then underflows to exactly 0); otherwise 2^n is
  /// built in the exponent bits, t clamped at -88, where n = -127 gives
  /// the bits of +0.0 (values below e^-87.3, denormals, flush to 0: an
  /// absolute error under 1e-38 next to the row's largest term, e^0 = 1).
  /// Either way e^-inf is exactly 0 (a masked key, a row with no visible
  /// key so far). math.exp's polynomial approximation handles any t
  /// (over- and underflow clamps, a second range reduction): 21 vector
  /// instructions against 11 (AVX-512) or 14 here, per vector of keys of
  /// every row.
  Value expNonPositive(Value t);

  /// One row's scores (its vectors: NV, or 1 for a short chunk): scale,
  /// softcap, mask; the new max and sum are stored, P goes to scratch row
  /// `pRow`; returns alpha, the rescaling of the row's old accumulator.
  Value softmaxRow(ArrayRef<Value> row, ArrayRef<Value> scores, Value pRow,
                   Value n0, Value nc);

  /// acc = acc · alpha + P · V for the rows `rowAt` (P in scratch rows
  /// 0..rows), cv vectors of dv at a time in rows × cv registers: a loop
  /// over the groups of cv full vectors (one copy of the code whatever dv
  /// is), then the rest of dv (fewer vectors, the last one masked when W
  /// does not divide dv).
  void pvBlock(ArrayRef<SmallVector<Value>> rowAt, ArrayRef<Value> alphas,
               Value n0, Value nc, int64_t cv);

  /// pvBlock on the masks.size() vectors of dv from column `col`; a null
  /// mask is a full vector. In decode, the same columns of the next chunk's
  /// V rows are prefetched while this chunk's run.
  void pvGroup(ArrayRef<SmallVector<Value>> rowAt, ArrayRef<Value> alphas,
               Value n0, Value nc, Value col, ArrayRef<Value> masks);

  /// Decode streams K and V from memory once: while P · V runs over key n
  /// of this chunk, key n of the next chunk (the 64-byte lines of columns
  /// [col, col + width) of its K or V row) is prefetched to L2, so the
  /// loads overlap the arithmetic.
  /// A paged tile's next chunk is rows [C, 2C) of its row tables.
  void prefetchRow(bool key, Value n, Value col, int64_t width);

  /// A pool [num_pages, P, d] (strided) as a flat buffer of its elements,
  /// with its offset and page and row strides in elements.
  struct FlatPool {
    Value mem, offset, pageStride, rowStride, base;
  };
  FlatPool flatten(Value pool);
  FlatPool kPool = {}, vPool = {};
  Value pageSize = {};
  void flattenPools() {
    kPool = flatten(k);
    vPool = flatten(v);
    kFlat = kPool.mem;
    vFlat = vPool.mem;
    pageSize = memref::DimOp::create(b, loc, k, 1);
  }

  /// A demand load of the byte at element `off` of the flat pool `p`
  /// (volatile: nothing uses the value). See fillRowTables.
  void touch(const FlatPool &p, Value off) {
    int64_t bytes =
        cast<MemRefType>(p.mem.getType()).getElementTypeBitWidth() / 8;
    Value scaled = arith::MulIOp::create(b, loc, off, idx(bytes));
    Value addr = add(p.base, scaled);
    Value a64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), addr);
    Value ptr = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), a64);
    LLVM::LoadOp::create(b, loc, b.getI8Type(), ptr, /*alignment=*/1,
                         /*isVolatile=*/true);
  }
  /// Touches the next chunk's rows C, C + P, C + 2P, ... (table `rows`)
  /// of the pool `p`: one row in each page of the next chunk whenever its
  /// pages start at multiples of P from the chunk's start (kv_pos a
  /// multiple of P, and P dividing C or a multiple of it: a sequence's
  /// pages of 16 or 256 tokens); other pages are only prefetched. (Finding
  /// each page's first row instead, a division per chunk, measured slower:
  /// D1 f32 pages of 16, 3.6-4.0 ms against 3.3-3.4.)
  void touchNextChunk(const FlatPool &p, Value rows) {
    Value c = idx(chunk()), end = idx(2 * chunk());
    loop(c, end, pageSize, [&](Value j) {
      touch(p, memref::LoadOp::create(b, loc, rows, ValueRange{j}));
    });
  }

  /// kRows/vRows[j] = the element offset of key row n0 + j (j < 2C: this
  /// chunk and the next) in kFlat/vFlat: key n is row (kv_pos + n) % P of
  /// page pages[(kv_pos + n) / P - kv_pos / P]; rows past the pages listed
  /// (only ever prefetched or masked) read the last page's. One iteration
  /// per page touched, its rows an arithmetic sequence (a division per
  /// chunk, not per row).
  /// With `touchNext` (decode), it then loads a byte of the first row of
  /// each of the next chunk's pages (touchNextChunk). Decode prefetches
  /// the next chunk's rows while it computes this one's, but pages of 16
  /// tokens put each head's K and V rows on a new, random memory page every
  /// 16 rows, and on the machine this was measured on (an AMD EPYC Zen 5
  /// VM) the software prefetches alone left the kernel waiting on them; a
  /// demand load per page at the chunk's start (before its prefetches)
  /// took D1 with bf16 pages of 16 from 1.97 to 1.47 ms (contiguous: 1.25).
  /// More touches (one per 4 KiB of rows, or the last row of each page as
  /// well) measured slower for f32 pages.
  void fillRowTables(Value n0, bool touchNext = false);

  /// The indices in q/acc/max/sum of packed row `t` (rowTab).
  SmallVector<Value> tabRow(Value t) {
    SmallVector<Value> row;
    for (int64_t c = 0; c <= lead; ++c)
      row.push_back(
          memref::LoadOp::create(b, loc, rowTab, ValueRange{t, idx(c)}));
    return row;
  }

  /// Packs rows [s0, s0 + ns) of the tile's T flattened query rows into Qt
  /// (column t: row s0 + t, times the softmax scale) and their indices into
  /// rowTab/rowPos, up to a multiple of RB rows (rows past T repeat row
  /// T - 1: their lanes compute a copy of its scores and are never stored).
  /// A prefill tile is one chunk of keys, and the tiles of one parallel
  /// iteration share their query rows: `tag` records the buffer and row
  /// count Qt holds, so that the pack runs once per iteration, not once per
  /// tile (when every row fits: T ≤ Tcap).
  void packQueries(Value s0, Value ns, Value T, Value M,
                   ArrayRef<Value> leadUbs);
  /// Whether the pack recorded in `tagBuf` ([2]: the query buffer's
  /// address, the row count) is not the tile's (or T > Tcap: slabs), and
  /// the address to record after packing.
  std::pair<Value, Value> staleTag(Value tagBuf, Value T);

  /// The scores' mask for lanes of query positions `qPos` (i32) against the
  /// chunk's key at position kPos (scalar), which exists when `inRange`
  /// (a key past the chunk's end takes position INT32_MAX, after every
  /// query): null when the mask keeps every lane of an existing key.
  Value laneMask(Value qPos, Value kPos, Value inRange) {
    if (op.getMask() == MaskKind::none)
      return {};
    Value big = arith::ConstantOp::create(b, loc, b.getI32Type(),
                                          b.getI32IntegerAttr(INT32_MAX));
    Value kEff = arith::SelectOp::create(b, loc, inRange, kPos, big);
    return maskKeeps(splat(kEff, vi32), qPos);
  }

  /// The online-softmax update of packed rows [t0, t0 + rvs·W) (of a slab
  /// of ns) against the chunk, with the rows in the lanes: S = Q·Kᵀ by
  /// register tiles of rvs vectors of rows × KB keys (per d step rvs loads
  /// of Qt, KB broadcasts of K, rvs·KB FMAs; no transpose of K), then the
  /// softmax elementwise over the block's rows: per key a vector of RB
  /// scores (mask, running max), the new max, alpha and the exps and sums
  /// with no horizontal reduction and no scalar code per row; then P · V
  /// per R rows.
  void laneBlock(Value t0, Value ns, Value n0, Value nc, int64_t rvs);
  /// How many of the chunk's nc keys (from position kvBase, i32) a block of
  /// rows at positions qPos (i32 vectors) can see: every mask but none
  /// hides the keys after a row's position, so the keys past the block's
  /// last row are left out of its scores, exps and P·V (the first block of
  /// rows of a causal diagonal chunk sees half of it: Llama-3.1-8B's
  /// attention at S = 128 and 256 took 7–14% less time).
  Value keysSeenBy(ArrayRef<Value> qPos, Value kvBase, Value nc);
  /// The first of the chunk's keys (rounded down to a group of KB) a block
  /// of rows at positions qPos can see: a sliding window hides the keys at
  /// or before a row's position minus the window, so the keys before the
  /// block's first row's window are left out (0 for the other masks).
  Value firstKeySeenBy(ArrayRef<Value> qPos, Value kvBase, Value seenKeys);

  /// Where the lanes path's scores read the chunk's keys (kSrc, rows from
  /// 0): an f32 K whose rows are d apart is read in place (the scores
  /// broadcast single elements: alignment does not matter, and a copy cost
  /// 2.5% of P2's time), except for a partial chunk, whose missing rows the
  /// register tile would read past K's end; otherwise (bf16/f16, paged,
  /// other strides) the rows copied to Kw.
  Value kSrc = {};
  void chunkKeys(Value n0, Value nc);

  /// Prefill (and any tile when W does not divide d): the rows in slabs of
  /// at most Tcap, each packed (packQueries), then per chunk of keys its K
  /// and V rows copied to f32 scratch and laneBlock per RB rows.
  void lanesPath(Value T, Value M, ArrayRef<Value> leadUbs, Value N);

  /// Grouped decode of a bf16 cache on AMX tiles (MicroKernelAmx.cpp):
  /// `amx` when amxDecodeApplies, with its scratch (allocateAmxScratch).
  bool amx = false;
  SmallVector<Value> amxBufs = {};
  /// `buf` (i8, 64-byte aligned) as a static [shape] of `elt`.
  Value amxView(Value buf, ArrayRef<int64_t> shape, Type elt);
  /// True once the OS has granted this process the tile data state: asked
  /// once (arch_prctl) and remembered in a module global.
  Value amxReady();
  /// x as three bf16 parts whose sum is x to f32 accuracy.
  SmallVector<Value> splitBF16(Value x);
  /// The decode of at most 16 rows T on the tile unit.
  void amxPath(Value T, Value M, ArrayRef<Value> leadUbs, Value N);
  /// Prefill (more than 16 rows) on AMX tiles (MicroKernelAmxPrefill.cpp):
  /// `amxPrefill` when amxPrefillApplies, with its scratch
  /// (allocateAmxPrefillScratch).
  bool amxPrefill = false;
  SmallVector<Value> amxPrefillBufs = {};
  void amxPrefillPath(Value T, Value M, ArrayRef<Value> leadUbs, Value N);

  /// The tile's code, at the builder's insertion point, scratch set.
  void emit();

  /// Rows the query pack holds: the tile's, when static; else the
  /// tiler's q-block (attn.q_block on the enclosing loop) times the static
  /// lead dims; else 256; a multiple of the block rows, at most 4096 (more
  /// rows are packed in slabs).
  static int64_t packRows(OnlineAttentionOp tile, int64_t w);
};

} // namespace mlir::attn::microkernel

#endif // ATTN_COMPILER_CONVERSION_CPU_MICROKERNELEMITTER_H
