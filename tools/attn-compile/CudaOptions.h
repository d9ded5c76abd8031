//===- CudaOptions.h - attn-compile's --target=cuda options -----*- C++ -*-===//
//
// The options of the CUDA target (the GPU architecture, the kernels'
// arithmetic and tile shape, the sm_90a kernel's variants) and the CUDA
// pipeline's options they give.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_COMPILE_CUDAOPTIONS_H
#define ATTN_TOOLS_ATTN_COMPILE_CUDAOPTIONS_H

#include "compiler/Frontend/ModelSpec.h"
#include "compiler/Pipelines/Pipelines.h"

#include "llvm/Support/CommandLine.h"

namespace attn_compile {

/// The category of the --target=cuda options (a section of --help).
llvm::cl::OptionCategory &cudaCategory();

/// The name of a --target=cuda option the command line gives, or "".
std::string cudaOptionGiven();

/// --gpu-precision: the kernels' arithmetic.
mlir::attn::GPUPrecision gpuPrecision();
/// --gpu-linear-chunked with a tensor-core precision.
bool gpuLinearChunked();

/// Why the tensor-core precision cannot read a 16-bit cache of `kv`'s type
/// (the other 16-bit type would be rounded again), or "".
std::string checkCudaCache(mlir::attn::KVCacheType kv);

/// The CUDA pipeline's options from the command line: architecture,
/// precision, rows per warp, the sm_90a kernel's products and loads (the
/// tile sizes --q-block/--kv-block are the caller's).
void setCudaPipelineOptions(mlir::attn::GPUPipelineOptions &options);

} // namespace attn_compile

#endif // ATTN_TOOLS_ATTN_COMPILE_CUDAOPTIONS_H
