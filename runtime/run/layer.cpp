//===- layer.cpp - `layer` and `model`: whole transformer layers ----------===//
//
// This file implements the executables' `layer` and `model` commands and
// the pieces `block` shares with them: a transformer layer is a run of
// attention sub-blocks (one, or a decoder's self then cross attention) whose
// last closes the layer with its feed-forward network (the kind's `layer`
// entry); `model --from A --to B` runs the layers A..B in order over one
// checkpoint.
//
//===----------------------------------------------------------------------===//

#include "cli.h"
#include "resources.h"

#include <string>
#include <vector>

using namespace attn_rt;
using namespace attn_rt::cli;

void cli::requireBlocks(const attn_rt_kind &kind) {
  if (kind.block || kind.linear_block || kind.latent_block)
    return;
  if (gCuda)
    fail("block, layer and model run on the CPU only: this executable was "
         "compiled for CUDA; `sdpa` runs its attention kernels");
  fail("block, layer and model need the block entries, which this "
       "executable was compiled without (attn-compile --entries without "
       "blocks); `sdpa` runs its attention kernels");
}

std::string cli::layerName(const attn_rt_kind &kind, int64_t layer) {
  return "layer " + std::to_string(layer) + " (kind '" + kind.name + "')";
}

void cli::checkBlockOptions(const Args &args, int required, int accepted,
                            const std::string &where, int64_t hidden) {
  if ((required & ATTN_RT_BLOCK_MEMORY) && !args.count("memory"))
    fail(where + " is cross attention: pass the encoder's output with "
                 "--memory M.npy (float32 [batch, source_len, " +
         std::to_string(hidden) + "])");
  if (!(accepted & ATTN_RT_BLOCK_MEMORY) && args.count("memory"))
    fail("--memory applies to cross-attention layers only; " + where +
         " attends to its own input");
  if (args.count("lengths") && !(accepted & ATTN_RT_BLOCK_KEY_LENGTHS))
    fail("--lengths (key padding) applies to bidirectional and "
         "cross-attention layers only; " +
         where + " is causal: padding after a sequence's end never reaches "
                 "its tokens");
}

NpyArray cli::readHiddenStates(Args &args, const std::string &opt,
                               int64_t hidden, const char *what) {
  NpyArray a;
  std::string err;
  if (!readNpy(args[opt], a, err))
    fail(err);
  if (a.dtype != "f4" || a.shape.size() != 3 || a.shape[2] != hidden)
    fail(args[opt] + ": must be float32 [batch, seq, " +
         std::to_string(hidden) + "] (" + what + ")");
  if (a.shape[0] > kMaxBatch)
    fail(args[opt] + ": batch " + std::to_string(a.shape[0]) + " exceeds " +
         std::to_string(kMaxBatch));
  // Rows of no token still cost their loops and per-row state: each
  // batch row counts as at least one token.
  if (!fitsInMemory((unsigned __int128)(8 * hidden + 8) * a.shape[0] *
                        std::max<int64_t>(a.shape[1], 1),
                    "the outputs and positions for " + args[opt] + " [" +
                        std::to_string(a.shape[0]) + ", " +
                        std::to_string(a.shape[1]) + ", " +
                        std::to_string(a.shape[2]) + "]",
                    err))
    fail(err);
  return a;
}

NpyArray cli::readMemory(Args &args, const NpyArray &x, int64_t hidden) {
  NpyArray mem = readHiddenStates(args, "memory", hidden,
                                  "the encoder's output");
  if (mem.shape[0] != x.shape[0])
    fail(args["memory"] + ": batch " + std::to_string(mem.shape[0]) +
         " differs from --x's " + std::to_string(x.shape[0]));
  return mem;
}

std::vector<int64_t> cli::keyLengths(Args &args, const std::string &opt,
                                     int64_t batch, int64_t keys) {
  std::vector<int64_t> lens(batch, keys);
  if (!args.count(opt))
    return lens;
  NpyArray l;
  std::string err;
  if (!readNpy(args[opt], l, err))
    fail(err);
  if (l.dtype != "i8" || l.shape.size() != 1 || l.shape[0] != batch)
    fail(args[opt] + ": must be int64 [" + std::to_string(batch) +
         "] (one length per batch)");
  for (int64_t x : l.i64)
    if (x < 0 || x > keys)
      fail(args[opt] + ": length " + std::to_string(x) +
           " outside [0, kv_len = " + std::to_string(keys) + "]");
  return l.i64;
}

