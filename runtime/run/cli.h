/*===- cli.h - the executables' commands, internal declarations ---*- C++ -*-===*
 *
 * What the command files of the runtime share (main.cpp: info, sdpa, block,
 * check and the dispatch; bench.cpp; device.cpp: kernel calls on the CPU or
 * through CUDA buffers; reference.cpp: the float64 reference; args.cpp:
 * argument parsing). Internal to the runtime: not part of its ABI.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RT_CLI_H
#define ATTN_RT_CLI_H

#include "attn.h"
#include "attn_runtime.h"
#include "descriptors.h"
#include "npy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace attn_rt {
namespace cli {

using Args = std::map<std::string, std::string>;

//===- args.cpp ------------------------------------------------------------===//

/// Prints `error: msg` and exits 1.
[[noreturn]] void fail(const std::string &msg);
/// Parses `--name value` pairs; flags listed in `flags` take no value.
Args parseArgs(int argc, char **argv, int first,
               const std::vector<std::string> &known,
               const std::vector<std::string> &flags = {});
/// The integer option `name` in [lo, hi], `dflt` when absent.
int64_t intArg(const Args &args, const std::string &name, int64_t dflt,
               int64_t lo, int64_t hi);
/// The kind of layer `layer`; fails for a layer out of range or not compiled.
const attn_rt_kind &kindOfLayer(const attn_rt_model *m, int64_t layer,
                                const char *option = "layer");
/// OpenMP's thread count (1 without the OpenMP runtime).
int ompThreads();
/// The median ms of `repeats` calls of `call` after one warm-up call (which
/// also allocates and touches what the calls reuse): bench's one rule.
template <typename F> double medianMs(int64_t repeats, F call) {
  call();
  std::vector<double> ms;
  for (int64_t r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// bench on the GPU: the median device time of `repeats` calls (CUDA events
/// around each call's launches, attn_rt_cuda_timing_*: no wake-up of the
/// host after the last kernel), after one warm-up call; `wallMs` gets the
/// wall-clock median of the same calls. A driver without events: the
/// wall-clock median for both.
template <typename F>
double deviceMedianMs(int64_t repeats, F call, double &wallMs) {
  call();
  std::vector<double> events, wall;
  for (int64_t r = 0; r < repeats; ++r) {
    bool timed = attn_rt_cuda_timing_begin() == 0;
    auto t0 = std::chrono::steady_clock::now();
    call();
    auto t1 = std::chrono::steady_clock::now();
    double e = timed ? attn_rt_cuda_timing_end() : -1;
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    events.push_back(e >= 0 ? e : wall.back());
  }
  std::sort(events.begin(), events.end());
  std::sort(wall.begin(), wall.end());
  wallMs = wall[wall.size() / 2];
  return events[events.size() / 2];
}

//===- device.cpp ----------------------------------------------------------===//

/// The kernels launch CUDA kernels on device buffers (attn_rt_model.device).
extern bool gCuda;

/// The GPU and its peaks: fp32 FMA lanes (128 per SM on sm_90, 64 on
/// sm_80) and dense bf16 tensor-core FLOP per clock (4096 per SM on sm_90,
/// 2048 on sm_80) at the device's reported clock.
struct DeviceInfo {
  std::string name;
  int sms = 0, major = 0, minor = 0;
  double mhz = 0, fp32Tflops = 0, tensorTflops = 0;
  /// Device-to-device copy of 1 GiB, read + written (bench's decode lines
  /// are quoted against it).
  double copyGbps = 0;
};
extern DeviceInfo gDevice;
void describeDevice();
/// Exits with the reason when the CUDA kernels cannot run here.
void requireDevice(const char *command);


/// Whether the kind's kernels read K/V as IEEE half (true) or bfloat16
/// (false); meaningful when kind.kv_dtype is not ATTN_RT_KV_F32.
inline bool kvIsHalf(const attn_rt_kind &kind) {
  return kind.kv_dtype == ATTN_RT_KV_F16;
}
/// Bytes of one K/V element as the kind's kernels read it: 4 (f32) or 2.
inline int64_t kvElementBytes(const attn_rt_kind &kind) {
  return kind.kv_dtype == ATTN_RT_KV_F32 ? 4 : 2;
}
/// "f32", "bf16" or "f16": the kind's --kv-dtype.
const char *kvDtypeName(const attn_rt_kind &kind);
/// Rounds `x` in place to the values the kind's K/V element type holds
/// (nothing for f32), so that a reference computed on `x` sees the values
/// the kernel reads.
void roundToKV(const attn_rt_kind &kind, Buf<float> &x);
/// The bits of `x` in the kind's 16-bit K/V type (a bf16/f16 kind).
Buf<uint16_t> narrowToKV(const attn_rt_kind &kind, const Buf<float> &x);
/// Whether the kind's fused, reference and paged entries take q and write
/// their output in 16 bits (attn-compile --qo-dtype: kind.qo_dtype).
inline bool qoNarrow(const attn_rt_kind &kind) {
  return kind.qo_dtype != ATTN_RT_KV_F32;
}
/// "f32", "bf16" or "f16": the kind's --qo-dtype.
const char *qoDtypeName(const attn_rt_kind &kind);
/// roundToKV and narrowToKV for the kind's q/output type.
void roundToQO(const attn_rt_kind &kind, Buf<float> &x);
Buf<uint16_t> narrowToQO(const attn_rt_kind &kind, const Buf<float> &x);
/// `x` (resized) from the kind's 16-bit q/output bits, exactly.
void widenFromQO(const attn_rt_kind &kind, const Buf<uint16_t> &bits,
                 Buf<float> &x);

/// How far a kernel's output is from a reference (check): the largest
/// absolute error and reference value over the pairs added, and whether
/// every output was finite.
struct MaxError {
  double maxAbs = 0, maxRef = 0;
  bool finite = true;
  void add(const Buf<float> &x, const Buf<float> &ref) {
    for (size_t j = 0; j < ref.size(); ++j) {
      finite = finite && std::isfinite(x[j]);
      maxAbs = std::max(maxAbs, double(std::fabs(x[j] - ref[j])));
      maxRef = std::max(maxRef, double(std::fabs(ref[j])));
    }
  }
  /// Within `tol` relative to the reference's largest value (1 + max|ref|).
  bool ok(double tol) const { return finite && maxAbs <= tol * (1 + maxRef); }
  double rel() const { return maxAbs / std::max(maxRef, 1e-30); }
};

/// Host descriptors of one shape for repeated calls of a CPU kernel (bench):
/// q, K and V (narrowed once to the kind's kv_dtype, else the float32
/// buffers themselves), the lengths and `out` (resized to [B, Hq, Sq, Dv]).
struct HostCall {
  Buf<uint16_t> k16, v16;
  /// A --qo-dtype kind's q narrowed once and its 16-bit output, widened
  /// into `out` by finish().
  Buf<uint16_t> q16, out16;
  attn_rt_memref_f32_4 dout, dq, dk, dv;
  attn_rt_memref_i64_1 dl;
  Buf<float> *table;
  Buf<float> *out = nullptr;
  const attn_rt_kind *kind;
  // The descriptors point into this object's buffers: not copied.
  HostCall(const HostCall &) = delete;
  HostCall &operator=(const HostCall &) = delete;
  HostCall(const attn_rt_kind &kind, Buf<float> &q,
           const std::vector<int64_t> &qs, Buf<float> &k,
           const std::vector<int64_t> &ks, Buf<float> &v,
           const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
           Buf<float> *table, Buf<float> &out);
  /// The same over K/V already in the kind's bf16/f16 bits (taken over:
  /// `sdpa` reads them so from its files, no float32 copy).
  HostCall(const attn_rt_kind &kind, Buf<float> &q,
           const std::vector<int64_t> &qs, Buf<uint16_t> &&k16,
           const std::vector<int64_t> &ks, Buf<uint16_t> &&v16,
           const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
           Buf<float> *table, Buf<float> &out);
  void call(void (*fn)(void), const attn_rt_kind &kind);
  /// A 16-bit output widened into `out` (nothing for an fp32 one).
  void finish();

private:
  void describe(Buf<float> &q, const std::vector<int64_t> &qs, float *k,
                const std::vector<int64_t> &ks, float *v,
                const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
                Buf<float> &out);
};

/// One call of a kernel into `out` (resized to [B, Hq, Sq, Dv]), on the CPU
/// or through device copies for CUDA executables; K and V are float32 and
/// narrowed to the kind's kv_dtype on the way (exactly, after roundToKV).
void run(void (*fn)(void), const attn_rt_kind &kind, Buf<float> &q,
         const std::vector<int64_t> &qs, Buf<float> &k,
         const std::vector<int64_t> &ks, Buf<float> &v,
         const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
         Buf<float> *table, Buf<float> &out);

/// A device copy of a host buffer, freed with the object.
struct DeviceBuffer {
  void *ptr = nullptr;
  int64_t bytes = 0;
  DeviceBuffer(const void *host, int64_t n);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

/// On the GPU (gCuda), descriptors made over host buffers pointed at device
/// copies: in() copies a buffer there, out() allocates one there and
/// back() copies it into the host buffer; on the CPU all do nothing. The
/// descriptors' element size is given (16-bit tensors sit in f32
/// descriptors).
class OnDevice {
public:
  template <class D> void in(D &desc, int64_t elementBytes) {
    mirror(desc, elementBytes, /*copyIn=*/true);
  }
  template <class D> void out(D &desc, int64_t elementBytes) {
    void *host = desc.aligned;
    if (DeviceBuffer *d = mirror(desc, elementBytes, /*copyIn=*/false))
      outs.push_back({host, d});
  }
  void back();

