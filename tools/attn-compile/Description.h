//===- Description.h - what an executable says of itself -------*- C++ -*-===//
//
// The JSON description attn-compile stores in an executable or library's
// model table (`info`, attn_rt_model.describe_json), and the names of the
// optional entries it lists.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_COMPILE_DESCRIPTION_H
#define ATTN_TOOLS_ATTN_COMPILE_DESCRIPTION_H

#include "compiler/Conversion/Passes.h"
#include "compiler/Frontend/ModelSpec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attn_compile {

/// The optional entries by name (--entries, `info`'s "entries").
constexpr std::pair<const char *, bool mlir::attn::EntrySet::*> kEntryNames[] =
    {{"reference", &mlir::attn::EntrySet::reference},
     {"paged", &mlir::attn::EntrySet::paged},
     {"blocks", &mlir::attn::EntrySet::blocks}};

/// --entries' list (`listed`: given at all) with --reference, the target
/// and --distributed=mpi into `entries`; why not (without the option's
/// name), or "".
std::string parseEntryList(const std::vector<std::string> &list, bool listed,
                           bool keepReference, bool cuda, bool mpi,
                           mlir::attn::EntrySet &entries);

/// The entries an executable or library holds, as `info` lists them.
nlohmann::ordered_json entryNames(const mlir::attn::EntrySet &entries);

/// The build's options the description reports.
struct TableOptions {
  std::string cpu;                    ///< --cpu
  bool cuda;                          ///< --target=cuda
  mlir::attn::GPUPrecision precision; ///< --gpu-precision
  int64_t qBlock;                     ///< --q-block (0: the default)
  int64_t kvBlock;                    ///< --kv-block (0: the default)
};

/// The description an executable or library carries: --describe's, the
/// entries, the cache's element type, and for CPU kernels each softmax
/// kind's tiling as compiled (attn-bench prints it).
nlohmann::ordered_json tableDescription(const mlir::attn::ModelSpec &spec,
                                        const TableOptions &options);

} // namespace attn_compile

#endif // ATTN_TOOLS_ATTN_COMPILE_DESCRIPTION_H
