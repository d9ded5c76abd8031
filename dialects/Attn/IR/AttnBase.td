//===- AttnBase.td - attn dialect definition and attributes -*- tablegen -*-===//
//
// This file defines the `attn` dialect and the enum attributes its ops share:
// the mask kind and the causal alignment used when q_len != kv_len.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_BASE_TD
#define ATTN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention graphs, fused attention and online-softmax tiles";
  let description = [{
    The `attn` dialect describes transformer attention at three levels:

    * **Graph level** ops mirror the eager code of a framework: projections,
      norms, rotary embeddings, head split/merge, QKᵀ, scaling, soft-capping,
      masking, softmax, P·V and the residual add. The front end emits these.
    * **Fused level**: `attn.sdpa` is scaled-dot-product attention as one op;
      nothing of size q_len × kv_len appears in its operands or results.
    * **Tiled level**: `attn.online_attention` folds one key/value tile into a
      running (accumulator, max, sum) state and `attn.online_finalize`
      normalizes it, in the style of FlashAttention's online softmax.

    Activations are ranked tensors `[batch, heads, seq, head_dim]` with dynamic
    batch and sequence dims and static head counts and head dims.
  }];
  let useDefaultAttributePrinterParser = 1;
  // Tiling attn.sdpa (TilingInterface) builds slices and index arithmetic.
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_MaskKind : I32EnumAttr<"MaskKind", "attention mask kind", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"causal", 1>,
    I32EnumAttrCase<"sliding_window", 2>,
    I32EnumAttrCase<"chunked", 3>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::attn";
  let description = [{
    * `none`: bidirectional, every key is visible.
    * `causal`: query i sees key j iff j <= i + offset (see CausalAlignment).
    * `sliding_window`: causal, and additionally i + offset - j < window, so a
      query sees at most `window` keys, itself included (the convention of
      Mistral, Gemma 2/3 and Qwen in Hugging Face transformers).
    * `chunked`: causal, and key j in the query's own chunk of `window`
      positions: floor(j / window) == floor((i + offset) / window) (Llama
      4's chunked local attention, `window` = attention_chunk_size).
  }];
}

def Attn_MaskKindAttr : EnumAttr<Attn_Dialect, Attn_MaskKind, "mask"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_Activation : I32EnumAttr<"Activation",
    "feed-forward activation function", [
    I32EnumAttrCase<"silu", 0>,
    I32EnumAttrCase<"gelu", 1>,
    I32EnumAttrCase<"gelu_tanh", 2>,
    I32EnumAttrCase<"relu", 3>,
    I32EnumAttrCase<"relu2", 4>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::attn";
  let description = [{
    * `silu`: x · sigmoid(x) (transformers' `silu`, Llama's SwiGLU).
    * `gelu`: the exact x · Φ(x) = x · (1 + erf(x / √2)) / 2 (`gelu`).
    * `gelu_tanh`: x · (1 + tanh(√(2/π) · (x + 0.044715 x³))) / 2
      (`gelu_new`, `gelu_pytorch_tanh`: GPT-2, Gemma).
    * `relu`: max(x, 0) (T5).
    * `relu2`: max(x, 0)² (transformers' `relu2`, squared ReLU: Nemotron-H's
      MLP and experts).
  }];
}

def Attn_ActivationAttr : EnumAttr<Attn_Dialect, Attn_Activation,
                                   "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_RouterScoring : I32EnumAttr<"RouterScoring",
    "how a mixture of experts scores its experts", [
    I32EnumAttrCase<"softmax", 0>,
    I32EnumAttrCase<"sigmoid", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::attn";
  let description = [{
    * `softmax`: p = softmax(x·W_routerᵀ) over the experts (Qwen, Mixtral,
      DeepSeek-V2).
    * `sigmoid`: p = sigmoid(x·W_routerᵀ) per expert (DeepSeek-V3,
      Kimi-K2).
  }];
}

def Attn_RouterScoringAttr : EnumAttr<Attn_Dialect, Attn_RouterScoring,
                                      "scoring"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_GroupScore : I32EnumAttr<"GroupScore",
    "how group-limited routing scores a group of experts", [
    I32EnumAttrCase<"max", 0>,
    I32EnumAttrCase<"top2_sum", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::attn";
  let description = [{
    * `max`: the group's best expert score (DeepSeek-V2's
      group_limited_greedy).
    * `top2_sum`: the sum of its two best scores (DeepSeek-V3's noaux_tc).
  }];
}

