//===- mpi.cpp - context-parallel attention over MPI ----------------------===//
//
// This file implements what `attn-compile --distributed=mpi` links into
// executables and libraries (libattn_runtime_mpi.a): attention whose
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
//===----------------------------------------------------------------------===//

#include "attn_mpi.h"

#include "cli.h"
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
#include <string>
#include <thread>
#include <vector>

#include <malloc.h>
#include <unistd.h>

using namespace attn_rt;
using namespace attn_rt::cli;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

//===----------------------------------------------------------------------===//
// The log-sum-exp merge of partial rows
//===----------------------------------------------------------------------===//

/// Merges a partial row (oa, ma, la) into (ob, mb, lb): M = max(ma, mb),
/// o = (e^(ma-M)·la·oa + e^(mb-M)·lb·ob) / (e^(ma-M)·la + e^(mb-M)·lb),
/// in double. A row with sum 0 saw no key and weighs nothing.
inline void mergeRow(const float *oa, float ma, float la, float *ob,
                     float &mb, float &lb, int64_t dv) {
  if (!(la > 0))
    return;
  if (!(lb > 0)) {
    std::copy(oa, oa + dv, ob);
    mb = ma;
    lb = la;
    return;
  }
  double m = std::max(ma, mb);
  double wa = std::exp(double(ma) - m) * la, wb = std::exp(double(mb) - m) * lb;
  double s = wa + wb;
  // The weights in double, the combination in float (vectorized; two
  // roundings, ~1e-7 relative).
  float ca = float(wa / s), cb = float(wb / s);
  for (int64_t e = 0; e < dv; ++e)
    ob[e] = ca * oa[e] + cb * ob[e];
  mb = float(m);
  lb = float(s);
}

/// Folds an attention sink of logit s (one more key, value 0) into a merged
/// row (o, m, l), once, after every range is merged: o scaled by
/// e^(m-M)·l / (e^(m-M)·l + e^(s-M)). A row that saw no key stays 0; a
/// sink of -inf is none.
inline void foldSink(float *o, float &m, float &l, float s, int64_t dv) {
  if (!(s > -INFINITY))
    return;
  if (!(l > 0)) {
    std::fill(o, o + dv, 0.0f);
    m = s;
    l = 1.0f;
    return;
  }
  double M = std::max<double>(m, s);
  double wa = std::exp(double(m) - M) * l, ws = std::exp(double(s) - M);
  float c = float(wa / (wa + ws));
  for (int64_t e = 0; e < dv; ++e)
    o[e] *= c;
  m = float(M);
  l = float(wa + ws);
}

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

/// Partial results of `rows` rows: out [rows, dv] and stats [rows, 2].
struct Partial {
  int64_t rows = 0, dv = 0;
  bool empty = true; ///< nothing merged yet (every row: no key)
  Buf<float> out, stats;
  /// Starts over (the buffers keep their memory: in this VM a fresh
  /// 64 MiB buffer costs 0.25 s of page faults).
  void reset(int64_t r, int64_t d) {
    rows = r;
    dv = d;
    empty = true;
  }
  /// Rows that nothing was merged into: no key, 0.
  void finish() {
    if (!empty)
      return;
    out.assign(rows * dv, 0.0f);
    stats.assign(2 * rows, 0.0f);
    for (int64_t i = 0; i < rows; ++i)
      stats[2 * i] = -INFINITY;
    empty = false;
  }
  /// The sinks [heads] (null: none) of rows [B, heads, n] folded in.
  void foldSinks(const float *sinks, int64_t heads, int64_t n) {
    if (!sinks || empty)
      return;
    for (int64_t i = 0; i < rows; ++i)
      foldSink(&out[i * dv], stats[2 * i], stats[2 * i + 1],
               sinks[(i / n) % heads], dv);
  }
  /// Merges another partial of the same rows into this one; the first is
  /// taken over as it is (swapped with the caller's buffers).
  void merge(Buf<float> &o, Buf<float> &st) {
    if (empty) {
      out.swap(o);
      stats.swap(st);
      empty = false;
      return;
    }
    for (int64_t i = 0; i < rows; ++i)
      mergeRow(&o[i * dv], st[2 * i], st[2 * i + 1], &out[i * dv],
               stats[2 * i], stats[2 * i + 1], dv);
  }
};

/// Merges every rank's rows into every rank's `out` with one
/// MPI_Allreduce on rows [max, sum, out...]. Returns the collective's
/// seconds.
/// With `sinks` [heads] (rows [B, heads, n]), each row's sink is folded in
/// once, after the merge.
double allreduceRows(MPI_Comm comm, int64_t rows, int64_t dv, float *out,
                     const float *stats, Buf<float> &packed,
                     const float *sinks = nullptr, int64_t heads = 1,
                     int64_t n = 1) {
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

/// The kind's partial kernel over one key range (`rangeStart`: each
/// sequence's position of the range's first key, which a chunked kind's
/// mask needs). Kinds with sinks get -inf (none) there: the runtime folds
/// the sinks in once, after the ranges merge (foldSink).
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

//===----------------------------------------------------------------------===//
// Paged caches built from contiguous K/V
//===----------------------------------------------------------------------===//

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Stores n float32 values at element `dst` of a pool of the kind's K/V
/// element type (4 bytes: as they are; 2: narrowed to bf16/f16 bits).
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

/// A rank's paged cache of token ranges [start[b], start[b] + len[b]) of
/// each sequence of contiguous K/V [B, Hkv, S, D], pages [numPages, Hkv, P,
/// D] of the kind's K/V element type, page ids handed out from the end of
/// the pool (so that the block table is not the identity).
struct PagedShard {
  int64_t pageSize = 16, numPages = 0, maxPages = 1, eltBytes = 4;
  int64_t hkv = 0, d = 0, dv = 0;
  std::vector<int64_t> start, len;
  Buf<unsigned char> k, v;
  std::vector<int32_t> table;

  PagedShard(const attn_rt_kind &kind, const Buf<float> &kf,
             const Buf<float> &vf, int64_t B, int64_t S,
             std::vector<int64_t> starts, std::vector<int64_t> lens, int64_t P)
      : pageSize(P), hkv(kind.num_kv_heads), d(kind.head_dim),
        dv(kind.head_dim_v), start(std::move(starts)), len(std::move(lens)) {
    eltBytes = kind.kv_dtype == ATTN_RT_KV_F32 ? 4 : 2;
    std::vector<int64_t> pages(B);
    for (int64_t b = 0; b < B; ++b) {
      pages[b] = ceilDiv(len[b], P);
      numPages += pages[b];
      maxPages = std::max(maxPages, pages[b]);
    }
    int64_t alloc = std::max<int64_t>(numPages, 1);
    k.assign(alloc * hkv * P * d * eltBytes, 0);
    v.assign(alloc * hkv * P * dv * eltBytes, 0);
    table.assign(B * maxPages, 0);
    int64_t next = numPages;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = 0; p < pages[b]; ++p)
        table[b * maxPages + p] = int32_t(--next);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < len[b]; ++j) {
        int64_t page = table[b * maxPages + j / P], row = j % P;
        for (int64_t h = 0; h < hkv; ++h) {
          int64_t src = (b * hkv + h) * S + start[b] + j;
          storeRow(kind, k, &kf[src * d], ((page * hkv + h) * P + row) * d, d);
          storeRow(kind, v, &vf[src * dv], ((page * hkv + h) * P + row) * dv,
                   dv);
        }
      }
  }

  /// The partial kernel of `kind` for q [B, Hq, Sq, D] whose first row sits
  /// at key position qPos[b] of sequence b's range -> out, stats.
  /// With `qPos` null: the kind's whole-cache paged kernel (stats
  /// untouched; the query is each sequence's last Sq tokens), with the
  /// kind's `sinks` [Hq] when it has them; the partial kernel counts none.
  void run(const attn_rt_kind &kind, Buf<float> &q,
           const std::vector<int64_t> &qs, std::vector<int64_t> *qPos,
           Buf<float> &out, Buf<float> &stats,
           const float *sinks = nullptr) {
    int64_t B = qs[0], Hq = qs[1], Sq = qs[2];
    out.resize(B * Hq * Sq * dv);
    stats.resize(B * Hq * Sq * 2);
    int64_t pool = std::max<int64_t>(numPages, 1);
    attn_rt_memref_f32_4 dout = view4(out.data(), {B, Hq, Sq, dv}),
                         ds = view4(stats.data(), {B, Hq, Sq, 2}),
                         dq = view4(q.data(), qs),
                         dk = view4(reinterpret_cast<float *>(k.data()),
                                    {pool, hkv, pageSize, d}),
                         dvv = view4(reinterpret_cast<float *>(v.data()),
                                     {pool, hkv, pageSize, dv});
    attn_rt_memref_i32_2 dt{table.data(), table.data(), 0, {B, maxPages},
                            {maxPages, 1}};
    attn_rt_memref_i64_1 dl{len.data(), len.data(), 0, {B}, {1}};
    if (!qPos && kind.has_sinks) {
      attn_rt_memref_f32_1 dsk{const_cast<float *>(sinks),
                               const_cast<float *>(sinks), 0, {Hq}, {1}};
      reinterpret_cast<attn_rt_paged_sinks_fn>(
          reinterpret_cast<void (*)(void)>(kind.paged))(
          &dout, &dq, &dk, &dvv, &dt, &dl, &dsk);
      return;
    }
    if (!qPos) {
      kind.paged(&dout, &dq, &dk, &dvv, &dt, &dl);
      return;
    }
    attn_rt_memref_i64_1 dp{qPos->data(), qPos->data(), 0, {B}, {1}},
        dr{start.data(), start.data(), 0, {B}, {1}};
    runPart(kind, &dout, &ds, &dq, &dk, &dvv, &dt, &dl, &dp, &dr);
  }
};

