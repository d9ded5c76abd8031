//===- Passes.td - attn dialect passes ---------------------*- tablegen -*-===//
//
// This file declares the passes of the `attn` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def FuseAttentionPass : Pass<"attn-fuse-attention", "func::FuncOp"> {
  let summary = "Fuse the eager QKᵀ/scale/softcap/bias/mask/softmax/·V chain into attn.sdpa";
  let description = [{
    Recognizes the chain frameworks produce and replaces it with one
    `attn.sdpa`: `attn.qk` (its query possibly scaled first: the scale folded
    into Q), then in this order any of `attn.scale`, `attn.softcap`,
    `attn.relative_position_bias`, and a mask written as `attn.mask`, as an
    additive `arith.addf %s, (attn.mask_bias)`, or as
    `arith.select (attn.mask_cond), %s, <-inf splat>`, then `attn.softmax`
    and `attn.pv`. Every intermediate value must have no other use; a chain
    that is not attention (a softmax also used elsewhere, a mask that is not
    one of the supported kinds, a scale after the softcap) is left untouched.

    Before:
    ```mlir
    %s = attn.qk %q, %k : (...) -> tensor<?x32x?x?xf32>
    %t = attn.scale %s {scale = 0.125 : f64} : tensor<?x32x?x?xf32>
    %m = attn.mask %t {kind = #attn.mask<causal>} : tensor<?x32x?x?xf32>
    %p = attn.softmax %m : tensor<?x32x?x?xf32>
    %o = attn.pv %p, %v : (...) -> tensor<?x32x?x64xf32>
    ```
    After:
    ```mlir
    %o = attn.sdpa %q, %k, %v {mask = #attn.mask<causal>, scale = 0.125 : f64}
        : (...) -> tensor<?x32x?x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

//===----------------------------------------------------------------------===//
// Multi-head latent attention
//===----------------------------------------------------------------------===//

def ExpandLatentAttentionPass
    : Pass<"attn-expand-latent-attention", "func::FuncOp"> {
  let summary = "attn.latent_attention in its expanded form: keys and values per head, then attn.sdpa";
  let description = [{
    Every cached latent goes through `kv_b_proj` (`attn.linear`, one GEMM
    of kv_len rows), split per head into the key's nope part and the value;
    each head's key is that part followed by the shared rotary key
    (broadcast), its query `[q_nope, q_rope]`; one `attn.sdpa` with
    D = dn + dr and Dv = dv computes the attention. The work of prefill:
    2·kv_len·r·H·(dn + dv) for the expansion plus the attention's.

    ```mlir
    %o = attn.latent_attention %qn, %qr, %cache, %w {...}
    // becomes
    %kv = attn.linear %latent, %w ...      // [B, kv_len, H·(dn+dv)]
    %kvh = attn.split_heads %kv ...        // [B, H, kv_len, dn+dv]
    ...                                    // k = [k_nope | k_rope], q = [q_nope | q_rope]
    %o = attn.sdpa %q, %k, %v ...          // D = dn + dr, Dv = dv
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def AbsorbLatentAttentionPass
    : Pass<"attn-absorb-latent-attention", "func::FuncOp"> {
  let summary = "attn.latent_attention in its absorbed form: the query into the latent space, all heads over the cache rows";
  let description = [{
    W_UK[h] (head h's key rows of `kv_b_proj`) is absorbed into the query:
    `q_lat = q_nope · W_UK[h]` per head (`attn.linear`, one GEMM of
    batch·q_len rows per head), `[q_lat | q_rope]` (D = r + dr) attends
    with every head to the one cache row per token (multi-query
    `attn.sdpa`, the key `[B, 1, kv_len, r + dr]`, the value its first r
    features: a slice of the same rows, read in place, never copied), and
    W_UV[h] maps the result back (`· W_UV[h]ᵀ`). The cache is read once
    for all heads; the work is 2·q_len·H·(dn·r + r·dv) plus the
    attention's 2·q_len·kv_len·H·(2r + dr): the form of decode.

    ```mlir
    %o = attn.latent_attention %qn, %qr, %cache, %w {...}
    // becomes, per head h: %ql = attn.linear %qn_h, %w_uk_h {transpose_weight}
    %k = tensor.expand_shape %cache ...    // [B, 1, kv_len, r + dr]
    %v = tensor.extract_slice %k ...       // [B, 1, kv_len, r]: the same rows
    %ol = attn.sdpa %q, %k, %v ...         // D = r + dr, Dv = r
    // then per head h: attn.linear %ol_h, %w_uv_h
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LowerLatentAttentionPass
    : Pass<"attn-lower-latent-attention", "func::FuncOp"> {
  let summary = "attn.latent_attention as both forms under an scf.if that takes the one doing less work";
  let description = [{
    The compiler's choice between the two forms of
    `attn-expand-latent-attention` and `attn-absorb-latent-attention`, made
    at run time on the query and key lengths (both are in the binary): the
    absorbed form when it does less work,
    `q_len·(r·(dn + dv) + kv_len·(2r − dn − dv)) < kv_len·r·(dn + dv)`
    (decode, a few query rows over a long cache: for DeepSeek-V3's sizes up
    to about 170 query rows), the expanded form otherwise (prefill).
    `form=expanded` or `form=absorbed` forces one.

    ```mlir
    %absorb = arith.cmpf olt, ...
    %o = scf.if %absorb -> (tensor<?x128x?x128xf32>) {
      ... absorbed form ...
    } else {
      ... expanded form ...
    }
    ```
  }];
  let options = [
    Option<"form", "form", "std::string", /*default=*/"\"auto\"",
           "auto (choose at run time), expanded or absorbed">,
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Reference path
//===----------------------------------------------------------------------===//

def NarrowAttentionIOPass : Pass<"attn-narrow-attention-io", "func::FuncOp"> {
  let summary = "Fold a 16-bit query's widening and the output's rounding into attn.sdpa / attn.paged_sdpa";
  let description = [{
    The front end gives an entry compiled with `--qo-dtype=bf16|f16` a
    16-bit q and output around an fp32 op: `arith.extf` of the query, the
    attention, `arith.truncf` of its result. A kernel that reads q and
    writes its output itself (the GPU's) does better with the 16-bit tensors
    as the op's operands: q is widened as it is loaded and the output
    rounded as it is stored, with no fp32 copy of either in memory. This
    pass makes that the op's form when the query is the `arith.extf` of a
    16-bit tensor no narrower than the keys, and the op's only use (its
    first result's; a paged op's stats stay fp32) is an `arith.truncf` to
    that same type. The arithmetic stays fp32; sinks stay fp32.

    ```mlir
    %q32 = arith.extf %q : tensor<?x32x?x128xbf16> to tensor<?x32x?x128xf32>
    %o = attn.sdpa %q32, %k, %v outs(%init : tensor<?x32x?x128xf32>) ...
    %o16 = arith.truncf %o : tensor<?x32x?x128xf32> to tensor<?x32x?x128xbf16>
    // becomes
    %o16 = attn.sdpa %q, %k, %v outs(%init16 : tensor<?x32x?x128xbf16>) ...
    ```

    The CPU pipeline does not run it: its micro-kernels read an fp32 query
    (the widening is one pass over q, the rounding one over the output).
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::tensor::TensorDialect"];
}

def DecomposeSDPAPass : Pass<"attn-decompose-sdpa", "func::FuncOp"> {
  let summary = "Expand attn.sdpa back into the unfused chain (materializes the scores)";
  let description = [{
    The inverse of `attn-fuse-attention`: each `attn.sdpa` becomes
    `attn.qk`, `attn.scale`, `attn.softcap`, `attn.relative_position_bias`,
    `attn.mask`, `attn.softmax`, `attn.pv`. This is the reference path:
    it computes the q_len × kv_len scores explicitly, as eager frameworks do.

    ```mlir
    %o = attn.sdpa %q, %k, %v {mask = #attn.mask<causal>, scale = 0.125 : f64} ...
    // becomes
    %s = attn.qk %q, %k ...
    %t = attn.scale %s {scale = 0.125 : f64} ...
    %m = attn.mask %t {kind = #attn.mask<causal>} ...
    %p = attn.softmax %m ...
    %o = attn.pv %p, %v ...
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def MakeReferencePass : Pass<"attn-make-reference", "ModuleOp"> {
  let summary = "Keep an unfused copy of every function that contains attn.sdpa or attn.gated_delta_rule";
  let description = [{
    For each function `@f` containing `attn.sdpa`, adds `@f_reference`
    (marked `attn.reference`) in which every `attn.sdpa` is decomposed as by
    `attn-decompose-sdpa`. Later passes tile `@f` and leave `@f_reference`
    alone, so one binary carries both the fused kernel and the eager
    reference for `check` and `bench`.

    ```mlir
    func.func @full_attention(...) { ... attn.sdpa ... }
    // gains
    func.func @full_attention_reference(...) attributes {attn.reference} {
      ... attn.qk ... attn.softmax ... attn.pv ...
    }
    ```

    A function with `attn.gated_delta_rule` gets its copy too, with the op
    left as it is: the tiling passes skip `attn.reference` functions and
    `convert-attn-to-linalg` lowers it to its eager token-by-token
    recurrence, an algorithm independent of the tiled chunkwise form.
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect", "::mlir::func::FuncDialect"];
}

def CallKernelsPass : Pass<"attn-call-kernels", "ModuleOp"> {
  let summary = "Replace an attn.sdpa or attn.gated_delta_rule that a kernel entry computes by a call to that kernel";
  let description = [{
    A *kernel entry* is a public function whose body computes one
    `attn.sdpa` of its arguments into its memref argument
    (`bufferization.materialize_in_destination`): the `<kind>_sdpa` entries
    of attn-compile. Every other `attn.sdpa` (outside `attn.reference`
    functions) with the same attributes and types becomes an allocation of
    the result, a `func.call` of that kernel and a `bufferization.to_tensor`
    of the buffer; an op without `kv_lengths` calling a kernel that takes
    them passes the full key length for each batch row (the same
    attention). So a model's `<kind>_block` runs its kind's attention
    kernel instead of holding a second tiled copy of it: half the
    micro-kernel code to compile, one kernel to tune. The same holds for
    `attn.gated_delta_rule` and the `<kind>_gdn` entries (two results, two
    buffers; the same scale, operand types and initial state).

    A kernel may read an operand through views of an argument
    (`tensor.expand_shape`, and `tensor.extract_slice` at static offsets
    with whole extents where sizes are dynamic): the `<kind>_mla` entries
    read keys and values from one latent cache. The op's operand must then
    be the same views of a value, which the call passes; DeepSeek's and
    Kimi's blocks call the absorbed-form kernel this way, and keep no
    `_reference` copy (no sdpa is left in them).

    ```mlir
    func.func @k_sdpa(%out: memref<?x8x?x64xf32>, %q: tensor<?x8x?x64xf32>, ...) {
      %r = attn.sdpa %q, %k, %v kv_lengths(%l : tensor<?xi64>) outs(%e : ...) {...}
      bufferization.materialize_in_destination %r in restrict writable %out ...
    }
    func.func @k_block(...) {
      %a = attn.sdpa %q2, %k2, %v2 outs(%e2 : ...) {...}
    // becomes
      %buf = memref.alloc(%b, %s) : memref<?x8x?x64xf32>
      %lens = tensor.splat %kv_len[%b] : tensor<?xi64>
      func.call @k_sdpa(%buf, %q2, %k2, %v2, %lens) : (...) -> ()
      %a = bufferization.to_tensor %buf restrict : memref<?x8x?x64xf32> to ...
    ```
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect", "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Tiling
//===----------------------------------------------------------------------===//

def TileAttentionPass : Pass<"attn-tile-attention", "func::FuncOp"> {
  let summary = "Tile attn.sdpa into online-softmax loops sharing K/V tiles across each GQA group";
  let description = [{
    Lowers each `attn.sdpa` and `attn.paged_sdpa` (outside `attn.reference`
    functions) in four steps, each an upstream mechanism or a step that
    stands on its own:

    1. Upstream tiling (`scf::tileUsingSCF`, through the op's
       `TilingInterface`) builds an `scf.forall` over (batch, KV head, query
       block): the tile holds the query rows of all `Hq/Hkv` query heads of
       one KV head (`[1, G, rows, d]`), so each K/V tile is loaded once per
       group. The forall counts tiles (its induction variables are tile
       indices), so that a GPU target can map it to the grid.
    2. The tile's online form: one `attn.online_attention` over the row's
       keys (`kv_lengths` shortens them) from the initial state, then
       `attn.online_finalize`.
    3. The key-range cut (`attn-cut-key-ranges`): a masked op is cut by its
       rows' positions into the keys visible to every row of the block
       (`mask = none`: no mask arithmetic) and the diagonal and window-edge
       keys (masked by position); fully masked keys are never visited.
    4. On the CPU, upstream tiling cuts each piece's keys into the `scf.for`
       that carries the online-softmax state (`kv-block` keys per tile). A
       GPU target keeps the pieces whole and builds its own key loop.

    Split-K (flash decoding, CPU): when the query fits one block and
    batch x KV heads is small, the forall gets a fourth dimension of parts,
    each folding its share of the block's key range into a workspace, and a
    second forall merges the parts by log-sum-exp. Nothing of size q_len x
    kv_len is created. The tile sizes of an op are a target's choice when it
    carries one (`attn.tiles = #attn.tiles<...>`, from
    `attn-cpu-select-tiles`), else the pass's options: the tiler holds no
    target's heuristics. Sequence lengths are dynamic: the last query and
    key tiles are smaller (`min(block, remaining)`), never assumed away.

    ```mlir
    %o = attn.sdpa %q, %k, %v {mask = #attn.mask<causal>, scale = 0.125 : f64} ...
    // becomes
    scf.forall (%b, %g, %qb) in (%B, 8, %numQBlocks) shared_outs(%out = %init) {
      %qt = tensor.extract_slice %q[%b, %g * 4, %q0, 0] [1, 4, %qn, 64] ...
      %r0:3 = scf.for %kb = %c0 to %fullHi step %c64 iter_args(...) {
        %kt = tensor.extract_slice %k[%b, %g, %kb, 0] [1, 1, %kn, 64] ...
        attn.online_attention %qt, %kt, %vt, ... {scale = 0.125 : f64}
      }
      %r1:3 = scf.for %kb = %fullHi to %hi step %c64 iter_args(...) {
        ... attn.online_attention ... {mask = #attn.mask<causal>, ...}
      }
      %ot = attn.online_finalize %r1#0, %r1#2 ...
      scf.forall.in_parallel { tensor.parallel_insert_slice %ot into %out[...] }
    }
    ```
  }];
  let options = [
    Option<"target", "target", "mlir::attn::TileTarget",
           /*default=*/"mlir::attn::TileTarget::cpu",
           "The loop form (an op's sizes come from its #attn.tiles when it "
           "has one, else from the options below)",
           [{::llvm::cl::values(
             clEnumValN(mlir::attn::TileTarget::cpu, "cpu", "an scf.forall over threads, split-K decode"),
             clEnumValN(mlir::attn::TileTarget::gpu, "gpu", "an scf.forall mapped to the grid, one thread block per tile"))}]>,
    Option<"qBlock", "q-block", "int64_t", /*default=*/"0",
           "Query rows per tile and head (0: 64, gpu 128)">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"0",
           "Keys per tile (0: 64)">,
    Option<"decodeKvBlock", "decode-kv-block", "int64_t", /*default=*/"0",
           "Keys per tile when a query tile has at most 16 rows (all "
           "heads of the group; decode): 0 for kv-block">,
    Option<"blockRows", "block-rows", "int64_t", /*default=*/"0",
           "When set (and q-block is not): query rows per block over the "
           "whole group, q-block = max(1, block-rows / G) per attention (the "
           "GPU's thread block size)">,
    Option<"splitTarget", "split-target", "int64_t", /*default=*/"16",
           "Split-K (flash-decoding): when the query fits one block and "
           "batch x KV heads is below this many, split each key range into "
           "parts computed in parallel and merged by log-sum-exp (0: never)">,
    Option<"splitMinKeys", "split-min-keys", "int64_t", /*default=*/"512",
           "Fewest keys per split-K part">,
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::gpu::GPUDialect"];
}

def CutKeyRangesPass : Pass<"attn-cut-key-ranges", "func::FuncOp"> {
  let summary = "Cut each masked attn.online_attention into the keys its rows see, unmasked where every row sees them";
  let description = [{
    Each `attn.online_attention` on tensors with a causal, sliding-window or
    chunked mask is replaced by up to three ops over parts of its keys,
    computed from its positions (`q_pos`, `kv_pos`, its rows and keys): the
    window's or chunk's leading edge `[lo, fullLo)` (masked), the keys every
    row sees `[fullLo, fullHi)` (`mask = none`: no mask arithmetic) and the
    diagonal `[fullHi, hi)` (masked). Keys no row sees are dropped, so a
    loop over the pieces' key tiles never visits a fully masked tile. Each
    piece is the op's tile of those keys (its `TilingInterface`), so paged
    keys are cut alike. `attn-tile-attention` applies this to every query
    block it builds.

    ```mlir
    // attn-opt -attn-cut-key-ranges
    %a:3 = attn.online_attention %q, %k, %v, %acc, %max, %sum, %qp, %c0
        {mask = #attn.mask<causal>, scale = 0.125 : f64} : (...) -> (...)
    // becomes, with hi = clamp(qp + rows, 0, n) and
    // fullHi = clamp(qp + 1, 0, hi):
    %a0:3 = attn.online_attention %q, %k0, %v0, %acc, %max, %sum, %qp, %c0
        {scale = 0.125 : f64} ...               // keys [0, fullHi)
    %a1:3 = attn.online_attention %q, %k1, %v1, %a0#0, %a0#1, %a0#2, %qp,
        %fullHi {mask = #attn.mask<causal>, scale = 0.125 : f64} ...
                                                // keys [fullHi, hi)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SplitKeysPass : Pass<"attn-split-keys", "func::FuncOp"> {
  let summary = "Split the keys of each attn.online_attention into parallel parts merged by log-sum-exp (split-K)";
  let description = [{
    Each `attn.online_attention` on tensors becomes an `scf.forall` of
    `splits` parts, each folding an equal share of the keys (the last one
    shorter) into a state of its own from the identity (acc 0, max -inf,
    sum 0), then a log-sum-exp merge of the parts' states and the op's own
    destinations (linalg.generic ops): upstream tiling
    (`scf::tileUsingSCF`, the outer-parallel partial-reduction strategy)
    through the op's `PartialReductionOpInterface`. The split of
    `attn-tile-attention` (split-target) is built by that pass for the
    attention it tiles; this one serves ops written in the online form.

    ```mlir
    // attn-opt -attn-split-keys=splits=4
    %a, %m, %l = attn.online_attention %q, %k, %v, %acc, %max, %sum, %qp, %kp
        {scale = 0.125 : f64} : (...) -> (...)
    // becomes
    %parts:3 = scf.forall (%s) in (4) shared_outs(...) {
      ... attn.online_attention on the part's keys into its state ...
    }
    // then the merge of %parts into (%acc, %max, %sum)
    ```
  }];
  let options = [
    Option<"splits", "splits", "int64_t", /*default=*/"2",
           "Number of parallel parts of each op's keys (2 or more)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TileGatedDeltaPass : Pass<"attn-tile-gated-delta", "func::FuncOp"> {
  let summary = "Tile attn.gated_delta_rule into per-head chunk loops carrying the state";
  let description = [{
    Lowers each `attn.gated_delta_rule` (outside `attn.reference` functions)
    to an `scf.forall` over (batch, value head). Value head `h` reads the
    query/key head `h / (Hv / Hk)` (a slice, shared by the group, never
    copied). The head's state `[d_k, d_v]` lives in the final-state
    destination: it starts as the initial state (or zeros) and is carried
    through an `scf.for` over chunks of `chunk` tokens, each an
    `attn.gated_delta_chunk` in the chunkwise-parallel (WY/UT) form. A
    sequence of at most `recurrent-max` tokens (decode) takes one
    `attn.gated_delta_chunk {recurrent}` instead, token by token.

    ```mlir
    %o, %s = attn.gated_delta_rule %q, %k, %v, %g, %beta outs(%oi, %si ...)
    // becomes
    scf.forall (%b, %h) in (%B, 64) shared_outs(%out = %oi, %st = %si) {
      %hk = arith.divui %h, %c2
      %s0 = linalg.fill ... outs(%st[%b, %h] : tensor<128x128xf32>)
      %r:2 = scf.if %short -> (...) {
        attn.gated_delta_chunk ... {recurrent, scale = ...}
      } else {
        scf.for %t = %c0 to %S step %c64 iter_args(%o = ..., %s = %s0) {
          %n = arith.minsi %c64, %S - %t
          attn.gated_delta_chunk %q[%b, %hk, %t][%n], ... {scale = ...}
        }
      }
      scf.forall.in_parallel { tensor.parallel_insert_slice ... }
    }
    ```
  }];
  let options = [
    Option<"chunk", "chunk", "int64_t", /*default=*/"64",
           "Tokens per chunk of the chunkwise-parallel form">,
    Option<"recurrentMax", "recurrent-max", "int64_t", /*default=*/"16",
           "Longest sequence computed token by token (the recurrent form)">,
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
