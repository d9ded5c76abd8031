//===- MicroKernelPass.cpp - attn-cpu-micro-kernel ------------------------===//
//
// This file implements the attn-cpu-micro-kernel pass: each buffer-form
// attn.online_attention (attn.gated_delta_chunk) becomes scratch allocations
// before its parallel iteration and a call of a private no-inline tile
// function whose body is the micro-kernel (MicroKernel.cpp,
// GatedDeltaKernel.cpp), one function per distinct tile.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

#include <map>
#include <tuple>

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CPUMICROKERNELPASS
#include "compiler/Conversion/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The micro-kernel functions of one module: one per distinct tile
/// (attributes and operand types), called from every op like it.
class TileFunctions {
public:
  TileFunctions(ModuleOp module, int64_t lanes, bool amx, bool amxF32)
      : module(module), symbols(module), lanes(lanes), amx(amx),
        amxF32(amxF32) {}

  /// Replaces `oa` (buffer form) by scratch allocations before its parallel
  /// iteration and a call of its tile function; failure with an error when
  /// the micro-kernel cannot handle it.
  LogicalResult lower(OnlineAttentionOp oa);
  LogicalResult lower(GatedDeltaChunkOp chunk);
  /// Replaces a buffer-form linalg.matmul (gemmKernelHandles) by a call of
  /// its GEMM function.
  void lowerMatmul(Operation *matmul);

private:
  /// The tile function of ops like `op`, whose body `emit(b, clone,
  /// scratch)` builds from a clone of `op` on the function's arguments.
  func::FuncOp
  functionFor(Operation *op, TypeRange scratch,
              function_ref<void(OpBuilder &, Operation *, ValueRange)> emit,
              StringRef suffix = "_tile");
  /// Moves the builder before the op's parallel iteration (where scratch is
  /// allocated once per iteration).
  static void beforeParallelIteration(OpBuilder &b, Operation *op);
  /// Replaces `op` by a call of `fn` with its operands and `scratch`.
  static func::CallOp replaceByCall(Operation *op, func::FuncOp fn,
                                    ValueRange scratch);
  static LogicalResult checkContiguous(Operation *op, ValueRange buffers);

  ModuleOp module;
  SymbolTable symbols;
  int64_t lanes;
  bool amx, amxF32;
  llvm::StringMap<func::FuncOp> byKey;
  /// The scratch of the ops of one parallel iteration (the block the
  /// scratch goes to) that read the same query rows with the same scale
  /// (the pack applies it) and the same value and paging types: a causal
  /// query block's unmasked and diagonal key loops. Their tiles run one
  /// after the other on the same thread, so they share it, and with it the
  /// packed query rows (the pack's tag lets the second loop's tiles skip
  /// the pack: P4 +4.9%, P1 +1.7%).
  std::map<std::tuple<Block *, void *, double, const void *, bool>,
           SmallVector<Value>>
      sharedScratch;
};

/// `private @<caller><suffix>(operands..., scratch...)` holding the
/// micro-kernel of ops like `op`: its own function so that LLVM compiles
/// each tile once (not once per loop that runs it) and keeps functions small
/// (compile time grows faster than their size); marked no-inline, internal.
func::FuncOp TileFunctions::functionFor(
    Operation *op, TypeRange scratch,
    function_ref<void(OpBuilder &, Operation *, ValueRange)> emit,
    StringRef suffix) {
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    os << suffix << op->getName() << op->getAttrDictionary();
    for (Type t : op->getOperandTypes())
      os << ";" << t;
  }
  if (func::FuncOp fn = byKey.lookup(key))
    return fn;
  MLIRContext *ctx = op->getContext();
  SmallVector<Type> args(op->getOperandTypes());
  args.append(scratch.begin(), scratch.end());
  auto caller = op->getParentOfType<func::FuncOp>();
  func::FuncOp fn = createKernelFunction(symbols, op->getLoc(),
                                         (caller.getSymName() + suffix).str(),
                                         FunctionType::get(ctx, args, {}));
  Block *body = &fn.getBody().front();
  IRRewriter b(ctx);
  b.setInsertionPointToStart(body);
  IRMapping map;
  map.map(op->getOperands(),
          body->getArguments().take_front(op->getNumOperands()));
  Operation *tile = b.clone(*op, map);
  b.setInsertionPoint(tile);
  emit(b, tile, body->getArguments().take_back(scratch.size()));
  b.eraseOp(tile);
  func::ReturnOp::create(b, op->getLoc());
  byKey[key] = fn;
  return fn;
}

