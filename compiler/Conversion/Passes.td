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
  }];
  let options = [
    Option<"microKernelLanes", "micro-kernel-lanes", "int64_t", /*default=*/"0",
           "f32 vector lanes of the CPU micro-kernel (16: AVX-512, 8: AVX2, "
           "4: SSE). When set, the attn.online_attention ops it handles (f32, "
           "static head dims, no relative bias table) are kept, annotated "
           "with attn.vector_lanes, and bufferize straight into register-"
           "tiled vector code; 0 lowers every op to linalg">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
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
    A dynamic schedule (chunk 1) balances the uneven iterations.

    ```mlir
    omp.wsloop { ... }
    // becomes
    omp.wsloop schedule(dynamic) { ... }
    ```
  }];
  let dependentDialects = ["::mlir::omp::OpenMPDialect"];
}

#endif // ATTN_CONVERSION_PASSES_TD
