//===- MergeIdenticalFunctions.cpp - attn-merge-identical-functions -------===//
//
// One body for the LLVM functions that only their names tell apart
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace attn {
#define GEN_PASS_DEF_MERGEIDENTICALFUNCTIONSPASS
#include "compiler/Pipelines/Passes.h.inc"
} // namespace attn
} // namespace mlir

using namespace mlir;
using namespace mlir::attn;

namespace {

/// `fn`'s attributes but its name.
DictionaryAttr attributesButName(LLVM::LLVMFuncOp fn) {
  NamedAttrList attrs(fn->getAttrDictionary());
  attrs.erase(fn.getSymNameAttrName());
  return attrs.getDictionary(fn.getContext());
}

/// A hash of `fn` that functions equal but for their names share: every
/// nested op's name, attributes and result types, in order.
llvm::hash_code shapeHash(LLVM::LLVMFuncOp fn) {
  llvm::hash_code h =
      llvm::hash_value(attributesButName(fn).getAsOpaquePointer());
  fn.getBody().walk([&](Operation *op) {
    h = llvm::hash_combine(h, op->getName().getAsOpaquePointer(),
                           op->getRawDictionaryAttrs().getAsOpaquePointer(),
                           op->getNumOperands(), op->getNumSuccessors());
    for (Type t : op->getResultTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
  });
  return h;
}

bool equal(LLVM::LLVMFuncOp a, LLVM::LLVMFuncOp b) {
  return attributesButName(a) == attributesButName(b) &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

/// Each defined function equal to an earlier one (in module order), mapped
/// to that one's name. The hashes (a walk of every function) are computed
/// on the context's threads.
llvm::MapVector<LLVM::LLVMFuncOp, StringAttr> findCopies(ModuleOp module) {
  SmallVector<LLVM::LLVMFuncOp> defined;
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
    if (!fn.isExternal())
      defined.push_back(fn);
  SmallVector<size_t> hashes(defined.size());
  parallelFor(module.getContext(), 0, defined.size(),
              [&](size_t i) { hashes[i] = size_t(shapeHash(defined[i])); });
  llvm::DenseMap<size_t, SmallVector<LLVM::LLVMFuncOp>> firsts;
  llvm::MapVector<LLVM::LLVMFuncOp, StringAttr> copies;
  for (auto [fnRef, hash] : llvm::zip_equal(defined, hashes)) {
    LLVM::LLVMFuncOp fn = fnRef;
    SmallVector<LLVM::LLVMFuncOp> &same = firsts[hash];
    auto it = llvm::find_if(
        same, [&](LLVM::LLVMFuncOp first) { return equal(first, fn); });
    if (it != same.end())
      copies[fn] = it->getSymNameAttr();
    else
      same.push_back(fn);
  }
  return copies;
}

/// Keeps the name of `copy`, a function that others outside the module may
/// call, as an alias of `target`.
void aliasInstead(LLVM::LLVMFuncOp copy, StringAttr target) {
  OpBuilder b(copy);
  Location loc = copy.getLoc();
  auto alias = LLVM::AliasOp::create(b, loc, copy.getFunctionType(),
                                     copy.getLinkage(), copy.getSymName());
  alias.setVisibility_(copy.getVisibility_());
  b.setInsertionPointToStart(b.createBlock(&alias.getInitializerRegion()));
  auto ptr = LLVM::LLVMPointerType::get(copy.getContext());
  Value at = LLVM::AddressOfOp::create(b, loc, ptr, target.getValue());
  LLVM::ReturnOp::create(b, loc, at);
}

struct MergeIdenticalFunctionsPassImpl
    : attn::impl::MergeIdenticalFunctionsPassBase<
          MergeIdenticalFunctionsPassImpl> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Callees first: two callers become equal once their callees are one.
    while (true) {
      llvm::MapVector<LLVM::LLVMFuncOp, StringAttr> copies = findCopies(module);
      if (copies.empty())
        return;
      DenseMap<Attribute, Attribute> to;
      for (auto [copy, target] : copies)
        to[FlatSymbolRefAttr::get(copy.getSymNameAttr())] =
            FlatSymbolRefAttr::get(target);
      for (auto [copy, target] : copies) {
        if (copy.getLinkage() != LLVM::Linkage::Internal &&
            copy.getLinkage() != LLVM::Linkage::Private)
          aliasInstead(copy, target);
        copy.erase();
      }
      // The references renamed in each top-level op by itself, on the
      // context's threads (a replacer, whose cache is not shared, each).
      SmallVector<Operation *> ops;
      for (Operation &op : module.getBody()->getOperations())
        ops.push_back(&op);
      parallelFor(module.getContext(), 0, ops.size(), [&](size_t i) {
        AttrTypeReplacer replacer;
        replacer.addReplacement(
            [&](FlatSymbolRefAttr ref) -> std::optional<Attribute> {
              auto it = to.find(ref);
              if (it == to.end())
                return std::nullopt;
              return it->second;
            });
        replacer.recursivelyReplaceElementsIn(ops[i]);
      });
    }
  }
};
} // namespace
