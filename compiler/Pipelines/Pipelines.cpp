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
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Names the constant globals bufferization creates (`__constant_*`) by
/// their first use in module order, and places them in that order. One-Shot
/// Module Bufferize visits functions that do not call each other in the
/// iteration order of a pointer-keyed map, so two constants of one type
/// (Gemma 3's local and global RoPE frequencies) got their names and places
/// in an order that changed from run to run and between host compilers.
struct NameConstantGlobalsPass
    : PassWrapper<NameConstantGlobalsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(NameConstantGlobalsPass)
  StringRef getArgument() const override {
    return "attn-name-constant-globals";
  }
  StringRef getDescription() const override {
    return "Name bufferization's constant globals by first use, in that order";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable table(module);
    SmallVector<memref::GlobalOp> order;
    llvm::DenseSet<Operation *> seen;
    module.walk([&](memref::GetGlobalOp get) {
      auto global = table.lookup<memref::GlobalOp>(get.getName());
      if (global && global.getSymName().starts_with("__constant_") &&
          seen.insert(global).second)
        order.push_back(global);
    });
    // Temporary names first: a final name may be another's current one.
    for (auto [i, global] : llvm::enumerate(order))
      if (failed(table.rename(global, "__attn_renaming_" + std::to_string(i))))
        return signalPassFailure();
    for (auto [i, global] : llvm::enumerate(order))
      if (failed(table.rename(global, "__constant_" + std::to_string(i))))
        return signalPassFailure();
    for (memref::GlobalOp global : llvm::reverse(order))
      global->moveBefore(&module.getBody()->front());
  }
};

/// linalg-fuse-elementwise-ops with the matmuls left whole: upstream's pass
/// would push the tokens' expand_shape into each projection's matmul (a
/// rank-4 linalg.generic no GEMM kernel recognizes) and may fuse a norm
/// into it (recomputed for every output feature). Elementwise ops still
/// fuse with each other and with the tiles' ops.
struct FuseElementwiseKeepMatmulsPass
    : PassWrapper<FuseElementwiseKeepMatmulsPass,
                  OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwiseKeepMatmulsPass)
  StringRef getArgument() const override {
    return "attn-fuse-elementwise-keep-matmuls";
  }
  StringRef getDescription() const override {
    return "linalg-fuse-elementwise-ops that leaves linalg.matmul whole";
  }
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      if (!producer || !producer->hasOneUse())
        return false;
      return !isa<linalg::MatmulOp>(producer) &&
             !isa<linalg::MatmulOp>(fused->getOwner());
    };
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
        patterns);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};