std::vector<int64_t> cli::blockLengths(const attn_rt_kind &kind, Args &args,
                                       const std::vector<int64_t> &shape,
                                       const NpyArray &mem) {
  if (!(kind.block_inputs & ATTN_RT_BLOCK_KEY_LENGTHS))
    return {};
  bool cross = kind.block_inputs & ATTN_RT_BLOCK_MEMORY;
  return keyLengths(args, "lengths", shape[0],
                    cross ? mem.shape[1] : shape[1]);
}

void cli::callBlock(const attn_rt_kind &kind, attn_rt_block_fn fn,
                    BlockWeights &weights, Args &args, Buf<float> &x,
                    const std::vector<int64_t> &shape, NpyArray &mem,
                    Buf<float> &y) {
  int64_t b = shape[0], s = shape[1];
  bool cross = kind.block_inputs & ATTN_RT_BLOCK_MEMORY;
  std::vector<int64_t> lens = blockLengths(kind, args, shape, mem);
  std::vector<int64_t> pos(b * s);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j)
      pos[i * s + j] = j;
  attn_rt_memref_f32_3 dx = view3(x.data(), shape);
  attn_rt_memref_f32_3 dy = view3(y.data(), shape);
  attn_rt_memref_f32_3 dm =
      cross ? view3(mem.f32.data(), mem.shape) : attn_rt_memref_f32_3{};
  attn_rt_memref_i64_2 dp{pos.data(), pos.data(), 0, {b, s}, {s, 1}};
  attn_rt_memref_i64_1 dl{lens.data(), lens.data(), 0, {b}, {1}};
  fn(&dy, &dx, &dm, &dp, &dl, weights.ptrs.data());
}

namespace {

/// Whether layer `i`'s kind closes a transformer layer: it has its
/// feed-forward network (compiled or not); a decoder's self-attention,
/// which cross attention follows, does not.
bool closesLayer(const attn_rt_model *m, int64_t i) {
  const attn_rt_kind &k = m->kinds[m->layer_kind[i]];
  return k.layer || k.linear_layer || k.latent_layer || k.layer_note;
}

} // namespace

