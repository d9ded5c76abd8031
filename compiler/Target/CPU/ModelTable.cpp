//===- ModelTable.cpp - the model table as LLVM globals --------------------===//
//
// This file builds the runtime's model table (runtime/abi/attn_runtime.h:
// attn_rt_model, attn_rt_kind, attn_rt_weight) as constant LLVM globals in
// the kernels' module, with `attn_rt_get_model` returning it and one thunk per
// block entry. Nothing is generated as source text: strings from the user
// (the config's path, its layer and tensor names) are data, never code.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CPU/ModelTable.h"
#include "compiler/Conversion/GPU/GatedDeltaChunkShape.h"
#include "compiler/Frontend/Frontend.h"

#include "attn_runtime.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <cstddef>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Emits the table's globals into one module.
class TableBuilder {
public:
  TableBuilder(llvm::Module &m)
      : m(m), ctx(m.getContext()), ptr(llvm::PointerType::get(ctx, 0)),
        i32(llvm::Type::getInt32Ty(ctx)), i64(llvm::Type::getInt64Ty(ctx)),
        f64(llvm::Type::getDoubleTy(ctx)) {
    weightTy = llvm::StructType::create(
        ctx, {ptr, ptr, i64, llvm::ArrayType::get(i64, 4), i64},
        "attn_rt_weight");
    kindTy = llvm::StructType::create(
        ctx, {ptr, i64, i64, i64, i64, i32, i64, i64, ptr, i64, ptr,
              ptr, ptr, ptr, i64, f64, f64, f64, i32, ptr, i64, ptr,
              i32, ptr, i64, i32, ptr, i64, ptr, ptr, i64, i64, ptr,
              ptr, ptr, ptr, ptr, ptr, i32, i64, i32, i32, i32},
        "attn_rt_kind");
    modelTy = llvm::StructType::create(
        ctx, {i32, ptr, i64, ptr, ptr, i64, i64, ptr, i32, ptr},
        "attn_rt_model");
  }

  /// The struct types must have the C layout of attn_rt_*: checked against
  /// the compiler's own view of the header, field by field.
  bool checkLayout(std::string &error) const;

  llvm::Constant *string(llvm::StringRef s) {
    llvm::Constant *data = llvm::ConstantDataArray::getString(ctx, s);
    return global(data, "attn_rt.str");
  }
  llvm::Constant *global(llvm::Constant *init, const llvm::Twine &name) {
    auto *g = new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::PrivateLinkage, init,
                                       name);
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return g;
  }
  llvm::Constant *int64s(llvm::ArrayRef<int64_t> values,
                         const llvm::Twine &name) {
    llvm::SmallVector<uint64_t> v(values.begin(), values.end());
    return global(llvm::ConstantDataArray::get(ctx, v), name);
  }
  llvm::Constant *c64(int64_t v) { return llvm::ConstantInt::get(i64, v); }
  llvm::Constant *c32(int32_t v) { return llvm::ConstantInt::get(i32, v); }
  llvm::Constant *f(double v) { return llvm::ConstantFP::get(f64, v); }
  llvm::Constant *null() { return llvm::ConstantPointerNull::get(ptr); }

  /// `void block_<kind>(a_0, ..., a_{lead-1}, void *const *w)` calling
  /// `_mlir_ciface_<kind>_block(a_i for i in `pass`, w[0], ..., w[n-1])`:
  /// lead 5 (y, x, memory, positions, key_lengths) for softmax kinds, of
  /// which the kind's entry takes y, x and its block_inputs; 6 (y,
  /// conv_state', state', x, conv_state, state) for Gated DeltaNet.
  llvm::Function *blockThunk(llvm::Function *entry, const std::string &kind,
                             unsigned lead, llvm::ArrayRef<unsigned> pass,
                             size_t numWeights);

  llvm::Module &m;
  llvm::LLVMContext &ctx;
  llvm::PointerType *ptr;
  llvm::IntegerType *i32, *i64;
  llvm::Type *f64;
  llvm::StructType *weightTy, *kindTy, *modelTy;
};

