//===- Emitter.h - ModelSpec -> attn IR, the emitter ------------*- C++ -*-===//
//
// The emitter of a model's attn IR (EmitAttnIR.cpp), shared by the files
// that emit its parts: EmitLinear.cpp (Gated DeltaNet kinds and kernels),
// EmitLatent.cpp (multi-head latent attention kinds and kernels),
// EmitLayer.cpp (the layer entries: block, then feed-forward). Internal
// to the front end.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_FRONTEND_EMITTER_H
#define ATTN_COMPILER_FRONTEND_EMITTER_H

#include "compiler/Frontend/Frontend.h"

#include "dialects/Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <array>
#include <map>
#include <set>

namespace mlir::attn::emit {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// attn.rope of `t` at `positions` with the layer's frequencies (and
/// LongRoPE's long table with the length that switches to it).
Value emitRope(OpBuilder &b, Location loc, Value t, Value positions,
               const RopeSpec &r);

class Emitter {
public:
  Emitter(const ModelSpec &spec, const ConfigSource &src)
      : spec(spec), src(src), ctx(src.getContext()), b(ctx),
        f32(Float32Type::get(ctx)) {}

  OwningOpRef<ModuleOp> run();
  /// One `<kind>_sdpa(q, k, v, kv_lengths[, table])` entry per kind (and
  /// its `<kind>_paged`, `<kind>_block`, `<kind>_layer` where spec.entries
  /// asks for them).
  OwningOpRef<ModuleOp> kernels();

private:
  RankedTensorType tensor(llvm::ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  }
  RankedTensorType hiddenType(int64_t width) {
    return tensor({kDyn, kDyn, width});
  }
  RankedTensorType headsType(int64_t heads, int64_t dim) {
    return tensor({kDyn, heads, kDyn, dim});
  }
  UnitAttr unit(bool set) { return set ? b.getUnitAttr() : UnitAttr(); }
  /// The layer's mask kind and its window (sliding) or chunk size
  /// (chunked) attribute.
  std::pair<MaskKind, IntegerAttr> maskOf(const LayerSpec &l) {
    if (!l.causal)
      return {MaskKind::none, IntegerAttr()};
    if (l.chunk)
      return {MaskKind::chunked, b.getI64IntegerAttr(*l.chunk)};
    if (l.window)
      return {MaskKind::sliding_window, b.getI64IntegerAttr(*l.window)};
    return {MaskKind::causal, IntegerAttr()};
  }
  /// The element type of the K/V the kernels read (--kv-dtype) and of q
  /// and the output of the softmax kinds' attention entries (--qo-dtype).
  Type cacheType() { return elementOf(spec.kvCache); }
  Type qoType() { return elementOf(spec.qoType); }
  Type elementOf(KVCacheType t) {
    return t == KVCacheType::bf16  ? Type(b.getBF16Type())
           : t == KVCacheType::f16 ? Type(b.getF16Type())
                                   : f32;
  }
  RankedTensorType positionsType() {
    return RankedTensorType::get({kDyn, kDyn}, b.getI64Type());
  }