private:
  template <class D>
  DeviceBuffer *mirror(D &desc, int64_t elementBytes, bool copyIn) {
    int64_t n = elementBytes;
    for (int64_t s : desc.sizes)
      n *= s;
    if (!gCuda || n == 0)
      return nullptr;
    // (Dense buffers from their first element: what the callers make.)
    if (desc.offset != 0)
      fail("internal error: a device copy of a descriptor with an offset");
    bufs.push_back(
        std::make_unique<DeviceBuffer>(copyIn ? desc.aligned : nullptr, n));
    auto *p = static_cast<decltype(desc.aligned)>(bufs.back()->ptr);
    desc.allocated = desc.aligned = p;
    return bufs.back().get();
  }
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::pair<void *, DeviceBuffer *>> outs;
};

/// Device descriptors of the same shapes as the host ones, for repeated
/// calls (bench). K and V go to the device in the kind's kv_dtype: fp32
/// values rounded to bf16/f16 on the host (as HostCall does), or a file's
/// 16-bit bits as they are.
struct DeviceCall {
  /// A --qo-dtype kind's q narrowed on the host (kept while `q` is copied).
  Buf<uint16_t> q16;
  DeviceBuffer out, q, k, v, lens;
  attn_rt_memref_f32_4 dout, dq, dk, dv;
  attn_rt_memref_i64_1 dl;
  DeviceCall(const attn_rt_kind &kind, Buf<float> &hq,
             const std::vector<int64_t> &qs, Buf<float> &hk,
             const std::vector<int64_t> &ks, Buf<float> &hv,
             const std::vector<int64_t> &vs, std::vector<int64_t> &hl,
             int64_t outElems);
  DeviceCall(const attn_rt_kind &kind, Buf<float> &hq,
             const std::vector<int64_t> &qs, const Buf<uint16_t> &hk,
             const std::vector<int64_t> &ks, const Buf<uint16_t> &hv,
             const std::vector<int64_t> &vs, std::vector<int64_t> &hl,
             int64_t outElems);
  void call(void (*fn)(void), const attn_rt_kind &kind);
  /// One call, its output copied back into `out` (sized to it).
  void callInto(void (*fn)(void), const attn_rt_kind &kind, Buf<float> &out);

private:
  /// K or V on the host as the kernels read it: fp32 values, narrowed once
  /// to the kind's 16-bit kv_dtype (kept in `bits` while they are copied),
  /// or 16-bit bits as they are.
  struct HostKV {
    Buf<uint16_t> bits;
    const void *data;
    int64_t bytes;
    HostKV(const attn_rt_kind &kind, const Buf<float> &x);
    explicit HostKV(const Buf<uint16_t> &x);
  };
  DeviceCall(const attn_rt_kind &kind, Buf<float> &hq,
             const std::vector<int64_t> &qs, const HostKV &hk,
             const std::vector<int64_t> &ks, const HostKV &hv,
             const std::vector<int64_t> &vs, std::vector<int64_t> &hl,
             int64_t outElems);
  void describe(const std::vector<int64_t> &qs, const std::vector<int64_t> &ks,
                const std::vector<int64_t> &vs, int64_t batch);
};

