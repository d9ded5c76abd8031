//===- memref.cpp - memref helpers generated code calls -------------------===//
//
// This file implements memrefCopy, which MLIR's memref-to-LLVM lowering calls
// for copies between strided buffers (the same contract as MLIR's
// CRunnerUtils, written here so executables need no MLIR library). The
// heap of the generated code is workspace.cpp.
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {
struct Descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[]; // sizes[rank], then strides[rank]
};
} // namespace

extern "C" void memrefCopy(int64_t elemSize, attn_rt_unranked_memref *src,
                           attn_rt_unranked_memref *dst) {
  int64_t rank = src->rank;
  auto *s = static_cast<Descriptor *>(src->descriptor);
  auto *d = static_cast<Descriptor *>(dst->descriptor);
  const int64_t *sizes = s->sizesAndStrides;
  const int64_t *sStrides = s->sizesAndStrides + rank;
  const int64_t *dStrides = d->sizesAndStrides + rank;
  char *sBase = s->aligned + s->offset * elemSize;
  char *dBase = d->aligned + d->offset * elemSize;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  // The copy's dimensions, outermost first, with the unit ones dropped and
  // neighbours merged where both sides lay them out as one (stride of the
  // outer = size · stride of the inner): a slice [B, S, 16, 128, 1] of a
  // [B, S, 16, 768, 1] buffer is 16·B·S runs of 128 contiguous elements,
  // not 2,048·B·S copies of one.
  // On the stack up to rank 16 (no heap on a decode step's path).
  int64_t storage[4][16];
  std::vector<int64_t> heap;
  if (rank > 16)
    heap.resize(4 * size_t(rank));
  int64_t *n = rank > 16 ? heap.data() : storage[0];
  int64_t *ss = rank > 16 ? n + rank : storage[1];
  int64_t *ds = rank > 16 ? n + 2 * rank : storage[2];
  int64_t *idx = rank > 16 ? n + 3 * rank : storage[3];
  int64_t dims = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 1)
      continue;
    if (dims > 0 && ss[dims - 1] == sizes[i] * sStrides[i] &&
        ds[dims - 1] == sizes[i] * dStrides[i]) {
      n[dims - 1] *= sizes[i];
      ss[dims - 1] = sStrides[i];
      ds[dims - 1] = dStrides[i];
      continue;
    }
    n[dims] = sizes[i];
    ss[dims] = sStrides[i];
    ds[dims] = dStrides[i];
    ++dims;
  }
  if (dims == 0) {
    std::memcpy(dBase, sBase, elemSize);
    return;
  }
  int64_t inner = dims - 1;
  bool contiguous = ss[inner] == 1 && ds[inner] == 1;
  int64_t innerBytes = n[inner] * elemSize;
  // Offsets (in elements) of the current run, advanced like an odometer.
  for (int64_t i = 0; i < dims; ++i)
    idx[i] = 0;
  int64_t so = 0, dof = 0;
  while (true) {
    char *dp = dBase + dof * elemSize;
    const char *sp = sBase + so * elemSize;
    if (contiguous) {
      std::memcpy(dp, sp, innerBytes);
    } else {
      for (int64_t j = 0; j < n[inner]; ++j)
        std::memcpy(dp + j * ds[inner] * elemSize,
                    sp + j * ss[inner] * elemSize, elemSize);
    }
    int64_t i = inner - 1;
    for (; i >= 0; --i) {
      so += ss[i];
      dof += ds[i];
      if (++idx[i] < n[i])
        break;
      so -= n[i] * ss[i];
      dof -= n[i] * ds[i];
      idx[i] = 0;
    }
    if (i < 0)
      return;
  }
}