/// Rank r's page-aligned range [lo, hi) of a sequence of `len` tokens over
/// `ranks` ranks weighted by `weights` (empty: equal): whole pages, so a
/// short sequence leaves the last ranks empty.
std::pair<int64_t, int64_t> shardRange(int64_t len, int ranks, int r,
                                       int64_t P,
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
  int64_t p1 = r == ranks - 1
                   ? pages
                   : int64_t(std::floor(pages * (before + mine) / total + 1e-9));
  return {std::min(len, p0 * P), std::min(len, p1 * P)};
}

//===----------------------------------------------------------------------===//
// Sharded-KV decode
//===----------------------------------------------------------------------===//

struct DecodeTimes {
  double kernel = 0, collective = 0;
  int64_t bytes = 0; // the packed rows each rank contributes
};

/// One decode step of q [B, Hq, Sq, D] over sequences of `lens` tokens of
/// contiguous K/V [B, Hkv, S, D/Dv] (float32, already rounded to the kind's
/// type), sharded across `comm` by shardRange: `out` [B, Hq, Sq, Dv] on
/// every rank; `sinks` [Hq] (a kind with sinks) counted once.
DecodeTimes shardedDecode(MPI_Comm comm, const attn_rt_kind &kind,
                          Buf<float> &q, const std::vector<int64_t> &qs,
                          PagedShard *shard, const std::vector<int64_t> &lens,
                          Buf<float> &out, const float *sinks = nullptr) {
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

//===----------------------------------------------------------------------===//
// Ring-attention prefill
//===----------------------------------------------------------------------===//

/// The zig-zag assignment of S tokens to R ranks: chunk i of 2R is tokens
/// [i·S/(2R), (i+1)·S/(2R)); rank r holds chunks r and 2R-1-r, each rank's
/// K/V as one page pool (chunk 0's pages of every sequence, then chunk
/// 1's).
struct RingLayout {
  int64_t S, R, P, B, hkv, d, dv, eltBytes;
  int64_t lo(int64_t chunk) const { return chunk * S / (2 * R); }
  int64_t length(int64_t chunk) const { return lo(chunk + 1) - lo(chunk); }
  int64_t chunk(int64_t r, int w) const { return w == 0 ? r : 2 * R - 1 - r; }
  int64_t pages(int64_t r, int w) const {
    return ceilDiv(length(chunk(r, w)), P);
  }
  /// Pool pages of rank r and the first page of (chunk w, sequence b).
  int64_t poolPages(int64_t r) const { return B * (pages(r, 0) + pages(r, 1)); }
  int64_t firstPage(int64_t r, int w, int64_t b) const {
    return w == 0 ? b * pages(r, 0) : B * pages(r, 0) + b * pages(r, 1);
  }
  int64_t pageBytes(int64_t dim) const { return hkv * P * dim * eltBytes; }
  int64_t maxPoolPages() const {
    int64_t m = 1;
    for (int64_t r = 0; r < R; ++r)
      m = std::max(m, poolPages(r));
    return m;
  }
};

/// Rank r's pools from contiguous K/V [B, Hkv, S, D/Dv] (float32).
void fillRingPools(const attn_rt_kind &kind, const RingLayout &L, int64_t r,
                   const Buf<float> &kf, const Buf<float> &vf,
                   Buf<unsigned char> &k,
                   Buf<unsigned char> &v) {
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

struct RingTimes {
  double total = 0, compute = 0, exposedWait = 0;
  int64_t bytesSent = 0;
};

/// What ring attention keeps between calls: the results (acc[w]: chunk
/// w's output and statistics), a kernel's output, the pools at hand and
/// those arriving.
struct RingState {
  Partial acc[2];
  Buf<float> out, stats;
  Buf<unsigned char> k, v, kRecv, vRecv;
};

/// Ring attention of this rank's query chunks qc[0], qc[1] ([B, Hq, len,
/// D] each) over every rank's K/V: st.acc[w] gets chunk w's output and
/// statistics. `kOwn`/`vOwn` are this rank's pools. With `computeOff`, only
/// the ring's communication runs (bench's comm-alone figure).
RingTimes ringAttention(MPI_Comm comm, const attn_rt_kind &kind,
                        const RingLayout &L, Buf<float> qc[2],
                        const Buf<unsigned char> &kOwn,
                        const Buf<unsigned char> &vOwn, RingState &st,
                        bool computeOff = false,
                        const float *sinks = nullptr) {
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
    int src = (rank - step + size) % size;     // whose K/V is at hand
    int incoming = (src - 1 + size) % size;    // whose K/V arrives
    MPI_Request reqs[4];
    int nreq = 0;
    if (step + 1 < size) {
      int sendPages = int(L.poolPages(src)), recvPages = int(L.poolPages(incoming));
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
                             dvv = view4(
                                 reinterpret_cast<float *>(vPool.data()),
                                 {pool, L.hkv, L.P, L.dv});
        attn_rt_memref_i32_2 dt{table.data(), table.data(), 0, {B, pages},
                                {pages, 1}};
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

/// This rank's query chunks of q [B, Hq, S, D].
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

/// Gathers every rank's chunk outputs into out [B, Hq, S, Dv] on `root`.
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
    int64_t n = L.B * Hq *
                (L.length(L.chunk(r, 0)) + L.length(L.chunk(r, 1))) * L.dv;
    if (n > INT_MAX || total > INT_MAX)
      fail("ring attention: the output is too large to gather in one call");
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

RingLayout ringLayout(const attn_rt_kind &kind, int64_t B, int64_t S,
                      int size, int64_t P) {
  return RingLayout{S,
                    size,
                    P,
                    B,
                    kind.num_kv_heads,
                    kind.head_dim,
                    kind.head_dim_v,
                    kind.kv_dtype == ATTN_RT_KV_F32 ? 4 : 2};
}

/// Ring prefill of full q [B, Hq, S, D], K/V [B, Hkv, S, D/Dv] (every rank
/// has them; each keeps its chunks) -> out on rank 0.
RingTimes ringPrefill(MPI_Comm comm, const attn_rt_kind &kind,
                      const Buf<float> &q, const Buf<float> &k,
                      const Buf<float> &v, int64_t B, int64_t S, int64_t P,
                      Buf<float> &out, const float *sinks = nullptr) {
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

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

struct World {
  int rank = 0, size = 1;
};

/// One OpenMP thread per core this rank shares with the others of its node
/// (all of them for one rank), unless --threads says otherwise.
void pickThreads(const Args &args) {
  int threads;
  if (args.count("threads")) {
    threads = int(intArg(args, "threads", 1, 1, 4096));
  } else {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                        MPI_INFO_NULL, &node);
    int local = 1;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    threads = int(std::max<long>(1, cores / std::max(1, local)));
  }
  if (omp_set_num_threads)
    omp_set_num_threads(threads);
}

const attn_rt_kind &distributedKind(const attn_rt_model *m, int64_t layer) {
  const attn_rt_kind &kind = kindOfLayer(m, layer);
  if (kind.op != ATTN_RT_OP_SDPA || !kind.paged_part)
    fail("layer " + std::to_string(layer) + " (kind '" + kind.name +
         "') has no context-parallel kernel: " +
         (kind.op != ATTN_RT_OP_SDPA
              ? "Gated DeltaNet layers keep a constant-size state and need no "
                "sharding"
              : "T5's relative-bias layers have no paged kernels"));
  return kind;
}

/// The ranks as head shards x context shards: rank c·T + t holds head shard
/// t (KV heads [t·Hkv/T, (t+1)·Hkv/T) and their query heads) of context
/// shard c; T = the kind's tensor_parallel.
struct Topology {
  int T = 1, t = 0, C = 1, c = 0;
  MPI_Comm ctx = MPI_COMM_NULL;   ///< the C ranks of head shard t
  MPI_Comm heads = MPI_COMM_NULL; ///< the T ranks of context shard c
  attn_rt_kind local{};           ///< the kind as a rank sees it: its heads
  Topology(const attn_rt_kind &kind, const World &w) : local(kind) {
    T = int(std::max<int64_t>(1, kind.tensor_parallel));
    if (w.size % T != 0)
      fail("mpirun -np " + std::to_string(w.size) + ": kind '" + kind.name +
           "' shards its heads over --tensor-parallel=" + std::to_string(T) +
           " ranks, so the rank count must be a multiple of " +
           std::to_string(T) + " (T head shards x context shards)");
    t = w.rank % T;
    c = w.rank / T;
    C = w.size / T;
    MPI_Comm_split(MPI_COMM_WORLD, t, c, &ctx);
    MPI_Comm_split(MPI_COMM_WORLD, c, t, &heads);
    local.num_heads /= T;
    local.num_kv_heads /= T;
  }
  ~Topology() {
    MPI_Comm_free(&ctx);
    MPI_Comm_free(&heads);
  }
  Topology(const Topology &) = delete;
  Topology &operator=(const Topology &) = delete;
  /// This rank's heads [h0, h0 + local heads) of x [B, H, S, D] (H: the
  /// kind's query or KV head count).
  Buf<float> slice(const Buf<float> &x, int64_t B, int64_t H, int64_t S,
                   int64_t D) const {
    if (T == 1)
      return x;
    int64_t hn = H / T, h0 = t * hn;
    Buf<float> out(B * hn * S * D);
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(&out[b * hn * S * D], &x[((b * H) + h0) * S * D],
                  hn * S * D * sizeof(float));
    return out;
  }
  /// This rank's share of a kind's sinks [Hq] (empty: none).
  Buf<float> sliceSinks(const Buf<float> &sinks) const {
    if (sinks.empty() || T == 1)
      return sinks;
    int64_t hn = int64_t(sinks.size()) / T;
    return Buf<float>(sinks.begin() + t * hn, sinks.begin() + (t + 1) * hn);
  }
  /// The head shards' outputs [B, Hq/T, rows, Dv] of context shard 0 into
  /// out [B, Hq, rows, Dv] on world rank 0.
  void gather(const Buf<float> &part, int64_t B, int64_t Hq, int64_t rows,
              int64_t Dv, Buf<float> &out) const {
    if (c != 0)
      return;
    if (T == 1) {
      out = part;
      return;
    }
    int64_t per = B * (Hq / T) * rows * Dv;
    if (per * T > INT_MAX)
      fail("gathering the heads: the output is too large for one call");
    Buf<float> all(t == 0 ? per * T : 0);
    MPI_Gather(part.data(), int(per), MPI_FLOAT, all.data(), int(per),
               MPI_FLOAT, 0, heads);
    if (t != 0)
      return;
    int64_t hn = Hq / T, block = hn * rows * Dv;
    out.assign(B * Hq * rows * Dv, 0.0f);
    for (int64_t r = 0; r < T; ++r)
      for (int64_t b = 0; b < B; ++b)
        std::memcpy(&out[(b * Hq + r * hn) * rows * Dv],
                    &all[r * per + b * block], block * sizeof(float));
  }
};

double maxAbsDiff(const Buf<float> &a, const Buf<float> &b, double &refMax) {
  double d = 0;
  refMax = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]))
      return INFINITY;
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    refMax = std::max(refMax, std::fabs(double(b[i])));
  }
  return d;
}