/// The linalg ops outside any parallel loop (the graph's norms, RoPE, head
/// layout, activations, residuals; the reference path's steps) as loops
/// whose leading parallel ones (at most two) are one scf.parallel, which
/// OpenMP then runs on every core (all parallel dims in one collapsed
/// loop cost a dynamic-schedule dispatch per element: 60x slower; the
/// innermost loop stays sequential); ops already inside a parallel loop are left to
/// convert-linalg-to-loops (a nested parallel region would only add a
/// fork per tile). Before this, every such op ran on one core while the
/// others waited: Qwen3-Next-80B's full-attention projections (S = 512)
/// took 110-125 ms, 97-109 ms after (A/B in one session, attn-bench
/// --layers).
struct ParallelizeOuterLinalgPass
    : PassWrapper<ParallelizeOuterLinalgPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ParallelizeOuterLinalgPass)
  StringRef getArgument() const override {
    return "attn-parallelize-outer-linalg";
  }
  StringRef getDescription() const override {
    return "Lower linalg ops outside parallel loops to scf.parallel";
  }
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() &&
          !op->getParentOfType<scf::ParallelOp>() &&
          !op->getParentOfType<scf::ForOp>() &&
          !op->getParentOfType<scf::ForallOp>() &&
          !op->getParentOfType<omp::ParallelOp>())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToLoops(rewriter, op);
      if (failed(loops))
        return signalPassFailure();
      rewriter.eraseOp(op);
      // The leading parallel loops, at most two and never the innermost
      // ([B, S] rows, [B, H] heads: enough iterations for the cores, each
      // a whole row of work; a dynamic-schedule dispatch per element would
      // cost more than the element).
      size_t n = 0;
      while (n < 2 && n + 1 < loops->size() && n < iters.size() &&
             iters[n] == utils::IteratorType::parallel)
        ++n;
      // Each iteration's work: the inner loops' static trip counts (a
      // dynamic one counts as large). Below 64 elements (a convolution
      // state's K - 1 taps per channel) the loop stays sequential: one
      // dispatch per 3 elements cost more than they do.
      int64_t inner = 1;
      for (size_t i = n; i < loops->size(); ++i) {
        auto f = cast<scf::ForOp>((*loops)[i]);
        std::optional<int64_t> lb = getConstantIntValue(f.getLowerBound());
        std::optional<int64_t> ub = getConstantIntValue(f.getUpperBound());
        inner *= lb && ub ? std::max<int64_t>(*ub - *lb, 0) : 1 << 20;
        inner = std::min<int64_t>(inner, 1 << 20);
      }
      if (n == 0 || inner < 64)
        continue;
      // Parallel only when the leading loops have 2 iterations or more: a
      // decode step's [1, 1] rows stay on the calling thread (without this
      // check a Qwen3-Next linear layer's decode step measured 7.9-9.2 ms,
      // against 6.5-6.6 ms with no parallel loops at all).
      auto outer = cast<scf::ForOp>((*loops)[0]);
      Location loc = outer.getLoc();
      rewriter.setInsertionPoint(outer);
      Value trips;
      for (size_t i = 0; i < n; ++i) {
        auto f = cast<scf::ForOp>((*loops)[i]);
        Value count = arith::SubIOp::create(rewriter, loc, f.getUpperBound(),
                                            f.getLowerBound());
        trips = trips ? arith::MulIOp::create(rewriter, loc, trips, count)
                            .getResult()
                      : count;
      }
      Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
      Value wide = arith::CmpIOp::create(rewriter, loc,
                                         arith::CmpIPredicate::sge, trips, two);
      auto branch = scf::IfOp::create(rewriter, loc, wide,
                                      /*withElseRegion=*/true);
      // The sequential nest moves to the else branch; a clone of it becomes
      // the parallel loop in the then branch.
      rewriter.moveOpBefore(outer,
                            branch.getElseRegion().front().getTerminator());
      rewriter.setInsertionPoint(
          branch.getThenRegion().front().getTerminator());
      auto copy = cast<scf::ForOp>(rewriter.clone(*outer));
      SmallVector<scf::ForOp> fors = {copy};
      while (fors.size() < n) {
        scf::ForOp next;
        for (Operation &o : *fors.back().getBody())
          if ((next = dyn_cast<scf::ForOp>(o)))
            break;
        if (!next)
          return signalPassFailure();
        fors.push_back(next);
      }
      SmallVector<Value> lbs, ubs, steps;
      for (scf::ForOp f : fors) {
        lbs.push_back(f.getLowerBound());
        ubs.push_back(f.getUpperBound());
        steps.push_back(f.getStep());
      }
      rewriter.setInsertionPoint(fors.front());
      auto par = scf::ParallelOp::create(rewriter, fors.front().getLoc(), lbs,
                                         ubs, steps);
      for (size_t i = 0; i < n; ++i)
        fors[i].getInductionVar().replaceAllUsesWith(
            par.getInductionVars()[i]);
      Block *from = fors.back().getBody();
      Block *to = par.getBody();
      to->getOperations().splice(to->getTerminator()->getIterator(),
                                 from->getOperations(), from->begin(),
                                 std::prev(from->end()));
      rewriter.eraseOp(fors.front());
    }
  }
};

