//===- Frontend.h - config.json -> attn IR and --describe --------*- C++ -*-===//
//
// This file declares the front end's entry points: loading a config into a
// ModelSpec, emitting the model's attention as `attn` graph-level IR, and
// describing it as JSON.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_FRONTEND_FRONTEND_H
#define ATTN_COMPILER_FRONTEND_FRONTEND_H

#include "compiler/Frontend/ConfigSource.h"
#include "compiler/Frontend/ModelSpec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <nlohmann/json.hpp>

namespace mlir {
namespace attn {

/// Emits one function per distinct attention-layer kind and a `@model`
/// function calling them in layer order. Weights are function arguments
/// carrying their checkpoint tensor names (`attn.tensor`). Features that the
/// dialect cannot express yet (ALiBi, run-time RoPE scaling) are reported as
/// errors located at the config field that asked for them.
OwningOpRef<ModuleOp> emitAttnModule(const ModelSpec &spec,
                                     const ConfigSource &src);

/// The attention kernels of the model: for each softmax-attention layer kind
/// `@<kind>_sdpa(out [B,Hq,Sq,Dv], q [B,Hq,Sq,D], k [B,Hkv,Skv,D],
/// v [B,Hkv,Skv,Dv], kv_lengths [B] (, bias table))`, written as the eager
/// chain (the pipeline fuses and tiles it) into the caller's `out` memref,
/// and where spec.entries.blocks (attn-compile clears it, and paged, for
/// the CUDA target: it compiles the attention entries only)
/// `@<kind>_block(out, x, [memory],
/// [positions], [key_lengths], weights...)` (memory for cross attention,
/// positions for RoPE, key lengths where takesKeyLengths) and, where the
/// kind closes a transformer layer, `@<kind>_layer` (the same, then the
/// feed-forward network);
/// where spec.entries.paged and hasPagedKernel,
/// `@<kind>_paged(out [B,Hq,Sq,Dv], q [B,Hq,Sq,D],
/// k_cache [pages,Hkv,page_size,D], v_cache [pages,Hkv,page_size,Dv],
/// block_table [B, max_pages] i32, kv_lengths [B])`, one attn.paged_sdpa,
/// and with spec.distributed `@<kind>_paged_part(out, stats [B,Hq,Sq,2], q,
/// k_cache, v_cache, block_table, kv_lengths, q_pos [B], range_start [B])`,
/// its partial form
/// over a rank's share of the heads (spec.tensorParallel);
/// for each linear-attention (Gated DeltaNet) kind
/// `@<kind>_gdn(out [B,Hv,S,dv], state_out [B,Hv,dk,dv], q [B,Hk,S,dk],
/// k [B,Hk,S,dk], v [B,Hv,S,dv], g [B,Hv,S], beta [B,Hv,S],
/// state_in [B,Hv,dk,dv])`, one attn.gated_delta_rule, and where
/// spec.entries.blocks its `@<kind>_block` and `@<kind>_layer`; all
/// with a C interface. (The `_reference` copies are the pipeline's:
/// PipelineOptions::reference.)
OwningOpRef<ModuleOp> emitKernelModule(const ModelSpec &spec,
                                       const ConfigSource &src);

/// A weight argument of a layer-kind function: its role, its shape and its
/// checkpoint name in this layer.
/// How the runtime reads a weight (the values of attn_rt_weight.source,
/// runtime/abi/attn_runtime.h's ATTN_RT_WEIGHT_*; ModelTable.cpp checks them).
enum WeightSource : int {
  kWeightAsStored = 0,
  kWeightGateOfGateUp = 1,
  kWeightUpOfGateUp = 2,
  kWeightExpertsInOut = 3,
  kWeightGateOfBias = 4,
  kWeightUpOfBias = 5,
  kWeightGateOfGateUpHalves = 6,
  kWeightUpOfGateUpHalves = 7,
};

struct WeightArg {
  std::string role;
  std::vector<int64_t> shape;
  std::string tensor;
  bool shared = false; ///< the same tensor for every layer (T5's table).
  /// How the runtime reads it (ATTN_RT_WEIGHT_*: as stored, or a part of
  /// gpt-oss's fused expert tensors).
  int source = 0;
};

/// The width of a layer's query projection: heads · head_dim, twice that
/// with Qwen3-Next's output gate.
int64_t queryWidth(const LayerSpec &l);

/// The weights of layer `l`, in the order its kind function takes them
/// (after x and positions).
std::vector<WeightArg> layerWeights(const ModelSpec &spec, const LayerSpec &l);

/// The weights of layer `l`'s feed-forward network (empty without one, or
/// when it is not compiled), in the order its `<kind>_layer` entry takes
/// them after layerWeights's.
std::vector<WeightArg> ffnWeights(const ModelSpec &spec, const LayerSpec &l);

/// True when `l` closes a transformer layer with a feed-forward network
/// that is compiled (its kind has a `<kind>_layer` entry).
bool hasFeedForward(const LayerSpec &l);

/// `model.layers.7.self_attn.q_proj.weight` with layer 7 ->
/// `model.layers.{i}.self_attn.q_proj.weight` (the name pattern of a weight
/// of a layer kind; `{i}` stands for the layer number within its stack).
std::string tensorPattern(const std::string &tensor, int64_t layer);

/// True for the kinds whose `<kind>_block` entry takes the keys' lengths
/// [B] (key padding): bidirectional self-attention and cross attention.
bool takesKeyLengths(const LayerSpec &l);

/// True for the softmax kinds that have an attention entry over a paged KV
/// cache (`<kind>_paged`): all but T5's relative-bias ones.
bool hasPagedKernel(const LayerSpec &l);

/// The `--describe` JSON (fields documented in the README).
nlohmann::ordered_json describeModel(const ModelSpec &spec);

/// Name of the kind function each layer calls, in layer order (shared by the
/// IR emitter and --describe so that both agree).
std::vector<std::string> layerKindNames(const ModelSpec &spec);

/// The layers that share one kind (one kind function, one kernel).
struct LayerKind {
  std::string name;        ///< as layerKindNames gives it
  const LayerSpec *first;  ///< the kind's first layer (its shape)
  std::vector<int64_t> layers; ///< indices into spec.layers, ascending
  /// Gated DeltaNet linear attention (an `_gdn` kernel, not `_sdpa`).
  bool isLinear() const { return first->role == LayerRole::LinearAttention; }
};

/// `spec`'s layers grouped by kind, in order of first use. The one place
/// where layers are grouped: the IR emitter, --describe, the model table and
/// the kernels' header all read it. Linear-attention layers form kinds of
/// their own (`isLinear()`).
std::vector<LayerKind> groupLayersByKind(const ModelSpec &spec);

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_FRONTEND_FRONTEND_H
