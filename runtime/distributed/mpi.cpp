//===- mpi.cpp - context-parallel attention over MPI ----------------------===//
//
// This file implements what `attn-compile --distributed=mpi` links into
// executables and libraries (libattn_mpi.a): attention whose
// sequence is sharded across MPI ranks, over the kernels' partial form
// (`<kind>_paged_part`: out and each row's (max, sum) over one key range,
// with the query at any position relative to the range).
//
//  - Sharded-KV decode: each rank holds a contiguous, page-aligned range of
//    every sequence's tokens in its own paged cache, runs the partial
//    kernel on it, and one MPI_Allreduce with a user-defined operation on
//    the packed rows [max, sum, out...] merges them by log-sum-exp on every
//    rank (a rank without keys for a row contributes weight 0).
//  - Ring-attention prefill: Q, K and V sharded by sequence in the zig-zag
//    assignment (2R chunks; rank r holds chunks r and 2R-1-r, so that each
//    rank has as much causal work as any other), each rank's K/V (as page
//    pools) passed around the ring with MPI_Isend/MPI_Irecv while the
//    partial kernels compute on the pools at hand, the results merged by
//    log-sum-exp in place.
//
// The commands `sdpa`, `check` and `bench` of MPI executables
// (attn_rt_mpi_main, reached from main.cpp through a weak reference) and
// the C API's attn_decode_paged_mpi (attn_mpi.h) are built on these.
//

#include "attn_mpi.h"
#include "mpi_internal.h"

#include "narrow.h"
#include "npy.h"
#include "resources.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace attn_rt::mpi {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

/// The MPI operation on packed rows [max, sum, out_0..out_{Dv-1}] (one
/// element of the row datatype each).
void mergeOp(void *in, void *inout, int *len, MPI_Datatype *type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  int64_t width = bytes / int64_t(sizeof(float)), dv = width - 2;
  auto *a = static_cast<const float *>(in);
  auto *b = static_cast<float *>(inout);
  for (int64_t r = 0; r < *len; ++r, a += width, b += width)
    mergeRow(a + 2, a[0], a[1], b + 2, b[0], b[1], dv);
}

} // namespace

double allreduceRows(MPI_Comm comm, int64_t rows, int64_t dv, float *out,
                     const float *stats, Buf<float> &packed, const float *sinks,
                     int64_t heads, int64_t n) {
  int64_t w = dv + 2;
  packed.resize(rows * w);
  for (int64_t i = 0; i < rows; ++i) {
    packed[i * w] = stats[2 * i];
    packed[i * w + 1] = stats[2 * i + 1];
    std::memcpy(&packed[i * w + 2], out + i * dv, dv * sizeof(float));
  }
  // The operation and the row type are made once per process (and row
  // width), not at every decode step; MPI_Finalize frees them.
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(mergeOp, /*commute=*/1, &o);
    return o;
  }();
  static std::map<int64_t, MPI_Datatype> rowTypes;
  MPI_Datatype &row = rowTypes[w];
  if (row == MPI_Datatype()) {
    MPI_Type_contiguous(int(w), MPI_FLOAT, &row);
    MPI_Type_commit(&row);
  }
  double t0 = now();
  // Rows in batches that an int counts.
  for (int64_t r0 = 0; r0 < rows; r0 += INT_MAX / 2) {
    int n = int(std::min<int64_t>(rows - r0, INT_MAX / 2));
    MPI_Allreduce(MPI_IN_PLACE, &packed[r0 * w], n, row, op, comm);
  }
  double t = now() - t0;
  if (sinks)
    for (int64_t i = 0; i < rows; ++i)
      foldSink(&packed[i * w + 2], packed[i * w], packed[i * w + 1],
               sinks[(i / n) % heads], dv);
  for (int64_t i = 0; i < rows; ++i) {
    float *o = out + i * dv;
    // A row no rank saw a key for stays 0 (never NaN).
    if (packed[i * w + 1] > 0)
      std::memcpy(o, &packed[i * w + 2], dv * sizeof(float));
    else
      std::fill(o, o + dv, 0.0f);
  }
  return t;
}

void runPart(const attn_rt_kind &kind, attn_rt_memref_f32_4 *out,
             attn_rt_memref_f32_4 *stats, attn_rt_memref_f32_4 *q,
             attn_rt_memref_f32_4 *k, attn_rt_memref_f32_4 *v,
             attn_rt_memref_i32_2 *table, attn_rt_memref_i64_1 *lens,
             attn_rt_memref_i64_1 *qPos, attn_rt_memref_i64_1 *rangeStart) {
  if (!kind.has_sinks) {
    kind.paged_part(out, stats, q, k, v, table, lens, qPos, rangeStart);
    return;
  }
  std::vector<float> none(size_t(kind.num_heads), -INFINITY);
  attn_rt_memref_f32_1 ds{none.data(), none.data(), 0, {kind.num_heads}, {1}};
  reinterpret_cast<attn_rt_paged_part_sinks_fn>(
      reinterpret_cast<void (*)(void)>(kind.paged_part))(
      out, stats, q, k, v, table, lens, qPos, rangeStart, &ds);
}

