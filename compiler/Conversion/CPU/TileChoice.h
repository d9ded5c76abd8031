//===- TileChoice.h - the CPU's attention tile sizes ------------*- C++ -*-===//
//
// The CPU target's choice of attention tile sizes (attn-cpu-select-tiles
// writes it on each op as #attn.tiles; attn-compile describes it): the
// heuristics live with the target, not in the dialect's tiler.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_COMPILER_CONVERSION_CPU_TILECHOICE_H
#define ATTN_COMPILER_CONVERSION_CPU_TILECHOICE_H

#include <algorithm>
#include <cstdint>

namespace mlir {
namespace attn {

/// The CPU's tile sizes (attn-cpu-select-tiles):
/// a tile of q-block rows per head (at least minGroupRows over the G heads
/// of a GQA group, so that each K/V chunk's pack serves as many register
/// blocks) by kvBlock keys, decodeKvBlock keys when the group's rows fit one
/// micro-kernel call (at most 16: decode).
struct CPUTileDefaults {
  static constexpr int64_t qBlock = 64, minGroupRows = 256, kvBlock = 64,
                           decodeKvBlock = 1024;
  /// The f32 query rows and accumulators of one tile (G · q-block rows of
  /// d + dv floats) stay within this many bytes, half of a 1 MiB L2, so
  /// that they stay in L2 across the tile's chunks next to each chunk's
  /// packed Kᵀ and V: at G = 16, d = 256 (P4) a q-block of 64 held 2 MiB
  /// and read them from L3 for every chunk; 16 was 4% faster (medians of
  /// 8 alternated runs on a Zen 5).
  static constexpr int64_t maxGroupBytes = 512 * 1024;
  /// The q-block for G query heads per KV head and head dims d, dv
  /// (`option`: --q-block, 0 for the default): 64, raised to minGroupRows
  /// / G, lowered (not below minGroupRows / G) to keep maxGroupBytes.
  static int64_t qBlockFor(int64_t group, int64_t d, int64_t dv,
                           int64_t option) {
    if (option > 0)
      return option;
    if (group <= 0)
      return qBlock;
    int64_t floor = std::max<int64_t>(1, minGroupRows / group);
    int64_t rowBytes = group * (d + dv) * 4;
    int64_t cap = rowBytes > 0 ? maxGroupBytes / rowBytes : qBlock;
    return std::max(floor, std::min(qBlock, cap));
  }
};

} // namespace attn
} // namespace mlir

#endif // ATTN_COMPILER_CONVERSION_CPU_TILECHOICE_H