/// Rewrites each memref.expand_shape as a memref.reinterpret_cast of its
/// source's base buffer: LLVM 22's expand-strided-metadata crashes on an
/// expand_shape whose group has two dynamic sizes ([B·S, n] -> [B, S, n],
/// how the projections' rows go back to tokens). Each group's innermost dim
/// keeps the source dim's stride; each outer one is the next one's times its
/// size.
struct ExpandShapeToReinterpretCastPass
    : PassWrapper<ExpandShapeToReinterpretCastPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandShapeToReinterpretCastPass)
  StringRef getArgument() const override {
    return "attn-expand-shape-to-reinterpret-cast";
  }
  StringRef getDescription() const override {
    return "memref.expand_shape as memref.reinterpret_cast (LLVM 22's expand-strided-metadata crashes on two dynamic sizes in a group)";
  }
  void runOnOperation() override {
    SmallVector<memref::ExpandShapeOp> ops;
    getOperation().walk([&](memref::ExpandShapeOp op) { ops.push_back(op); });
    for (memref::ExpandShapeOp op : ops) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      MemRefType srcTy = op.getSrcType();
      SmallVector<int64_t> srcStrides;
      int64_t srcOffset;
      if (failed(srcTy.getStridesAndOffset(srcStrides, srcOffset)))
        continue; // not strided: left to expand-strided-metadata
      auto md = memref::ExtractStridedMetadataOp::create(b, loc, op.getSrc());
      auto known = [&](int64_t v, Value dynamic) -> OpFoldResult {
        if (ShapedType::isDynamic(v))
          return dynamic;
        return b.getIndexAttr(v);
      };
      SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
      SmallVector<OpFoldResult> strides(sizes.size());
      for (auto [g, group] : llvm::enumerate(op.getReassociationIndices())) {
        OpFoldResult stride = known(srcStrides[g], md.getStrides()[g]);
        for (int64_t i = int64_t(group.size()) - 1; i >= 0; --i) {
          strides[group[i]] = stride;
          if (i == 0)
            break;
          std::optional<int64_t> cs = getConstantIntValue(stride);
          std::optional<int64_t> cn = getConstantIntValue(sizes[group[i]]);
          if (cs && cn) {
            stride = b.getIndexAttr(*cs * *cn);
            continue;
          }
          Value lhs = getValueOrCreateConstantIndexOp(b, loc, stride);
          Value rhs = getValueOrCreateConstantIndexOp(b, loc, sizes[group[i]]);
          stride = arith::MulIOp::create(b, loc, lhs, rhs).getResult();
        }
      }
      OpFoldResult offset = known(srcOffset, md.getOffset());
      auto cast = memref::ReinterpretCastOp::create(
          b, loc, op.getResultType(), md.getBaseBuffer(), offset, sizes,
          strides);
      op.replaceAllUsesWith(cast.getResult());
      op.erase();
    }
  }
};

} // namespace

