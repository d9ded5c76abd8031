//===- Pipelines.cpp - the attn compilation pipeline ----------------------===//
//
// This file implements buildAttnPipeline: fuse the eager chain into
// attn.sdpa, keep an unfused reference copy, tile the fused ops into
// online-softmax loops, and clean up.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipelines.h"

#include "compiler/Conversion/Passes.h"
#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "compiler/Pipelines/Passes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::attn;

/// The options buildAttnPipeline refuses, with the reason in `error`.
static LogicalResult checkOptions(const PipelineOptions &options,
                                  std::string *error) {
  auto refuse = [&](const std::string &why) {
    if (error)
      *error = why;
    return failure();
  };
  const std::string &form = options.latentForm;
  if (form != "auto" && form != "expanded" && form != "absorbed")
    return refuse("latent-form must be auto, expanded or absorbed, got '" +
                  form + "'");
  int64_t lanes = options.vectorLanes;
  if (lanes != 0 && lanes != 4 && lanes != 8 && lanes != 16)
    return refuse("vector-lanes must be 16 (AVX-512), 8 (AVX2), 4 (SSE) or 0 "
                  "(the tiles through linalg), got " +
                  std::to_string(lanes));
  return success();
}

LogicalResult mlir::attn::buildAttnPipeline(OpPassManager &pm,
                                            const PipelineOptions &options,
                                            std::string *error) {
  // The options are checked before any pass is added.
  if (failed(checkOptions(options, error)))
    return failure();
  LowerLatentAttentionPassOptions latent;
  latent.form = options.latentForm;
  PipelineStage stop = options.stopAfter;
  if (stop == PipelineStage::Attn)
    return success();
  pm.addNestedPass<func::FuncOp>(createFuseAttentionPass());
  // Multi-head latent attention: both forms, chosen at run time by the
  // query and key lengths (attn.sdpa in each).
  pm.addNestedPass<func::FuncOp>(createLowerLatentAttentionPass(latent));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  if (stop == PipelineStage::Fused)
    return success();
  // A kind's block calls the kind's attention kernel: one tiled copy, and
  // no reference copy of the block (the kernel has its own).
  pm.addPass(createCallKernelsPass());
  if (options.reference)
    pm.addPass(createMakeReferencePass());
  // The CPU's tile choice (attn.tiles on each attention op), then the
  // generic tiler.
  CPUSelectTilesPassOptions tiles;
  tiles.qBlock = options.qBlock;
  tiles.kvBlock = options.kvBlock;
  tiles.splitTarget = options.splitTarget;
  tiles.splitMinKeys = options.splitMinKeys;
  if (options.target == TileTarget::cpu)
    pm.addNestedPass<func::FuncOp>(createCPUSelectTilesPass(tiles));
  TileAttentionPassOptions tile;
  tile.target = options.target;
  pm.addNestedPass<func::FuncOp>(createTileAttentionPass(tile));
  pm.addNestedPass<func::FuncOp>(createTileGatedDeltaPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  if (stop == PipelineStage::Tiled)
    return success();

  // CPU: tile and score ops to linalg on tensors, bufferize, loops.
  // The tiles the micro-kernels take (the CPU target's choice,
  // attn-cpu-select-kernels: attn.kernel) stay attn.online_attention /
  // attn.gated_delta_chunk, bufferize to their buffer form and become
  // register-tiled vector code (attn-cpu-micro-kernel); the rest become
  // linalg.generic.
  if (options.vectorLanes > 0) {
    CPUSelectKernelsPassOptions select;
    select.lanes = options.vectorLanes;
    pm.addNestedPass<func::FuncOp>(createCPUSelectKernelsPass(select));
  }
  pm.addNestedPass<func::FuncOp>(createConvertAttnToLinalgPass());
  // --qo-dtype's widening of q and rounding of the output, as linalg.
  pm.addNestedPass<func::FuncOp>(createLowerIOConversionsPass());
  // Fold the elementwise steps (scale, mask, exp, rescale) into their
  // producers and consumers: fewer passes over each tile, fewer buffers.
  pm.addNestedPass<func::FuncOp>(createFuseElementwiseKeepMatmulsPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  if (stop == PipelineStage::Linalg)
    return success();
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // The kernels write into the caller's buffer: the tiled loop's
  // tensor.empty becomes that buffer instead of a fresh allocation.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createNameConstantGlobalsPass());
  // The tiles kept for the micro-kernel, now on buffers, become vector code
  // (its scratch allocations are freed by the deallocation below).
  if (options.vectorLanes > 0) {
    CPUMicroKernelPassOptions microKernel;
    microKernel.lanes = options.vectorLanes;
    microKernel.amx = options.amx && options.vectorLanes == 16;
    microKernel.amxF32Prefill = options.amxF32Prefill;
    pm.addPass(createCPUMicroKernelPass(microKernel));
  }
  // (batch, KV head, query block) in parallel on all cores. scf.parallel
  // before deallocation: ownership-based deallocation frees what each
  // iteration allocates only in a body it understands.
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  // MLIR's buffer-deallocation-pipeline, its function-local passes nested
  // on each function (in parallel on the context's threads; the pipeline
  // runs them on the module, 1.6 s of DeepSeek-V3's 18 on one thread).
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    memref::ExpandReallocPassOptions realloc;
    realloc.emitDeallocs = false;
    fn.addPass(memref::createExpandReallocPass(realloc));
    fn.addPass(createCanonicalizerPass());
    fn.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
    fn.addPass(createCanonicalizerPass());
    fn.addPass(bufferization::createBufferDeallocationSimplificationPass());
    pm.addPass(bufferization::createLowerDeallocationsPass());
    pm.addNestedPass<func::FuncOp>(createCSEPass());
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  }
  // The clones deallocation adds (a public function returning a buffer
  // that aliases an argument) as allocation and copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addNestedPass<func::FuncOp>(
      createParallelizeOuterLinalgPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addNestedPass<func::FuncOp>(createDynamicScheduleLoopsPass());
  // The non-temporal stores' fence, in each thread after its loop (an op
  // buffer deallocation, earlier, would not take).
  pm.addNestedPass<func::FuncOp>(createFenceStreamingStoresPass());
  pm.addNestedPass<func::FuncOp>(createApproximateMathPass());
  // The passes that need no other function run on each function by
  // itself, on every thread of the context, as canonicalize and CSE do
  // throughout.
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  // After the last canonicalization (which inlines alloca scopes into loop
  // bodies): each loop body's allocas freed per iteration.
  pm.addNestedPass<func::FuncOp>(createScopeLoopAllocasPass());
  pm.addPass(createExpandShapeToReinterpretCastPass());
  pm.addNestedPass<func::FuncOp>(memref::createExpandStridedMetadataPass());
  pm.addNestedPass<func::FuncOp>(createLowerAffinePass());
  // convert-vector-to-llvm per function (on the whole module where it
  // prints: the print lowering's declarations are module-wide).
  VectorToLLVMPassOptions toLLVM;
  toLLVM.amx = options.amx; // the tile products (MicroKernelAmx.cpp, GemmAmx)
  toLLVM.lanes = options.vectorLanes;
  pm.addPass(createVectorToLLVMPass(toLLVM));
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = options.runtimeAlloc;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addNestedPass<func::FuncOp>(createSCFToControlFlowPass());
  pm.addNestedPass<func::FuncOp>(createArithToLLVMConversionPass());
  pm.addNestedPass<func::FuncOp>(createConvertMathToLLVMPass());
  pm.addNestedPass<func::FuncOp>(createConvertIndexToLLVMPass());
  // (The OpenMP conversion turns the functions into llvm.func.)
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  // Each function by itself, on the context's threads (what is left of the
  // casts is in function bodies).
  pm.addNestedPass<LLVM::LLVMFuncOp>(createReconcileUnrealizedCastsPass());
  pm.addPass(createMergeIdenticalFunctionsPass());
  return success();
}

llvm::StringRef mlir::attn::gpuArchName(GPUArch arch) {
  switch (arch) {
  case GPUArch::sm_80:
    return "sm_80";
  case GPUArch::sm_90:
    return "sm_90";
  case GPUArch::sm_90a:
    return "sm_90a";
  }
  llvm_unreachable("GPUArch");
}

LogicalResult mlir::attn::buildAttnGPUPipeline(OpPassManager &pm,
                                               const GPUPipelineOptions &options,
                                               std::string *error) {
  pm.addNestedPass<func::FuncOp>(createFuseAttentionPass());
  // A --qo-dtype entry's kernel reads its 16-bit q and writes its 16-bit
  // output itself.
  pm.addNestedPass<func::FuncOp>(createNarrowAttentionIOPass());
  pm.addPass(createCanonicalizerPass());
  // The tiled form the GPU lowering consumes: one block per (batch, KV
  // head, query block) of 32 rows (fp32) or 128 (bf16: 8 warps of 16) over
  // the group's heads, no split-K yet.
  GPUSelectTilesPassOptions tiles;
  tiles.qBlock = options.qBlock;
  tiles.blockRows = options.precision == GPUPrecision::fp32 ? 32 : 128;
  pm.addNestedPass<func::FuncOp>(createGPUSelectTilesPass(tiles));
  TileAttentionPassOptions tile;
  tile.target = TileTarget::gpu;
  tile.splitTarget = 0;
  pm.addNestedPass<func::FuncOp>(createTileAttentionPass(tile));
  // Gated DeltaNet: the same (batch, value head) forall as on the CPU; its
  // iteration space becomes the grid.
  pm.addNestedPass<func::FuncOp>(createTileGatedDeltaPass());
  // The forall is mapped to the grid (#gpu.block), so canonicalization
  // keeps its unit dims (one KV head).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.stopAfter == GPUStage::Tiled)
    return success();
  ConvertAttnToGPUPassOptions toGPU;
  toGPU.kvBlock = options.kvBlock;
  toGPU.warpRows = options.warpRows;
  // The opt-in shared memory of a block: 163 KB on an A100, 227 KB on
  // Hopper.
  toGPU.maxSharedMemory = options.arch == GPUArch::sm_80 ? 166912 : 232448;
  toGPU.precision = options.precision;
  toGPU.wgmma = options.arch == GPUArch::sm_90a;
  toGPU.wgmmaProducts = options.wgmmaProducts;
  toGPU.tma = options.arch == GPUArch::sm_90a && options.tma;
  toGPU.overlap = options.overlap;
  toGPU.warpSpecialized = options.warpSpecialized;
  toGPU.linearChunked = options.linearChunked;
  pm.addNestedPass<func::FuncOp>(createConvertAttnToGPUPass(toGPU));
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createNameConstantGlobalsPass());
  // Bottom-up: the top-down walk pre-folds each constant into the region's
  // entry, and a tensor-core launch body holds thousands of them among
  // ~20k ops; moving each one renumbered the block (Gemma-3-1B's four f16
  // kernels: 9.4 s in this pass, 0.45 s bottom-up, the same IR). The rest
  // as the pass's defaults (a GreedyRewriteConfig's own region
  // simplification is aggressive, the canonicalizer's normal).
  GreedyRewriteConfig bottomUp;
  bottomUp.setUseTopDownTraversal(false);
  bottomUp.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Normal);
  pm.addPass(createCanonicalizerPass(bottomUp));
  pm.addPass(createCSEPass());
  // Constants and dims into the launch, so the kernel has few arguments.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createGPUKernelOccupancyPass());
  if (options.stopAfter == GPUStage::GPU)
    return success();
  // The kernels' gpu.subgroup_reduce (warp and quad reductions) as shuffles:
  // the NVVM lowering has no pattern for f32 reductions.
  pm.addPass(createGPULowerSubgroupReducePass());
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = gpuArchName(options.arch).str();
  // PTX ISA 8.0 (CUDA 12+) covers sm_80 and sm_90; LLVM's default 6.0
  // cannot target sm_90.
  // sm_90a's TMA path acquires its tensor maps (fence.proxy.tensormap:
  // PTX 8.3, CUDA 12.3+ drivers).
  nvvm.cubinFeatures = options.arch == GPUArch::sm_90a ? "+ptx83" : "+ptx80";
  nvvm.cubinFormat = "isa";
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
  return success();
}

