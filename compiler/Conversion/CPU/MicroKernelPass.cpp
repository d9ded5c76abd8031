//===- MicroKernelPass.cpp - attn-cpu-micro-kernel ------------------------===//
//
// This file implements the attn-cpu-micro-kernel pass: each buffer-form
// attn.online_attention becomes scratch allocations before its parallel
// iteration and a call of a private no-inline tile function whose body is
// the micro-kernel (MicroKernel.cpp), one function per distinct tile.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/Passes.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

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
  TileFunctions(ModuleOp module, int64_t lanes)
      : module(module), symbols(module), lanes(lanes) {}

  /// Replaces `oa` (buffer form) by scratch allocations before its parallel
  /// iteration and a call of its tile function; failure with an error when
  /// the micro-kernel cannot handle it.
  LogicalResult lower(OnlineAttentionOp oa);

private:
  func::FuncOp functionFor(OnlineAttentionOp oa, TypeRange scratch);

  ModuleOp module;
  SymbolTable symbols;
  int64_t lanes;
  llvm::StringMap<func::FuncOp> byKey;
};

/// `private @<caller>_tile(q, k, v, acc, max, sum, q_pos, kv_pos, Kt, P, A)`
/// holding the micro-kernel of ops like `oa`: its own function so that LLVM
/// compiles each tile once (not once per loop that runs it) and keeps
/// functions small (compile time grows faster than their size); marked
/// no-inline, internal.
func::FuncOp TileFunctions::functionFor(OnlineAttentionOp oa,
                                        TypeRange scratch) {
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    os << oa->getAttrDictionary();
    for (Type t : oa->getOperandTypes())
      os << ";" << t;
  }
  if (func::FuncOp fn = byKey.lookup(key))
    return fn;
  MLIRContext *ctx = oa.getContext();
  SmallVector<Type> args(oa->getOperandTypes());
  args.append(scratch.begin(), scratch.end());
  auto caller = oa->getParentOfType<func::FuncOp>();
  OpBuilder mb(ctx);
  mb.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(mb, oa.getLoc(),
                                 (caller.getSymName() + "_tile").str(),
                                 FunctionType::get(ctx, args, {}));
  fn.setPrivate();
  fn->setAttr("llvm.linkage",
              LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
  fn->setAttr(kNoInlineAttr, UnitAttr::get(ctx));
  symbols.insert(fn); // renamed if the name is taken
  Block *body = fn.addEntryBlock();
  IRRewriter b(ctx);
  b.setInsertionPointToStart(body);
  IRMapping map;
  map.map(oa->getOperands(),
          body->getArguments().take_front(oa->getNumOperands()));
  auto tile = cast<OnlineAttentionOp>(b.clone(*oa, map));
  b.setInsertionPoint(tile);
  emitMicroKernel(b, tile, body->getArguments().take_back(3), lanes);
  b.eraseOp(tile);
  func::ReturnOp::create(b, oa.getLoc());
  byKey[key] = fn;
  return fn;
}

LogicalResult TileFunctions::lower(OnlineAttentionOp oa) {
  if (!microKernelHandles(oa))
    return oa.emitOpError(
        "on buffers is lowered by the CPU micro-kernel only, which needs f32 "
        "operands, static head dims and no relative bias table; lower this "
        "op with convert-attn-to-linalg before bufferization");
  for (Value buf : {oa.getQuery(), oa.getKey(), oa.getValue(), oa.getAcc(),
                    oa.getMax(), oa.getSum()}) {
    int64_t offset;
    SmallVector<int64_t> strides;
    if (failed(cast<MemRefType>(buf.getType())
                   .getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return oa.emitOpError("the CPU micro-kernel needs operands whose "
                            "innermost dim is contiguous");
  }
  // Scratch once per parallel iteration (query block), before the key
  // loop: a stack buffer inside the loop would grow the stack on every
  // tile, and a function-level one would be shared by the threads.
  OpBuilder b(oa);
  Operation *anchor = oa;
  while (anchor->getParentOp() &&
         !isa<scf::ForallOp, scf::ParallelOp, FunctionOpInterface>(
             anchor->getParentOp()))
    anchor = anchor->getParentOp();
  b.setInsertionPoint(anchor);
  int64_t d = cast<ShapedType>(oa.getQuery().getType()).getShape().back();
  SmallVector<Value> scratch =
      allocateMicroKernelScratch(b, oa.getLoc(), d, lanes);
  func::FuncOp fn = functionFor(oa, ValueRange(scratch).getTypes());
  b.setInsertionPoint(oa);
  SmallVector<Value> args(oa->getOperands());
  args.append(scratch);
  func::CallOp::create(b, oa.getLoc(), fn, args);
  oa.erase();
  return success();
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
    SmallVector<OnlineAttentionOp> ops;
    getOperation().walk([&](OnlineAttentionOp op) {
      if (op.isBufferForm())
        ops.push_back(op);
    });
    TileFunctions tiles(getOperation(), lanes);
    for (OnlineAttentionOp op : ops)
      if (failed(tiles.lower(op)))
        return signalPassFailure();
  }
};

} // namespace
