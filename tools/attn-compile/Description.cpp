//===- Description.cpp - what an executable says of itself --------------===//
//
// The JSON description attn-compile stores in an executable or library's
// model table.
//
//===----------------------------------------------------------------------===//

#include "Description.h"

#include "compiler/Conversion/CPU/MicroKernel.h"
#include "compiler/Conversion/CPU/TileChoice.h"
#include "compiler/Frontend/Frontend.h"
#include "compiler/Target/CPU/CPUTarget.h"

namespace attn = mlir::attn;

/// The entries an executable or library holds, as `info` lists them.
std::string attn_compile::parseEntryList(const std::vector<std::string> &list,
                                         bool listed, bool keepReference,
                                         bool cuda, bool mpi,
                                         attn::EntrySet &entries) {
  const char *accepted =
      "; accepted, comma-separated: all, sdpa, reference, paged, blocks";
  bool namesReference = false;
  if (listed) {
    entries = {/*reference=*/false, /*paged=*/false, /*blocks=*/false};
    for (const std::string &e : list) {
      if (e == "all") {
        entries = {};
        continue;
      }
      if (e == "sdpa")
        continue;
      auto *it = llvm::find_if(kEntryNames,
                               [&](const auto &n) { return e == n.first; });
      if (it == std::end(kEntryNames))
        return (e.empty() ? std::string("an empty entry")
                          : "unknown entry '" + e + "'") +
               accepted;
      entries.*(it->second) = true;
      namesReference |= it->second == &attn::EntrySet::reference;
    }
  }
  if (!keepReference) {
    if (namesReference)
      return "lists reference, which --reference=false omits";
    entries.reference = false;
  }
  if (cuda) {
    if (listed && (entries.reference || entries.blocks))
      return "--target=cuda compiles the fused kernels and the paged ones "
             "(--entries=sdpa or sdpa,paged); reference and blocks are the "
             "CPU target's";
    // (--distributed=mpi with CUDA: checkOptions says it is CPU-only.)
    // Paged kernels only where listed: the default GPU build stays the
    // fused kernels.
    entries = {false, listed && entries.paged, false};
    return "";
  }
  if (mpi && !entries.paged)
    return "--distributed=mpi adds <kind>_paged_part kernels beside the "
           "paged ones: the list must include paged";
  return "";
}

nlohmann::ordered_json attn_compile::entryNames(const attn::EntrySet &entries) {
  nlohmann::ordered_json j = {"sdpa"};
  for (const auto &[name, member] : kEntryNames)
    if (entries.*member)
      j.push_back(name);
  return j;
}

/// The description an executable or library carries (`info`,
/// attn_rt_model.describe_json): --describe's, and for CPU kernels each
/// softmax kind's tiling as compiled (attn-bench prints it): rows per head
/// and keys per tile, the micro-kernel's register block and chunk.
nlohmann::ordered_json
attn_compile::tableDescription(const attn::ModelSpec &spec,
                               const TableOptions &options) {
  bool cuda = options.cuda;
  nlohmann::ordered_json j = attn::describeModel(spec);
  // What this build holds of each kind (attn-compile --entries), the K/V
  // element type its softmax kernels read (--kv-dtype) and, for CUDA, the
  // kernels' arithmetic (--gpu-precision).
  j["entries"] = entryNames(spec.entries);
  j["kv_dtype"] = attn::dtypeName(spec.kvCache);
  j["qo_dtype"] = attn::dtypeName(spec.qoType);
  if (cuda)
    j["gpu_precision"] = options.precision == attn::GPUPrecision::bf16 ? "bf16"
                         : options.precision == attn::GPUPrecision::f16
                             ? "f16"
                             : "fp32";
  int64_t lanes = attn::cpuVectorLanes(options.cpu);
  if (cuda || !lanes)
    return j;
  using Tiles = mlir::attn::CPUTileDefaults;
  for (auto &k : j["layer_kinds"]) {
    // The kind's layers share their heads: the first one's group size.
    int64_t group = 0, d = 0, dv = 0;
    for (const auto &layer : j["layers"])
      if (layer["index"] == k["layers"][0] &&
          layer.contains("gqa_group_size")) {
        group = layer["gqa_group_size"].get<int64_t>();
        d = layer.value("head_dim_qk", int64_t(0));
        dv = layer.value("head_dim_v", int64_t(0));
      }
    if (!group)
      continue; // linear attention: its own kernel
    k["cpu_tiles"] = {
        {"q_block", Tiles::qBlockFor(group, d, dv, options.qBlock)},
        {"kv_block", options.kvBlock ? options.kvBlock : Tiles::kvBlock},
        {"decode_kv_block", Tiles::decodeKvBlock},
        {"vector_lanes", lanes},
        {"chunk_keys", attn::kMicroKernelChunkVectors * lanes},
        {"score_tile_rows", attn::microKernelScoreVectors(lanes) * lanes},
        {"score_tile_keys", attn::microKernelScoreKeys(lanes)},
        {"pv_tile_rows", attn::microKernelRows(lanes)},
        {"pv_tile_vectors", attn::kMicroKernelChunkVectors}};
  }
  return j;
}