/// A block's weights read from a .safetensors file by their checkpoint
/// names (the kind's patterns with "{i}" = `layerInStack`, the layer's
/// number within its stack), with the descriptor pointers the block takes
/// (one memref of the weight's rank each).
struct BlockWeights {
  std::vector<Buf<float>> data;
  std::vector<attn_rt_memref_f32_1> d1;
  std::vector<attn_rt_memref_f32_2> d2;
  std::vector<attn_rt_memref_f32_3> d3;
  std::vector<attn_rt_memref_f32_4> d4;
  std::vector<void *> ptrs;
  /// The kind's first `count` weights: num_weights for the block,
  /// num_layer_weights for the whole layer.
  BlockWeights(const attn_rt_kind &kind, int64_t layerInStack,
               const std::string &path, int64_t count);
};

//===- layer.cpp -----------------------------------------------------------===//

/// Fails unless the kind has CPU block entries (not a CUDA executable, not
/// compiled with --entries without blocks); a build has them for every
/// kind or for none.
void requireBlocks(const attn_rt_kind &kind);
/// "layer L (kind 'NAME')", for messages.
std::string layerName(const attn_rt_kind &kind, int64_t layer);
/// Checks --memory and --lengths against what the layers to run read:
/// `required` (ATTN_RT_BLOCK_* bits some kind needs given) and `accepted`
/// (those some kind reads); `where` names the layers in messages.
void checkBlockOptions(const Args &args, int required, int accepted,
                       const std::string &where, int64_t hidden);
