//===- CallKernels.cpp - share a kind's attention kernel ------------------===//
//
// This file implements attn-call-kernels: an attn.sdpa or
// attn.gated_delta_rule that a kernel entry of the module computes (same
// attributes and types) becomes a call to that entry, so the kernel is tiled
// and compiled once. A kernel may read an operand through views of an
// argument (the latent kernels' keys and values are a reshape and a slice of
// one latent cache): the op's operand must then be the same views of a value,
// which becomes the call's argument.
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

/// The views a kernel entry may take of its arguments before its op reads
/// them.
bool isView(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::ExtractSliceOp>(op);
}

/// The argument of `fn` that `v` is a chain of views of, or null.
BlockArgument viewRoot(func::FuncOp fn, Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isView(def))
      return nullptr;
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  return arg.getOwner() == &fn.getBody().front() ? arg : nullptr;
}

/// `fn` as a kernel entry, if it is one: every argument is a result buffer
/// or what an operand of the op (not a destination) is, or is a chain of
/// views of, and nothing else happens but the views, the destinations'
/// creation and shape queries.
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
        !isView(&other) &&
        !isa<tensor::EmptyOp, tensor::DimOp, arith::ConstantOp, func::ReturnOp>(
            other))
      return std::nullopt;
  SmallVector<BlockArgument> read;
  for (OpOperand *input : op.getDpsInputOperands()) {
    BlockArgument root = viewRoot(fn, input->get());
    if (!root)
      return std::nullopt;
    read.push_back(root);
  }
  for (BlockArgument a : fn.getArguments()) {
    if (llvm::is_contained(kernel.outs, a.getArgNumber()))
      continue;
    if (!llvm::is_contained(read, a) || llvm::is_contained(op.getDpsInits(), a))
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

/// The kernel's arguments, each bound to the value a call passes for it.
using Binding = DenseMap<Value, Value>;

/// How many of `group`'s sizes in `shape` are dynamic.
int64_t dynamicSizes(ArrayRef<int64_t> shape, ArrayRef<int64_t> group) {
  return llvm::count_if(
      group, [&](int64_t i) { return ShapedType::isDynamic(shape[i]); });
}

/// Whether `size`, the size of dimension `d` of `slice`, is the whole extent
/// of the slice's source there: a tensor.dim of the source, or of the
/// source's expand_shape source where `d` is its group's one dynamic size.
bool isWholeExtent(tensor::ExtractSliceOp slice, Value size, int64_t d) {
  auto dim = size.getDefiningOp<tensor::DimOp>();
  std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
  if (!index)
    return false;
  if (dim.getSource() == slice.getSource())
    return *index == d;
  auto expand = slice.getSource().getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || dim.getSource() != expand.getSrc())
    return false;
  ArrayRef<int64_t> shape = expand.getResultType().getShape();
  for (auto [g, group] : llvm::enumerate(expand.getReassociationIndices()))
    if (llvm::is_contained(group, d))
      return int64_t(g) == *index && dynamicSizes(shape, group) == 1;
  return false;
}

/// Binds the kernel's arguments so that the kernel's value `kv` (an
/// argument, or views of one) is `ov`: `ov` must be the same views (same
/// static shapes, offsets and strides; dynamic slice sizes whole extents on
/// both sides) of the value bound to the argument.
bool bindViews(Value kv, Value ov, Binding &binding) {
  if (kv.getType() != ov.getType())
    return false;
  if (isa<BlockArgument>(kv)) {
    auto [it, inserted] = binding.try_emplace(kv, ov);
    return inserted || it->second == ov;
  }
  Operation *k = kv.getDefiningOp(), *o = ov.getDefiningOp();
  if (auto ke = dyn_cast<tensor::ExpandShapeOp>(k)) {
    // Each group of the kernel's result has at most one dynamic size (the
    // source's), so the source's shape fixes the output shape.
    auto oe = dyn_cast_if_present<tensor::ExpandShapeOp>(o);
    ArrayRef<int64_t> shape = ke.getResultType().getShape();
    if (!oe || ke.getReassociationIndices() != oe.getReassociationIndices() ||
        llvm::any_of(ke.getReassociationIndices(), [&](const auto &group) {
          return dynamicSizes(shape, group) > 1;
        }))
      return false;
    return bindViews(ke.getSrc(), oe.getSrc(), binding);
  }
  auto ks = cast<tensor::ExtractSliceOp>(k);
  auto os = dyn_cast_if_present<tensor::ExtractSliceOp>(o);
  if (!os || ks.getSourceType().getRank() != ks.getType().getRank() ||
      !ks.getOffsets().empty() || !ks.getStrides().empty() ||
      !os.getOffsets().empty() || !os.getStrides().empty() ||
      ks.getStaticOffsets() != os.getStaticOffsets() ||
      ks.getStaticSizes() != os.getStaticSizes() ||
      ks.getStaticStrides() != os.getStaticStrides())
    return false;
  for (auto [d, size] : llvm::enumerate(ks.getStaticSizes()))
    if (ShapedType::isDynamic(size)) {
      Value kSize = cast<Value>(ks.getMixedSizes()[d]);
      Value oSize = cast<Value>(os.getMixedSizes()[d]);
      if (!isWholeExtent(ks, kSize, d) || !isWholeExtent(os, oSize, d))
        return false;
    }
  return bindViews(ks.getSource(), os.getSource(), binding);
}