/// check: the distributed kernels against the single-process kernel and
/// the float64 reference, for every kind that has them.
/// A rank's paged latent cache: token ranges [start[b], start[b] + len[b])
/// of each sequence's rows of a contiguous latent cache [B, S, row], pages
/// [numPages, P, row] of the kind's element type handed out from the end of
/// the pool.
struct LatentShard {
  int64_t pageSize = 16, numPages = 0, maxPages = 1, row = 0;
  std::vector<int64_t> start, len;
  Buf<unsigned char> pool;
  std::vector<int32_t> table;
  LatentShard(const attn_rt_kind &kind, const Buf<float> &cache, int64_t B,
              int64_t S, std::vector<int64_t> starts,
              std::vector<int64_t> lens, int64_t P)
      : pageSize(P), row(kind.kv_lora_rank + kind.rope_head_dim),
        start(std::move(starts)), len(std::move(lens)) {
    int64_t eb = kind.kv_dtype == ATTN_RT_KV_F32 ? 4 : 2;
    std::vector<int64_t> pages(B);
    for (int64_t b = 0; b < B; ++b) {
      pages[b] = ceilDiv(len[b], P);
      numPages += pages[b];
      maxPages = std::max(maxPages, pages[b]);
    }
    pool.assign(std::max<int64_t>(numPages, 1) * P * row * eb, 0);
    table.assign(B * maxPages, 0);
    int64_t next = numPages;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t p = 0; p < pages[b]; ++p)
        table[b * maxPages + p] = int32_t(--next);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < len[b]; ++j)
        storeRow(kind, pool, &cache[(b * S + start[b] + j) * row],
                 (table[b * maxPages + j / P] * P + j % P) * row, row);
  }
  /// The partial kernel with q_pos (or, `qPos` null, the whole-cache one).
  void run(const attn_rt_kind &kind, Buf<float> &q,
           const std::vector<int64_t> &qs, std::vector<int64_t> *qPos,
           Buf<float> &out, Buf<float> &stats) {
    int64_t B = qs[0], H = qs[1], Sq = qs[2], r = kind.kv_lora_rank;
    out.resize(B * H * Sq * r);
    stats.resize(B * H * Sq * 2);
    attn_rt_memref_f32_4 dout = view4(out.data(), {B, H, Sq, r}),
                         ds = view4(stats.data(), {B, H, Sq, 2}),
                         dq = view4(q.data(), qs);
    attn_rt_memref_f32_3 dp =
        view3(reinterpret_cast<float *>(pool.data()),
              {std::max<int64_t>(numPages, 1), pageSize, row});
    attn_rt_memref_i32_2 dt{table.data(), table.data(), 0, {B, maxPages},
                            {maxPages, 1}};
    attn_rt_memref_i64_1 dl{len.data(), len.data(), 0, {B}, {1}};
    if (!qPos) {
      kind.mla_paged(&dout, &dq, &dp, &dt, &dl);
      return;
    }
    attn_rt_memref_i64_1 dq1{qPos->data(), qPos->data(), 0, {B}, {1}};
    kind.mla_paged_part(&dout, &ds, &dq, &dp, &dt, &dl, &dq1);
  }
};