/// The float32 [batch, seq, hidden] array of option `opt`.
NpyArray readHiddenStates(Args &args, const std::string &opt, int64_t hidden,
                          const char *what);
/// --memory, the encoder's output, with x's batch.
NpyArray readMemory(Args &args, const NpyArray &x, int64_t hidden);
/// The keys' lengths of option `opt` (int64 [batch], each in [0, keys]),
/// or `keys` for every row without it.
std::vector<int64_t> keyLengths(Args &args, const std::string &opt,
                                int64_t batch, int64_t keys);
/// --lengths checked for the kind (its key count: the memory's length for
/// cross attention, x's otherwise), or empty when the kind takes none.
std::vector<int64_t> blockLengths(const attn_rt_kind &kind, Args &args,
                                  const std::vector<int64_t> &shape,
                                  const NpyArray &mem);
/// Calls a softmax kind's block or layer entry `fn` on x [shape] (and the
/// memory, positions 0..S-1 and --lengths as the kind reads them) into y.
void callBlock(const attn_rt_kind &kind, attn_rt_block_fn fn,
               BlockWeights &weights, Args &args, Buf<float> &x,
               const std::vector<int64_t> &shape, NpyArray &mem, Buf<float> &y);
/// `layer` (one transformer layer: its attention sub-blocks and the
/// feed-forward network) and, with `model`, `model --from A --to B`.
int cmdLayer(const attn_rt_model *m, int argc, char **argv, bool model);

