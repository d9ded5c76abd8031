//===- Passes.td - attn conversion passes ------------------*- tablegen -*-===//
//
// This file declares the conversions out of the `attn` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertAttnToLinalgPass : Pass<"convert-attn-to-linalg", "func::FuncOp"> {
  let summary = "Lower attn tile and score-level ops to linalg.generic on tensors";
  let description = [{
    Lowers `attn.online_attention` and `attn.online_finalize` (the tiled
    form) and the score-level graph ops of the reference path (`attn.qk`,
    `attn.scale`, `attn.softcap`, `attn.relative_position_bias`,
    `attn.mask`, `attn.softmax`, `attn.pv`) to `linalg.generic` on tensors,
    ready for one-shot bufferization. Masks are computed from
    `linalg.index`; a row that sees no key keeps max = -inf, sum = 0, and
    finalizes (or softmaxes) to 0, never NaN.

    ```mlir
    %a, %m, %l = attn.online_attention %qt, %kt, %vt, %acc, %max, %sum, %qp, %kp
        {mask = #attn.mask<causal>, scale = 0.125 : f64} : ...
    // becomes linalg.generic ops: S = Q·Kᵀ (reduction over d), scale and
    // mask by position, row max, exp, row sum, acc·alpha + P·V.
    ```

    A tile op that a target chose for its own kernels (the typed attribute
    `attn.kernel`, e.g. `#attn.cpu_kernel<lanes = 16>` from
    `attn-cpu-select-kernels`) is left alone: it bufferizes to its buffer
    form, which that target's pass lowers. The conversion reads no target's
    heuristics.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CPUSelectTilesPass : Pass<"attn-cpu-select-tiles", "func::FuncOp"> {
  let summary = "Choose each attention op's CPU tile sizes (attn.tiles)";
  let description = [{
    The CPU target's tile choice, before `attn-tile-attention`: each
    `attn.sdpa` and `attn.paged_sdpa` (outside `attn.reference` functions)
    gets `attn.tiles = #attn.tiles<...>`: q-block rows per head of 64,
    raised to 256 rows over the G query heads of its GQA group and lowered
    (not below that) so that the group's query rows and accumulators keep
    within 512 KiB (half an L2; `CPUTileDefaults` in `TileChoice.h`), 64
    keys per tile, 1024 keys per tile in decode (a tile of at most 16 rows),
    split-K below 16 (batch × KV heads) with 512 keys per part at least.
    Each option, when set, replaces its heuristic for every op.

    ```mlir
    attn.sdpa %q, %k, %v outs(%o : tensor<1x32x?x128xf32>)
        {attn.tiles = #attn.tiles<q_block = 64, kv_block = 64,
         decode_kv_block = 1024, split_target = 16, split_min_keys = 512>,
         mask = #attn.mask<causal>, scale = 0.088 : f64} : ...
    ```
  }];
  let options = [
    Option<"qBlock", "q-block", "int64_t", /*default=*/"0",
           "Query rows per tile and head (0: the heuristic above)">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"0",
           "Keys per tile (0: 64)">,
    Option<"decodeKvBlock", "decode-kv-block", "int64_t", /*default=*/"0",
           "Keys per tile in decode (0: 1024)">,
    Option<"splitTarget", "split-target", "int64_t", /*default=*/"16",
           "Split-K when batch x KV heads is below this (0: never)">,
    Option<"splitMinKeys", "split-min-keys", "int64_t", /*default=*/"512",
           "Fewest keys per split-K part">,
  ];
}

def CPUSelectKernelsPass : Pass<"attn-cpu-select-kernels", "func::FuncOp"> {
  let summary = "Mark the tile ops the CPU micro-kernels take (attn.kernel)";
  let description = [{
    The CPU target's kernel choice, before `convert-attn-to-linalg`: each
    `attn.online_attention` and `attn.gated_delta_chunk` op that the CPU
    micro-kernels handle (f32 state, static head dims, no relative bias
    table; Gated DeltaNet's chunk of f32) gets the discardable attribute
    `attn.kernel = #attn.cpu_kernel<lanes = N>`, which the generic
    conversion leaves alone and `attn-cpu-micro-kernel` lowers after
    bufferization; every other op is lowered to linalg as usual.
  }];
  // It creates #attn.cpu_kernel even in a module without attn ops.
  let dependentDialects = ["::mlir::attn::AttnDialect"];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "f32 vector lanes of the micro-kernels: 16 (AVX-512), 8 (AVX2) "
           "or 4 (SSE)">
  ];
}

def CPUMicroKernelPass : Pass<"attn-cpu-micro-kernel", "ModuleOp"> {
  let summary = "Lower attn.online_attention and f32 linalg.matmul on buffers to register-tiled vector code";
  let description = [{
    Runs after bufferization, on the buffer form of `attn.online_attention`
    (memref operands, no results: the state buffers are updated in place).
    For each chunk of C = 4·W keys (W f32 lanes): a Kᵀ pack into a
    [d, C] scratch (W×W vector transposes), then per block of R query rows
    (4 with 32 vector registers, 2 with 16) Q·Kᵀ in R×4 vector accumulators,
    scale, softcap and the position mask on the registers, row max, exp,
    row sum, and acc·alpha + P·V in R×4 accumulators. Tiles of at most 16
    rows (decode) skip the pack: dot products along d, each K vector serving
    every row, with the next chunk's K and V prefetched into L2 (and, paged,
    a byte of each of its pages touched first). Scratch is
    allocated once per parallel iteration. The code of each distinct tile
    (attributes, operand types) is a private no-inline function
    `@<caller>_tile(q, k, v, acc, max, sum, q_pos, kv_pos, Kt, P, alpha)`
    that every op like it calls: compiled once, in a function small enough
    for LLVM to compile fast. An op it cannot take (not f32,
    dynamic head dims, a relative bias table, a non-contiguous innermost
    dim) is an error naming what is needed.

    ```mlir
    attn.online_attention %q, %k, %v, %acc, %max, %sum, %qp, %kp
        {mask = #attn.mask<causal>, scale = 0.125 : f64}
        : (memref<4x?x64xf32>, memref<?x64xf32, strided<[64, 1], offset: ?>>,
           ...)
    // becomes
    func.call @f_tile(%q, %k, %v, %acc, %max, %sum, %qp, %kp, %kt, %p, %a)
    // with @f_tile holding the Kᵀ pack, vector.fma tiles and reductions.
    ```

    It also lowers each buffer-form f32 `linalg.matmul` with the default
    maps (B [K, N]) or the transpose-B maps (B [N, K], nn.Linear weights),
    and operands with a contiguous innermost dim — the projections and
    feed-forward GEMMs — to a call of `@<caller>_gemm(A, B, C)`: an
    `scf.parallel` over panels of 4·W columns (2·W with AVX2/SSE), a
    [128, 4·W] pack of B [N, K] (W×W transposes, the next block
    prefetched), 4×4 register tiles of vector.fma, and dot products along
    K instead of the pack below 8 rows of B [N, K] (decode).
    Other matmuls are left for convert-linalg-to-loops.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "f32 vector lanes: 16 (AVX-512), 8 (AVX2) or 4 (SSE)">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "AMX tiles (amx-tile, amx-bf16), where the OS grants them: "
           "decode of a bf16 cache for groups of 8 to 16 query heads per "
           "KV head, prefill (more than 16 rows) of a bf16 cache, the "
           "GEMMs">,
    Option<"amxF32Prefill", "amx-f32-prefill", "bool", /*default=*/"false",
           "with amx: the prefill of f32 and f16 K/V on AMX tiles too "
           "(split into three bf16 parts)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::amx::AMXDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}

def GPUSelectTilesPass : Pass<"attn-gpu-select-tiles", "func::FuncOp"> {
  let summary = "Choose each attention op's GPU tile sizes (attn.tiles)";
  let description = [{
    The CUDA target's tile choice, before `attn-tile-attention=target=gpu`:
    each `attn.sdpa` and `attn.paged_sdpa` (outside `attn.reference`
    functions) gets `attn.tiles = #attn.tiles<...>`: `block-rows` query rows
    per thread block over its GQA group (32 for the fp32 kernel, 128 for
    the tensor-core kernels: 8 warps of 16), so `q_block = max(1,
    block-rows / G)` rows per head (or `q-block`), `kv-block` keys per tile
    (64), no split-K. `convert-attn-to-gpu` reads the sizes off the tiled
    loop nest.
  }];
  let options = [
    Option<"qBlock", "q-block", "int64_t", /*default=*/"0",
           "Query rows per tile and head (0: block-rows / G)">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"0",
           "Keys per tile (0: 64)">,
    Option<"blockRows", "block-rows", "int64_t", /*default=*/"32",
           "Query rows per thread block over the group">,
  ];
}

def ConvertAttnToGPUPass : Pass<"convert-attn-to-gpu", "func::FuncOp"> {
  let summary = "Lower the tiled form of kernel entries to gpu.launch";
  let description = [{
    Each tiled attention of a kernel entry (the `attn.tiled` `scf.forall`
    of `attn-tile-attention{target=gpu split-target=0}`, materialized into
    the entry's output buffer) becomes one `gpu.launch` writing the output
    in place. The forall's iteration space is the grid (query block, KV
    head, batch); its block arithmetic (query tile offset and size, the key
    range its key loops cover, the first row's key position, the batch's
    key length) is cloned into the launch with the forall's ids mapped to
    the block's; the mask, window, scale and softcap come from its
    `attn.online_attention` ops. The block holds the group's query heads
    times the forall's `attn.q_block` rows; K and V tiles of `kv-block` keys
    are staged in shared memory for the whole group; the online softmax
    runs in registers in the log2 domain (`ex2.approx`, no libdevice); a
    row that sees no key writes 0.

    `precision=fp32`: CUDA cores, 8 rows per warp (4 for head dims above
    32), each lane holding every 32nd element of a row's q and accumulator,
    scores summed by xor shuffles (the accuracy path). `precision=bf16`:
    tensor cores in FlashAttention-2's structure, 16 rows per warp, Q·Kᵀ
    and P·V as `nvvm.mma.sync` m16n8k16 with fp32 accumulators (head dims
    multiple of 16), fragments read by `nvgpu.ldmatrix` from padded rows,
    K and V tiles through a two-slot ring in dynamic shared memory filled
    by `nvgpu.device_async_copy` (cp.async) when the cache is of the mma
    type, the mask only on the tiles that cross a diagonal or window;
    `precision=f16` the same on f16. K and V may be f32, bf16 or f16
    (a --kv-dtype cache, read as it is: the fp32 kernel widens them in
    shared memory, the tensor-core kernels take a cache of their own type
    or f32). T5 relative bias is not lowered.

    Split-K (decode and other short grids): where the grid's blocks
    (query blocks x KV heads x batch) are fewer than `split-blocks`, each
    block's key range is cut into parts of at least `split-min-keys` keys
    (whole kv-block tiles) computed by blocks of their own: the parts
    write their normalized rows and log2-sum-exp to a workspace
    (`gpu.alloc`, freed after the call), and a second kernel merges them
    into the output. The number of parts is chosen at run time from the
    grid and the cache's capacity (contiguous: its length; paged: the
    block table's pages); with one part the kernel writes the output
    directly and the merge does not run.
  }];
  let options = [
    Option<"splitBlocks", "split-blocks", "int64_t", /*default=*/"264",
           "Split-K: cut each block's keys into parts while the grid has "
           "fewer blocks than this (264: two per SM of an H100/H200; 0: "
           "never split)">,
    Option<"splitMinKeys", "split-min-keys", "int64_t", /*default=*/"512",
           "Split-K: the fewest keys per part">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"0",
           "Keys per shared-memory tile (0: 4096 / head dim, at least 8; "
           "bf16/f16: 64, or 32 where 64 exceeds max-shared-memory; 16 for the column groups of a value head dim past 256)">,
    Option<"warpRows", "warp-rows", "int64_t", /*default=*/"0",
           "Tensor-core kernel: rows per warp, 16 or 32 (two m16 tiles "
           "sharing each K/V fragment; value head dims up to 128); 0: 16">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"false",
           "Tensor-core kernel (sm_90a): S = Q·Kᵀ and O += P·V as warpgroup "
           "MMAs (wgmma) on 128-byte-swizzled tiles, where the K/V cache is "
           "of the kernel's type and the head dims are multiples of 64 (up "
           "to 256); the mma.sync kernel elsewhere">,
    Option<"tma", "tma", "bool", /*default=*/"false",
           "With wgmma, a contiguous cache: K/V tiles by TMA (tensor maps "
           "made on the host by the runtime's mgpuTensorMapEncodeTiledMemref, "
           "an mbarrier per ring slot) instead of cp.async">,
    Option<"linearChunked", "linear-chunked", "bool", /*default=*/"false",
           "precision=bf16|f16: the gated-delta kernel's chunked form on "
           "tensor cores for sequences of 32 tokens or more (the recurrent "
           "kernel keeps the shorter ones), where it takes the shape">,
    Option<"overlap", "overlap", "bool", /*default=*/"false",
           "With TMA and both products on wgmma: each tile's softmax "
           "overlapped with the previous tile's P·V (V's loads a tile behind "
           "K's)">,
    Option<"warpSpecialized", "warp-specialized", "bool", /*default=*/"false",
           "The overlapped kernel warp-specialized: one producer warpgroup "
           "(registers lowered by setmaxnreg) issues the TMA loads, waiting "
           "on each ring slot's empty mbarrier; the consumer warpgroups "
           "(registers raised) compute and release the slots (implies "
           "overlap)">,
    Option<"wgmmaProducts", "wgmma-products", "std::string",
           /*default=*/"\"all\"",
           "With wgmma: which products are warpgroup MMAs: all, qk (S = "
           "Q·Kᵀ), pv (O += P·V) or none; the others are mma.sync on "
           "fragments ldmatrix reads from the same swizzled tiles (a "
           "diagnostic: a GPU run of the four tells a wrong descriptor from "
           "a wrong tile layout)">,
    Option<"maxSharedMemory", "max-shared-memory", "int64_t",
           /*default=*/"166912",
           "Tensor-core kernel: the most dynamic shared memory a block may "
           "take (bytes; 166912 on sm_80, 232448 on sm_90)">,
    Option<"precision", "precision", "mlir::attn::GPUPrecision",
           /*default=*/"mlir::attn::GPUPrecision::fp32",
           "Arithmetic of the kernel",
           [{::llvm::cl::values(
             clEnumValN(mlir::attn::GPUPrecision::fp32, "fp32",
                        "CUDA-core kernel on fp32 (the accuracy path)"),
             clEnumValN(mlir::attn::GPUPrecision::bf16, "bf16",
                        "tensor-core kernel (mma.sync m16n8k16, Q, K, V and "
                        "P rounded to bf16, fp32 accumulators and softmax)"),
             clEnumValN(mlir::attn::GPUPrecision::f16, "f16",
                        "the same kernel on f16 (mma.sync m16n8k16 f16: Q, "
                        "K, V and P rounded to f16)"))}]>,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def GPUKernelOccupancyPass : Pass<"attn-gpu-kernel-occupancy", "ModuleOp"> {
  let summary = "Ask ptxas for one resident block per SM at least (no spills)";
  let description = [{
    Sets `nvvm.minctasm = 1` (PTX `.minnctapersm 1`) on the outlined
    attention kernels (`gpu.func` of a `gpu.module`, `kernel`). With only
    `.maxntid`, ptxas aims at several resident blocks and caps registers
    (64 for 256 threads), spilling the online-softmax state; with it, the
    kernel keeps its registers (up to 255) and occupancy follows from them.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GPULowerSubgroupReducePass
    : Pass<"attn-gpu-lower-subgroup-reduce", "ModuleOp"> {
  let summary = "Lower gpu.subgroup_reduce to warp shuffles (32 lanes)";
  let description = [{
    Applies upstream's butterfly lowering of `gpu.subgroup_reduce`, whole
    warp and clustered, to `gpu.shuffle xor` on 32-bit values for NVIDIA's
    32-lane warps: the kernels state their reductions with the upstream op
    (warp sums of the scores, quad max/sum of an mma row) and this pass,
    before the NVVM lowering, turns them into shuffles.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def ApproximateMathPass : Pass<"attn-approximate-math", "func::FuncOp"> {
  let summary = "Replace math.exp/tanh/log by inline polynomial approximations";
  let description = [{
    Runs MLIR's polynomial approximation patterns, so that `math.exp` in a
    vectorized (or auto-vectorized) loop becomes FMAs and bit tricks instead
    of one scalar `expf` call per element.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def DynamicScheduleLoopsPass : Pass<"attn-dynamic-schedule", "func::FuncOp"> {
  let summary = "Give OpenMP worksharing loops a dynamic schedule";
  let description = [{
    The parallel loop runs over (batch, KV head, query block). With a causal
    mask the last query blocks see the most keys, so a static split hands one
    thread most of the work (for one KV head, the upper half of the blocks).
    A dynamic schedule (chunk 1) balances the uneven iterations. A loop
    whose body calls a tile function with `attn.schedule_chunk = N` (the
    gated-delta tiles: alike iterations that stream each value head's
    state) gets chunk N instead, so that each thread reads runs of
    contiguous heads; where the module declares `omp_get_num_threads` (the
    micro-kernel pass declares it with the attribute) the run is
    `max(1, min(N, ceil(trip count / team size)))` at run time, so that a
    loop of few heads on many cores still gives every thread work.

    ```mlir
    omp.wsloop { ... }
    // becomes
    omp.wsloop schedule(dynamic) { ... }
    ```
  }];
  let dependentDialects = ["::mlir::omp::OpenMPDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def FenceStreamingStoresPass
    : Pass<"attn-fence-streaming-stores", "func::FuncOp"> {
  let summary = "An sfence after the parallel loops whose tiles write with non-temporal stores";
  let description = [{
    Non-temporal stores (`vector.store {nontemporal = true}`: the CPU
    gated-delta kernel writes a decode step's new state so) are weakly
    ordered on x86: a later release, such as the parallel loop's closing
    barrier, does not order them on every CPU. A `func.call` marked
    `attn.streaming_stores` (set by attn-cpu-micro-kernel) gets an `sfence`
    (`llvm.x86.sse.sfence`) after the `omp.wsloop` holding it, which every
    thread of the team runs before the parallel region ends, or after the
    call itself outside a parallel loop. Runs after the OpenMP conversion
    (and after buffer deallocation, which refuses an op with unknown memory
    effects such as the fence).

    ```mlir
    omp.wsloop { ... func.call @tile(...) {attn.streaming_stores} ... }
    // becomes
    omp.wsloop { ... }
    llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ATTN_CONVERSION_PASSES_TD