namespace {
/// A pipeline whose builder can refuse its options: the refusal goes to
/// MLIR's error handler, so attn-opt exits non-zero before running any
/// pass (PassPipelineRegistration's builders cannot fail: the pipeline
/// ran its first passes and exited 0).
template <typename Options>
void registerCheckedPipeline(StringRef arg, StringRef description,
                             LogicalResult (*build)(OpPassManager &,
                                                    const Options &,
                                                    std::string *)) {
  registerPassPipeline(
      arg, description,
      [arg, build](OpPassManager &pm, StringRef text,
                   function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error;
        if (failed(build(pm, options, &error)))
          return errorHandler(arg + ": " + error);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}
} // namespace

void mlir::attn::registerAttnPipelines() {
  // The pipelines' own passes (Passes.td), by name for attn-opt (a stage
  // replays pass by pass: test/Driver/replay.test).
  registerAttnPipelinesPasses();
  registerCheckedPipeline<PipelineOptions>(
      "attn-pipeline",
      "The attn compiler's pipeline: fuse, keep a reference, tile "
      "(stop-after=attn|fused|tiled)",
      buildAttnPipeline);
  registerCheckedPipeline<GPUPipelineOptions>(
      "attn-gpu-pipeline",
      "The attn compiler's CUDA pipeline: fuse, tile for the GPU, "
      "gpu.launch, outline, NVVM, PTX (stop-after=tiled|gpu|ptx)",
      buildAttnGPUPipeline);
}