static_assert(kWeightAsStored == ATTN_RT_WEIGHT_AS_STORED &&
                  kWeightGateOfGateUp == ATTN_RT_WEIGHT_GATE_OF_GATE_UP &&
                  kWeightUpOfGateUp == ATTN_RT_WEIGHT_UP_OF_GATE_UP &&
                  kWeightExpertsInOut == ATTN_RT_WEIGHT_EXPERTS_IN_OUT &&
                  kWeightGateOfBias == ATTN_RT_WEIGHT_GATE_OF_BIAS &&
                  kWeightUpOfBias == ATTN_RT_WEIGHT_UP_OF_BIAS &&
                  kWeightGateOfGateUpHalves ==
                      ATTN_RT_WEIGHT_GATE_OF_GATE_UP_HALVES &&
                  kWeightUpOfGateUpHalves == ATTN_RT_WEIGHT_UP_OF_GATE_UP_HALVES,
              "WeightSource must match runtime/abi/attn_runtime.h");

bool TableBuilder::checkLayout(std::string &error) const {
  const llvm::DataLayout &dl = m.getDataLayout();
  struct Expect {
    llvm::StructType *type;
    size_t size;
    std::vector<size_t> offsets;
  };
  const Expect expects[] = {
      {weightTy,
       sizeof(attn_rt_weight),
       {offsetof(attn_rt_weight, role), offsetof(attn_rt_weight, pattern),
        offsetof(attn_rt_weight, rank), offsetof(attn_rt_weight, shape),
        offsetof(attn_rt_weight, source)}},
      {kindTy,
       sizeof(attn_rt_kind),
       {offsetof(attn_rt_kind, name),
        offsetof(attn_rt_kind, num_heads),
        offsetof(attn_rt_kind, num_kv_heads),
        offsetof(attn_rt_kind, head_dim),
        offsetof(attn_rt_kind, head_dim_v),
        offsetof(attn_rt_kind, causal),
        offsetof(attn_rt_kind, window),
        offsetof(attn_rt_kind, bias_buckets),
        offsetof(attn_rt_kind, layers),
        offsetof(attn_rt_kind, num_layers),
        offsetof(attn_rt_kind, fused),
        offsetof(attn_rt_kind, reference),
        offsetof(attn_rt_kind, block),
        offsetof(attn_rt_kind, weights),
        offsetof(attn_rt_kind, num_weights),
        offsetof(attn_rt_kind, scale),
        offsetof(attn_rt_kind, softcap),
        offsetof(attn_rt_kind, tolerance),
        offsetof(attn_rt_kind, op),
        offsetof(attn_rt_kind, linear_block),
        offsetof(attn_rt_kind, conv_kernel),
        offsetof(attn_rt_kind, paged),
        offsetof(attn_rt_kind, kv_dtype),
        offsetof(attn_rt_kind, paged_part),
        offsetof(attn_rt_kind, tensor_parallel),
        offsetof(attn_rt_kind, block_inputs),
        offsetof(attn_rt_kind, layer),
        offsetof(attn_rt_kind, num_layer_weights),
        offsetof(attn_rt_kind, layer_note),
        offsetof(attn_rt_kind, linear_layer),
        offsetof(attn_rt_kind, kv_lora_rank),
        offsetof(attn_rt_kind, rope_head_dim),
        offsetof(attn_rt_kind, mla),
        offsetof(attn_rt_kind, mla_reference),
        offsetof(attn_rt_kind, mla_paged),
        offsetof(attn_rt_kind, latent_block),
        offsetof(attn_rt_kind, latent_layer),
        offsetof(attn_rt_kind, mla_paged_part),
        offsetof(attn_rt_kind, has_sinks),
        offsetof(attn_rt_kind, chunk),
        offsetof(attn_rt_kind, no_delta),
        offsetof(attn_rt_kind, channel_gate),
        offsetof(attn_rt_kind, qo_dtype)}},
      {modelTy,
       sizeof(attn_rt_model),
       {offsetof(attn_rt_model, abi_version), offsetof(attn_rt_model, family),
        offsetof(attn_rt_model, hidden_size),
        offsetof(attn_rt_model, describe_json), offsetof(attn_rt_model, kinds),
        offsetof(attn_rt_model, num_kinds), offsetof(attn_rt_model, num_layers),
        offsetof(attn_rt_model, layer_kind), offsetof(attn_rt_model, device),
        offsetof(attn_rt_model, layer_in_stack)}},
  };
  for (const Expect &e : expects) {
    const llvm::StructLayout *layout = dl.getStructLayout(e.type);
    bool same = layout->getSizeInBytes() == e.size &&
                e.type->getNumElements() == e.offsets.size();
    for (size_t i = 0; same && i < e.offsets.size(); ++i)
      same = layout->getElementOffset(i) == e.offsets[i];
    if (!same) {
      error = "internal error: the model table's " +
              e.type->getName().str() +
              " does not match runtime/abi/attn_runtime.h";
      return false;
    }
  }
  return true;
}