/// check's sharded latent decode for one multi-head latent attention kind:
/// each rank's page-aligned range of every sequence's latent rows, the
/// partial kernels merged by one MPI_Allreduce, against the single-process
/// paged kernel and a float64 reference (rank 0 prints).
bool checkLatentMpi(const attn_rt_kind &kind, const World &w, int64_t P,
                    std::mt19937 &rng) {
  int64_t H = kind.num_heads, r = kind.kv_lora_rank,
          row = kind.kv_lora_rank + kind.rope_head_dim;
  struct Case {
    std::vector<int64_t> lens;
    int64_t sq;
    float qScale;
  };
  const Case cases[] = {{{0, 1, 5, 40, 203}, 1, 1.0f},
                        {{3, 17, 100}, 3, 1.0f},
                        {{64, 257}, 1, 20.0f}};
  bool allOk = true;
  for (const Case &c : cases) {
    int64_t B = int64_t(c.lens.size()), S = 1;
    for (int64_t l : c.lens)
      S = std::max(S, l);
    std::vector<int64_t> qs = {B, H, c.sq, row};
    Buf<float> q = randomVec(rng, B * H * c.sq * row, c.qScale),
               cache = randomVec(rng, B * S * row, 1.0f);
    roundToKV(kind, cache);
    std::vector<int64_t> starts(B), lens(B), qPos(B);
    for (int64_t b = 0; b < B; ++b) {
      auto [lo, hi] = shardRange(c.lens[b], w.size, w.rank, P, {});
      starts[b] = lo;
      lens[b] = hi - lo;
      qPos[b] = c.lens[b] - c.sq - lo;
    }
    LatentShard shard(kind, cache, B, S, starts, lens, P);
    Buf<float> out, stats, packed;
    shard.run(kind, q, qs, &qPos, out, stats);
    allreduceRows(MPI_COMM_WORLD, B * H * c.sq, r, out.data(), stats.data(),
                  packed);
    if (w.rank != 0)
      continue;
    std::vector<int64_t> zero(B, 0);
    LatentShard whole(kind, cache, B, S, zero, c.lens, P);
    Buf<float> kOut, unused, ref;
    whole.run(kind, q, qs, nullptr, kOut, unused);
    attn_rt_kind a = kind;
    a.num_kv_heads = 1;
    a.head_dim = row;
    a.head_dim_v = r;
    Buf<float> v(B * S * r);
    for (int64_t i = 0; i < B * S; ++i)
      std::copy_n(&cache[i * row], r, &v[i * r]);
    std::vector<int64_t> qStart(B);
    for (int64_t b = 0; b < B; ++b)
      qStart[b] = c.lens[b] - c.sq;
    referenceF64(a, q, qs, cache, {B, 1, S, row}, v, {B, 1, S, r}, c.lens,
                 kind.scale, 0.0, ref, &qStart);
    double kMax, refMax;
    double relK = maxAbsDiff(out, kOut, kMax) / std::max(kMax, 1e-30);
    double relR = maxAbsDiff(out, ref, refMax) / std::max(refMax, 1e-30);
    bool ok = relK <= 1e-6 && relR <= 1e-5;
    allOk = allOk && ok;
    std::string lensStr;
    for (int64_t l : c.lens)
      lensStr += (lensStr.empty() ? "" : ",") + std::to_string(l);
    std::printf("%s %s latent decode Sq=%lld lengths=%s%s np=%d: vs "
                "1-process kernel %.2e, vs float64 %.2e (relative to max "
                "|ref| %.3g)\n",
                ok ? "ok  " : "FAIL", kind.name, (long long)c.sq,
                lensStr.c_str(), c.qScale > 1 ? " extreme logits" : "", w.size,
                relK, relR, refMax);
  }
  return allOk;
}