//===- reference.cpp -------------------------------------------------------===//

/// Attention in float64 by its definition, one query row at a time: the
/// independent reference of `check` for kernels without a compiled
/// reference (CUDA). Causal is bottom-right aligned (query row i of batch b
/// at key position (*qStart)[b] + i when `qStart` is given); a row that
/// sees no key is 0.
void referenceF64(const attn_rt_kind &kind, const Buf<float> &q,
                  const std::vector<int64_t> &qs, const Buf<float> &k,
                  const std::vector<int64_t> &ks, const Buf<float> &v,
                  const std::vector<int64_t> &vs,
                  const std::vector<int64_t> &lens, double scale,
                  double softcap, Buf<float> &out,
                  const std::vector<int64_t> *qStart = nullptr,
                  const Buf<float> *sinks = nullptr);
/// `n` normal samples of standard deviation `scale`.
Buf<float> randomVec(std::mt19937 &rng, int64_t n, float scale);
/// check's block table: `entries` distinct page ids of a pool of `pages`,
/// at shuffled places (pages no table lists stay in the pool).
std::vector<int32_t> shuffledTable(std::mt19937 &rng, int64_t pages,
                                   int64_t entries);
/// The extra input of a kind's softmax kernels for check and bench: T5's
/// random bias table [bias_buckets, Hq], or sinks [Hq] (ordinary, very
/// large, very negative and -inf ones, heads cycling through them), or
/// nothing.
Buf<float> randomExtraInput(const attn_rt_kind &kind, std::mt19937 &rng);
/// The sinks [Hq] of --sinks S.npy for a kind with attention sinks (fails
/// when absent or malformed: float32 [Hq], finite or -inf); empty for a
/// kind without, which refuses --sinks.
Buf<float> readSinks(const attn_rt_kind &kind, Args &args);

//===- bench.cpp -----------------------------------------------------------===//

int cmdBench(const attn_rt_model *m, int argc, char **argv);
/// `check` (check.cpp): every kind's kernels against their references.
int cmdCheck(const attn_rt_model *m, int argc, char **argv);

//===- linear.cpp ----------------------------------------------------------===//

/// The shapes of one Gated DeltaNet call: q and k [B, Hk, S, dk], v and out
/// [B, Hv, S, dv], g and beta [B, Hv, S] (g [B, Hv, S, dk] with a
/// per-channel gate: Kimi Delta Attention), states [B, Hv, dk, dv].
struct GdnShapes {
  int64_t b, s;
  bool channel; ///< attn_rt_kind.channel_gate
  std::vector<int64_t> q, v, g, beta, state;
  GdnShapes(const attn_rt_kind &kind, int64_t b, int64_t s);
};
/// A Gated DeltaNet call's inputs (contiguous, in GdnShapes' shapes).
struct GdnData {
  Buf<float> q, k, v, g, beta, state;
  /// Per batch row (clamped to [0, S]); empty: every row is whole.
  std::vector<int64_t> lengths;
};
/// One call of a kernel (attn_rt_gdn_fn) into `out` and `stateOut`.
void runGdn(void (*fn)(void), const GdnShapes &sh, GdnData &in, Buf<float> &out,
            Buf<float> &stateOut);
/// The recurrence in float64 by its definition, token by token.
void gdnReferenceF64(const attn_rt_kind &kind, const GdnShapes &sh,
                     const GdnData &in, Buf<float> &out, Buf<float> &stateOut);
/// randomGdn's gates: as the model makes them; with some extreme ones (state
/// resets, β 0 and 1); KDA only: runs of 16 tokens alternating strong
/// narrow decays and extreme gates.
enum class GateMode { Model, Extreme, Banded };
/// Inputs as the model makes them (q, k L2-normalized, g = −e^A·softplus,
/// β = sigmoid; with `noDelta`, Mamba2's: C, B as they are, β = dt =
/// softplus, g = −e^A·dt), with the gates of `mode`.
/// KDA (sh.channel): each channel's g = −e^A·softplus of its own input.
GdnData randomGdn(std::mt19937 &rng, const GdnShapes &sh, GateMode mode,
                  bool withState, bool noDelta);