llvm::Function *TableBuilder::blockThunk(llvm::Function *entry,
                                         const std::string &kind,
                                         unsigned lead,
                                         llvm::ArrayRef<unsigned> pass,
                                         size_t numWeights) {
  llvm::SmallVector<llvm::Type *> params(lead + 1, ptr);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  llvm::Function *fn = llvm::Function::Create(
      type, llvm::GlobalValue::InternalLinkage, "attn_rt.block." + kind, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::SmallVector<llvm::Value *> args;
  for (unsigned i : pass)
    args.push_back(fn->getArg(i));
  for (size_t i = 0; i < numWeights; ++i)
    args.push_back(b.CreateLoad(
        ptr, b.CreateConstInBoundsGEP1_64(ptr, fn->getArg(lead), i)));
  b.CreateCall(entry, args);
  b.CreateRetVoid();
  return fn;
}

} // namespace

std::vector<KernelEntry> mlir::attn::kernelEntries(const ModelSpec &spec,
                                                   const std::string &n,
                                                   const LayerSpec &l,
                                                   bool linear, bool cuda) {
  bool sinks = !l.sinks.empty();
  const char *fusedType = linear && l.channelGate ? "attn_rt_kda_t"
                          : linear                ? "attn_rt_gdn_t"
                          : sinks                 ? "attn_rt_sdpa_sinks_t"
                          : l.position == PositionKind::T5Bias
                              ? "attn_rt_sdpa_bias_t"
                              : "attn_rt_sdpa_t";
  std::string entry = "_mlir_ciface_" + n + (linear ? "_gdn" : "_sdpa");
  std::vector<KernelEntry> e = {{KernelEntry::Fused, entry, fusedType}};
  // The CUDA target compiles the fused kernels and, where listed, the paged
  // ones (attn-compile clears reference and blocks), the absorbed latent
  // form's included.
  const EntrySet &want = spec.entries;
  if (want.reference)
    e.push_back({KernelEntry::Reference, entry + "_reference", fusedType});
  std::string base = "_mlir_ciface_" + n;
  if (want.paged && hasPagedKernel(l)) {
    e.push_back({KernelEntry::Paged, base + "_paged",
                 sinks ? "attn_rt_paged_sinks_t" : "attn_rt_paged_t"});
    if (spec.distributed)
      e.push_back({KernelEntry::PagedPart, base + "_paged_part",
                   sinks ? "attn_rt_paged_part_sinks_t"
                         : "attn_rt_paged_part_t"});
  }
  if (l.isLatent()) {
    e.push_back({KernelEntry::Mla, base + "_mla", "attn_rt_mla_t"});
    if (want.reference)
      e.push_back({KernelEntry::MlaReference, base + "_mla_reference",
                   "attn_rt_mla_t"});
    if (want.paged) {
      e.push_back(
          {KernelEntry::MlaPaged, base + "_mla_paged", "attn_rt_mla_paged_t"});
      if (spec.distributed)
        e.push_back({KernelEntry::MlaPagedPart, base + "_mla_paged_part",
                     "attn_rt_mla_paged_part_t"});
    }
  }
  return e;
}

