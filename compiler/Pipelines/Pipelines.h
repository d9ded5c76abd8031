//===- Pipelines.h - the attn compilation pipeline ----------------*- C++ -*-===//
//
// This file declares the one function that builds the pass pipeline, used by
// attn-compile (--compile-to=...) and exposed by attn-opt as `attn-pipeline`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_PIPELINES_PIPELINES_H
#define ATTN_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
namespace attn {

/// Where the pipeline stops; later stages arrive with the backends.
enum class PipelineStage { Attn, Fused, Tiled, Linalg, LLVMDialect };

/// Parses "attn" / "fused" / "tiled" / "linalg" / "llvm-dialect".
std::optional<PipelineStage> parsePipelineStage(llvm::StringRef name);

struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> stopAfter{
      *this, "stop-after",
      llvm::cl::desc("Last stage to run: attn, fused, tiled, linalg or "
                     "llvm-dialect"),
      llvm::cl::init("tiled")};
  Option<bool> reference{
      *this, "reference",
      llvm::cl::desc("Keep an unfused <fn>_reference copy of each fused "
                     "function (the eager path for check and bench)"),
      llvm::cl::init(true)};
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("cpu or gpu (default tiles)"),
                             llvm::cl::init("cpu")};
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
  Option<int64_t> vectorLanes{
      *this, "vector-lanes",
      llvm::cl::desc("f32 lanes of the CPU micro-kernel: 16 (AVX-512, "
                     "default), 8 (AVX2), 4 (SSE); 0 lowers the tiles "
                     "through linalg instead"),
      llvm::cl::init(16)};
};

/// Adds the passes from graph-level attn IR up to `options.stopAfter`.
/// Returns failure (with a message in `error`) for a bad option.
LogicalResult buildAttnPipeline(OpPassManager &pm,
                                const PipelineOptions &options,
                                std::string *error = nullptr);

/// The CUDA pipeline: fuse, tile for the GPU (`stopAfterTiled` stops here),
/// then each kernel entry's tiled attention becomes a
/// gpu.launch (convert-attn-to-gpu), bufferized and outlined into a
/// gpu.module (`toPTX` false stops here); then NVVM and PTX for `arch`
/// (sm_80, sm_90), the PTX in a gpu.binary.
struct GPUPipelineOptions {
  std::string arch = "sm_90";
  int64_t qBlock = 0, kvBlock = 0;
  std::string precision = "fp32";
  bool stopAfterTiled = false;
  bool toPTX = true;
};
LogicalResult buildAttnGPUPipeline(OpPassManager &pm,
                                   const GPUPipelineOptions &options,
                                   std::string *error = nullptr);

/// Registers `attn-pipeline` for attn-opt.
void registerAttnPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_PIPELINES_PIPELINES_H