LogicalResult mlir::attn::buildAttnPipeline(OpPassManager &pm,
                                            const PipelineOptions &options,
                                            std::string *error) {
  PipelineStage stop = options.stopAfter;
  if (stop == PipelineStage::Attn)
    return success();
  pm.addNestedPass<func::FuncOp>(createFuseAttentionPass());
  // Multi-head latent attention: both forms, chosen at run time by the
  // query and key lengths (attn.sdpa in each).
  LowerLatentAttentionPassOptions latent;
  latent.form = options.latentForm;
  if (latent.form != "auto" && latent.form != "expanded" &&
      latent.form != "absorbed") {
    if (error)
      *error = "latent-form must be auto, expanded or absorbed, got '" +
               latent.form + "'";
    return failure();
  }
  pm.addNestedPass<func::FuncOp>(createLowerLatentAttentionPass(latent));
  pm.addPass(createCanonicalizerPass());
  if (stop == PipelineStage::Fused)
    return success();
  // A kind's block calls the kind's attention kernel: one tiled copy, and
  // no reference copy of the block (the kernel has its own).
  pm.addPass(createCallKernelsPass());
  if (options.reference)
    pm.addPass(createMakeReferencePass());
  TileAttentionPassOptions tile;
  tile.target = options.target;
  tile.qBlock = options.qBlock;
  tile.kvBlock = options.kvBlock;
  tile.splitTarget = options.splitTarget;
  pm.addNestedPass<func::FuncOp>(createTileAttentionPass(tile));
  pm.addNestedPass<func::FuncOp>(createTileGatedDeltaPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (stop == PipelineStage::Tiled)
    return success();

  // CPU: tile and score ops to linalg on tensors, bufferize, loops.
  // Tiles the micro-kernel handles stay attn.online_attention, bufferize to
  // its buffer form and become register-tiled vector code
  // (attn-cpu-micro-kernel); the rest become linalg.generic.
  ConvertAttnToLinalgPassOptions toLinalg;
  toLinalg.microKernelLanes = options.vectorLanes;
  pm.addNestedPass<func::FuncOp>(createConvertAttnToLinalgPass(toLinalg));
  // Fold the elementwise steps (scale, mask, exp, rescale) into their
  // producers and consumers: fewer passes over each tile, fewer buffers.
  pm.addNestedPass<func::FuncOp>(
      std::make_unique<FuseElementwiseKeepMatmulsPass>());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
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
  pm.addPass(std::make_unique<NameConstantGlobalsPass>());
  // The tiles kept for the micro-kernel, now on buffers, become vector code
  // (its scratch allocations are freed by the deallocation below).
  if (options.vectorLanes > 0) {
    CPUMicroKernelPassOptions microKernel;
    microKernel.lanes = options.vectorLanes;
    pm.addPass(createCPUMicroKernelPass(microKernel));
  }
  // (batch, KV head, query block) in parallel on all cores. scf.parallel
  // before deallocation: ownership-based deallocation frees what each
  // iteration allocates only in a body it understands.
  pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // The clones deallocation adds (a public function returning a buffer
  // that aliases an argument) as allocation and copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addNestedPass<func::FuncOp>(
      std::make_unique<ParallelizeOuterLinalgPass>());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addNestedPass<func::FuncOp>(createDynamicScheduleLoopsPass());
  pm.addNestedPass<func::FuncOp>(createApproximateMathPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(std::make_unique<ExpandShapeToReinterpretCastPass>());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  ConvertVectorToLLVMPassOptions toLLVM;
  // Row sums of the micro-kernel: a shuffle tree, not 16 ordered adds.
  toLLVM.reassociateFPReductions = true;
  // The softmax's exp scales by 2^n with x86vector.avx512.mask.scalef
  // (vscalefps) when the micro-kernel has 16 lanes.
  toLLVM.x86Vector = true;
  // The Kᵀ pack: 16×16 transposes as AVX-512 shuffle sequences.
  toLLVM.vectorTransposeLowering =
      options.vectorLanes == 16 ? vector::VectorTransposeLowering::Shuffle16x16
                                : vector::VectorTransposeLowering::Shuffle1D;
  pm.addPass(createConvertVectorToLLVMPass(toLLVM));
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = options.runtimeAlloc;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return success();
}

llvm::StringRef mlir::attn::gpuArchName(GPUArch arch) {
  return arch == GPUArch::sm_80 ? "sm_80" : "sm_90";
}

LogicalResult mlir::attn::buildAttnGPUPipeline(OpPassManager &pm,
                                               const GPUPipelineOptions &options,
                                               std::string *error) {
  pm.addNestedPass<func::FuncOp>(createFuseAttentionPass());
  pm.addPass(createCanonicalizerPass());
  // The tiled form the GPU lowering consumes: one block per (batch, KV
  // head, query block) of 32 rows (fp32) or 64 (bf16: 4 warps of 16) over
  // the group's heads, no split-K yet.
  TileAttentionPassOptions tile;
  tile.target = TileTarget::gpu;
  tile.qBlock = options.qBlock;
  tile.blockRows = options.precision == GPUPrecision::fp32 ? 32 : 64;
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
  toGPU.precision = options.precision;
  pm.addNestedPass<func::FuncOp>(createConvertAttnToGPUPass(toGPU));
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(std::make_unique<NameConstantGlobalsPass>());
  pm.addPass(createCanonicalizerPass());
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
  nvvm.cubinFeatures = "+ptx80";
  nvvm.cubinFormat = "isa";
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
  return success();
}

void mlir::attn::registerAttnPipelines() {
  // The pipelines' own passes, by name for attn-opt (a stage replays pass
  // by pass: test/Driver/replay.test).
  PassRegistration<NameConstantGlobalsPass>();
  PassRegistration<FuseElementwiseKeepMatmulsPass>();
  PassRegistration<ExpandShapeToReinterpretCastPass>();
  PassRegistration<ParallelizeOuterLinalgPass>();
  PassPipelineRegistration<PipelineOptions>(
      "attn-pipeline",
      "The attn compiler's pipeline: fuse, keep a reference, tile "
      "(stop-after=attn|fused|tiled)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        std::string error;
        if (failed(buildAttnPipeline(pm, options, &error)))
          llvm::errs() << "attn-pipeline: " << error << "\n";
      });
  PassPipelineRegistration<GPUPipelineOptions>(
      "attn-gpu-pipeline",
      "The attn compiler's CUDA pipeline: fuse, tile for the GPU, "
      "gpu.launch, outline, NVVM, PTX (stop-after=tiled|gpu|ptx)",
      [](OpPassManager &pm, const GPUPipelineOptions &options) {
        std::string error;
        if (failed(buildAttnGPUPipeline(pm, options, &error)))
          llvm::errs() << "attn-gpu-pipeline: " << error << "\n";
      });
}