int cmdCheck(const attn_rt_model *m, const World &w, int argc, char **argv) {
  Args args = parseArgs(argc, argv, 2, {"seed", "page-size", "threads"});
  pickThreads(args);
  int64_t seed = intArg(args, "seed", 1, 0, INT64_MAX);
  int64_t P = intArg(args, "page-size", 16, 1, 1 << 20);
  bool allOk = true;
  int kinds = 0;
  for (int64_t ki = 0; ki < m->num_kinds; ++ki) {
    const attn_rt_kind &kind = m->kinds[ki];
    if (kind.mla_paged_part) {
      ++kinds;
      std::mt19937 rng(uint32_t(seed * 7919 + ki));
      allOk = checkLatentMpi(kind, w, P, rng) && allOk;
      continue;
    }
    if (kind.op != ATTN_RT_OP_SDPA || !kind.paged_part)
      continue;
    ++kinds;
    std::mt19937 rng(uint32_t(seed * 7919 + ki));
    int64_t Hq = kind.num_heads, Hkv = kind.num_kv_heads, D = kind.head_dim,
            Dv = kind.head_dim_v;
    // Bounds: the single-process kernel (same arithmetic, another order of
    // the sums) and the float64 reference, relative to max |reference|.
    const double kernelTol = 1e-6, refTol = 1e-5;
    auto report = [&](const std::string &what, const Buf<float> &got,
                      const Buf<float> &kernel, const Buf<float> &ref) {
      if (w.rank != 0)
        return;
      double refMax, kMax;
      double dk = maxAbsDiff(got, kernel, kMax);
      double dr = maxAbsDiff(got, ref, refMax);
      double relK = dk / std::max(kMax, 1e-30),
             relR = dr / std::max(refMax, 1e-30);
      bool ok = relK <= kernelTol && relR <= refTol;
      allOk = allOk && ok;
      int T = int(std::max<int64_t>(1, kind.tensor_parallel));
      std::printf("%s %s %s np=%d (%d head x %d context shards): vs "
                  "1-process kernel %.2e, vs float64 %.2e (relative to max "
                  "|ref| %.3g)\n",
                  ok ? "ok  " : "FAIL", kind.name, what.c_str(), w.size, T,
                  w.size / T, relK, relR, refMax);
    };
    // Sharded-KV decode: lengths that leave ranks empty (1, 5 tokens with
    // pages of 16), equal and unequal shards, speculative rows, extreme
    // logits.
    struct DecodeCase {
      std::vector<int64_t> lens;
      int64_t sq;
      bool unequal;
      float qScale;
    };
    std::vector<DecodeCase> decodeCases = {
        {{0, 1, 5, 40, 203}, 1, false, 1.0f},
        {{3, 17, 100, 1000}, 3, true, 1.0f},
        {{64, 257}, 1, false, 40.0f},
    };
    for (const DecodeCase &c : decodeCases) {
      int64_t B = int64_t(c.lens.size()), S = 0;
      for (int64_t l : c.lens)
        S = std::max(S, l);
      std::vector<int64_t> qs = {B, Hq, c.sq, D};
      Buf<float> q = randomVec(rng, B * Hq * c.sq * D, c.qScale),
                 k = randomVec(rng, B * Hkv * S * D, 1.0f),
                 v = randomVec(rng, B * Hkv * S * Dv, 1.0f);
      roundToKV(kind, k);
      roundToKV(kind, v);
      // Sinks: ordinary, very large, very negative and -inf ones.
      Buf<float> sinks =
          kind.has_sinks ? randomExtraInput(kind, rng) : Buf<float>();
      Topology tp(kind, w);
      Buf<float> lsinks = tp.sliceSinks(sinks);
      std::vector<double> weights;
      if (c.unequal)
        for (int r = 0; r < tp.C; ++r)
          weights.push_back(r + 1.0);
      PagedShard shard = makeDecodeShard(
          tp.ctx, tp.local, tp.slice(k, B, Hkv, S, D),
          tp.slice(v, B, Hkv, S, Dv), B, S, c.lens, P, weights);
      Buf<float> qt = tp.slice(q, B, Hq, c.sq, D), part, out;
      std::vector<int64_t> qts = {B, tp.local.num_heads, c.sq, D};
      shardedDecode(tp.ctx, tp.local, qt, qts, &shard, c.lens, part,
                    lsinks.empty() ? nullptr : lsinks.data());
      tp.gather(part, B, Hq, c.sq, Dv, out);
      if (w.rank == 0) {
        // The single-process kernel over the whole cache (the partial
        // kernel on all of it is the same loop nest; the paged entry is
        // the one serving uses).
        std::vector<int64_t> zero(B, 0);
        PagedShard whole(kind, k, v, B, S, zero, c.lens, P);
        Buf<float> kOut, unused, ref;
        whole.run(kind, q, qs, /*qPos=*/nullptr, kOut, unused, sinks.data());
        std::vector<int64_t> qStart(B);
        for (int64_t b = 0; b < B; ++b)
          qStart[b] = c.lens[b] - c.sq;
        referenceF64(kind, q, qs, k, {B, Hkv, S, D}, v, {B, Hkv, S, Dv},
                     c.lens, kind.scale, kind.softcap, ref, &qStart,
                     kind.has_sinks ? &sinks : nullptr);
        std::string lensStr;
        for (int64_t l : c.lens)
          lensStr += (lensStr.empty() ? "" : ",") + std::to_string(l);
        report("decode Sq=" + std::to_string(c.sq) + " lengths=" + lensStr +
                   (c.unequal ? " unequal shards" : " equal shards") +
                   (c.qScale > 1 ? " extreme logits" : ""),
               out, kOut, ref);
      }
    }
    // Ring prefill: S not divisible by 2R, S smaller than 2R (empty
    // chunks).
    for (auto [B, S] : {std::pair<int64_t, int64_t>{2, 67}, {1, 3}, {1, 300}}) {
      std::vector<int64_t> qs = {B, Hq, S, D};
      Buf<float> q = randomVec(rng, B * Hq * S * D, 1.0f),
                 k = randomVec(rng, B * Hkv * S * D, 1.0f),
                 v = randomVec(rng, B * Hkv * S * Dv, 1.0f);
      roundToKV(kind, k);
      roundToKV(kind, v);
      Buf<float> sinks =
          kind.has_sinks ? randomExtraInput(kind, rng) : Buf<float>();
      Topology tp(kind, w);
      Buf<float> part, out, lsinks = tp.sliceSinks(sinks);
      ringPrefill(tp.ctx, tp.local, tp.slice(q, B, Hq, S, D),
                  tp.slice(k, B, Hkv, S, D), tp.slice(v, B, Hkv, S, Dv), B, S,
                  P, part, lsinks.empty() ? nullptr : lsinks.data());
      tp.gather(part, B, Hq, S, Dv, out);
      if (w.rank == 0) {
        std::vector<int64_t> lens(B, S);
        Buf<float> kOut, ref;
        Buf<float> qq = q, kk = k, vv = v;
        run(kind.fused, kind, qq, qs, kk, {B, Hkv, S, D}, vv,
            {B, Hkv, S, Dv}, lens, kind.has_sinks ? &sinks : nullptr, kOut);
        referenceF64(kind, q, qs, k, {B, Hkv, S, D}, v, {B, Hkv, S, Dv}, lens,
                     kind.scale, kind.softcap, ref, nullptr,
                     kind.has_sinks ? &sinks : nullptr);
        report("ring prefill B=" + std::to_string(B) +
                   " S=" + std::to_string(S) + (kind.causal ? " causal" : " bidirectional"),
               out, kOut, ref);
      }
    }
  }
  int ok = allOk ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (w.rank == 0) {
    if (kinds == 0)
      std::printf("check: no layer kind has context-parallel kernels\n");
    else
      std::printf("check: %s (np=%d)\n",
                  ok ? "the distributed kernels match" : "MISMATCH", w.size);
  }
  return ok ? 0 : 1;
}

/// Reads a float32 array, or a 16-bit K/V array of the kind's type widened
/// to float32 (exactly).
Buf<float> readArray(const attn_rt_kind &kind, const std::string &path,
                     const char *name, bool isKV, std::vector<int64_t> &shape) {
  NpyArray a;
  std::string err;
  if (!readNpy(path, a, err))
    fail(err);
  std::string want = !isKV || kind.kv_dtype == ATTN_RT_KV_F32 ? "f4"
                     : kind.kv_dtype == ATTN_RT_KV_F16        ? "f2"
                                                              : "u2";
  if (a.dtype != want)
    fail(path + ": dtype " + a.dtypeName() + "; --" + name + " must be " +
         (want == "f4"   ? "float32"
          : want == "f2" ? "float16 ('<f2')"
                         : "bfloat16 bits as uint16 ('<u2')"));
  if (a.shape.size() != 4)
    fail(path + ": shape " + shapeStr(a.shape) + "; --" + name +
         " must have rank 4");
  shape = a.shape;
  if (want == "f4")
    return std::move(a.f32);
  Buf<float> f(a.u16.size());
  bool half = kind.kv_dtype == ATTN_RT_KV_F16;
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = widenBits(a.u16[i], half);
  return f;
}

