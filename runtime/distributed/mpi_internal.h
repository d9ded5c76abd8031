//===- mpi_internal.h - the MPI runtime's shared parts ----------*- C++ -*-===//
//
// What the distributed library (libattn_mpi.a) shares: the log-sum-exp
// merge of partial rows, the paged shards of a sequence's K/V and the
// sharded-KV decode and ring-attention prefill built on the kernels'
// partial form (mpi.cpp). The C API's collectives (mpi_api.cpp) use the
// merge; the commands over ranks (runtime/run/mpi_cli.h) use all of it.
// Internal: not installed.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MPI_INTERNAL_H
#define ATTN_RUNTIME_MPI_INTERNAL_H

#include "attn_mpi.h"
#include "attn_runtime.h"
#include "buffer.h"
#include "descriptors.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace attn_rt::mpi {

//===----------------------------------------------------------------------===//
// The merge, paged shards, sharded-KV decode and ring prefill (mpi.cpp)
//===----------------------------------------------------------------------===//

double now();

/// Merges a partial row (oa, ma, la) into (ob, mb, lb): M = max(ma, mb),
/// o = (e^(ma-M)·la·oa + e^(mb-M)·lb·ob) / (e^(ma-M)·la + e^(mb-M)·lb),
/// in double. A row with sum 0 saw no key and weighs nothing.
inline void mergeRow(const float *oa, float ma, float la, float *ob, float &mb,
                     float &lb, int64_t dv) {
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
      mergeRow(&o[i * dv], st[2 * i], st[2 * i + 1], &out[i * dv], stats[2 * i],
               stats[2 * i + 1], dv);
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
                     int64_t n = 1);

/// The kind's partial kernel over one key range (`rangeStart`: each
/// sequence's position of the range's first key, which a chunked kind's
/// mask needs). Kinds with sinks get -inf (none) there: the runtime folds
/// the sinks in once, after the ranges merge (foldSink).
void runPart(const attn_rt_kind &kind, attn_rt_memref_f32_4 *out,
             attn_rt_memref_f32_4 *stats, attn_rt_memref_f32_4 *q,
             attn_rt_memref_f32_4 *k, attn_rt_memref_f32_4 *v,
             attn_rt_memref_i32_2 *table, attn_rt_memref_i64_1 *lens,
             attn_rt_memref_i64_1 *qPos, attn_rt_memref_i64_1 *rangeStart);

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Stores n float32 values at element `dst` of a pool of the kind's K/V
/// element type (4 bytes: as they are; 2: narrowed to bf16/f16 bits).
void storeRow(const attn_rt_kind &kind, Buf<unsigned char> &pool,
              const float *src, int64_t dst, int64_t n);

/// A rank's paged cache of token ranges [start[b], start[b] + len[b]) of
/// each sequence of contiguous K/V [B, Hkv, S, D], pages [numPages, Hkv, P,
/// D] of the kind's K/V element type, page ids handed out from the end of
/// the pool (so that the block table is not the identity).
/// The block table [B, maxPages] of sequences of `len` tokens in pages of
/// P: page ids handed out from the end of the pool (so that the table is
/// not the identity); sets `numPages` (all of them) and `maxPages` (at
/// least 1).
void pagesFromEnd(const std::vector<int64_t> &len, int64_t P, int64_t &numPages,
                  int64_t &maxPages, std::vector<int32_t> &table);

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
    pagesFromEnd(len, P, numPages, maxPages, table);
    int64_t alloc = std::max<int64_t>(numPages, 1);
    k.assign(alloc * hkv * P * d * eltBytes, 0);
    v.assign(alloc * hkv * P * dv * eltBytes, 0);
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
           Buf<float> &out, Buf<float> &stats, const float *sinks = nullptr) {
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
    attn_rt_memref_i32_2 dt{
        table.data(), table.data(), 0, {B, maxPages}, {maxPages, 1}};
    attn_rt_memref_i64_1 dl{len.data(), len.data(), 0, {B}, {1}};
    if (!qPos && kind.has_sinks) {
      attn_rt_memref_f32_1 dsk{
          const_cast<float *>(sinks), const_cast<float *>(sinks), 0, {Hq}, {1}};
      reinterpret_cast<attn_rt_paged_sinks_fn>(reinterpret_cast<void (*)(void)>(
          kind.paged))(&dout, &dq, &dk, &dvv, &dt, &dl, &dsk);
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
std::pair<int64_t, int64_t> shardRange(int64_t len, int ranks, int r, int64_t P,
                                       const std::vector<double> &weights);

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
                          Buf<float> &out, const float *sinks = nullptr);

PagedShard makeDecodeShard(MPI_Comm comm, const attn_rt_kind &kind,
                           const Buf<float> &k, const Buf<float> &v, int64_t B,
                           int64_t S, const std::vector<int64_t> &lens,
                           int64_t P, const std::vector<double> &weights);

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
                   Buf<unsigned char> &k, Buf<unsigned char> &v);

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
                        bool computeOff = false, const float *sinks = nullptr);

/// This rank's query chunks of q [B, Hq, S, D].
void ringQueries(const RingLayout &L, int64_t Hq, int rank, const Buf<float> &q,
                 Buf<float> qc[2]);

/// Gathers every rank's chunk outputs into out [B, Hq, S, Dv] on `root`.
void gatherRing(MPI_Comm comm, const RingLayout &L, int64_t Hq, Partial acc[2],
                int root, Buf<float> &out);

RingLayout ringLayout(const attn_rt_kind &kind, int64_t B, int64_t S, int size,
                      int64_t P);

/// Ring prefill of full q [B, Hq, S, D], K/V [B, Hkv, S, D/Dv] (every rank
/// has them; each keeps its chunks) -> out on rank 0.
RingTimes ringPrefill(MPI_Comm comm, const attn_rt_kind &kind,
                      const Buf<float> &q, const Buf<float> &k,
                      const Buf<float> &v, int64_t B, int64_t S, int64_t P,
                      Buf<float> &out, const float *sinks = nullptr);

} // namespace attn_rt::mpi

#endif // ATTN_RUNTIME_MPI_INTERNAL_H
