/* memrefCopy (runtime/abi/memref.cpp), which generated code calls for
 * memref.copy between strided buffers, against an element-by-element copy
 * over random shapes of rank 0 to 6: unit dimensions anywhere (the
 * front end's [B, S, 16, 768, 1] head views), slices of larger buffers
 * (non-contiguous rows), transposed destinations (inner stride > 1),
 * dimensions that merge on one side only, element sizes 1, 2, 4 and 8.
 * Prints "ok N cases" or the first mismatch. */
#include "attn_runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxRank = 6 };

typedef struct {
  char *allocated, *aligned;
  int64_t offset;
  int64_t sizesAndStrides[2 * kMaxRank];
} Desc;

static uint64_t state = 88172645463325252ull;
static int64_t rnd(int64_t n) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (int64_t)(state % (uint64_t)n);
}

/* A buffer view of `sizes` inside a larger allocation: each dimension
 * padded by 0-2 elements, the dimensions laid out in a random order (a
 * permuted view reads as a transpose), at a random offset. */
static int64_t layout(int rank, const int64_t *sizes, int64_t *strides,
                      int64_t *offset) {
  int order[kMaxRank];
  for (int i = 0; i < rank; ++i)
    order[i] = i;
  if (rnd(3) == 0)
    for (int i = rank - 1; i > 0; --i) {
      int j = (int)rnd(i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  int64_t stride = 1, extent = 1;
  for (int k = rank - 1; k >= 0; --k) {
    int d = order[k];
    int64_t full = sizes[d] + (rnd(3) == 0 ? rnd(3) : 0);
    strides[d] = stride;
    stride *= full;
  }
  extent = stride;
  *offset = rnd(5);
  return extent + *offset;
}

static void naive(int rank, const int64_t *sizes, int64_t es, const char *s,
                  const int64_t *ss, char *d, const int64_t *ds) {
  int64_t idx[kMaxRank] = {0}, total = 1;
  for (int i = 0; i < rank; ++i)
    total *= sizes[i];
  for (int64_t e = 0; e < total; ++e) {
    int64_t so = 0, dof = 0, r = e;
    for (int i = rank - 1; i >= 0; --i) {
      idx[i] = r % sizes[i];
      r /= sizes[i];
      so += idx[i] * ss[i];
      dof += idx[i] * ds[i];
    }
    memcpy(d + dof * es, s + so * es, (size_t)es);
  }
}

int main(void) {
  const int64_t elemSizes[] = {1, 2, 4, 8};
  int cases = 0;
  for (int t = 0; t < 3000; ++t) {
    int rank = (int)rnd(kMaxRank + 1);
    int64_t es = elemSizes[rnd(4)];
    int64_t sizes[kMaxRank], ss[kMaxRank], ds[kMaxRank], so, dof;
    /* At most ~100k elements: small dimensions, a few long ones. */
    int64_t total = 1;
    for (int i = 0; i < rank; ++i) {
      sizes[i] = rnd(4) == 0 ? 1 : 1 + rnd(t < 2000 ? 5 : 40);
      if (total * sizes[i] > 100000)
        sizes[i] = 1;
      total *= sizes[i];
    }
    if (rank && rnd(20) == 0)
      sizes[rnd(rank)] = 0;
    int64_t sn = layout(rank, sizes, ss, &so);
    int64_t dn = layout(rank, sizes, ds, &dof);
    char *src = malloc((size_t)(sn * es)), *got = malloc((size_t)(dn * es)),
         *want = malloc((size_t)(dn * es));
    for (int64_t i = 0; i < sn * es; ++i)
      src[i] = (char)rnd(256);
    for (int64_t i = 0; i < dn * es; ++i)
      got[i] = want[i] = (char)rnd(256);
    Desc sd = {src, src, so, {0}}, dd = {got, got, dof, {0}};
    for (int i = 0; i < rank; ++i) {
      sd.sizesAndStrides[i] = dd.sizesAndStrides[i] = sizes[i];
      sd.sizesAndStrides[rank + i] = ss[i];
      dd.sizesAndStrides[rank + i] = ds[i];
    }
    attn_rt_unranked_memref us = {rank, &sd}, ud = {rank, &dd};
    memrefCopy(es, &us, &ud);
    naive(rank, sizes, es, src + so * es, ss, want + dof * es, ds);
    if (memcmp(got, want, (size_t)(dn * es)) != 0) {
      printf("FAIL case %d: rank %d, element %lld bytes, sizes", t, rank,
             (long long)es);
      for (int i = 0; i < rank; ++i)
        printf(" %lld (src stride %lld, dst %lld)", (long long)sizes[i],
               (long long)ss[i], (long long)ds[i]);
      printf("\n");
      return 1;
    }
    free(src);
    free(got);
    free(want);
    ++cases;
  }
  printf("ok %d cases\n", cases);
  return 0;
}