int cmdSdpa(const attn_rt_model *m, const World &w, int argc, char **argv) {
  Args args = parseArgs(argc, argv, 2,
                        {"layer", "q", "k", "v", "out", "kv-lengths", "mode",
                         "page-size", "threads", "sinks"});
  for (const char *req : {"layer", "q", "k", "v", "out", "mode"})
    if (!args.count(req))
      fail(std::string("sdpa needs --") + req +
           (std::string(req) == "mode"
                ? " (decode: the KV cache sharded by sequence position, the "
                  "query replicated; ring: Q, K and V sharded, ring "
                  "attention)"
                : ""));
  pickThreads(args);
  std::string mode = args["mode"];
  if (mode != "decode" && mode != "ring")
    fail("--mode " + mode + ": accepted: decode, ring");
  const attn_rt_kind &kind =
      distributedKind(m, intArg(args, "layer", 0, 0, 1 << 30));
  int64_t P = intArg(args, "page-size", 16, 1, 1 << 20);
  std::vector<int64_t> qs, ks, vs;
  Buf<float> q = readArray(kind, args["q"], "q", false, qs),
             k = readArray(kind, args["k"], "k", true, ks),
             v = readArray(kind, args["v"], "v", true, vs);
  int64_t B = qs[0], S = ks[2];
  if (qs[1] != kind.num_heads || qs[3] != kind.head_dim ||
      ks != std::vector<int64_t>{B, kind.num_kv_heads, S, kind.head_dim} ||
      vs != std::vector<int64_t>{B, kind.num_kv_heads, S, kind.head_dim_v})
    fail("shapes q " + shapeStr(qs) + ", k " + shapeStr(ks) + ", v " +
         shapeStr(vs) + "; layer kind '" + kind.name + "' takes q [B, " +
         std::to_string(kind.num_heads) + ", Sq, " +
         std::to_string(kind.head_dim) + "], k [B, " +
         std::to_string(kind.num_kv_heads) + ", Skv, " +
         std::to_string(kind.head_dim) + "], v [B, " +
         std::to_string(kind.num_kv_heads) + ", Skv, " +
         std::to_string(kind.head_dim_v) + "]");
  Buf<float> sinks = readSinks(kind, args);
  // Every rank must hold the same inputs: their shapes and a hash of their
  // values agree, or every rank stops with the same error (a rank given
  // other files would abort inside MPI or merge a wrong result).
  {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](const void *p, size_t n) {
      auto *c = static_cast<const unsigned char *>(p);
      for (size_t i = 0; i < n; ++i)
        h = (h ^ c[i]) * 1099511628211ull;
    };
    for (const Buf<float> *a : {&q, &k, &v, &sinks})
      mix(a->data(), a->size() * sizeof(float));
    std::vector<int64_t> sig = qs;
    sig.insert(sig.end(), ks.begin(), ks.end());
    sig.insert(sig.end(), vs.begin(), vs.end());
    sig.push_back(int64_t(h & 0x7fffffffffffffffull));
    sig.push_back(int64_t(args.count("kv-lengths") ? 1 : 0));
    std::vector<int64_t> lo(sig.size()), hi(sig.size());
    MPI_Allreduce(sig.data(), lo.data(), int(sig.size()), MPI_INT64_T, MPI_MIN,
                  MPI_COMM_WORLD);
    MPI_Allreduce(sig.data(), hi.data(), int(sig.size()), MPI_INT64_T, MPI_MAX,
                  MPI_COMM_WORLD);
    if (lo != hi)
      fail("the ranks were given different inputs (--q, --k, --v or "
           "--sinks differ in shape or values between ranks; this rank's q " +
           shapeStr(qs) + ", k " + shapeStr(ks) + ", v " + shapeStr(vs) +
           "): every rank reads the same arrays");
  }
  Buf<float> out;
  std::vector<int64_t> outShape = {B, kind.num_heads, qs[2], kind.head_dim_v};
  if (mode == "decode") {
    std::vector<int64_t> lens(B, S);
    if (args.count("kv-lengths")) {
      NpyArray l;
      std::string err;
      if (!readNpy(args["kv-lengths"], l, err))
        fail(err);
      if (l.dtype != "i8" || l.shape != std::vector<int64_t>{B})
        fail(args["kv-lengths"] + ": --kv-lengths must be int64 [B = " +
             std::to_string(B) + "], got " + l.dtypeName() + " " +
             shapeStr(l.shape));
      lens = l.i64;
      for (int64_t b = 0; b < B; ++b)
        if (lens[b] < qs[2] || lens[b] > S)
          fail(args["kv-lengths"] + ": length " + std::to_string(lens[b]) +
               " of sequence " + std::to_string(b) +
               " is outside [Sq, Skv] = [" + std::to_string(qs[2]) + ", " +
               std::to_string(S) + "] (its query rows are its last Sq tokens)");
    } else if (qs[2] > S) {
      fail("q has " + std::to_string(qs[2]) + " rows and K/V " +
           std::to_string(S) + " tokens: decode's query rows are the "
           "sequence's last Sq tokens");
    }
    Topology tp(kind, w);
    PagedShard shard = makeDecodeShard(
        tp.ctx, tp.local, tp.slice(k, B, kind.num_kv_heads, S, kind.head_dim),
        tp.slice(v, B, kind.num_kv_heads, S, kind.head_dim_v), B, S, lens, P,
        {});
    Buf<float> qt = tp.slice(q, B, kind.num_heads, qs[2], qs[3]), part;
    std::vector<int64_t> qts = {B, tp.local.num_heads, qs[2], qs[3]};
    Buf<float> lsinks = tp.sliceSinks(sinks);
    shardedDecode(tp.ctx, tp.local, qt, qts, &shard, lens, part,
                  lsinks.empty() ? nullptr : lsinks.data());
    tp.gather(part, B, kind.num_heads, qs[2], kind.head_dim_v, out);
  } else {
    if (qs[2] != S)
      fail("--mode ring: q has " + std::to_string(qs[2]) +
           " rows and K/V " + std::to_string(S) +
           ": ring attention shards one sequence of S tokens (Sq = Skv)");
    Topology tp(kind, w);
    Buf<float> part, lsinks = tp.sliceSinks(sinks);
    ringPrefill(tp.ctx, tp.local,
                tp.slice(q, B, kind.num_heads, S, kind.head_dim),
                tp.slice(k, B, kind.num_kv_heads, S, kind.head_dim),
                tp.slice(v, B, kind.num_kv_heads, S, kind.head_dim_v), B, S, P,
                part, lsinks.empty() ? nullptr : lsinks.data());
    tp.gather(part, B, kind.num_heads, S, kind.head_dim_v, out);
  }
  int ok = 1;
  if (w.rank == 0) {
    std::string err;
    NpyOutputs outs;
    outs.add(args["out"], outShape, out.data());
    if (!outs.commit(inputsOf(args, {"out"}), err)) {
      std::fprintf(stderr, "error: %s\n", err.c_str());
      ok = 0;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok ? 0 : 1;
}

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The largest of every rank's value (the step waits for the slowest).
double maxOverRanks(double x) {
  double y;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return y;
}

/// The read bandwidth of all ranks together (GB/s): each rank sums its own
/// 256 MiB buffer at the same time (median of 5, slowest rank's time).
double probeReadBandwidth() {
  std::vector<uint64_t> buf(size_t(32) << 20);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = i * 0x9E3779B97F4A7C15ull;
  std::vector<double> gbs;
  uint64_t sink = 0;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int threads = std::max(1, ompThreads());
  std::vector<uint64_t> sums(threads);
  for (int r = 0; r < 6; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    // This rank's threads (its cores), each on its slice.
    std::vector<std::thread> pool;
    for (int th = 0; th < threads; ++th)
      pool.emplace_back([&, th] {
        size_t n = buf.size() / threads, lo = th * n;
        uint64_t a[8] = {};
        for (size_t i = lo; i + 8 <= lo + n; i += 8)
          for (int j = 0; j < 8; ++j)
            a[j] += buf[i + j];
        for (uint64_t x : a)
          sums[th] += x;
      });
    for (std::thread &t : pool)
      t.join();
    for (uint64_t x : sums)
      sink += x;
    double t = maxOverRanks(now() - t0);
    if (r > 0)
      gbs.push_back(double(buf.size()) * 8 * size / t / 1e9);
  }
  if (sink == 42)
    std::printf(" ");
  return medianOf(gbs);
}

int cmdBench(const attn_rt_model *m, const World &w, int argc, char **argv) {
  Args args = parseArgs(argc, argv, 2,
                        {"layer", "kv-len", "batch", "seq", "page-size",
                         "repeats", "threads"});
  pickThreads(args);
  int64_t layer = -1;
  if (args.count("layer"))
    layer = intArg(args, "layer", 0, 0, 1 << 30);
  else
    for (int64_t i = 0; i < m->num_layers && layer < 0; ++i)
      if (m->layer_kind[i] >= 0 && m->kinds[m->layer_kind[i]].paged_part)
        layer = i;
  if (layer < 0)
    fail("bench: no layer has context-parallel kernels");
  const attn_rt_kind &kind = distributedKind(m, layer);
  int64_t N = intArg(args, "kv-len", 32768, 1, int64_t(1) << 40),
          B = intArg(args, "batch", 1, 1, 1 << 20),
          S = intArg(args, "seq", 4096, 1, int64_t(1) << 30),
          P = intArg(args, "page-size", 256, 1, 1 << 20),
          repeats = intArg(args, "repeats", 9, 1, 100000);
  int64_t Hq = kind.num_heads, Hkv = kind.num_kv_heads, D = kind.head_dim,
          Dv = kind.head_dim_v;
  Topology tp(kind, w);
  // Each rank's heads: the ring and the decode shards run within tp.ctx.
  const attn_rt_kind &lk = tp.local;
  int64_t lHq = lk.num_heads, lHkv = lk.num_kv_heads;
  // What each rank allocates, checked before any of it: the prefill's q,
  // K/V and their pools and outputs; the decode's contiguous K/V and its
  // paged copy.
  {
    std::string err;
    unsigned __int128 prefill =
        (unsigned __int128)4 * B * S * (3 * lHq * (D + Dv) + 3 * lHkv * (D + Dv));
    unsigned __int128 decode =
        (unsigned __int128)4 * B * (N + P) * lHkv * (D + Dv) * 2;
    int bad = !fitsInMemory(prefill, "bench's prefill of --seq " +
                                         std::to_string(S) + " tokens",
                            err) ||
              !fitsInMemory(decode, "bench's decode over --kv-len " +
                                        std::to_string(N) + " tokens",
                            err);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any)
      fail(bad ? err : "another rank cannot hold bench's tensors");
  }
  std::mt19937 rng(7);
  // A kind with sinks runs with its rank's share of random ones (folded
  // into the merged rows, as serving does).
  Buf<float> sinks = tp.sliceSinks(kind.has_sinks ? randomExtraInput(kind, rng)
                                                  : Buf<float>());
  const float *sk = sinks.empty() ? nullptr : sinks.data();
  double bandwidth = probeReadBandwidth();
  if (w.rank == 0) {
    std::string cpu = "unknown CPU";
    if (FILE *f = std::fopen("/proc/cpuinfo", "r")) {
      char line[512];
      while (std::fgets(line, sizeof(line), f))
        if (!std::strncmp(line, "model name", 10)) {
          cpu = std::string(std::strchr(line, ':') + 2);
          cpu.erase(cpu.find_last_not_of(" \n") + 1);
          break;
        }
      std::fclose(f);
    }
    std::printf("bench: layer %lld (kind '%s', Hq %lld, Hkv %lld, d %lld, K/V "
                "%s), np=%d = %d head shard(s) x %d context shard(s), %d "
                "thread(s) per rank; %s, read bandwidth of all ranks "
                "together %.1f GB/s\n",
                (long long)layer, kind.name, (long long)Hq, (long long)Hkv,
                (long long)D, kvDtypeName(kind), w.size, tp.T, tp.C,
                ompThreads(), cpu.c_str(), bandwidth);
  }
  // Prefill: ring attention over S tokens.
  {
    Buf<float> q = randomVec(rng, B * lHq * S * D, 1.0f),
               k = randomVec(rng, B * lHkv * S * D, 1.0f),
               v = randomVec(rng, B * lHkv * S * Dv, 1.0f);
    RingLayout L = ringLayout(lk, B, S, tp.C, P);
    Buf<float> qc[2];
    ringQueries(L, lHq, tp.c, q, qc);
    Buf<unsigned char> kPool(L.maxPoolPages() * L.pageBytes(L.d)),
        vPool(L.maxPoolPages() * L.pageBytes(L.dv));
    fillRingPools(lk, L, tp.c, k, v, kPool, vPool);
    RingState st;
    std::vector<double> total, compute, wait, comm;
    RingTimes t{};
    for (int64_t r = 0; r <= repeats; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      t = ringAttention(tp.ctx, lk, L, qc, kPool, vPool, st, false, sk);
      double tt = maxOverRanks(t.total), tc = maxOverRanks(t.compute),
             tw = maxOverRanks(t.exposedWait);
      MPI_Barrier(MPI_COMM_WORLD);
      RingTimes c = ringAttention(tp.ctx, lk, L, qc, kPool, vPool,
                                  st, /*computeOff=*/true);
      double tcomm = maxOverRanks(c.total);
      if (r == 0)
        continue;
      total.push_back(tt * 1e3);
      compute.push_back(tc * 1e3);
      wait.push_back(tw * 1e3);
      comm.push_back(tcomm * 1e3);
    }
    // Causal FLOP: the visible (i, j) pairs, 2·(D + Dv) each per head.
    double pairs = kind.causal ? double(S) * (S + 1) / 2 : double(S) * S;
    double flop = 2.0 * pairs * (D + Dv) * Hq * B;
    double ms = medianOf(total), commMs = medianOf(comm),
           waitMs = medianOf(wait);
    double hidden = commMs > 0 ? std::clamp(1.0 - waitMs / commMs, 0.0, 1.0)
                               : 1.0;
    if (w.rank == 0) {
      std::printf("prefill (ring, zig-zag chunks): B=%lld S=%lld, %s\n",
                  (long long)B, (long long)S,
                  kind.causal ? "causal" : "bidirectional");
      std::printf("  %.3f ms (%.1f GFLOP/s over all ranks): compute %.3f ms "
                  "(slowest rank), exposed wait %.3f ms; the ring's "
                  "communication alone %.3f ms (%lld bytes sent per rank): "
                  "%.0f%% of it hidden behind compute\n",
                  ms, flop / (ms * 1e-3) / 1e9, medianOf(compute), waitMs,
                  commMs, (long long)t.bytesSent, hidden * 100);
    }
  }
  // Decode: B sequences of N tokens, one query row each.
  {
    std::vector<int64_t> qs = {B, lHq, 1, D}, lens(B, N);
    Buf<float> q = randomVec(rng, B * lHq * D, 1.0f),
               k = randomVec(rng, B * lHkv * N * D, 1.0f),
               v = randomVec(rng, B * lHkv * N * Dv, 1.0f);
    PagedShard shard =
        makeDecodeShard(tp.ctx, lk, k, v, B, N, lens, P, {});
    k = {};
    v = {};
    Buf<float> out;
    std::vector<double> step, kern, coll;
    DecodeTimes t{};
    for (int64_t r = 0; r <= repeats; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now();
      t = shardedDecode(tp.ctx, lk, q, qs, &shard, lens, out, sk);
      double total = now() - t0;
      double slowKernel = maxOverRanks(t.kernel);
      if (r == 0)
        continue; // warm-up
      step.push_back(maxOverRanks(total) * 1e3);
      kern.push_back(slowKernel * 1e3);
      // The collective alone, every rank ready (in the step it also waits
      // for the slowest rank's kernel).
      Buf<float> o2(out.size()), st2(out.size() / Dv * 2), packed;
      MPI_Barrier(MPI_COMM_WORLD);
      coll.push_back(maxOverRanks(allreduceRows(tp.ctx,
                                                int64_t(st2.size() / 2), Dv,
                                                o2.data(), st2.data(),
                                                packed)) *
                     1e3);
    }
    int64_t localTokens = 0;
    for (int64_t b = 0; b < B; ++b)
      localTokens += shard.len[b];
    double kvBytes = double(localTokens) * lHkv * (D + Dv) *
                     (kind.kv_dtype == ATTN_RT_KV_F32 ? 4 : 2);
    double kms = medianOf(kern);
    if (w.rank == 0) {
      std::printf("decode: B=%lld, %lld tokens per sequence in pages of %lld, "
                  "%lld tokens of K/V per rank (%.1f MB)\n",
                  (long long)B, (long long)N, (long long)P,
                  (long long)localTokens, kvBytes / 1e6);
      double rate = kvBytes * w.size / (kms * 1e-3) / 1e9;
      std::printf("  step %.3f ms = local kernel %.3f ms (slowest rank; all "
                  "ranks read K+V at %.1f GB/s, %.0f%% of the bandwidth) + "
                  "allreduce %.3f ms (%.1f%% of the step); each rank "
                  "contributes %lld bytes of packed rows (%lld rows x (Dv + "
                  "2) floats)\n",
                  medianOf(step), kms, rate, 100 * rate / bandwidth,
                  medianOf(coll), 100 * medianOf(coll) / medianOf(step),
                  (long long)t.bytes, (long long)(B * lHq));
    }
  }
  return 0;
}

} // namespace