LogicalResult TileFunctions::checkContiguous(Operation *op,
                                             ValueRange buffers) {
  for (Value buf : buffers) {
    int64_t offset;
    SmallVector<int64_t> strides;
    if (failed(cast<MemRefType>(buf.getType())
                   .getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return op->emitOpError("the CPU micro-kernel needs operands whose "
                             "innermost dim is contiguous");
  }
  return success();
}

void TileFunctions::beforeParallelIteration(OpBuilder &b, Operation *op) {
  // Scratch once per parallel iteration (query block, value head), before
  // its outermost loop: a buffer inside the loop would be allocated on every
  // tile, and a function-level one would be shared by the threads. Not
  // above a branch that holds the op without a loop (the gated-delta
  // recurrent / chunked choice): only the branch taken allocates.
  Operation *anchor = op;
  for (Operation *p = op->getParentOp();
       p && !isa<scf::ForallOp, scf::ParallelOp, FunctionOpInterface>(p);
       p = p->getParentOp())
    if (isa<LoopLikeOpInterface>(p))
      anchor = p;
  b.setInsertionPoint(anchor);
}

func::CallOp TileFunctions::replaceByCall(Operation *op, func::FuncOp fn,
                                          ValueRange scratch) {
  OpBuilder b(op);
  SmallVector<Value> args(op->getOperands());
  args.append(scratch.begin(), scratch.end());
  auto call = func::CallOp::create(b, op->getLoc(), fn, args);
  op->erase();
  return call;
}

LogicalResult TileFunctions::lower(OnlineAttentionOp oa) {
  if (!microKernelHandles(oa))
    return oa.emitOpError(
        "on buffers is lowered by the CPU micro-kernel only, which needs f32 "
        "operands, static head dims and no relative bias table; lower this "
        "op with convert-attn-to-linalg before bufferization");
  if (failed(checkContiguous(oa, {oa.getQuery(), oa.getKey(), oa.getValue(),
                                  oa.getAcc(), oa.getMax(), oa.getSum()})))
    return failure();
  OpBuilder b(oa);
  beforeParallelIteration(b, oa);
  auto key = std::make_tuple(
      b.getInsertionBlock(), oa.getQuery().getAsOpaquePointer(),
      oa.getScale().convertToDouble(),
      oa.getValue().getType().getAsOpaquePointer(), oa.isPaged());
  SmallVector<Value> &scratch = sharedScratch[key];
  if (scratch.empty())
    scratch =
        allocateMicroKernelScratch(b, oa.getLoc(), oa, lanes, amx, amxF32);
  func::FuncOp fn =
      functionFor(oa, ValueRange(scratch).getTypes(),
                  [&](OpBuilder &fb, Operation *tile, ValueRange sc) {
                    emitMicroKernel(fb, cast<OnlineAttentionOp>(tile), sc,
                                    lanes, amx, amxF32);
                  });
  replaceByCall(oa, fn, scratch);
  return success();
}

LogicalResult TileFunctions::lower(GatedDeltaChunkOp chunk) {
  if (!gatedDeltaKernelHandles(chunk))
    return chunk.emitOpError(
        "on buffers is lowered by the CPU kernel only, which needs f32 "
        "operands");
  SmallVector<Value> rows = {chunk.getQuery(), chunk.getKey(), chunk.getValue(),
                             chunk.getOut(), chunk.getState()};
  if (Value init = chunk.getInitialState())
    rows.push_back(init);
  if (failed(checkContiguous(chunk, rows)))
    return failure();
  OpBuilder b(chunk);
  beforeParallelIteration(b, chunk);
  int64_t dk = cast<ShapedType>(chunk.getQuery().getType()).getDimSize(1);
  int64_t dv = cast<ShapedType>(chunk.getValue().getType()).getDimSize(1);
  SmallVector<Value> scratch = allocateGatedDeltaScratch(
      b, chunk.getLoc(), dk, dv, lanes, chunk.getRecurrent(),
      chunk.getNoDelta(), chunk.hasChannelGate());
  func::FuncOp fn = functionFor(
      chunk, ValueRange(scratch).getTypes(),
      [&](OpBuilder &fb, Operation *tile, ValueRange sc) {
        emitGatedDeltaKernel(fb, cast<GatedDeltaChunkOp>(tile), sc, lanes);
      });
  // The value heads' iterations are alike and a decode step streams each
  // head's state through memory: the parallel loop hands out runs of
  // contiguous heads (attn-dynamic-schedule), not one at a time.
  // The recurrent kernel of an unpadded state streams a decode step's state
  // (read before replaceByCall erases the op).
  bool streams = chunk.getRecurrent() && dk % lanes == 0 && dv % lanes == 0;
  func::CallOp call = replaceByCall(chunk, fn, scratch);
  call->setAttr(kScheduleChunkAttr, b.getI64IntegerAttr(8));
  if (streams)
    call->setAttr(kStreamingStoresAttr, b.getUnitAttr());
  // attn-dynamic-schedule shortens the runs when the loop has fewer than 8
  // heads per thread of its team (many cores, few heads): it asks the
  // OpenMP runtime for the team's size.
  // (Not over a symbol of that name the module already has: the runs then
  // stay 8.)
  if (!module.lookupSymbol("omp_get_num_threads")) {
    OpBuilder mb(module.getContext());
    (void)func::lookupOrCreateFnDecl(mb, module, "omp_get_num_threads",
                                     TypeRange{}, nullptr, mb.getI32Type());
  }
  return success();
}

void TileFunctions::lowerMatmul(Operation *matmul) {
  // One function of the packed and dot-product kernels for every GEMM of a
  // module, all its sizes, strides and offsets dynamic (they ran as fast as
  // per-shape copies, measured alternated in one process). With 16 lanes
  // and B [N, K], one function per depth K holds the operand-swapped kernel
  // (8 to 48 rows: a mixture of experts' GEMMs) and calls that one for
  // other row counts: K and the row strides of A and B kept, with which the
  // swapped kernel addresses its 12 rows of B from one pointer (with B's
  // stride dynamic it ran 3-7% slower on 32 rows); its pack and epilogue,
  // which do not need K, are functions of their own that every depth's
  // calls (GemmKernel.cpp). Each shape had its own copy of all three
  // kernels once, 8,600 lines of LLVM IR: 13 of them in DeepSeek-V2-Lite.
  bool swaps = gemmKernelSwaps(matmul, lanes);
  OpBuilder cb(matmul);
  // `keepK`: K and the row strides of A and B as they are.
  auto castOperands = [&](bool keepK) {
    cb.setInsertionPoint(matmul);
    for (auto [i, operand] : llvm::enumerate(matmul->getOpOperands())) {
      auto type = cast<MemRefType>(operand.get().getType());
      int64_t dyn = ShapedType::kDynamic;
      SmallVector<int64_t> strides;
      int64_t offset;
      if (failed(type.getStridesAndOffset(strides, offset)))
        continue; // (gemmKernelHandles checked that they are strided)
      SmallVector<int64_t> shape = {dyn, dyn};
      SmallVector<int64_t> keep = {dyn, 1};
      if (keepK && i < 2) {
        // [M, K] and [N, K] keep K (swaps: B is [N, K]).
        shape[1] = type.getDimSize(1);
        keep[0] = strides[0];
      }
      auto layout = StridedLayoutAttr::get(type.getContext(), dyn, keep);
      auto cast = MemRefType::get(shape, type.getElementType(), layout,
                                  type.getMemorySpace());
      if (cast != type)
        operand.set(
            memref::CastOp::create(cb, matmul->getLoc(), cast, operand.get()));
    }
  };
  // The GEMM holds its own parallel loop over panels: no scratch argument.
  // Named <caller>_gemm, the per-depth ones <caller>_gemm_k<K> (_kdyn
  // where K is dynamic: a GEMM of its own then, as a depth).
  auto function = [&](func::FuncOp generic) {
    std::string suffix = "_gemm";
    if (generic) {
      int64_t k =
          cast<MemRefType>(matmul->getOperand(0).getType()).getDimSize(1);
      suffix += ShapedType::isDynamic(k) ? "_kdyn" : "_k" + std::to_string(k);
    }
    return functionFor(
        matmul, TypeRange{},
        [&](OpBuilder &fb, Operation *clone, ValueRange) {
          emitGemmKernel(fb, clone, lanes, generic, amx);
        },
        suffix);
  };
  if (!swaps) {
    castOperands(/*keepK=*/false);
    replaceByCall(matmul, function({}), ValueRange{});
    return;
  }
  // The generic function from a copy of the matmul on dynamic operands.
  Operation *perDepth = matmul;
  matmul = cb.clone(*perDepth);
  castOperands(/*keepK=*/false);
  func::FuncOp generic = function({});
  SmallVector<Value> operands(matmul->getOperands());
  matmul->erase();
  for (Value v : operands)
    if (auto c = v.getDefiningOp<memref::CastOp>(); c && c.use_empty())
      c.erase();
  matmul = perDepth;
  castOperands(/*keepK=*/true);
  replaceByCall(matmul, function(generic), ValueRange{});
}

struct CPUMicroKernelPass
    : attn::impl::CPUMicroKernelPassBase<CPUMicroKernelPass> {
  using Base::Base;
  void runOnOperation() override {
    if (lanes != 4 && lanes != 8 && lanes != 16) {
      emitError(getOperation().getLoc())
          << "attn-cpu-micro-kernel: lanes must be 4, 8 or 16, not "
          << lanes.getValue();
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (auto oa = dyn_cast<OnlineAttentionOp>(op); oa && oa.isBufferForm())
        ops.push_back(op);
      if (auto c = dyn_cast<GatedDeltaChunkOp>(op); c && c.isBufferForm())
        ops.push_back(op);
      // Other matmuls (not f32, strided rows) become loops later.
      if (gemmKernelHandles(op))
        ops.push_back(op);
    });
    TileFunctions tiles(getOperation(), lanes, amx, amxF32Prefill);
    for (Operation *op : ops) {
      if (!isa<OnlineAttentionOp, GatedDeltaChunkOp>(op)) {
        tiles.lowerMatmul(op);
        continue;
      }
      LogicalResult ok = isa<OnlineAttentionOp>(op)
                             ? tiles.lower(cast<OnlineAttentionOp>(op))
                             : tiles.lower(cast<GatedDeltaChunkOp>(op));
      if (failed(ok))
        return signalPassFailure();
    }
  }
};

} // namespace

func::FuncOp mlir::attn::createKernelFunction(SymbolTable &symbols,
                                              Location loc, StringRef name,
                                              FunctionType type) {
  MLIRContext *ctx = loc.getContext();
  auto module = cast<ModuleOp>(symbols.getOp());
  OpBuilder mb(ctx);
  mb.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(mb, loc, name, type);
  fn.setPrivate();
  fn->setAttr("llvm.linkage",
              LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
  fn->setAttr(kNoInlineAttr, UnitAttr::get(ctx));
  symbols.insert(fn); // renamed if the name is taken
  fn.addEntryBlock();
  return fn;
}
