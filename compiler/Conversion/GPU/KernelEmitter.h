//===- KernelEmitter.h - the GPU attention kernels' builder ----*- C++ -*-===//
//
// Internal to compiler/Conversion/GPU: what convert-attn-to-gpu reads from
// the tiled form (TiledSource) and the builder of the kernels' launch
// (KernelEmitter), shared by the fp32 kernel (FP32Kernel.cpp), the bf16/f16
// tensor-core kernel (MmaKernel.cpp) and the pass (AttnToGPU.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_GPU_KERNELEMITTER_H
#define ATTN_COMPILER_CONVERSION_GPU_KERNELEMITTER_H

#include "compiler/Conversion/LoopBuilder.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace attn {
namespace gpu_kernels {

constexpr int64_t kWarp = 32;
constexpr double kLog2e = 1.4426950408889634;

/// What the kernels take from the tiled form: the forall (grid, block
/// ids), the values of its body that the kernel needs (cloned into the
/// launch), and the attention's parameters (from its online_attention ops).
struct TiledSource {
  scf::ForallOp forall;
  /// In the forall body: the block's first query row and row count (the
  /// query tile's offset and size), the key range [lo, hi) its key loops
  /// cover, and the position of its first row in key coordinates.
  Value q0, qn, lo, hi, qPos;
  /// The batch's key length (tensor.extract of kv_lengths), if any.
  tensor::ExtractOp kvLength;
  /// A paged KV cache: the block table [B, max_pages] (i32) whose rows the
  /// key loops slice; K and V are then page pools [num_pages, Hkv,
  /// page_size, D] (HND).
  Value pageTable;
  MaskKind mask = MaskKind::none;
  std::optional<int64_t> window;
  /// Chunked local attention (Llama 4): a row sees the keys of its own
  /// chunk of this many positions, up to itself.
  std::optional<int64_t> chunk;
  std::optional<APFloat> softcap;
  double scale = 1.0;
  int64_t qBlock = 1;
};

struct KernelEmitter {
  OpBuilder &b;
  Location loc;
  const TiledSource &src;
  int64_t qRows = 0, kvBlock = 0;
  /// The tensor-core kernel's rows per warp (16 or 32).
  int64_t warpRows = 16;
  /// sm_90a: the tensor-core kernel's products as warpgroup MMAs (wgmma,
  /// WgmmaKernel.cpp) on 128-byte-swizzled tiles.
  bool wgmma = false;
  /// Which of its products are warpgroup MMAs (S = Q·Kᵀ, O += P·V); the
  /// others are mma.sync on fragments that ldmatrix reads from the same
  /// swizzled tiles (--gpu-wgmma-products: a GPU run tells a wrong
  /// descriptor from a wrong tile layout).
  bool wgmmaQK = true, wgmmaPV = true;
  /// sm_90a, wgmma on a contiguous cache: K/V tiles by TMA (tensor maps made
  /// on the host, completion on an mbarrier per ring slot) instead of each
  /// thread's cp.async.
  bool tma = false;
  /// With TMA and both products on wgmma: each tile's softmax overlapped
  /// with the previous tile's P·V (emitWgmmaOverlap).
  bool overlap = false;
  /// The overlapped kernel warp-specialized (WgmmaKernel.cpp): a producer
  /// warpgroup past the consumers' issues the loads.
  bool warpSpecialized = false;
  // Static shape facts.
  int64_t hkv = 1, group = 1, d = 0, dv = 0, epl = 1, eplV = 1;
  /// Blocks per KV head (grid y = Hkv · headChunks), each taking
  /// blockHeads() of the group's query heads: where one query row of every
  /// head of the group does not fit a block (multi-head latent attention's
  /// absorbed form, 64 or 128 heads over one latent row).
  int64_t headChunks = 1;
  /// V is the first dv columns of K's rows (the latent cache, read in
  /// place): the tensor-core kernel takes V's fragments from the K tile and
  /// stages no V of its own.
  bool vInK = false;
  /// The tensor-core kernel's column groups of warps: each computes the
  /// tile's scores for its rows and O's columns [cg · dv / dvSplit, ...),
  /// so that value head dims past 256 (the latent's 512) keep their
  /// accumulators within a thread's registers.
  int64_t dvSplit = 1;
  int64_t blockHeads() const { return (group + headChunks - 1) / headChunks; }
  int64_t dvPerWarp() const { return dv / dvSplit; }
  /// Query rows per warp: 8 for head dims up to 32, else 4 (registers).
  int64_t kRowsPerWarp = 8;
  /// The tensor-core kernel's operand type: bf16 or f16.
  Type mmaElt = Type();
  /// The block table's buffer of a paged cache (null: contiguous K/V).
  Value table = Value();
  /// Split-K (SplitK.cpp), host values: the query blocks of the grid, the
  /// parts each block's keys are cut into (1: no split), the workspace of
  /// the parts' normalized rows [parts, B, Hq, S, dv] and their log2-sum-
  /// exp [parts, B, Hq, S] (empty without split). Null: no split-K.
  Value gridQ = Value(), parts = Value(), ws = Value(), lse = Value();

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  /// The tiled forall's upper bound `i` as an index value.
  Value forallBound(unsigned i) {
    scf::ForallOp forall = src.forall;
    OpFoldResult f = forall.getMixedUpperBound()[i];
    if (auto v = dyn_cast<Value>(f))
      return v;
    return c(cast<IntegerAttr>(cast<Attribute>(f)).getInt());
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                     b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  /// x·y + z as a contractable multiply-add (NVPTX emits fma.rn.f32):
  /// math.fma would become a libdevice call, and the PTX should not need
  /// the CUDA toolkit's libdevice.
  Value fma(Value x, Value y, Value z) {
    auto contract = arith::FastMathFlagsAttr::get(
        b.getContext(), arith::FastMathFlags::contract);
    Value m = arith::MulFOp::create(b, loc, x, y, contract);
    return arith::AddFOp::create(b, loc, m, z, contract);
  }
  /// 2^x as PTX's ex2.approx.f32 (the NVVM intrinsic; math.exp2 and
  /// llvm.intr.exp2 would become libdevice calls). 2^-inf = +0.
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, Type(b.getF32Type()),
               b.getStringAttr("llvm.nvvm.ex2.approx"), ValueRange{x})
        .getResult(0);
  }