extern "C" int attn_rt_mpi_main(const attn_rt_model *m, int argc,
                                char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  // The kernels allocate their tiles' scratch at each call. In an MPI
  // process glibc's malloc no longer raises its mmap threshold after the
  // first free of such a block, so every call mapped fresh pages, and page
  // faults cost ~16 us each in this VM: kernels ran 3-7x slower than in a
  // single process (measured: a 512-row causal ring step 460 ms instead of
  // 65). Blocks up to 32 MiB come from the heap and stay there.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  std::string cmd = argv[1];
  int rc;
  if (cmd == "check")
    rc = cmdCheck(m, w, argc, argv);
  else if (cmd == "sdpa")
    rc = cmdSdpa(m, w, argc, argv);
  else
    rc = cmdBench(m, w, argc, argv);
  MPI_Finalize();
  return rc;
}

using attn_rt::guardCall;

namespace {

/// The collective of attn_decode_paged_mpi and attn_decode_latent_mpi:
/// `partial(o, s)` runs this rank's partial call into scratch tensors of
/// out's shape (so that a failure on another rank leaves `out` untouched)
/// and the row statistics; every rank learns whether any failed, then the
/// rows merge by log-sum-exp into every rank's `out`. `dv` is the rows'
/// width (the kind's head_dim_v, or its latent rank).
template <typename F>
attn_status decodeOverRanks(const char *call, const attn_model *model,
                            int32_t kind, MPI_Comm comm, attn_tensor *out,
                            bool latent, F partial) {
  attn_kind_info info;
  attn_status status = ATTN_OK;
  if (!out)
    status = ATTN_ERR_ARGUMENT;
  else
    status = attn_kind_get_info(model, kind, &info);
  // A kind's sinks, folded into the merged rows once (the partial kernels
  // count none): set for out's query heads.
  const float *sinks = nullptr;
  if (status == ATTN_OK && !latent && out->rank == 4)
    status = attn_rt::sinksForCall(model, kind, call, out->shape[1], sinks);
  Buf<float> part, stats;
  int64_t rows = 0, dv = 0;
  if (status == ATTN_OK) {
    bool contiguous = out->rank == 4 && out->dtype == ATTN_F32;
    int64_t stride = 1;
    for (int i = 3; contiguous && i >= 0; --i) {
      contiguous = out->shape[i] >= 0 &&
                   (out->shape[i] == 1 || out->strides[i] == stride);
      stride *= out->shape[i];
    }
    if (!contiguous) {
      status = ATTN_ERR_SHAPE;
      setLastError(std::string(call) + ": out must be a row-major "
                   "contiguous [B, " + (latent ? "H, Sq, r" : "Hq, Sq, Dv") +
                   "] ATTN_F32 tensor");
    }
  }
  if (status == ATTN_OK) {
    // out's head count is checked by the partial call (on its scratch of
    // the same shape): the kind's, or one rank's share with
    // --tensor-parallel (the communicator is then one head shard's ranks).
    int64_t hq = out->shape[1];
    rows = out->shape[0] * hq * out->shape[2];
    dv = latent ? info.latent_rank : info.head_dim_v;
    if (out->shape[3] != dv) {
      status = ATTN_ERR_SHAPE;
      setLastError(std::string(call) + ": out has " +
                   (latent ? "width " : "Dv ") +
                   std::to_string(out->shape[3]) + "; the kind's is " +
                   std::to_string(dv));
    } else {
      try {
        part.assign(rows * dv, 0.0f);
        stats.assign(rows * 2, 0.0f);
      } catch (const std::exception &) {
        status = ATTN_ERR_MEMORY;
        setLastError(std::string(call) + ": no memory for the partial "
                     "rows of out " +
                     std::to_string(rows) + " x " + std::to_string(dv));
      }
    }
    if (status == ATTN_OK) {
      int64_t os[4] = {out->shape[0], hq, out->shape[2], dv};
      int64_t ss[4] = {out->shape[0], hq, out->shape[2], 2};
      attn_tensor o = attn_tensor_contiguous(part.data(), ATTN_F32, 4, os);
      attn_tensor s = attn_tensor_contiguous(stats.data(), ATTN_F32, 4, ss);
      status = partial(&o, &s);
    }
  } else if (!out) {
    setLastError(std::string(call) + ": out is NULL");
  }
  // Every rank learns whether any failed before the data collective.
  int mine = int(status), worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm);
  if (worst != ATTN_OK) {
    if (status == ATTN_OK)
      setLastError(std::string(call) + ": another rank of the "
                   "communicator failed its checks (status " +
                   std::to_string(worst) + "); nothing was written");
    return attn_status(worst);
  }
  Buf<float> packed;
  allreduceRows(comm, rows, dv, part.data(), stats.data(), packed, sinks,
                out->shape[1], out->shape[2]);
  std::memcpy(out->data, part.data(), part.size() * sizeof(float));
  return ATTN_OK;
}

} // namespace