/// The binding of every pair (kernel value, op value) of `pairs`, if each
/// binds and `op`'s results fill the kernel's buffers.
std::optional<Binding> bindAll(Kernel kernel, Operation *op,
                               ArrayRef<std::pair<Value, Value>> pairs) {
  Binding binding;
  for (auto [kv, ov] : pairs)
    if (!bindViews(kv, ov, binding))
      return std::nullopt;
  if (!fillsBuffers(kernel, op))
    return std::nullopt;
  return binding;
}

/// The binding with which `kernel` computes `op`: the same attributes, the
/// same optional operands but for kv_lengths, which the call can supply, and
/// operands that bind the kernel's arguments.
std::optional<Binding> match(Kernel kernel, SDPAOp op) {
  auto k = dyn_cast<SDPAOp>(kernel.op.getOperation());
  if (!k || op.getScaleAttr() != k.getScaleAttr() ||
      op.getRelativeBiasAttr() != k.getRelativeBiasAttr() ||
      op.getMask() != k.getMask() || op.getWindowAttr() != k.getWindowAttr() ||
      op.getSoftcapAttr() != k.getSoftcapAttr() ||
      op.getAlign() != k.getAlign() || op.getQPos() ||
      bool(op.getBiasTable()) != bool(k.getBiasTable()) ||
      bool(op.getSinks()) != bool(k.getSinks()) ||
      (op.getKvLengths() && !k.getKvLengths()) ||
      (!op.getKvLengths() && k.getKvLengths() &&
       !isa<BlockArgument>(k.getKvLengths())))
    return std::nullopt;
  // Operand by operand, by name: the two ops need not have the same optional
  // operands (kv_lengths), so their operand lists do not line up.
  SmallVector<std::pair<Value, Value>> pairs = {{k.getQuery(), op.getQuery()},
                                                {k.getKey(), op.getKey()},
                                                {k.getValue(), op.getValue()}};
  if (op.getBiasTable())
    pairs.push_back({k.getBiasTable(), op.getBiasTable()});
  if (op.getSinks())
    pairs.push_back({k.getSinks(), op.getSinks()});
  if (op.getKvLengths())
    pairs.push_back({k.getKvLengths(), op.getKvLengths()});
  return bindAll(kernel, op, pairs);
}

/// The same for the gated delta rule: same scale and operand types, an
/// initial state on both or neither, and lengths only if the kernel takes
/// them (it is given the full length otherwise).
std::optional<Binding> match(Kernel kernel, GatedDeltaRuleOp op) {
  auto k = dyn_cast<GatedDeltaRuleOp>(kernel.op.getOperation());
  if (!k || op.getScaleAttr() != k.getScaleAttr() ||
      bool(op.getInitialState()) != bool(k.getInitialState()) ||
      (op.getLengths() && !k.getLengths()) ||
      (!op.getLengths() && k.getLengths() &&
       !isa<BlockArgument>(k.getLengths())))
    return std::nullopt;
  SmallVector<std::pair<Value, Value>> pairs = {{k.getQuery(), op.getQuery()},
                                                {k.getKey(), op.getKey()},
                                                {k.getValue(), op.getValue()},
                                                {k.getGate(), op.getGate()},
                                                {k.getBeta(), op.getBeta()}};
  if (op.getInitialState())
    pairs.push_back({k.getInitialState(), op.getInitialState()});
  if (op.getLengths())
    pairs.push_back({k.getLengths(), op.getLengths()});
  return bindAll(kernel, op, pairs);
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

/// Replaces `op` by a call of `kernel` on fresh buffers, one per result,
/// passing each other argument its value in `binding`.
void callKernel(Kernel kernel, DestinationStyleOpInterface op,
                const Binding &binding) {
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
    args.push_back(out != kernel.outs.end() ? buffers[out - kernel.outs.begin()]
                                            : binding.lookup(a));
  }
  func::CallOp::create(b, loc, kernel.fn, args);
  for (auto [r, buffer] : llvm::zip(op->getResults(), buffers)) {
    Value result = bufferization::ToTensorOp::create(
        b, loc, r.getType(), buffer, /*restrict=*/true, /*writable=*/true);
    r.replaceAllUsesWith(result);
  }
  op.erase();
}

/// The kernel's lengths argument, when the op has none: every batch row's
/// full length.
void bindLengths(SDPAOp op, Kernel kernel, Binding &binding) {
  auto k = cast<SDPAOp>(kernel.op.getOperation());
  if (Value lengths = lengthsFor(op, op.getKvLengths(), k.getKvLengths(),
                                 op.getKey(), op.getQuery());
      lengths && !op.getKvLengths())
    binding[k.getKvLengths()] = lengths;
}

void bindLengths(GatedDeltaRuleOp op, Kernel kernel, Binding &binding) {
  auto k = cast<GatedDeltaRuleOp>(kernel.op.getOperation());
  if (Value lengths = lengthsFor(op, op.getLengths(), k.getLengths(),
                                 op.getValue(), op.getValue());
      lengths && !op.getLengths())
    binding[k.getLengths()] = lengths;
}

template <typename OpT>
void callKernels(ArrayRef<Kernel> kernels, ArrayRef<OpT> ops) {
  for (OpT op : ops)
    for (const Kernel &k : kernels)
      if (std::optional<Binding> binding = match(k, op)) {
        bindLengths(op, k, *binding);
        callKernel(k, op, *binding);
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
