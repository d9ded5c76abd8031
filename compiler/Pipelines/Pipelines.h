//===- Pipelines.h - the attn compilation pipeline ----------------*- C++ -*-===//
//
// This file declares the one function that builds the pass pipeline, used by
// attn-compile (--compile-to=...) and exposed by attn-opt as `attn-pipeline`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_PIPELINES_PIPELINES_H
#define ATTN_COMPILER_PIPELINES_PIPELINES_H

#include "compiler/Conversion/Passes.h"
#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
namespace attn {

/// Where the CPU pipeline stops; later stages are the target's (LLVM IR,
/// assembly, objects), outside the pass pipeline.
enum class PipelineStage { Attn, Fused, Tiled, Linalg, LLVMDialect };

struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<PipelineStage> stopAfter{
      *this, "stop-after", llvm::cl::desc("Last stage to run"),
      llvm::cl::init(PipelineStage::Tiled),
      llvm::cl::values(
          clEnumValN(PipelineStage::Attn, "attn", "graph-level attn IR"),
          clEnumValN(PipelineStage::Fused, "fused", "each chain one attn.sdpa"),
          clEnumValN(PipelineStage::Tiled, "tiled", "online-softmax loops"),
          clEnumValN(PipelineStage::Linalg, "linalg",
                     "tiles as linalg on tensors"),
          clEnumValN(PipelineStage::LLVMDialect, "llvm-dialect",
                     "bufferized, parallel (OpenMP), LLVM dialect"))};
  Option<bool> reference{
      *this, "reference",
      llvm::cl::desc("Keep an unfused <fn>_reference copy of each fused "
                     "function (the eager path for check and bench)"),
      llvm::cl::init(true)};
  Option<TileTarget> target{
      *this, "target", llvm::cl::desc("Whose tile sizes apply"),
      llvm::cl::init(TileTarget::cpu),
      llvm::cl::values(clEnumValN(TileTarget::cpu, "cpu", "CPU tiles"),
                       clEnumValN(TileTarget::gpu, "gpu", "GPU tiles"))};
  Option<int64_t> qBlock{*this, "q-block",
                         llvm::cl::desc("Query rows per tile (0: default)"),
                         llvm::cl::init(0)};
  Option<int64_t> kvBlock{*this, "kv-block",
                          llvm::cl::desc("Keys per tile (0: default)"),
                          llvm::cl::init(0)};
  Option<int64_t> splitTarget{
      *this, "split-target",
      llvm::cl::desc("Split-K decode: split the keys of a one-block query "
                     "when batch x KV heads is below this (0: never)"),
      llvm::cl::init(16)};
  Option<int64_t> splitMinKeys{
      *this, "split-min-keys",
      llvm::cl::desc("Split-K decode: the fewest keys of a part (the split "
                     "makes at most kv_len / this many parts)"),
      llvm::cl::init(512)};
  Option<std::string> latentForm{
      *this, "latent-form",
      llvm::cl::desc("Multi-head latent attention's form: auto (chosen at "
                     "run time by the query and key lengths), expanded or "
                     "absorbed"),
      llvm::cl::init("auto")};
  Option<int64_t> vectorLanes{
      *this, "vector-lanes",
      llvm::cl::desc("f32 lanes of the CPU micro-kernel: 16 (AVX-512, "
                     "default), 8 (AVX2), 4 (SSE); 0 lowers the tiles "
                     "through linalg instead"),
      llvm::cl::init(16)};
  Option<bool> amx{
      *this, "amx",
      llvm::cl::desc("Grouped decode and prefill of a bf16 KV cache and the "
                     "GEMMs on AMX tiles (amx-tile, amx-bf16: the target "
                     "must have them; the kernels fall back to AVX-512 "
                     "where the OS refuses)"),
      llvm::cl::init(false)};
  Option<bool> amxF32Prefill{
      *this, "amx-f32-prefill",
      llvm::cl::desc("With amx: the prefill of f32 and f16 K/V on AMX "
                     "tiles too (split into three bf16 parts)"),
      llvm::cl::init(false)};
  Option<bool> runtimeAlloc{
      *this, "runtime-alloc",
      llvm::cl::desc("Heap buffers through the runtime's "
                     "_mlir_memref_to_llvm_alloc/_free (it keeps large "
                     "freed buffers for the next call: no page faults per "
                     "call) instead of malloc/free; set by attn-compile "
                     "for what it links with the runtime"),
      llvm::cl::init(false)};
};

/// Adds the passes from graph-level attn IR up to `options.stopAfter`.
/// Returns failure (with a message in `error`) for a bad option.
LogicalResult buildAttnPipeline(OpPassManager &pm,
                                const PipelineOptions &options,
                                std::string *error = nullptr);