extern "C" attn_status
attn_decode_paged_mpi(const attn_model *model, int32_t kind, MPI_Comm comm,
                      const attn_tensor *q, const attn_tensor *k_cache,
                      const attn_tensor *v_cache,
                      const attn_tensor *block_table,
                      const int64_t *kv_lengths, const int64_t *q_pos,
                      const int64_t *range_start, attn_tensor *out) {
  return guardCall("attn_decode_paged_mpi", [&]() -> attn_status {
  return decodeOverRanks(
      "attn_decode_paged_mpi", model, kind, comm, out, /*latent=*/false,
      [&](attn_tensor *o, attn_tensor *s) {
        return attn_decode_paged_part(model, kind, q, k_cache, v_cache,
                                      block_table, kv_lengths, q_pos,
                                      range_start, o, s);
      });
});
}

extern "C" attn_status
attn_decode_latent_mpi(const attn_model *model, int32_t kind, MPI_Comm comm,
                       const attn_tensor *q, const attn_tensor *latent_cache,
                       const attn_tensor *block_table,
                       const int64_t *kv_lengths, const int64_t *q_pos,
                       attn_tensor *out) {
  return guardCall("attn_decode_latent_mpi", [&]() -> attn_status {
  return decodeOverRanks(
      "attn_decode_latent_mpi", model, kind, comm, out, /*latent=*/true,
      [&](attn_tensor *o, attn_tensor *s) {
        return attn_decode_latent_part(model, kind, q, latent_cache,
                                       block_table, kv_lengths, q_pos, o, s);
      });
});
}