/// check's cases for one linear kind; prints one line per case.
bool checkLinearKind(const attn_rt_kind &kind, std::mt19937 &rng);
/// bench's line (or JSON object) for one linear kind.
void benchLinearKind(const attn_rt_kind &kind, int64_t b, int64_t s,
                     int64_t repeats, bool json, bool first);
int cmdGdn(const attn_rt_model *m, int argc, char **argv);
/// A Gated DeltaNet layer's `fn` (its block, or its whole layer): its
/// states from --conv-state-in and --state-in (zeros without), y computed
/// and the new states returned for --conv-state-out and --state-out (the
/// caller writes them with y: addLinearStates).
/// A linear block's new states (the caller writes them with its output).
struct LinearStates {
  Buf<float> conv, state;
  std::vector<int64_t> convShape, stateShape;
};
void runLinearBlock(const attn_rt_kind &kind, attn_rt_linear_block_fn fn,
                    Args &args, attn_rt_memref_f32_3 &y,
                    attn_rt_memref_f32_3 &x, BlockWeights &weights,
                    LinearStates &states);
/// `block`/`layer`/`model`'s outputs, committed together: y to --out, the
/// latent cache to --cache-out and a linear layer's states to
/// --conv-state-out/--state-out when asked (fails naming the file).
void writeBlockOutputs(Args &args, const std::vector<int64_t> &shape,
                       const float *y, const std::vector<int64_t> &cacheShape,
                       const Buf<float> &cache, const LinearStates &states);
/// The values of every option but `outputs`: what a command's outputs may
/// not overwrite.
std::vector<std::string> inputsOf(const Args &args,
                                  const std::vector<std::string> &outputs);
/// Writes the command's one output --`key` (fails naming the file, or an
/// output that is also an input).
void writeOut(Args &args, const std::string &key,
              const std::vector<int64_t> &shape, const float *data);
/// The same for a 16-bit output: IEEE half ('<f2', `half`) or bfloat16 bits
/// ('<u2').
void writeOut(Args &args, const std::string &key,
              const std::vector<int64_t> &shape, const uint16_t *data,
              bool half);

//===- latent.cpp ----------------------------------------------------------===//

/// check's cases for one multi-head latent attention kind (kv_lora_rank >
/// 0): the absorbed kernel against the reference, contiguous and paged,
/// and the absorbed form against the expanded one; prints a line per case.
bool checkLatentKind(const attn_rt_kind &kind, std::mt19937 &rng);
/// A latent kind's block or layer entry `fn` on x [shape] at positions
/// P..P+S-1 after the P tokens of --cache-in (float32 [B, P, r + dr]; none:
/// P = 0) into y; returns the latent cache of all P + S tokens (its shape in
/// `cacheShape`), which the caller writes (--cache-out) with y.
Buf<float> runLatentBlock(const attn_rt_kind &kind,
                          attn_rt_latent_block_fn fn, Args &args,
                          Buf<float> &x, const std::vector<int64_t> &shape,
                          Buf<float> &y, BlockWeights &weights,
                          std::vector<int64_t> &cacheShape);
/// `mla`: the absorbed form's attention of a layer's kind on .npy files.
int cmdMla(const attn_rt_model *m, int argc, char **argv);
/// bench's line for a latent kind's absorbed kernel (paged with `page` >
/// 0), with the expanded form over an MHA cache on the same step where
/// `expanded` (the caller's judgement that its K/V fit) and page is 0.
void benchLatentKind(const attn_rt_kind &kind, int64_t b, int64_t sq,
                     int64_t skv, int64_t page, int64_t repeats, bool json,
                     bool first, bool expanded);

} // namespace cli
} // namespace attn_rt

#endif // ATTN_RT_CLI_H