  /// What q is multiplied by on load: the scale, and log2 e (scores in the
  /// log2 domain for ex2) unless softcap needs the natural scores first.
  Value qPrescale() {
    return f32(src.softcap ? src.scale : src.scale * kLog2e);
  }
  /// A score as the kernels fold it: softcap (cap · tanh(s / cap), tanh
  /// from ex2: no libdevice) then in the log2 domain; `s` as it is without
  /// softcap (q was pre-scaled by log2 e).
  Value softcapped(Value s) {
    if (!src.softcap)
      return s;
    double cap = src.softcap->convertToDouble();
    Value ex = exp2(fmul(s, f32(2.0 * kLog2e / cap)));
    Value denom = fadd(ex, f32(1.0));
    Value two = f32(2.0);
    Value frac = arith::DivFOp::create(b, loc, two, denom);
    Value th = arith::SubFOp::create(b, loc, f32(1.0), frac);
    return fmul(th, f32(cap * kLog2e));
  }
  /// `ok` and key `key` visible to the row at key position `qPos` (causal,
  /// sliding window, chunked).
  Value visible(Value ok, Value key, Value qPos) {
    if (src.mask != MaskKind::none)
      ok = andI(ok, cmp(arith::CmpIPredicate::sle, key, qPos));
    if (src.window)
      ok = andI(ok, cmp(arith::CmpIPredicate::sgt, key,
                        sub(qPos, c(*src.window))));
    if (src.chunk)
      ok = andI(ok, cmp(arith::CmpIPredicate::sge, key, chunkStart(qPos)));
    return ok;
  }
  /// Chunked local attention: the first key position of `pos`'s chunk
  /// (pos − pos mod chunk, the remainder taken non-negative).
  Value chunkStart(Value pos) {
    Value size = c(*src.chunk);
    Value rem = arith::RemSIOp::create(b, loc, pos, size);
    Value neg = cmp(arith::CmpIPredicate::slt, rem, c(0));
    Value fixed = add(rem, size);
    Value r = select(neg, fixed, rem);
    return sub(pos, r);
  }

