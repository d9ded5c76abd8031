//===- Passes.td - the pipelines' own codegen passes -------*- tablegen -*-===//
//
// The passes buildAttnPipeline runs between upstream ones that are not
// about the attn dialect: bufferization's constants in a stable order,
// elementwise fusion that keeps the GEMMs whole, the graph's linalg ops in
// parallel loops, and a workaround of LLVM 22's expand-strided-metadata.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_PIPELINES_PASSES_TD
#define ATTN_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def NameConstantGlobalsPass : Pass<"attn-name-constant-globals", "ModuleOp"> {
  let summary = "Name bufferization's constant globals by first use, in that order";
  let description = [{
    Names the constant globals bufferization creates (`__constant_*`) by
    their first use in module order, and places them in that order. One-Shot
    Module Bufferize visits functions that do not call each other in the
    iteration order of a pointer-keyed map, so two constants of one type
    (Gemma 3's local and global RoPE frequencies) got their names and places
    in an order that changed from run to run and between host compilers.
  }];
  let dependentDialects = ["memref::MemRefDialect"];
}

def FuseElementwiseKeepMatmulsPass : Pass<"attn-fuse-elementwise-keep-matmuls", "func::FuncOp"> {
  let summary = "linalg-fuse-elementwise-ops that leaves linalg.matmul whole";
  let description = [{
    linalg-fuse-elementwise-ops with the matmuls left whole: upstream's pass
    would push the tokens' expand_shape into each projection's matmul (a
    rank-4 linalg.generic no GEMM kernel recognizes) and may fuse a norm
    into it (recomputed for every output feature). Elementwise ops still
    fuse with each other and with the tiles' ops.
  }];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect"];
}

def LowerIOConversionsPass : Pass<"attn-lower-io-conversions", "func::FuncOp"> {
  let summary = "A --qo-dtype entry's tensor arith.extf/truncf as linalg.generic, its bf16 rounding as integer operations";
  let description = [{
    A `--qo-dtype=bf16|f16` entry widens its q (`arith.extf`) and rounds its
    output (`arith.truncf`) as whole tensors. This pass makes each such
    conversion on a ranked tensor a `linalg.generic` (upstream's
    elementwise-to-linalg patterns, applied to these ops only: other
    elementwise ops on tensors, such as longrope's `arith.select` of a
    table, stay as they are), then writes each rounding to bf16, scalar or
    vector, as the integer operations upstream's `arith-expand{include-bf16}`
    writes (round to nearest even, NaN kept quiet). LLVM lowers `fptrunc`
    to bfloat to one instruction where the CPU has AVX512-BF16 and to a
    call of `__truncsfbf2` elsewhere (AVX2, Intel before Cooper Lake), which
    neither Debian 12's libgcc nor the default runtime provides. Widening
    from bf16 (a shift, as the K/V loads do it) stays `arith.extf`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def ParallelizeOuterLinalgPass : Pass<"attn-parallelize-outer-linalg", "func::FuncOp"> {
  let summary = "Lower linalg ops outside parallel loops to scf.parallel";
  let description = [{
    The linalg ops outside any parallel loop (the graph's norms, RoPE, head
    layout, activations, residuals; the reference path's steps) as loops
    whose leading parallel ones (at most two) are one scf.parallel, which
    OpenMP then runs on every core (all parallel dims in one collapsed
    loop cost a dynamic-schedule dispatch per element: 60x slower; the
    innermost loop stays sequential); ops already inside a parallel loop are left to
    convert-linalg-to-loops (a nested parallel region would only add a
    fork per tile). Before this, every such op ran on one core while the
    others waited: Qwen3-Next-80B's full-attention projections (S = 512)
    took 110-125 ms, 97-109 ms after (A/B in one session, attn-bench
    --layers).
  }];
  let dependentDialects = ["arith::ArithDialect", "scf::SCFDialect"];
}

def ExpandShapeToReinterpretCastPass : Pass<"attn-expand-shape-to-reinterpret-cast", "ModuleOp"> {
  let summary = "memref.expand_shape as memref.reinterpret_cast (LLVM 22's expand-strided-metadata crashes on two dynamic sizes in a group)";
  let description = [{
    Rewrites each memref.expand_shape as a memref.reinterpret_cast of its
    source's base buffer: LLVM 22's expand-strided-metadata crashes on an
    expand_shape whose group has two dynamic sizes ([B·S, n] -> [B, S, n],
    how the projections' rows go back to tokens). Each group's innermost dim
    keeps the source dim's stride; each outer one is the next one's times its
    size.
  }];
  let dependentDialects = ["arith::ArithDialect", "memref::MemRefDialect"];
}

def MergeIdenticalFunctionsPass : Pass<"attn-merge-identical-functions", "ModuleOp"> {
  let summary = "One body for the LLVM functions that only their names tell apart";
  let description = [{
    Finds the `llvm.func`s whose bodies and attributes are the same but for
    their names, callees first (two callers become equal once their callees
    are one), and keeps the first of each: a copy's callers call the first,
    and a copy that is not internal stays as an `llvm.mlir.alias` of it (the
    model table and `dlsym` find every entry by its name). Layer kinds that
    differ only in their feed-forward (DeepSeek's dense first layers, the
    MoE families' dense layers) have the same attention entries, blocks and
    reference copies: LLVM optimized and compiled each of them again.
    Before LLVM's own merge-functions pass can: the OpenMP regions are still
    inline here, while outlined they are addresses passed to the fork call,
    which that pass does not unify.
  }];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

def VectorToLLVMPass : Pass<"attn-convert-vector-to-llvm", "ModuleOp"> {
  let summary = "convert-vector-to-llvm on each function, on the context's threads, or on the module where it prints";
  let description = [{
    Upstream's convert-vector-to-llvm with the pipeline's settings
    (reassociated reductions, x86vector, AMX when `amx`, 16×16 shuffle
    transposes with 16 `lanes`), run on each function by itself on the
    context's threads. A module holding `vector.print` is converted whole
    instead: the print lowering declares its runtime functions and string
    globals in the module, and per-function runs did that at once from
    several threads ("redefinition of symbol named 'printString'", or a
    string global lost).
  }];
  let options = [
    Option<"amx", "amx", "bool", /*default=*/"false",
           "Lower the AMX dialect's ops (tile products)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "The micro-kernels' f32 lanes: 16 lowers 16x16 transposes as "
           "AVX-512 shuffle sequences">,
  ];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

def ScopeLoopAllocasPass : Pass<"attn-scope-loop-allocas", "func::FuncOp"> {
  let summary = "memref.alloca in a loop body freed per iteration";
  let description = [{
    Saves the stack pointer (llvm.intr.stacksave) before the first
    memref.alloca of an scf.for, scf.while or scf.parallel body and restores
    it before the body's terminator. MLIR treats those bodies as allocation
    scopes (canonicalization inlines the memref.alloca_scope
    convert-scf-to-openmp puts around a parallel body into the loop
    attn-dynamic-schedule makes of it), but scf-to-cf lowers them to plain
    branches: each iteration's allocas stayed on the stack. The GEMM
    kernel's 32 KiB pack scratch per panel overflowed a thread's 8 MiB on
    the seed's q_proj that way. (An alloca_scope here would be lowered to
    blocks inside the loop's region before scf-to-cf runs.) Runs after the
    last canonicalization. A body that passes a memref defined after its
    first alloca to its terminator (it may be one of the allocas) is left
    as it is.
  }];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

#endif // ATTN_PIPELINES_PASSES_TD
