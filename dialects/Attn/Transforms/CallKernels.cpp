//===- CallKernels.cpp - share a kind's attention kernel ------------------===//
//
// This file implements attn-call-kernels: an attn.sdpa that a kernel entry
// of the module computes (same attributes and types) becomes a call to that
// entry, so the kernel is tiled and compiled once.
//
//===----------------------------------------------------------------------===//

#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_CALLKERNELSPASS
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A public function computing one attn.sdpa of its arguments into its
/// memref argument `out`.
struct Kernel {
  func::FuncOp fn;
  SDPAOp op;
  unsigned out;
};

/// `fn` as a kernel entry, if it is one: every argument is the result
/// buffer or an operand of the op (not its destination), and nothing else
/// happens but the destination's creation and shape queries.
std::optional<Kernel> asKernel(func::FuncOp fn) {
  if (fn.isPrivate() || fn.isExternal() || fn->hasAttr("attn.reference"))
    return std::nullopt;
  SmallVector<SDPAOp> ops;
  fn.walk([&](SDPAOp op) { ops.push_back(op); });
  if (ops.size() != 1 || ops[0].getQPos() ||
      ops[0]->getParentOp() != fn.getOperation())
    return std::nullopt;
  SDPAOp op = ops[0];
  if (!op->hasOneUse())
    return std::nullopt;
  auto store = dyn_cast<bufferization::MaterializeInDestinationOp>(
      *op->getUsers().begin());
  auto out = store ? dyn_cast<BlockArgument>(store.getDest()) : nullptr;
  if (!out || out.getOwner() != &fn.getBody().front() ||
      !isa<MemRefType>(out.getType()))
    return std::nullopt;
  for (Operation &other : fn.getBody().front())
    if (&other != op && &other != store &&
        !isa<tensor::EmptyOp, tensor::DimOp, arith::ConstantOp,
             func::ReturnOp>(other))
      return std::nullopt;
  for (BlockArgument a : fn.getArguments()) {
    if (a == out)
      continue;
    if (!llvm::is_contained(op->getOperands(), a) || a == op.getInit())
      return std::nullopt;
  }
  return Kernel{fn, op, out.getArgNumber()};
}

/// Whether `kernel` computes `op`: the same attributes and operand types, and
/// the same optional operands but for kv_lengths, which the call can supply.
bool computes(Kernel kernel, SDPAOp op) {
  SDPAOp k = kernel.op;
  if (op.getScaleAttr() != k.getScaleAttr() ||
      op.getRelativeBiasAttr() != k.getRelativeBiasAttr() ||
      op.getMask() != k.getMask() || op.getWindowAttr() != k.getWindowAttr() ||
      op.getSoftcapAttr() != k.getSoftcapAttr() ||
      op.getAlign() != k.getAlign() || op.getQPos() ||
      bool(op.getBiasTable()) != bool(k.getBiasTable()) ||
      (op.getKvLengths() && !k.getKvLengths()))
    return false;
  // Operand by operand, by name: the two ops need not have the same optional
  // operands (kv_lengths), so their operand lists do not line up.
  if (op.getQuery().getType() != k.getQuery().getType() ||
      op.getKey().getType() != k.getKey().getType() ||
      op.getValue().getType() != k.getValue().getType() ||
      (op.getBiasTable() &&
       op.getBiasTable().getType() != k.getBiasTable().getType()) ||
      (op.getKvLengths() &&
       op.getKvLengths().getType() != k.getKvLengths().getType()))
    return false;
  // The op's result fills the kernel's buffer type (dynamic dims from the
  // destination).
  auto buffer = cast<MemRefType>(kernel.fn.getArgument(kernel.out).getType());
  return op.getType().getShape() == buffer.getShape() &&
         op.getType().getElementType() == buffer.getElementType() &&
         buffer.getLayout().isIdentity();
}

/// Replaces `op` by a call of `kernel` on a fresh buffer.
void callKernel(Kernel kernel, SDPAOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto bufferType =
      cast<MemRefType>(kernel.fn.getArgument(kernel.out).getType());
  SmallVector<Value> dynSizes;
  for (auto [i, size] : llvm::enumerate(bufferType.getShape()))
    if (ShapedType::isDynamic(size))
      dynSizes.push_back(tensor::DimOp::create(b, loc, op.getInit(), i));
  Value buffer = memref::AllocOp::create(b, loc, bufferType, dynSizes,
                                         b.getI64IntegerAttr(64));
  Value lengths = op.getKvLengths();
  if (!lengths && kernel.op.getKvLengths()) {
    // Every batch row sees all the keys: the op's own semantics.
    auto type = cast<RankedTensorType>(kernel.op.getKvLengths().getType());
    Value keys = tensor::DimOp::create(b, loc, op.getKey(), 2);
    Value fill = arith::IndexCastOp::create(b, loc, type.getElementType(), keys);
    SmallVector<Value> batch;
    if (type.isDynamicDim(0))
      batch.push_back(tensor::DimOp::create(b, loc, op.getQuery(), 0));
    lengths = tensor::SplatOp::create(b, loc, fill, type, batch);
  }
  SmallVector<Value> args;
  for (BlockArgument a : kernel.fn.getArguments()) {
    if (a.getArgNumber() == kernel.out)
      args.push_back(buffer);
    else if (a == kernel.op.getQuery())
      args.push_back(op.getQuery());
    else if (a == kernel.op.getKey())
      args.push_back(op.getKey());
    else if (a == kernel.op.getValue())
      args.push_back(op.getValue());
    else if (a == kernel.op.getKvLengths())
      args.push_back(lengths);
    else
      args.push_back(op.getBiasTable());
  }
  func::CallOp::create(b, loc, kernel.fn, args);
  Value result = bufferization::ToTensorOp::create(
      b, loc, op.getType(), buffer, /*restrict=*/true, /*writable=*/true);
  op.replaceAllUsesWith(result);
  op.erase();
}

struct CallKernelsPass : attn::impl::CallKernelsPassBase<CallKernelsPass> {
  void runOnOperation() override {
    SmallVector<Kernel> kernels;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (std::optional<Kernel> k = asKernel(fn))
        kernels.push_back(*k);
    if (kernels.empty())
      return;
    SmallVector<SDPAOp> ops;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>()) {
      if (fn->hasAttr("attn.reference") ||
          llvm::any_of(kernels, [&](Kernel k) { return k.fn == fn; }))
        continue;
      fn.walk([&](SDPAOp op) { ops.push_back(op); });
    }
    for (SDPAOp op : ops)
      for (Kernel k : kernels)
        if (computes(k, op)) {
          callKernel(k, op);
          break;
        }
  }
};

} // namespace
