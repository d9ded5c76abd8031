//===- CallKernels.cpp - share a kind's attention kernel ------------------===//
//
// This file implements attn-call-kernels: an attn.sdpa or
// attn.gated_delta_rule that a kernel entry of the module computes (same
// attributes and types) becomes a call to that entry, so the kernel is tiled
// and compiled once.
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

/// A public function computing one attn.sdpa or attn.gated_delta_rule of its
/// arguments into its memref arguments `outs` (one per result, in order).
struct Kernel {
  func::FuncOp fn;
  DestinationStyleOpInterface op;
  SmallVector<unsigned> outs;
};

/// The fused op a kernel entry or a block computes.
bool isKernelOp(Operation *op) { return isa<SDPAOp, GatedDeltaRuleOp>(op); }

/// `fn` as a kernel entry, if it is one: every argument is a result buffer
/// or an operand of the op (not a destination), and nothing else happens
/// but the destinations' creation and shape queries.
std::optional<Kernel> asKernel(func::FuncOp fn) {
  if (fn.isPrivate() || fn.isExternal() || fn->hasAttr("attn.reference"))
    return std::nullopt;
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) {
    if (isKernelOp(op))
      ops.push_back(op);
  });
  if (ops.size() != 1 || ops[0]->getParentOp() != fn.getOperation())
    return std::nullopt;
  auto op = cast<DestinationStyleOpInterface>(ops[0]);
  if (auto sdpa = dyn_cast<SDPAOp>(ops[0]); sdpa && sdpa.getQPos())
    return std::nullopt;
  Kernel kernel{fn, op, {}};
  SmallVector<Operation *> stores;
  for (OpResult r : op->getResults()) {
    if (!r.hasOneUse())
      return std::nullopt;
    auto store = dyn_cast<bufferization::MaterializeInDestinationOp>(
        *r.getUsers().begin());
    auto out = store ? dyn_cast<BlockArgument>(store.getDest()) : nullptr;
    if (!out || out.getOwner() != &fn.getBody().front() ||
        !isa<MemRefType>(out.getType()))
      return std::nullopt;
    kernel.outs.push_back(out.getArgNumber());
    stores.push_back(store);
  }
  for (Operation &other : fn.getBody().front())
    if (&other != op.getOperation() && !llvm::is_contained(stores, &other) &&
        !isa<tensor::EmptyOp, tensor::DimOp, arith::ConstantOp,
             func::ReturnOp>(other))
      return std::nullopt;
  for (BlockArgument a : fn.getArguments()) {
    if (llvm::is_contained(kernel.outs, a.getArgNumber()))
      continue;
    if (!llvm::is_contained(op->getOperands(), a) ||
        llvm::is_contained(op.getDpsInits(), a))
      return std::nullopt;
  }
  return kernel;
}

/// Whether the op's results fill the kernel's buffers (dynamic dims from
/// the destinations).
bool fillsBuffers(Kernel kernel, Operation *op) {
  for (auto [r, out] : llvm::zip(op->getResults(), kernel.outs)) {
    auto buffer = cast<MemRefType>(kernel.fn.getArgument(out).getType());
    auto type = cast<RankedTensorType>(r.getType());
    if (type.getShape() != buffer.getShape() ||
        type.getElementType() != buffer.getElementType() ||
        !buffer.getLayout().isIdentity())
      return false;
  }
  return true;
}

/// Whether `kernel` computes `op`: the same attributes and operand types, and
/// the same optional operands but for kv_lengths, which the call can supply.
bool computes(Kernel kernel, SDPAOp op) {
  auto k = dyn_cast<SDPAOp>(kernel.op.getOperation());
  if (!k || op.getScaleAttr() != k.getScaleAttr() ||
      op.getRelativeBiasAttr() != k.getRelativeBiasAttr() ||
      op.getMask() != k.getMask() || op.getWindowAttr() != k.getWindowAttr() ||
      op.getSoftcapAttr() != k.getSoftcapAttr() ||
      op.getAlign() != k.getAlign() || op.getQPos() ||
      bool(op.getBiasTable()) != bool(k.getBiasTable()) ||
      bool(op.getSinks()) != bool(k.getSinks()) ||
      (op.getKvLengths() && !k.getKvLengths()))
    return false;
  // Operand by operand, by name: the two ops need not have the same optional
  // operands (kv_lengths), so their operand lists do not line up.
  if (op.getQuery().getType() != k.getQuery().getType() ||
      op.getKey().getType() != k.getKey().getType() ||
      op.getValue().getType() != k.getValue().getType() ||
      (op.getBiasTable() &&
       op.getBiasTable().getType() != k.getBiasTable().getType()) ||
      (op.getSinks() && op.getSinks().getType() != k.getSinks().getType()) ||
      (op.getKvLengths() &&
       op.getKvLengths().getType() != k.getKvLengths().getType()))
    return false;
  return fillsBuffers(kernel, op);
}