bool mlir::attn::addModelTable(llvm::Module &m, const ModelSpec &spec,
                               const std::string &describeJson, bool cuda,
                               bool bf16, std::string &error) {
  // Long: one global per attn_rt_model field, in the struct's order.
  TableBuilder t(m);
  if (!t.checkLayout(error))
    return false;
  // An entry equal to another kind's is an alias of it
  // (attn-merge-identical-functions): the table points at the function.
  auto function = [&](const std::string &name) -> llvm::Function * {
    llvm::GlobalValue *gv = m.getNamedValue(name);
    auto *fn =
        dyn_cast_or_null<llvm::Function>(gv ? gv->getAliaseeObject() : nullptr);
    if (!fn || fn->isDeclaration())
      error = "internal error: the kernels' module has no '" + name + "'";
    return fn && !fn->isDeclaration() ? fn : nullptr;
  };

  // The kinds, in the order of their first layer.
  std::vector<LayerKind> kinds;
  std::vector<int64_t> layerKind(spec.layers.size(), -1), layerInStack;
  for (const LayerSpec &l : spec.layers)
    layerInStack.push_back(l.layerInStack);
  for (LayerKind &kind : groupLayersByKind(spec)) {
    for (int64_t i : kind.layers)
      layerKind[i] = kinds.size();
    kinds.push_back(std::move(kind));
  }

  // What the kernels' module holds besides the fused kernels (nothing for
  // the CUDA target: attn-compile clears the entries); an entry left out
  // is NULL in the table.
  bool blocks = spec.entries.blocks;
  std::vector<llvm::Constant *> kindValues;
  for (const LayerKind &kind : kinds) {
    const std::string &n = kind.name;
    const LayerSpec &l = *kind.first;
    // The kernels, from the one entry list the --emit header uses too.
    bool latent = l.isLatent();
    llvm::Constant *slots[8];
    for (llvm::Constant *&c : slots)
      c = t.null();
    for (const KernelEntry &e :
         kernelEntries(spec, n, l, kind.isLinear(), cuda)) {
      llvm::Function *fn = function(e.symbol);
      if (!fn)
        return false;
      slots[e.slot] = fn;
    }
    llvm::Constant *fused = slots[KernelEntry::Fused],
                   *reference = slots[KernelEntry::Reference],
                   *paged = slots[KernelEntry::Paged],
                   *pagedPart = slots[KernelEntry::PagedPart],
                   *mla = slots[KernelEntry::Mla],
                   *mlaReference = slots[KernelEntry::MlaReference],
                   *mlaPaged = slots[KernelEntry::MlaPaged],
                   *mlaPagedPart = slots[KernelEntry::MlaPagedPart];
    llvm::Constant *block = t.null(), *linearBlock = t.null(),
                   *latentBlock = t.null(), *latentLayer = t.null(),
                   *weights = t.null();
    int blockInputs = 0;
    if (!kind.isLinear() && !latent) {
      if (l.role == LayerRole::CrossAttention)
        blockInputs |= ATTN_RT_BLOCK_MEMORY;
      if (l.takesPositions())
        blockInputs |= ATTN_RT_BLOCK_POSITIONS;
      if (takesKeyLengths(l))
        blockInputs |= ATTN_RT_BLOCK_KEY_LENGTHS;
    }
    std::vector<WeightArg> ws;
    llvm::Constant *layer = t.null(), *layerNote = t.null(),
                   *linearLayer = t.null();
    size_t numBlockWeights = 0;
    if (blocks) {
      ws = layerWeights(spec, l);
      numBlockWeights = ws.size();
      unsigned lead = kind.isLinear() ? 6 : 5;
      llvm::SmallVector<unsigned> pass = {0, 1};
      if (kind.isLinear())
        pass = {0, 1, 2, 3, 4, 5};
      else if (latent)
        pass = {0, 1, 2, 3, 4}; // y, cache_out, x, positions, cache_in
      else
        for (auto [bit, arg] : {std::pair<int, unsigned>{ATTN_RT_BLOCK_MEMORY, 2},
                                {ATTN_RT_BLOCK_POSITIONS, 3},
                                {ATTN_RT_BLOCK_KEY_LENGTHS, 4}})
          if (blockInputs & bit)
            pass.push_back(arg);
      // The block, and the whole layer where the kind closes one.
      auto thunk = [&](const std::string &suffix,
                       size_t numWeights) -> llvm::Constant * {
        std::string entryName = "_mlir_ciface_" + n + suffix;
        llvm::Function *entry = function(entryName);
        if (!entry)
          return nullptr;
        if (entry->arg_size() != pass.size() + numWeights) {
          error = "internal error: '" + entryName + "' takes " +
                  std::to_string(entry->arg_size()) +
                  " arguments, expected " +
                  std::to_string(pass.size() + numWeights);
          return nullptr;
        }
        return t.blockThunk(entry, n + suffix, lead, pass, numWeights);
      };
      llvm::Constant *blockFn = thunk("_block", ws.size());
      if (!blockFn)
        return false;
      (kind.isLinear() ? linearBlock : latent ? latentBlock : block) =
          blockFn;
      if (hasFeedForward(l)) {
        llvm::append_range(ws, ffnWeights(spec, l));
        llvm::Constant *layerFn = thunk("_layer", ws.size());
        if (!layerFn)
          return false;
        (kind.isLinear() ? linearLayer : latent ? latentLayer : layer) =
            layerFn;
      } else if (!l.ffn.unsupported.empty()) {
        layerNote = t.string(l.ffn.unsupported);
      }
      std::vector<llvm::Constant *> wv;
      for (const WeightArg &w : ws) {
        std::string pattern =
            w.shared ? w.tensor : tensorPattern(w.tensor, l.layerInStack);
        std::vector<llvm::Constant *> dims;
        for (size_t i = 0; i < 4; ++i)
          dims.push_back(t.c64(i < w.shape.size() ? w.shape[i] : 0));
        llvm::Constant *shape =
            llvm::ConstantArray::get(llvm::ArrayType::get(t.i64, 4), dims);
        wv.push_back(llvm::ConstantStruct::get(
            t.weightTy, {t.string(w.role), t.string(pattern),
                         t.c64(w.shape.size()), shape, t.c64(w.source)}));
      }
      weights = t.global(
          llvm::ConstantArray::get(llvm::ArrayType::get(t.weightTy, wv.size()),
                                   wv),
          "attn_rt.weights." + n);
    }
    // --qo-dtype: the softmax kinds' q and output (the linear kinds' stay
    // fp32).
    int qoDtype = kind.isLinear() || spec.qoType == KVCacheType::f32
                      ? ATTN_RT_KV_F32
                  : spec.qoType == KVCacheType::bf16 ? ATTN_RT_KV_BF16
                                                     : ATTN_RT_KV_F16;
    // check's bound against float64: 2e-2 for the tensor-core kernels (q
    // and P rounded to 16 bits); an fp32 kernel's 16-bit output is rounded
    // once to nearest, half an ulp (2^-8 of the largest output for bf16,
    // 2^-11 for f16: a truncating store fails it); 1e-5 else (check doubles
    // a 16-bit output's bound against the compiled reference, rounded
    // too). The gated-delta kinds: 2e-2 where the GPU's chunked kernel runs
    // on tensor cores (bf16/f16 precision, --gpu-linear-chunked, a shape it
    // takes: its operands rounded), else 1e-5 (the fp32 recurrent kernel).
    bool chunked = bf16 && spec.gpuLinearChunked &&
                   gpu_kernels::gatedDeltaChunkFits(l.headDimQK, l.headDimV);
    double tolerance = kind.isLinear()              ? (chunked ? 2e-2 : 1e-5)
                       : bf16                       ? 2e-2
                       : qoDtype == ATTN_RT_KV_BF16 ? 4.5e-3
                       : qoDtype == ATTN_RT_KV_F16  ? 6e-4
                                                    : 1e-5;
    kindValues.push_back(llvm::ConstantStruct::get(
        t.kindTy,
        {t.string(n),
         t.c64(l.numHeads),
         t.c64(l.numKVHeads),
         t.c64(l.headDimQK),
         t.c64(l.headDimV),
         t.c32(l.causal || kind.isLinear() ? 1 : 0),
         t.c64(l.causal && l.window ? *l.window : 0),
         t.c64(l.position == PositionKind::T5Bias ? l.t5.numBuckets : 0),
         t.int64s(kind.layers, "attn_rt.layers." + n),
         t.c64(kind.layers.size()),
         fused,
         reference,
         block,
         weights,
         t.c64(numBlockWeights),
         t.f(l.scale),
         t.f(l.softcap.value_or(0.0)),
         t.f(tolerance),
         t.c32(kind.isLinear() ? ATTN_RT_OP_GATED_DELTA : ATTN_RT_OP_SDPA),
         linearBlock,
         t.c64(kind.isLinear() ? l.convKernel : 0),
         paged,
         t.c32(spec.kvCache == KVCacheType::bf16  ? ATTN_RT_KV_BF16
               : spec.kvCache == KVCacheType::f16 ? ATTN_RT_KV_F16
                                                  : ATTN_RT_KV_F32),
         pagedPart,
         t.c64(spec.tensorParallel),
         t.c32(blocks ? blockInputs : 0),
         layer,
         t.c64(ws.size()),
         layerNote,
         linearLayer,
         t.c64(latent ? l.latent.kvLoraRank : 0),
         t.c64(latent ? l.latent.ropeDim : 0),
         mla,
         mlaReference,
         mlaPaged,
         latentBlock,
         latentLayer,
         mlaPagedPart,
         t.c32(l.sinks.empty() ? 0 : 1),
         t.c64(l.causal && l.chunk ? *l.chunk : 0),
         t.c32(l.noDelta ? 1 : 0),
         t.c32(l.channelGate ? 1 : 0),
         t.c32(qoDtype)}));
  }

  llvm::Constant *kindArray = t.global(
      llvm::ConstantArray::get(
          llvm::ArrayType::get(t.kindTy, kindValues.size()), kindValues),
      "attn_rt.kinds");
  llvm::Constant *model = t.global(
      llvm::ConstantStruct::get(
          t.modelTy,
          {t.c32(ATTN_RT_ABI_VERSION), t.string(spec.family),
           t.c64(spec.hiddenSize), t.string(describeJson), kindArray,
           t.c64(kinds.size()), t.c64(spec.layers.size()),
           t.int64s(layerKind, "attn_rt.layer_kind"), t.c32(cuda ? 1 : 0),
           t.int64s(layerInStack, "attn_rt.layer_in_stack")}),
      "attn_rt.model");

  if (m.getFunction("attn_rt_get_model")) {
    error = "internal error: the kernels' module already has "
            "'attn_rt_get_model'";
    return false;
  }
  llvm::Function *get = llvm::Function::Create(
      llvm::FunctionType::get(t.ptr, false),
      llvm::GlobalValue::ExternalLinkage, "attn_rt_get_model", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(t.ctx, "entry", get));
  b.CreateRet(model);
  return true;
}