void storeRow(const attn_rt_kind &kind, Buf<unsigned char> &pool,
              const float *src, int64_t dst, int64_t n) {
  if (kind.kv_dtype == ATTN_RT_KV_F32) {
    std::memcpy(&pool[dst * 4], src, n * 4);
    return;
  }
  bool half = kind.kv_dtype == ATTN_RT_KV_F16;
  auto *o = reinterpret_cast<uint16_t *>(&pool[dst * 2]);
  for (int64_t e = 0; e < n; ++e)
    o[e] = narrowBits(src[e], half);
}

void pagesFromEnd(const std::vector<int64_t> &len, int64_t P, int64_t &numPages,
                  int64_t &maxPages, std::vector<int32_t> &table) {
  int64_t B = int64_t(len.size());
  numPages = 0;
  maxPages = 1;
  std::vector<int64_t> pages(B);
  for (int64_t b = 0; b < B; ++b) {
    pages[b] = ceilDiv(len[b], P);
    numPages += pages[b];
    maxPages = std::max(maxPages, pages[b]);
  }
  table.assign(B * maxPages, 0);
  int64_t next = numPages;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = 0; p < pages[b]; ++p)
      table[b * maxPages + p] = int32_t(--next);
}

std::pair<int64_t, int64_t> shardRange(int64_t len, int ranks, int r, int64_t P,
                                       const std::vector<double> &weights) {
  int64_t pages = ceilDiv(len, P);
  double total = 0, before = 0;
  for (int i = 0; i < ranks; ++i) {
    double w = weights.empty() ? 1.0 : weights[i];
    total += w;
    if (i < r)
      before += w;
  }
  double mine = weights.empty() ? 1.0 : weights[r];
  int64_t p0 = int64_t(std::floor(pages * before / total + 1e-9));
  int64_t p1 =
      r == ranks - 1
          ? pages
          : int64_t(std::floor(pages * (before + mine) / total + 1e-9));
  return {std::min(len, p0 * P), std::min(len, p1 * P)};
}

DecodeTimes shardedDecode(MPI_Comm comm, const attn_rt_kind &kind,
                          Buf<float> &q, const std::vector<int64_t> &qs,
                          PagedShard *shard, const std::vector<int64_t> &lens,
                          Buf<float> &out, const float *sinks) {
  int64_t B = qs[0], Sq = qs[2];
  std::vector<int64_t> qPos(B);
  for (int64_t b = 0; b < B; ++b)
    qPos[b] = lens[b] - Sq - shard->start[b];
  Buf<float> stats, packed;
  DecodeTimes t;
  double t0 = now();
  shard->run(kind, q, qs, &qPos, out, stats);
  t.kernel = now() - t0;
  int64_t rows = B * qs[1] * Sq;
  t.bytes = rows * (kind.head_dim_v + 2) * int64_t(sizeof(float));
  t.collective = allreduceRows(comm, rows, kind.head_dim_v, out.data(),
                               stats.data(), packed, sinks, qs[1], Sq);
  return t;
}

PagedShard makeDecodeShard(MPI_Comm comm, const attn_rt_kind &kind,
                           const Buf<float> &k, const Buf<float> &v, int64_t B,
                           int64_t S, const std::vector<int64_t> &lens,
                           int64_t P, const std::vector<double> &weights) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int64_t> starts(B), counts(B);
  for (int64_t b = 0; b < B; ++b) {
    auto [lo, hi] = shardRange(lens[b], size, rank, P, weights);
    starts[b] = lo;
    counts[b] = hi - lo;
  }
  return PagedShard(kind, k, v, B, S, starts, counts, P);
}

void fillRingPools(const attn_rt_kind &kind, const RingLayout &L, int64_t r,
                   const Buf<float> &kf, const Buf<float> &vf,
                   Buf<unsigned char> &k, Buf<unsigned char> &v) {
  for (int w = 0; w < 2; ++w) {
    int64_t c = L.chunk(r, w), lo = L.lo(c), n = L.length(c);
    for (int64_t b = 0; b < L.B; ++b)
      for (int64_t j = 0; j < n; ++j) {
        int64_t page = L.firstPage(r, w, b) + j / L.P, row = j % L.P;
        for (int64_t h = 0; h < L.hkv; ++h) {
          int64_t src = (b * L.hkv + h) * L.S + lo + j;
          storeRow(kind, k, &kf[src * L.d],
                   ((page * L.hkv + h) * L.P + row) * L.d, L.d);
          storeRow(kind, v, &vf[src * L.dv],
                   ((page * L.hkv + h) * L.P + row) * L.dv, L.dv);
        }
      }
  }
}