/// Where the CUDA pipeline stops.
enum class GPUStage { Tiled, GPU, PTX };

/// The NVIDIA architectures the PTX is for.
/// sm_90a: Hopper's architecture-specific features (wgmma), whose PTX runs
/// only on sm_90 GPUs.
enum class GPUArch { sm_80, sm_90, sm_90a };

/// "sm_80" / "sm_90" / "sm_90a".
llvm::StringRef gpuArchName(GPUArch arch);

/// The CUDA pipeline: fuse, tile for the GPU (stop-after=tiled stops here),
/// then each kernel entry's tiled attention becomes a gpu.launch
/// (convert-attn-to-gpu), bufferized and outlined into a gpu.module
/// (stop-after=gpu); then NVVM and PTX for `arch`, the PTX in a gpu.binary.
struct GPUPipelineOptions : public PassPipelineOptions<GPUPipelineOptions> {
  Option<GPUArch> arch{
      *this, "arch", llvm::cl::desc("GPU architecture"),
      llvm::cl::init(GPUArch::sm_90),
      llvm::cl::values(
          clEnumValN(GPUArch::sm_90, "sm_90", "H100/H200"),
          clEnumValN(GPUArch::sm_90a, "sm_90a", "H100/H200 with wgmma"),
          clEnumValN(GPUArch::sm_80, "sm_80", "A100"))};
  Option<bool> tma{*this, "tma",
                   llvm::cl::desc("sm_90a: K/V tiles of a contiguous cache by "
                                  "TMA (false: cp.async)"),
                   llvm::cl::init(true)};
  Option<bool> overlap{
      *this, "overlap",
      llvm::cl::desc("sm_90a with TMA: each tile's softmax overlapped with "
                     "the previous tile's P·V"),
      llvm::cl::init(false)};
  Option<bool> warpSpecialized{
      *this, "warp-specialized",
      llvm::cl::desc("sm_90a, the overlapped kernel: a producer warpgroup "
                     "issues the TMA loads, the consumer warpgroups compute "
                     "(setmaxnreg)"),
      llvm::cl::init(false)};
  Option<bool> linearChunked{
      *this, "linear-chunked",
      llvm::cl::desc("bf16/f16: the gated-delta kinds' chunked kernel on "
                     "tensor cores for sequences of 32 tokens or more"),
      llvm::cl::init(false)};
  Option<std::string> wgmmaProducts{
      *this, "wgmma-products",
      llvm::cl::desc("sm_90a: which products are wgmma (all, qk, pv, none; "
                     "a diagnostic)"),
      llvm::cl::init("all")};
  Option<int64_t> qBlock{*this, "q-block",
                         llvm::cl::desc("Query rows per tile (0: default)"),
                         llvm::cl::init(0)};
  Option<int64_t> kvBlock{*this, "kv-block",
                          llvm::cl::desc("Keys per tile (0: default)"),
                          llvm::cl::init(0)};
  Option<int64_t> warpRows{
      *this, "warp-rows",
      llvm::cl::desc("Tensor-core kernel: rows per warp, 16 or 32 (0: "
                     "default)"),
      llvm::cl::init(0)};
  Option<GPUPrecision> precision{
      *this, "precision", llvm::cl::desc("Arithmetic of the kernels"),
      llvm::cl::init(GPUPrecision::fp32),
      llvm::cl::values(
          clEnumValN(GPUPrecision::fp32, "fp32", "CUDA cores, fp32"),
          clEnumValN(GPUPrecision::bf16, "bf16",
                     "tensor cores, bf16 inputs, fp32 accumulators"),
          clEnumValN(GPUPrecision::f16, "f16",
                     "tensor cores, f16 inputs, fp32 accumulators"))};
  Option<GPUStage> stopAfter{
      *this, "stop-after", llvm::cl::desc("Last stage to run"),
      llvm::cl::init(GPUStage::PTX),
      llvm::cl::values(
          clEnumValN(GPUStage::Tiled, "tiled", "the tiled form for the GPU"),
          clEnumValN(GPUStage::GPU, "gpu",
                     "gpu.launch_func and the outlined gpu.module"),
          clEnumValN(GPUStage::PTX, "ptx", "NVVM, PTX in a gpu.binary"))};
};
LogicalResult buildAttnGPUPipeline(OpPassManager &pm,
                                   const GPUPipelineOptions &options,
                                   std::string *error = nullptr);

/// Registers `attn-pipeline` and `attn-gpu-pipeline` for attn-opt.
void registerAttnPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_PIPELINES_PIPELINES_H