int cli::cmdLayer(const attn_rt_model *m, int argc, char **argv, bool model) {
  const char *cmd = model ? "model" : "layer";
  auto args = parseArgs(argc, argv, 2,
                        {"layer", "from", "to", "weights", "x", "out",
                         "memory", "lengths", "conv-state-in", "state-in",
                         "conv-state-out", "state-out", "cache-in",
                         "cache-out"});
  // One linear-attention layer's states: `layer` only, `model` runs a
  // fresh sequence through every layer.
  if (model)
    for (const char *opt : {"conv-state-in", "state-in", "conv-state-out",
                            "state-out", "cache-in", "cache-out"})
      if (args.count(opt))
        fail(std::string("--") + opt +
             " applies to `layer` (one layer's states or latent cache); "
             "`model` runs its layers over a fresh sequence");
  for (const char *opt : {"layer", "from", "to"})
    if (args.count(opt) && (std::string(opt) == "layer") == model)
      fail(std::string("--") + opt + " applies to `" +
           (model ? "layer" : "model") + "`, not `" + cmd + "`");
  std::vector<const char *> req = {"weights", "x", "out"};
  req.push_back(model ? "from" : "layer");
  if (model)
    req.push_back("to");
  for (const char *r : req)
    if (!args.count(r))
      fail(std::string(cmd) + " needs --" + r);
  int64_t first, last;
  if (model) {
    first = intArg(args, "from", 0, 0, 1 << 30);
    last = intArg(args, "to", 0, 0, 1 << 30);
    requireBlocks(kindOfLayer(m, first, "from"));
    kindOfLayer(m, last, "to");
    if (last < first)
      fail("--to " + std::to_string(last) + " is before --from " +
           std::to_string(first));
    if (first > 0 && !closesLayer(m, first - 1))
      fail("--from " + std::to_string(first) +
           " starts inside a transformer layer (its self-attention is layer " +
           std::to_string(first - 1) + "); start at " +
           std::to_string(first - 1));
    if (!closesLayer(m, last))
      fail("--to " + std::to_string(last) +
           " ends inside a transformer layer (its feed-forward network "
           "follows layer " + std::to_string(last + 1) + "); end at " +
           std::to_string(last + 1));
  } else {
    // The attention sub-blocks of the transformer layer holding `layer`.
    int64_t layer = intArg(args, "layer", 0, 0, 1 << 30);
    requireBlocks(kindOfLayer(m, layer));
    first = layer;
    while (first > 0 && !closesLayer(m, first - 1))
      --first;
    last = layer;
    while (last + 1 < m->num_layers && !closesLayer(m, last))
      ++last;
  }
  // Everything is checked before any layer runs: no partial output.
  int required = 0, accepted = 0;
  for (int64_t i = first; i <= last; ++i) {
    const attn_rt_kind &kind = kindOfLayer(m, i);
    requireBlocks(kind);
    bool linear = kind.op == ATTN_RT_OP_GATED_DELTA;
    void *layerFn = linear         ? (void *)kind.linear_layer
                    : kind.latent_block ? (void *)kind.latent_layer
                                        : (void *)kind.layer;
    if ((i == last || closesLayer(m, i)) && !layerFn)
      fail(layerName(kind, i) + " closes a transformer layer whose "
           "feed-forward network is not compiled: " +
           (kind.layer_note ? kind.layer_note
                            : "it has no feed-forward network"));
    if (!linear)
      for (const char *opt :
           {"conv-state-in", "state-in", "conv-state-out", "state-out"})
        if (args.count(opt))
          fail(std::string("--") + opt +
               " applies to linear-attention layers only; " +
               layerName(kind, i) + " is softmax attention");
    if (!kind.latent_block)
      for (const char *opt : {"cache-in", "cache-out"})
        if (args.count(opt))
          fail(std::string("--") + opt +
               " applies to multi-head latent attention layers only; " +
               layerName(kind, i) + " caches no latent rows");
    required |= kind.block_inputs & ATTN_RT_BLOCK_MEMORY;
    accepted |= kind.block_inputs;
  }
  std::string where = first == last
                          ? layerName(kindOfLayer(m, first), first)
                          : "layers " + std::to_string(first) + ".." +
                                std::to_string(last);
  checkBlockOptions(args, required, accepted, where, m->hidden_size);
  NpyArray x = readHiddenStates(args, "x", m->hidden_size, "the hidden states");
  NpyArray mem;
  if (required)
    mem = readMemory(args, x, m->hidden_size);
  std::vector<int64_t> shape = {x.shape[0], x.shape[1], m->hidden_size};
  for (int64_t i = first; i <= last; ++i)
    blockLengths(kindOfLayer(m, i), args, shape, mem);
  Buf<float> cur = std::move(x.f32), next(cur.size()), cache;
  std::vector<int64_t> cacheShape;
  LinearStates states;
  if (shape[1] == 0 && !args.count("state-out") &&
      !args.count("conv-state-out") && !args.count("cache-out")) {
    // No token and no state asked for: the output is empty, nothing runs.
    writeOut(args, "out", shape, cur.data());
    return 0;
  }
  for (int64_t i = first; i <= last; ++i) {
    const attn_rt_kind &kind = kindOfLayer(m, i);
    bool closes = closesLayer(m, i);
    BlockWeights weights(kind, m->layer_in_stack[i], args["weights"],
                         closes ? kind.num_layer_weights : kind.num_weights);
    if (kind.latent_block) {
      cache = runLatentBlock(kind, closes ? kind.latent_layer
                                          : kind.latent_block,
                             args, cur, shape, next, weights, cacheShape);
    } else if (kind.op == ATTN_RT_OP_GATED_DELTA) {
      attn_rt_memref_f32_3 dx = view3(cur.data(), shape);
      attn_rt_memref_f32_3 dy = view3(next.data(), shape);
      runLinearBlock(kind, kind.linear_layer, args, dy, dx, weights, states);
    } else {
      callBlock(kind, closes ? kind.layer : kind.block, weights, args, cur,
                shape, mem, next);
    }
    std::swap(cur, next);
  }
  writeBlockOutputs(args, shape, cur.data(), cacheShape, cache, states);
  return 0;
}