  bool checkSupported(const LayerSpec &l);
  /// A softmax layer kind's attention block: x, [memory], [positions],
  /// weights -> y. With `blockEntry` (the executables' `<kind>_block`), a
  /// bidirectional or cross-attention kind also takes its key lengths [B]
  /// (key padding) after the positions.
  func::FuncOp emitKind(const std::string &name, const LayerSpec &l,
                        bool blockEntry = false);
  /// `<kind>_layer`, over the kind's `<kind>_block` entry `block`
  /// (destination style, its `numResults` results as leading memref
  /// arguments): the block's arguments, then the feed-forward weights; a
  /// call of the block on fresh buffers, then the feed-forward sub-layer on
  /// its hidden states. The block's code is compiled once, not a second
  /// time inside the layer. Destination style too.
  func::FuncOp emitLayerOverBlock(const std::string &name, const LayerSpec &l,
                                  func::FuncOp block, unsigned numResults);
  /// A Gated DeltaNet layer (transformers' Qwen3NextGatedDeltaNet with its
  /// pre-norm and residual): x, weights -> x + out_proj(...). With
  /// `withState` (the `<kind>_block` entry): x, conv_state [B, C, K-1],
  /// state [B, Hv, dk, dv], weights -> y, conv_state', state', so decode
  /// can follow prefill.
  func::FuncOp emitLinearKind(const std::string &name, const LayerSpec &l,
                              bool withState = false);
  /// A multi-head latent attention layer (transformers'
  /// DeepseekV3Attention with its pre-norm and residual): x, positions,
  /// weights -> y. With `withCache` (the `<kind>_block` entry): x,
  /// positions (of the new tokens), cache_in [B, P, r + dr] (the latent rows
  /// of the P tokens before them), weights -> y, cache_out [B, P + S,
  /// r + dr] (the cache with the new tokens' rows appended), the attention
  /// over all P + S tokens.
  func::FuncOp emitLatentKind(const std::string &name, const LayerSpec &l,
                              bool withCache = false);
  /// `<kind>_mla(q [B, H, Sq, r + dr], cache [B, Skv, r + dr], kv_lengths
  /// [B]) -> out [B, H, Sq, r]`: the absorbed form's attention, all heads
  /// over the latent rows, the values the rows' first r features.
  func::FuncOp emitLatentKernel(const std::string &name, const LayerSpec &l);
  /// `<kind>_mla_paged(q, pool [pages, page_size, r + dr], block_table [B,
  /// max_pages] i32, kv_lengths [B]) -> out`: the same over a paged latent
  /// cache.
  func::FuncOp emitLatentPagedKernel(const std::string &name,
                                     const LayerSpec &l, bool part = false);
  /// A kind function's weights by role ("q_weight", "norm_bias"...); a
  /// missing role is a null Value.
  using Weights = llvm::StringMap<Value>;
  /// What a linear layer's mixer computes: its output before the residual
  /// and its final convolution and recurrent states.
  struct MixerResult {
    Value out, convState, state;
  };
  /// A Mamba2 mixer (transformers' GraniteMoeHybridMambaLayer) on the
  /// normed hidden states; convState/state may be null (zeros).
  MixerResult mambaMixer(Location loc, const LayerSpec &l, const Weights &w,
                         Value hIn, Value convState, Value state);
  /// A Kimi Delta Attention mixer (Kimi-Linear's KimiDeltaAttention) on the
  /// normed hidden states; convState/state may be null (zeros).
  MixerResult kdaMixer(Location loc, const LayerSpec &l, const Weights &w,
                       Value hIn, Value convState, Value state);
  /// [B, S, heads·dim] viewed as [B, S, heads, dim].
  Value perHead(Location loc, Value t, int64_t heads, int64_t dim);
  /// A sub-layer's end: y normed if `normOut` (weight `outWeight`), added
  /// to the residual stream x (residual), the sum normed if `normSum`.
  Value closeSublayer(Location loc, const LayerSpec &l, Value x, Value y,
                      bool normOut, Value outWeight, bool normSum,
                      Value sumWeight, Value sumBias);
  /// x + scale · y (LayerSpec::residualScale).
  Value residual(Location loc, const LayerSpec &l, Value x, Value y);
  /// The feed-forward sub-block closing the layer: r (the attention block's
  /// output) -> the layer's output; x is the layer's input (a parallel MLP
  /// reads it, normed).
  Value feedForward(Location loc, const LayerSpec &l, const Weights &w, Value x,
                    Value r);
  /// Names the checkpoint tensor of each weight argument of `fn` (from
  /// argument `first` on): `attn.tensor`, the layer's pattern (or the
  /// tensor's own name for a tensor shared by the layers).
  void nameWeightArgs(func::FuncOp fn, unsigned first,
                      ArrayRef<WeightArg> weights, const LayerSpec &l);
  Value linear(Location loc, const LayerSpec &l, const Weights &w, Value in,
               llvm::StringRef role, int64_t out);
  /// q, k, v ([B, S, heads·d]) and Qwen3-Next's output gate (or null) from
  /// the separate or fused projections of the layer's layout.
  std::array<Value, 4> projectQKV(Location loc, const LayerSpec &l,
                                  const Weights &w, Value hIn, Value kvIn);
  /// q, k, v split into heads, with the q/k norms and RoPE at `positions`
  /// where the layer has them.
  std::array<Value, 3> headsOf(Location loc, const LayerSpec &l,
                               const Weights &w, Value q, Value k, Value v,
                               Value positions);
  func::FuncOp emitKernel(const std::string &name, const LayerSpec &l);
  /// `<kind>_paged(q, k_cache, v_cache, block_table, kv_lengths) -> out`:
  /// one attn.paged_sdpa. With `part` (context parallelism),
  /// `<kind>_paged_part(q, k_cache, v_cache, block_table, kv_lengths,
  /// q_pos, range_start) -> (out, stats)`: the attention of the query over
  /// the cache's key range and each row's (max, sum), to merge with other
  /// ranges (range_start, the sequence position of the range's first key,
  /// matters to the chunked mask only).
  func::FuncOp emitPagedKernel(const std::string &name, const LayerSpec &l,
                               bool part = false);
  /// `<kind>_gdn(q, k, v, g, beta, state_in, lengths) -> (out, state_out)`:
  /// one attn.gated_delta_rule.
  func::FuncOp emitLinearKernel(const std::string &name, const LayerSpec &l);
  /// QKᵀ, scale, softcap, bias, mask, softmax, ·V on [b, h, s, d] tensors.
  Value scoreChain(Location loc, const LayerSpec &l, Value qh, Value kh,
                   Value vh, Value table, Value kvLengths,
                   Value sinks = Value());
  Value sliceHeads(Location loc, Value x, int64_t groups, int64_t perGroup,
                   int64_t start, int64_t count, int64_t dim);
  Value norm(Location loc, const LayerSpec &l, Value x, Value w, Value bias);

  const ModelSpec &spec;
  const ConfigSource &src;
  MLIRContext *ctx;
  OpBuilder b;
  Type f32;
  /// Batch and sequence sizes of the values sliceHeads has sliced.
  llvm::DenseMap<Value, std::pair<Value, Value>> dims;
};

/// Rewrites `fn` (tensor results) into destination-passing style for the C
/// ABI: leading memref arguments receive the results, in order
/// (bufferization.materialize_in_destination), nothing is returned, so the
/// caller owns and reuses the output buffers.
void toDestinationStyle(func::FuncOp fn);
/// q of an attention entry widened to fp32 (an `arith.extf` on the whole
/// tensor) when it is 16-bit (--qo-dtype), else q itself.
Value widenQuery(OpBuilder &b, Location loc, Value q);
/// The entry's fp32 output rounded to `elt` (--qo-dtype: `arith.truncf`),
/// or itself.
Value narrowOutput(OpBuilder &b, Location loc, Value o, Type elt);

} // namespace mlir::attn::emit

#endif // ATTN_COMPILER_FRONTEND_EMITTER_H
