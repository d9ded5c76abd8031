//===- CudaOptions.cpp - attn-compile's --target=cuda options -------------===//

#include "CudaOptions.h"

namespace cl = llvm::cl;
namespace attn = mlir::attn;

cl::OptionCategory &attn_compile::cudaCategory() {
  static cl::OptionCategory category("attn-compile --target=cuda options");
  return category;
}

namespace {

cl::opt<attn::GPUPrecision> precision(
    "gpu-precision", cl::desc("--target=cuda: the kernels' arithmetic"),
    cl::init(attn::GPUPrecision::fp32),
    cl::values(clEnumValN(attn::GPUPrecision::fp32, "fp32",
                          "CUDA cores, the accuracy path (default)"),
               clEnumValN(attn::GPUPrecision::bf16, "bf16",
                          "tensor cores: mma.sync on bf16 inputs, fp32 "
                          "accumulators"),
               clEnumValN(attn::GPUPrecision::f16, "f16",
                          "tensor cores: mma.sync on f16 inputs, fp32 "
                          "accumulators (an f16 --kv-dtype cache)")),
    cl::cat(attn_compile::cudaCategory()));

cl::opt<attn::GPUArch> arch(
    "gpu-arch", cl::desc("--target=cuda: the GPU architecture"),
    cl::init(attn::GPUArch::sm_90),
    cl::values(clEnumValN(attn::GPUArch::sm_90, "sm_90", "H100/H200 (default)"),
               clEnumValN(attn::GPUArch::sm_90a, "sm_90a",
                          "H100/H200, the bf16/f16 kernels' products as "
                          "warpgroup MMAs (wgmma), K/V by TMA; runs only "
                          "on sm_90"),
               clEnumValN(attn::GPUArch::sm_80, "sm_80", "A100")),
    cl::cat(attn_compile::cudaCategory()));

cl::opt<int64_t> warpRows(
    "gpu-warp-rows",
    cl::desc("--target=cuda, bf16/f16: rows per warp of the tensor-core "
             "kernel, 16 or 32 (0: default)"),
    cl::init(0), cl::cat(attn_compile::cudaCategory()));

/// Diagnostics of the sm_90a kernel for a GPU run (hidden).
enum class Products { all, qk, pv, none };
cl::opt<Products> wgmmaProducts(
    "gpu-wgmma-products",
    cl::desc("--gpu-arch=sm_90a: which products are wgmma (the others "
             "mma.sync on the same swizzled tiles)"),
    cl::init(Products::all),
    cl::values(clEnumValN(Products::all, "all",
                          "S = Q·Kᵀ and O += P·V (default)"),
               clEnumValN(Products::qk, "qk", "S = Q·Kᵀ only"),
               clEnumValN(Products::pv, "pv", "O += P·V only"),
               clEnumValN(Products::none, "none", "neither")),
    cl::Hidden, cl::cat(attn_compile::cudaCategory()));

cl::opt<bool>
    tma("gpu-tma",
        cl::desc("--gpu-arch=sm_90a: K/V tiles of a contiguous cache by TMA "
                 "(default true; false: each thread's cp.async)"),
        cl::init(true), cl::Hidden, cl::cat(attn_compile::cudaCategory()));

cl::opt<bool> overlap(
    "gpu-overlap",
    cl::desc("--gpu-arch=sm_90a with TMA: each tile's softmax overlapped "
             "with the previous tile's P·V (default false)"),
    cl::init(false), cl::Hidden, cl::cat(attn_compile::cudaCategory()));

cl::opt<bool> warpSpecialized(
    "gpu-warp-specialized",
    cl::desc("--gpu-arch=sm_90a with TMA, the overlapped kernel (implied): "
             "a producer warpgroup issues the K/V loads, the consumer "
             "warpgroups compute, registers moved to them by setmaxnreg "
             "(default false until a GPU run has checked it)"),
    cl::init(false), cl::Hidden, cl::cat(attn_compile::cudaCategory()));

cl::opt<bool> linearChunked(
    "gpu-linear-chunked",
    cl::desc("--gpu-precision=bf16|f16: the gated-delta kinds' (Gated "
             "DeltaNet, Kimi Delta Attention, Mamba2) sequences of 32 tokens "
             "or more by the chunked kernel on tensor cores (d_k 64 or "
             "128); default "
             "false until a GPU run has checked it: the recurrent fp32 "
             "kernel"),
    cl::init(false), cl::cat(attn_compile::cudaCategory()));

} // namespace

attn::GPUPrecision attn_compile::gpuPrecision() { return precision; }

bool attn_compile::gpuLinearChunked() {
  return linearChunked && precision != attn::GPUPrecision::fp32;
}

void attn_compile::setCudaPipelineOptions(attn::GPUPipelineOptions &options) {
  options.arch = arch;
  options.warpRows = warpRows;
  static const char *const names[] = {"all", "qk", "pv", "none"};
  options.wgmmaProducts = names[static_cast<int>(wgmmaProducts.getValue())];
  options.tma = tma;
  options.overlap = overlap;
  options.warpSpecialized = warpSpecialized;
  options.linearChunked = gpuLinearChunked();
  options.precision = precision;
}

std::string attn_compile::checkCudaCache(attn::KVCacheType kv) {
  // The tensor-core kernels compute in their own 16-bit type: a cache of
  // the other one would be rounded again (f16 -> bf16 drops 3 mantissa
  // bits, bf16 -> f16 overflows past 65504).
  bool bf16 = precision == attn::GPUPrecision::bf16,
       f16 = precision == attn::GPUPrecision::f16;
  if (!(kv == attn::KVCacheType::f16 && bf16) &&
      !(kv == attn::KVCacheType::bf16 && f16))
    return "";
  std::string cache = attn::dtypeName(kv);
  return "--kv-dtype=" + cache +
         " with --gpu-precision=" + (bf16 ? "bf16" : "f16") +
         ": the tensor-core kernel would round the cache to its own 16-bit "
         "type; use --gpu-precision=" +
         cache + " (or fp32, which reads any cache)";
}

std::string attn_compile::cudaOptionGiven() {
  for (const auto &entry : cl::getRegisteredOptions())
    if (entry.second->getNumOccurrences() &&
        llvm::is_contained(entry.second->Categories, &cudaCategory()))
      return entry.first.str();
  return "";
}