  /// scf.for whose body `body` builds at b's insertion point and whose
  /// yielded values it returns.
  scf::ForOp loop(Value lb, Value ub, Value step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return buildForLoop(b, loc, lb, ub, step, init, body);
  }

  /// scf.if `cond` (no results, no else) whose body `then` builds.
  void ifThen(Value cond, function_ref<void()> then) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    then();
  }

  /// The sum of `x` over the 32 lanes of the warp, in every lane
  /// (gpu.subgroup_reduce; attn-gpu-lower-subgroup-reduce makes it
  /// shuffles).
  Value warpSum(Value x) {
    return gpu::SubgroupReduceOp::create(b, loc, x,
                                         gpu::AllReduceOperation::ADD,
                                         /*uniform=*/true);
  }

  /// The fp32 kernel (FP32Kernel.cpp): per key, warp-reduced dot products
  /// and an online-softmax update per row.
  void emit(Value out, Value q, Value k, Value v, Value lens);
  /// The tensor-core kernel (MmaKernel.cpp: mma.sync m16n8k16 on mmaElt,
  /// fp32 accumulators).
  void emitMma(Value out, Value q, Value k, Value v, Value lens);

  /// Common prologue of both kernels: the launch, its ids and the block's
  /// key range. `tileTypes` are the workgroup buffers.
  struct Launch {
    gpu::LaunchOp op;
    Value bi, g, qb, tid, lane, warp, kvLen, q0, qn, offset, lo, hi;
    /// The block's chunk of the group's heads (0 without headChunks).
    Value hc;
    /// Split-K: this block's part and whether the keys are split (parts >
    /// 1); null without split-K.
    Value part = Value(), split = Value();
  };
  Launch beginLaunch(Value k, Value lens, int64_t threads, TypeRange tileTypes,
                     int64_t dynamicSmem = 0);
  /// Stages keys [kt, kt + kn) of the batch's KV head of `src` ([B, Hkv,
  /// keys, width], or with a block table page pools [num_pages, Hkv,
  /// page_size, width]; f32, bf16 or f16) into the workgroup `tile`
  /// [kv-block, width], zeros past kn: widened into an f32 tile, rounded from
  /// f32 into a 16-bit one, copied as it is into one of its own type; all
  /// `threads` take part.
  /// With `stage`, `tile` is a ring [stages, kv-block, >= width] and the
  /// keys go to its slot `stage`.
  void stageTile(const Launch &L, Value src, Value tile, int64_t width,
                 Value kt, Value kn, int64_t threads, Value stage = Value());

  /// Split-K, in the launch: [lo, hi) cut to this block's part (whole
  /// kv-block tiles; empty past the keys).
  void splitKeyRange(Launch &L);
  /// Stores `x`, element `col` of the finished row (`head`, `pos`): into
  /// the output, or with split keys into the part's workspace row.
  void storeResult(const Launch &L, Value out, Value x, Value head, Value pos,
                   Value col);
  /// Split-K: where `first` (one thread per row) and the keys are split,
  /// stores the row's log2-sum-exp m + log2(l) (-inf for a part that saw no
  /// key: l = 0).
  void storeRowLse(const Launch &L, Value first, Value m, Value l, Value head,
                   Value pos);
  /// Split-K on the host, before the launch: the parts (from the grid and
  /// the cache's capacity: `k`'s keys, or the block table's pages) and the
  /// workspace (gpu.alloc). `forall`'s grid.
  void planSplit(Value q, Value k, Value out, int64_t splitBlocks,
                 int64_t minKeys);
  /// Split-K on the host, after the launch: the merge kernel (where the keys
  /// were split) and the workspace freed.
  void finishSplit(Value out);

  /// Row `r` of the block (heads of the group x query rows, flattened):
  /// whether it is one of the block's, its query head and position (row 0's
  /// for a row past the block's).
  struct Row {
    Value valid, head, pos;
  };
  Row rowOf(const Launch &L, Value r) {
    int64_t heads = blockHeads();
    Value ok = cmp(arith::CmpIPredicate::slt, r, mul(c(heads), L.qn));
    Value rs = select(ok, r, c(0));
    Value groupHead0 = mul(L.g, c(group));
    Value inGroup = arith::DivUIOp::create(b, loc, rs, L.qn);
    if (headChunks > 1) {
      // The block's heads [hc · heads, ...) of the group; the last chunk's
      // past the group are not rows.
      Value first = mul(L.hc, c(heads));
      inGroup = add(first, inGroup);
      Value real = cmp(arith::CmpIPredicate::slt, inGroup, c(group));
      ok = andI(ok, real);
      inGroup = select(real, inGroup, first);
    }
    Value head = add(groupHead0, inGroup);
    Value pos = add(L.q0, arith::RemUIOp::create(b, loc, rs, L.qn));
    return {ok, head, pos};
  }

  /// The indices of key `key` of the block's KV head in `src`: [b, head,
  /// key, col] of a contiguous cache, the key clamped to the cache (a
  /// padding key reads a valid row); with a block table, [page, head, row,
  /// col] of the pool, the key clamped to the block's last (never a page
  /// past the sequence's).
  SmallVector<Value> kvIndices(const Launch &L, Value src, Value key,
                               Value col);

  /// The fp32 kernel's rows of one warp: validity, head, position and the
  /// pre-scaled q in registers (lane l holds elements l, l + 32, ...).
  struct WarpRows {
    SmallVector<Value> valid, pos, head;
    SmallVector<SmallVector<Value>> qReg;
  };
  WarpRows loadWarpRows(const Launch &L, Value q);
  /// One key `j` of the staged tile folded into every row's state.
  SmallVector<Value> foldKey(const Launch &L, const WarpRows &rows,
                             Value kTile, Value vTile, Value kt, Value j,
                             ValueRange st);

  /// What the tensor-core kernel's steps share: the launch; its shared
  /// memory (the Q tile [16 · warps, d + 8] and two-slot rings of K and V
  /// tiles [2, kv-block, d + 8], rows padded by 16 bytes so that ldmatrix's
  /// eight row addresses fall in distinct banks); a thread's fragment
  /// coordinates (group gq, thread in group tq) and its two rows (gq and
  /// gq + 8 of the warp's 16); its ldmatrix row/column offsets; Q's
  /// fragments when they stay in registers (d <= 128).
  struct MmaState {
    Launch L;
    /// mt: m16 row tiles per warp (1 or 2: 16 or 32 rows; two share each
    /// K/V fragment that ldmatrix reads, half the shared-memory traffic
    /// per mma).
    int64_t warps = 0, stages = 2, mt = 1;
    /// Warps per column group (all the warps without dvSplit).
    int64_t rowWarps = 0;
    /// The first of O's columns this warp accumulates (column groups).
    Value colBase;
    /// K and V copied global -> shared by cp.async (a cache of the mma
    /// type), else staged through registers (rounded from f32).
    bool asyncCopy = false;
    bool qInRegisters = true;
    Value kRing, vRing, qTile, gq, tq, col2, qScale;
    /// The thread's 2·mt rows: row 2t + h is gq + 8h of m-tile t.
    SmallVector<Value> valid, head, pos;
    /// ldmatrix lane offsets: A (Q) rows/cols, B of Kᵀ (non-transposed
    /// K rows), B of V (transposed).
    Value aRow, aCol, kRow, kCol, vRow, vCol;
    /// qFrag[t][ks]: m-tile t's A fragment of columns 16·ks...
    SmallVector<SmallVector<SmallVector<Value>>> qFrag;
    /// wgmma: the tiles are flat views of 128-byte-swizzled rows (column
    /// blocks of 64 elements), `smemBase` the shared-memory address of the
    /// Q tile (1024-byte aligned), `layout` their offsets.
    bool wgmma = false, wgmmaQK = false, wgmmaPV = false;
    /// TMA: the tensor maps of K and V (host values, kernel arguments after
    /// outlining), the ring slots' mbarriers, the dynamic shared memory and
    /// the byte offset of its aligned base.
    bool tma = false;
    /// TMA with both products on wgmma and `overlap` set: each tile's
    /// softmax overlapped with the previous tile's P·V (emitWgmmaOverlap);
    /// K's loads complete on `mbar`, V's on `vBar`.
    bool overlap = false;
    /// Overlapped and warp-specialized: `warps` (8) consumer warps, then a
    /// producer warpgroup (`threads` in all); the consumers release each
    /// slot's K and V on `kEmpty`, `vEmpty` (arrival count: the consumer
    /// warps), the producer's thread waits there before reloading it.
    bool warpSpecialized = false;
    int64_t threads = 0;
    Value kMap, vMap, mbar, vBar, kEmpty, vEmpty, smem, pad;
    Value smemBase;
    int64_t qRowsPad = 0, kOffset = 0, vOffset = 0;
  };
  /// The tensor-core kernel's shared memory: the Q tile's rows, the byte
  /// offsets of the K and V rings (each 128-byte aligned) and the total.
  struct MmaSmem {
    int64_t qRows = 0, kOffset = 0, vOffset = 0, bytes = 0;
  };
  /// With `wgmma`, the swizzled layout: Q rows padded to 64 (a
  /// warpgroup's), no row padding, every tile 1024-byte aligned, and 1024
  /// bytes more to align the base.
  static MmaSmem mmaSharedMemory(int64_t rows, int64_t d, int64_t dv,
                                 int64_t kvBlock, int64_t stages,
                                 int64_t warpRows, bool wgmma = false);
  /// With tensor maps `kMap`, `vMap` (wgmma only), K/V tiles come by TMA.
  MmaState beginMma(Value q, Value k, Value lens, bool asyncCopy, bool wgmma,
                    Value kMap = Value(), Value vMap = Value());
  /// m-tile t's A fragment of Q's 16 columns from 16·ks (ldmatrix.x4 of
  /// the Q tile).
  SmallVector<Value> mmaQFragment(const MmaState &m, int64_t t, int64_t ks);
  /// Issues the copy of keys [kt, min(kt + kv-block, hi)) into ring slot
  /// `stage` (zeros past hi): cp.async of 16 bytes per thread and chunk,
  /// committed as one group, or stores through registers.
  void mmaIssueTile(const MmaState &m, Value k, Value v, Value kt, Value stage);
  /// One key tile in ring slot `stage`: S = Q·Kᵀ, the mask (only where
  /// `masked`: tiles some row of the block does not fully see), online
  /// softmax, O = O·alpha + P·V.
  SmallVector<Value> mmaTile(const MmaState &m, Value kt, Value stage,
                             bool masked, ValueRange st);
  /// The online softmax of one tile's scores sFrag[t][8-key tile][4] (C
  /// fragments): softcap, the mask where `masked`, the rows' new maxima then
  /// sums into `next`, their factors `alpha` for O, P rounded into A
  /// fragments pPacked[t][16-key step].
  void mmaSoftmax(const MmaState &m, Value kt, bool masked, ValueRange st,
                  SmallVector<SmallVector<SmallVector<Value>>> &sFrag,
                  SmallVector<Value> &next,
                  SmallVector<SmallVector<SmallVector<Value>>> &pPacked,
                  SmallVector<Value> &alpha);
  /// wgmma: this thread's shared-memory writes (generic proxy) ordered
  /// before the tensor cores' reads (async proxy):
  /// fence.proxy.async.shared::cta.
  void fenceAsyncProxy() {
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  }
  /// wgmma: the flat swizzled views of the dynamic shared memory `smem`
  /// (its `layout`, from a base aligned at run time) and, with the tensor
  /// maps' addresses `kMap`, `vMap` of cache `k`, the TMA mbarriers.
  void wgmmaTiles(MmaState &m, Value smem, const MmaSmem &layout, Value k,
                  Value kMap, Value vMap);
  /// TMA, on the host: the tensor map of `src` ([B, Hkv, keys, width] of
  /// the kernel's 16-bit type) in boxes of kv-block keys x 64 columns,
  /// 128-byte swizzled, zeros past the keys.
  Value tmaDescriptor(Value src);
  /// TMA: the tensor map type of a [B, Hkv, keys, width] cache `srcTy`.
  Type tmaMapType(MemRefType srcTy);
  /// TMA: a box [1, 1, kv-block, 64] of `elt` in shared memory (the map's
  /// tensor type, and each load's destination).
  MemRefType tmaBoxType(Type elt);
  /// TMA: thread 0 arms slot `stage`'s mbarrier with the tile's bytes and
  /// loads keys [kt, kt + kv-block) of K and V into the slot, a box per 64
  /// columns (with overlap, K and V each on their own barriers, issued by
  /// separate calls: `keys`, `values`).
  void tmaIssueTile(const MmaState &m, Value kt, Value stage, bool keys = true,
                    bool values = true);
  /// tmaIssueTile's body, in thread 0.
  void tmaIssueByThread0(const MmaState &m, Value kt, Value stage, bool keys,
                         bool values);
  /// TMA: waits on `bar`'s slot `stage` for the ring's j-th tile (the
  /// mbarrier's phase j / stages mod 2).
  void tmaWait(const MmaState &m, Value bar, Value j, Value stage);
  /// The tensor-core kernel: the end of the key tiles every row of the
  /// block sees whole (no mask needed), from lo.
  Value unmaskedEnd(const Launch &L);
  /// wgmma with TMA, overlapped (WgmmaKernel.cpp): tile j's S = Q·Kᵀ and
  /// tile j - 1's O += P·V issued together, j's softmax while P·V runs; V's
  /// loads a tile behind K's (its slot frees when P·V is done). Writes out.
  void emitWgmmaOverlap(MmaState &m, Value out);
  /// The overlapped kernel's key loops, last P·V and store (its consumers'
  /// part where warp-specialized).
  void wgmmaOverlapLoops(MmaState &m, Value out);
  /// Warp-specialized: the producer thread's loop, K_t and V_t of every
  /// tile into slot t mod 2 once the consumers released it (K_t: tile
  /// t - 2's S done; V_t: tile t - 1's P·V of V_{t-2} done).
  void wgmmaProducer(const MmaState &m);
  /// A barrier over the threads that compute: the block's, or named
  /// barrier 1 over the consumer warpgroups where warp-specialized.
  void consumerBarrier(const MmaState &m);
  /// Warp-specialized: this consumer warp's release of ring slot `slot` on
  /// the empty mbarriers `bars` (lane 0's arrival; each counts the
  /// consumer warps).
  void releaseSlot(const MmaState &m, Value bars, Value slot);
  /// TMA, a masked tile: zeros in V's rows of keys [hi, kt + kv-block), which
  /// the box read from the cache (past the sequence's length anything: P is
  /// 0 there, and 0 · NaN is NaN).
  void tmaZeroTail(const MmaState &m, Value kt, Value stage);
  /// wgmma: the element index of (row, col) in a swizzled tile of `rows`
  /// rows (column blocks of 64 elements, 128-byte rows whose 16-byte chunks
  /// are XORed with the row's index mod 8: the wgmma/TMA 128-byte swizzle).
  Value swizzled(int64_t rows, Value row, Value col);
  /// wgmma: one key tile (as mmaTile) with S = Q·Kᵀ and O += P·V as
  /// warpgroup MMAs (WgmmaKernel.cpp).
  SmallVector<Value> wgmmaTile(const MmaState &m, Value kt, Value stage,
                               bool masked, ValueRange st);
  /// D += A·B on the warpgroup, wgmma.mma_async m64n(2·acc)k16: A by its
  /// shared-memory descriptor `aDesc` or (null) from registers `aRegs`
  /// (the m16n8k16 A fragment of the warp's 16 rows), B by `bDesc`
  /// (K-major, or N-major with `transB`).
  SmallVector<Value> wgmmaOp(ArrayRef<Value> acc, Value aDesc,
                             ArrayRef<Value> aRegs, Value bDesc, bool transB,
                             bool accumulate = true);
  /// An i64 constant.
  Value i64Const(int64_t v);
  /// wgmma: the matrix descriptor of the swizzled tile at shared address
  /// `addr` (index), 8-row groups 1024 bytes apart, leading byte offset
  /// `leading` (unused K-major), 128-byte swizzle.
  Value wgmmaDescriptor(Value addr, int64_t leading);
  /// wgmma: `desc` moved `bytes` on.
  Value wgmmaAdvance(Value desc, int64_t bytes);
  /// wgmma: the descriptor of this thread's warpgroup's 64 rows of Q.
  Value wgmmaQDescriptor(const MmaState &m);
  /// wgmma: the descriptor of ring slot `stage` of K (K-major) or V
  /// (`values`: N-major).
  Value wgmmaRingDescriptor(const MmaState &m, bool values, Value stage);
  /// wgmma: S = Q·Kᵀ's d / 16 products (not committed).
  SmallVector<Value> wgmmaScoresChain(const MmaState &m, Value qDesc,
                                      Value kDesc);
  /// wgmma: O += P·V's kv-block / 16 products, P's A fragments per 16 keys
  /// (not committed).
  SmallVector<Value> wgmmaPVChain(SmallVector<Value> o,
                                  ArrayRef<SmallVector<Value>> pPacked,
                                  Value vDesc);
  /// wgmma: S's accumulators as mmaSoftmax's sFrag[0][8-key tile][4].
  SmallVector<SmallVector<SmallVector<Value>>>
  wgmmaFragments(ArrayRef<Value> s);
  /// wgmma: `regs` (products' results, or an A operand's registers) read
  /// and redefined by an empty asm after a wait_group: uses of the results
  /// stay below the wait, the operand's registers unwritten until it.
  SmallVector<Value> wgmmaFenceOperands(ArrayRef<Value> regs);
  /// O·alpha + P·V on the tile's probabilities (pPacked[t][16-key step]:
  /// m-tile t's A fragments).
  void mmaPV(const MmaState &m, Value stage,
             ArrayRef<SmallVector<SmallVector<Value>>> pPacked,
             ArrayRef<Value> alpha, ValueRange st, SmallVector<Value> &next);
  /// out = O / l for the thread's rows.
  void mmaStore(const MmaState &m, ValueRange tiles, Value out);
  /// ldmatrix.x4 (transposed for V) at `row`, `col` of `tile` (with its
  /// ring slot `stage` first when given): four i32 registers of two 16-bit
  /// values each.
  /// With `swizzleRows`, `tile` is a flat swizzled tile (ring of slots of
  /// swizzleRows x width) and each lane's row address its swizzled chunk.
  SmallVector<Value> ldmatrix4(Value tile, Value stage, Value row, Value col,
                               bool transpose, int64_t swizzleRows = 0,
                               int64_t width = 0);
  /// S = Q·Kᵀ of the tile in ring slot `stage` as mma.sync: sFrag[m-tile][8
  /// keys][4] (C fragments).
  SmallVector<SmallVector<SmallVector<Value>>> mmaScores(const MmaState &m,
                                                         Value stage);

  /// Two f32 rounded to the mma operand type and packed (the first in the
  /// low half): one cvt.rn.bf16x2.f32 (f16x2) in PTX.
  Value packRounded(Value low, Value high) {
    auto v2f32 = VectorType::get({2}, b.getF32Type());
    Value v =
        vector::FromElementsOp::create(b, loc, v2f32, ValueRange{low, high});
    Value r = arith::TruncFOp::create(b, loc, VectorType::get({2}, mmaElt), v);
    return LLVM::BitcastOp::create(b, loc, b.getI32Type(), r);
  }
  /// An f32 rounded to the mma operand type.
  Value toNarrow(Value f) { return arith::TruncFOp::create(b, loc, mmaElt, f); }
  /// q[idx] as f32: a 16-bit query (--qo-dtype) widened as it is loaded.
  Value loadQuery(Value q, ValueRange idx) {
    Value x = memref::LoadOp::create(b, loc, q, idx);
    if (x.getType().isF32())
      return x;
    return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  }
  /// out[idx] = x (f32), rounded to a 16-bit output (--qo-dtype) as it is
  /// stored.
  void storeOutput(Value x, Value out, ValueRange idx) {
    Type elt = cast<MemRefType>(out.getType()).getElementType();
    if (!elt.isF32())
      x = arith::TruncFOp::create(b, loc, elt, x);
    memref::StoreOp::create(b, loc, x, out, idx);
  }
  /// C += A·B for one m16n8k16 tile: A 4 x i32, B 2 x i32 (pairs of
  /// mmaElt, made f16x2 vectors for f16), C 4 x f32.
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bb,
                         ArrayRef<Value> cc) {
    Type f32 = b.getF32Type();
    auto resTy =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    bool half = mmaElt.isF16();
    SmallVector<Value> av(a), bv(bb);
    if (half) {
      auto f16x2 = VectorType::get({2}, b.getF16Type());
      for (Value &x : av)
        x = LLVM::BitcastOp::create(b, loc, f16x2, x);
      for (Value &x : bv)
        x = LLVM::BitcastOp::create(b, loc, f16x2, x);
    }
    NVVM::MMATypes t = half ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    Value r = NVVM::MmaOp::create(
        b, loc, resTy, av, bv, cc, ArrayRef<int64_t>{16, 8, 16}, std::nullopt,
        std::nullopt, std::array<NVVM::MMATypes, 2>{t, t},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, r, i));
    return out;
  }
  /// `x` reduced over the 4 lanes of a quad (the lanes that share an
  /// mma row): a clustered gpu.subgroup_reduce of cluster size 4.
  Value quadReduce(Value x, bool isMax) {
    return gpu::SubgroupReduceOp::create(
        b, loc, x,
        isMax ? gpu::AllReduceOperation::MAXIMUMF : gpu::AllReduceOperation::ADD,
        /*uniform=*/true, /*cluster_size=*/uint32_t(4));
  }
};

/// Replaces the (batch, value head) forall of attn-tile-gated-delta, whose
/// results are materialized into a kernel entry's buffers, by the Gated
/// DeltaNet kernel's gpu.launch (GatedDeltaKernel.cpp); with a tensor-core
/// operand type `mmaElt` (bf16/f16 precision), where the shape allows, also
/// the chunked kernel's (GatedDeltaChunkKernel.cpp) for the longer
/// sequences.
LogicalResult emitGatedDeltaGPU(scf::ForallOp forall, Type mmaElt = Type());

} // namespace gpu_kernels
} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_GPU_KERNELEMITTER_H
