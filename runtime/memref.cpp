//===- memref.cpp - memref helpers generated code calls -------------------===//
//
// This file implements memrefCopy, which MLIR's memref-to-LLVM lowering calls
// for copies between strided buffers (the same contract as MLIR's
// CRunnerUtils, written here so executables need no MLIR library).
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"

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
  if (rank == 0) {
    std::memcpy(dBase, sBase, elemSize);
    return;
  }
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  std::vector<int64_t> idx(rank, 0);
  int64_t inner = rank - 1;
  while (true) {
    int64_t so = 0, dof = 0;
    for (int64_t i = 0; i < inner; ++i) {
      so += idx[i] * sStrides[i];
      dof += idx[i] * dStrides[i];
    }
    if (sStrides[inner] == 1 && dStrides[inner] == 1) {
      std::memcpy(dBase + dof * elemSize, sBase + so * elemSize,
                  sizes[inner] * elemSize);
    } else {
      for (int64_t j = 0; j < sizes[inner]; ++j)
        std::memcpy(dBase + (dof + j * dStrides[inner]) * elemSize,
                    sBase + (so + j * sStrides[inner]) * elemSize, elemSize);
    }
    int64_t i = inner - 1;
    while (i >= 0 && ++idx[i] == sizes[i])
      idx[i--] = 0;
    if (i < 0)
      return;
  }
}