def Attn_GroupScoreAttr : EnumAttr<Attn_Dialect, Attn_GroupScore,
                                   "group_score"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_CausalAlignment : I32EnumAttr<"CausalAlignment",
    "where the causal diagonal sits when q_len != kv_len", [
    I32EnumAttrCase<"bottom_right", 0>,
    I32EnumAttrCase<"top_left", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::attn";
  let description = [{
    * `bottom_right` (default, FlashAttention 2+ and decode with a KV cache):
      offset = kv_len - q_len, so the last query row sees every key. A query
      row i with i + offset < 0 sees no key at all and its output is 0.
    * `top_left` (FlashAttention 1, PyTorch `is_causal` with q_len != kv_len):
      offset = 0.
  }];
}

def Attn_CausalAlignmentAttr
    : EnumAttr<Attn_Dialect, Attn_CausalAlignment, "align"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Attn_RelativeBiasAttr : AttrDef<Attn_Dialect, "RelativeBias"> {
  let mnemonic = "relative_bias";
  let summary = "T5-style bucketed relative-position bias";
  let description = [{
    The scores get `table[bucket(j - i), h]` added, where `bucket` maps the
    relative position into `num_buckets` log-spaced buckets (half per
    direction when `bidirectional`) saturating at `max_distance`, as T5's
    `_relative_position_bucket`. The table operand is `[num_buckets, heads]`.

    ```mlir
    #attn.relative_bias<num_buckets = 32, max_distance = 128, bidirectional = true>
    ```
  }];
  let parameters = (ins "int64_t":$num_buckets, "int64_t":$max_distance,
                        "bool":$bidirectional);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Attn_TilesAttr : AttrDef<Attn_Dialect, "Tiles"> {
  let mnemonic = "tiles";
  let summary = "a target's tile sizes for one attention op";
  let description = [{
    The tile sizes a target chose for one `attn.sdpa` or `attn.paged_sdpa`
    (the discardable attribute `attn.tiles`, set by `attn-cpu-select-tiles`
    from the CPU's heuristics: L2, the GQA group, the micro-kernel), which
    `attn-tile-attention` reads in place of its own options: `q_block`
    query rows per head and tile, `kv_block` keys per tile,
    `decode_kv_block` keys per tile when the tile's rows over the group
    are at most 16 (decode), and split-K (flash-decoding) when the query
    fits one block and batch × KV heads is below `split_target` (0: never),
    with at least `split_min_keys` keys per part. The dialect's tiler thus
    holds no target's heuristics.

    ```mlir
    attn.sdpa ... {attn.tiles = #attn.tiles<q_block = 64, kv_block = 64,
        decode_kv_block = 1024, split_target = 16, split_min_keys = 512>,
        mask = #attn.mask<causal>, scale = 0.125 : f64}
    ```
  }];
  let parameters = (ins "int64_t":$q_block, "int64_t":$kv_block,
                        "int64_t":$decode_kv_block, "int64_t":$split_target,
                        "int64_t":$split_min_keys);
  let assemblyFormat = "`<` struct(params) `>`";
  // Blocks and the fewest keys per part positive, split_target 0 or more.
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The discardable attribute's name on an attention op.
    static constexpr ::llvm::StringLiteral kAttrName = "attn.tiles";
  }];
}

def Attn_CPUKernelAttr : AttrDef<Attn_Dialect, "CPUKernel"> {
  let mnemonic = "cpu_kernel";
  let summary = "a tile op the CPU micro-kernels take, and their vector width";
  let description = [{
    The CPU target's choice for one tile op (`attn.online_attention`,
    `attn.gated_delta_chunk`), set by `attn-cpu-select-kernels` as the
    discardable attribute `attn.kernel`: the op is lowered by the CPU
    micro-kernels (`attn-cpu-micro-kernel`, after bufferization) with
    vectors of `lanes` f32 lanes (16: AVX-512, 8: AVX2, 4: SSE) instead of
    by `convert-attn-to-linalg`, which leaves such ops alone. The generic
    conversion thus needs no knowledge of any target: a target says which
    ops it takes.

    ```mlir
    attn.online_attention ... {attn.kernel = #attn.cpu_kernel<lanes = 16>,
                               mask = #attn.mask<causal>, scale = 0.125 : f64}
    ```
  }];
  let parameters = (ins "int64_t":$lanes);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// The discardable attribute's name on a tile op.
    static constexpr ::llvm::StringLiteral kAttrName = "attn.kernel";
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Attn_FloatTensor : RankedTensorOf<[F16, BF16, F32, F64]>;
def Attn_IntTensor : RankedTensorOf<[AnySignlessInteger, Index]>;
/// A float tensor, or (ops in destination-passing style, after
/// bufferization) a float buffer.
def Attn_FloatShaped : AnyTypeOf<[Attn_FloatTensor,
                                  MemRefOf<[F16, BF16, F32, F64]>]>;
/// An integer or index tensor, or (after bufferization) buffer.
def Attn_IntShaped : AnyTypeOf<[Attn_IntTensor,
                                MemRefOf<[AnySignlessInteger, Index]>]>;

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_BASE_TD