/// The same for the gated delta rule: same scale and operand types, an
/// initial state on both or neither, and lengths only if the kernel takes
/// them (it is given the full length otherwise).
bool computes(Kernel kernel, GatedDeltaRuleOp op) {
  auto k = dyn_cast<GatedDeltaRuleOp>(kernel.op.getOperation());
  if (!k || op.getScaleAttr() != k.getScaleAttr() ||
      bool(op.getInitialState()) != bool(k.getInitialState()) ||
      (op.getLengths() && !k.getLengths()))
    return false;
  SmallVector<std::pair<Value, Value>> pairs = {
      {op.getQuery(), k.getQuery()}, {op.getKey(), k.getKey()},
      {op.getValue(), k.getValue()}, {op.getGate(), k.getGate()},
      {op.getBeta(), k.getBeta()}};
  if (op.getInitialState())
    pairs.push_back({op.getInitialState(), k.getInitialState()});
  if (op.getLengths())
    pairs.push_back({op.getLengths(), k.getLengths()});
  for (auto [a, b] : pairs)
    if (a.getType() != b.getType())
      return false;
  return fillsBuffers(kernel, op);
}

/// `given` lengths, or when the op has none and the kernel takes
/// `kernelLengths`, every batch row's full length (dim 2 of `seqOf`, batch
/// from dim 0 of `batchOf`): the op's own semantics.
Value lengthsFor(Operation *op, Value given, Value kernelLengths, Value seqOf,
                 Value batchOf) {
  if (given || !kernelLengths)
    return given;
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(kernelLengths.getType());
  Value len = tensor::DimOp::create(b, loc, seqOf, 2);
  Value fill = arith::IndexCastOp::create(b, loc, type.getElementType(), len);
  SmallVector<Value> batch;
  if (type.isDynamicDim(0))
    batch.push_back(tensor::DimOp::create(b, loc, batchOf, 0));
  return tensor::SplatOp::create(b, loc, fill, type, batch);
}

/// Replaces `op` by a call of `kernel` on fresh buffers, one per result;
/// `argFor` gives the call's value for a kernel argument that is an operand
/// of the kernel's op.
void callKernel(Kernel kernel, DestinationStyleOpInterface op,
                function_ref<Value(BlockArgument)> argFor) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> buffers;
  for (auto [i, out] : llvm::enumerate(kernel.outs)) {
    auto type = cast<MemRefType>(kernel.fn.getArgument(out).getType());
    SmallVector<Value> dynSizes;
    Value init = op.getDpsInits()[i];
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (ShapedType::isDynamic(size))
        dynSizes.push_back(tensor::DimOp::create(b, loc, init, d));
    buffers.push_back(memref::AllocOp::create(b, loc, type, dynSizes,
                                              b.getI64IntegerAttr(64)));
  }
  SmallVector<Value> args;
  for (BlockArgument a : kernel.fn.getArguments()) {
    auto *out = llvm::find(kernel.outs, a.getArgNumber());
    args.push_back(out != kernel.outs.end()
                       ? buffers[out - kernel.outs.begin()]
                       : argFor(a));
  }
  func::CallOp::create(b, loc, kernel.fn, args);
  for (auto [r, buffer] : llvm::zip(op->getResults(), buffers)) {
    Value result = bufferization::ToTensorOp::create(
        b, loc, r.getType(), buffer, /*restrict=*/true, /*writable=*/true);
    r.replaceAllUsesWith(result);
  }
  op.erase();
}

void callKernel(Kernel kernel, SDPAOp op) {
  auto k = cast<SDPAOp>(kernel.op.getOperation());
  Value lengths = lengthsFor(op, op.getKvLengths(), k.getKvLengths(),
                             op.getKey(), op.getQuery());
  callKernel(kernel, op, [&](BlockArgument a) -> Value {
    if (a == k.getQuery())
      return op.getQuery();
    if (a == k.getKey())
      return op.getKey();
    if (a == k.getValue())
      return op.getValue();
    if (a == k.getKvLengths())
      return lengths;
    if (a == k.getSinks())
      return op.getSinks();
    return op.getBiasTable();
  });
}

void callKernel(Kernel kernel, GatedDeltaRuleOp op) {
  auto k = cast<GatedDeltaRuleOp>(kernel.op.getOperation());
  Value lengths = lengthsFor(op, op.getLengths(), k.getLengths(),
                             op.getValue(), op.getValue());
  callKernel(kernel, op, [&](BlockArgument a) -> Value {
    if (a == k.getQuery())
      return op.getQuery();
    if (a == k.getKey())
      return op.getKey();
    if (a == k.getValue())
      return op.getValue();
    if (a == k.getGate())
      return op.getGate();
    if (a == k.getBeta())
      return op.getBeta();
    if (a == k.getLengths())
      return lengths;
    return op.getInitialState();
  });
}

template <typename OpT>
void callKernels(ArrayRef<Kernel> kernels, ArrayRef<OpT> ops) {
  for (OpT op : ops)
    for (const Kernel &k : kernels)
      if (computes(k, op)) {
        callKernel(k, op);
        break;
      }
}

struct CallKernelsPass : attn::impl::CallKernelsPassBase<CallKernelsPass> {
  void runOnOperation() override {
    SmallVector<Kernel> kernels;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (std::optional<Kernel> k = asKernel(fn))
        kernels.push_back(*k);
    if (kernels.empty())
      return;
    SmallVector<SDPAOp> sdpas;
    SmallVector<GatedDeltaRuleOp> rules;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>()) {
      if (fn->hasAttr("attn.reference") ||
          llvm::any_of(kernels, [&](Kernel k) { return k.fn == fn; }))
        continue;
      fn.walk([&](SDPAOp op) { sdpas.push_back(op); });
      fn.walk([&](GatedDeltaRuleOp op) { rules.push_back(op); });
    }
    callKernels<SDPAOp>(kernels, sdpas);
    callKernels<GatedDeltaRuleOp>(kernels, rules);
  }
};

} // namespace