RingTimes ringAttention(MPI_Comm comm, const attn_rt_kind &kind,
                        const RingLayout &L, Buf<float> qc[2],
                        const Buf<unsigned char> &kOwn,
                        const Buf<unsigned char> &vOwn, RingState &st,
                        bool computeOff, const float *sinks) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int64_t Hq = kind.num_heads, B = L.B;
  // The pools travel; this rank's own stay as they are.
  Buf<unsigned char> &kPool = st.k, &vPool = st.v, &kRecv = st.kRecv,
                     &vRecv = st.vRecv;
  kPool = kOwn;
  vPool = vOwn;
  kRecv.resize(kOwn.size());
  vRecv.resize(vOwn.size());
  Partial *acc = st.acc;
  MPI_Datatype kPage, vPage;
  MPI_Type_contiguous(int(L.pageBytes(L.d)), MPI_BYTE, &kPage);
  MPI_Type_contiguous(int(L.pageBytes(L.dv)), MPI_BYTE, &vPage);
  MPI_Type_commit(&kPage);
  MPI_Type_commit(&vPage);
  for (int w = 0; w < 2; ++w)
    acc[w].reset(B * Hq * L.length(L.chunk(rank, w)), L.dv);
  Buf<float> &out = st.out, &stats = st.stats;
  std::vector<int32_t> table;
  std::vector<int64_t> lens(B), qPos(B), rangeStart(B);
  RingTimes t;
  double t0 = now();
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int step = 0; step < size; ++step) {
    int src = (rank - step + size) % size;  // whose K/V is at hand
    int incoming = (src - 1 + size) % size; // whose K/V arrives
    MPI_Request reqs[4];
    int nreq = 0;
    if (step + 1 < size) {
      int sendPages = int(L.poolPages(src)),
          recvPages = int(L.poolPages(incoming));
      MPI_Irecv(kRecv.data(), recvPages, kPage, prev, 0, comm, &reqs[nreq++]);
      MPI_Irecv(vRecv.data(), recvPages, vPage, prev, 1, comm, &reqs[nreq++]);
      MPI_Isend(kPool.data(), sendPages, kPage, next, 0, comm, &reqs[nreq++]);
      MPI_Isend(vPool.data(), sendPages, vPage, next, 1, comm, &reqs[nreq++]);
      t.bytesSent += sendPages * (L.pageBytes(L.d) + L.pageBytes(L.dv));
    }
    double c0 = now();
    for (int qw = 0; qw < 2 && !computeOff; ++qw) {
      int64_t qChunk = L.chunk(rank, qw), qn = L.length(qChunk);
      for (int kw = 0; kw < 2 && qn > 0; ++kw) {
        int64_t kChunk = L.chunk(src, kw), kn = L.length(kChunk);
        int64_t offset = L.lo(qChunk) - L.lo(kChunk);
        // Pairs no query row sees any key of: keys all after the last
        // row (causal), or all before the first row's window.
        if (kn == 0 || (kind.causal && offset + qn - 1 < 0) ||
            (kind.window > 0 && kind.causal && kn - 1 <= offset - kind.window))
          continue;
        // Chunked: keys all before the chunk of the first row.
        if (kind.chunk > 0 && kind.causal &&
            L.lo(kChunk) + kn <= L.lo(qChunk) - L.lo(qChunk) % kind.chunk)
          continue;
        int64_t pages = L.pages(src, kw);
        table.assign(B * pages, 0);
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t p = 0; p < pages; ++p)
            table[b * pages + p] = int32_t(L.firstPage(src, kw, b) + p);
          lens[b] = kn;
          qPos[b] = offset;
          rangeStart[b] = L.lo(kChunk);
        }
        std::vector<int64_t> qs = {B, Hq, qn, L.d};
        int64_t pool = int64_t(kPool.size()) / L.pageBytes(L.d);
        out.resize(B * Hq * qn * L.dv);
        stats.resize(B * Hq * qn * 2);
        attn_rt_memref_f32_4 dout = view4(out.data(), {B, Hq, qn, L.dv}),
                             ds = view4(stats.data(), {B, Hq, qn, 2}),
                             dq = view4(qc[qw].data(), qs),
                             dk = view4(reinterpret_cast<float *>(kPool.data()),
                                        {pool, L.hkv, L.P, L.d}),
                             dvv =
                                 view4(reinterpret_cast<float *>(vPool.data()),
                                       {pool, L.hkv, L.P, L.dv});
        attn_rt_memref_i32_2 dt{
            table.data(), table.data(), 0, {B, pages}, {pages, 1}};
        attn_rt_memref_i64_1 dl{lens.data(), lens.data(), 0, {B}, {1}};
        attn_rt_memref_i64_1 dp{qPos.data(), qPos.data(), 0, {B}, {1}},
            dr{rangeStart.data(), rangeStart.data(), 0, {B}, {1}};
        runPart(kind, &dout, &ds, &dq, &dk, &dvv, &dt, &dl, &dp, &dr);
        acc[qw].merge(out, stats);
        // Let the transfers progress between kernels (no progress thread).
        if (nreq) {
          int done;
          MPI_Testall(nreq, reqs, &done, MPI_STATUSES_IGNORE);
        }
      }
    }
    double c1 = now();
    t.compute += c1 - c0;
    if (nreq) {
      MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
      t.exposedWait += now() - c1;
      std::swap(kPool, kRecv);
      std::swap(vPool, vRecv);
    }
  }
  for (int w = 0; w < 2 && !computeOff; ++w) {
    acc[w].finish();
    acc[w].foldSinks(sinks, Hq, L.length(L.chunk(rank, w)));
  }
  t.total = now() - t0;
  MPI_Type_free(&kPage);
  MPI_Type_free(&vPage);
  return t;
}

void ringQueries(const RingLayout &L, int64_t Hq, int rank, const Buf<float> &q,
                 Buf<float> qc[2]) {
  for (int w = 0; w < 2; ++w) {
    int64_t c = L.chunk(rank, w), lo = L.lo(c), n = L.length(c);
    qc[w].resize(L.B * Hq * n * L.d);
    for (int64_t bh = 0; bh < L.B * Hq; ++bh)
      std::memcpy(&qc[w][bh * n * L.d], &q[(bh * L.S + lo) * L.d],
                  n * L.d * sizeof(float));
  }
}

void gatherRing(MPI_Comm comm, const RingLayout &L, int64_t Hq, Partial acc[2],
                int root, Buf<float> &out) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Buf<float> mine(acc[0].out);
  mine.insert(mine.end(), acc[1].out.begin(), acc[1].out.end());
  std::vector<int> counts(size), displs(size);
  int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    int64_t n =
        L.B * Hq * (L.length(L.chunk(r, 0)) + L.length(L.chunk(r, 1))) * L.dv;
    if (n > INT_MAX || total > INT_MAX)
      throw std::length_error(
          "ring attention: the output is too large to gather in one call");
    counts[r] = int(n);
    displs[r] = int(total);
    total += n;
  }
  Buf<float> all(rank == root ? total : 0);
  MPI_Gatherv(mine.data(), int(mine.size()), MPI_FLOAT, all.data(),
              counts.data(), displs.data(), MPI_FLOAT, root, comm);
  if (rank != root)
    return;
  out.assign(L.B * Hq * L.S * L.dv, 0.0f);
  for (int r = 0; r < size; ++r) {
    const float *p = &all[displs[r]];
    for (int w = 0; w < 2; ++w) {
      int64_t c = L.chunk(r, w), lo = L.lo(c), n = L.length(c);
      for (int64_t bh = 0; bh < L.B * Hq; ++bh, p += n * L.dv)
        std::memcpy(&out[(bh * L.S + lo) * L.dv], p, n * L.dv * sizeof(float));
    }
  }
}

RingLayout ringLayout(const attn_rt_kind &kind, int64_t B, int64_t S, int size,
                      int64_t P) {
  return RingLayout{S,
                    size,
                    P,
                    B,
                    kind.num_kv_heads,
                    kind.head_dim,
                    kind.head_dim_v,
                    kind.kv_dtype == ATTN_RT_KV_F32 ? 4 : 2};
}

RingTimes ringPrefill(MPI_Comm comm, const attn_rt_kind &kind,
                      const Buf<float> &q, const Buf<float> &k,
                      const Buf<float> &v, int64_t B, int64_t S, int64_t P,
                      Buf<float> &out, const float *sinks) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  RingLayout L = ringLayout(kind, B, S, size, P);
  Buf<float> qc[2];
  ringQueries(L, kind.num_heads, rank, q, qc);
  Buf<unsigned char> kPool(L.maxPoolPages() * L.pageBytes(L.d)),
      vPool(L.maxPoolPages() * L.pageBytes(L.dv));
  fillRingPools(kind, L, rank, k, v, kPool, vPool);
  RingState st;
  RingTimes t =
      ringAttention(comm, kind, L, qc, kPool, vPool, st, false, sinks);
  gatherRing(comm, L, kind.num_heads, st.acc, 0, out);
  return t;
}

} // namespace attn_rt::mpi
