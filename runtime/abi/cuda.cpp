//===- cuda.cpp - the CUDA part of the runtime, over the driver API -------===//
//
// This file implements the host calls that MLIR's gpu-to-llvm lowering emits
// (`mgpuModuleLoad`, `mgpuModuleLoadJIT`, `mgpuModuleGetFunction`,
// `mgpuLaunchKernel`, `mgpuStream*`, `mgpuMemAlloc`/`mgpuMemFree`,
// `mgpuModuleUnload`, `mgpuTensorMapEncodeTiledMemref`) and the device
// buffers of the executables' commands, over the CUDA driver API. The driver
// (`libcuda.so.1`) is loaded with dlopen on first use, so executables start
// on machines without a GPU: `info` works, and the commands that need the
// GPU say why there is none and exit non-zero.
//
// The generated code loads its PTX module from a global constructor, before
// main: a failure there is recorded, not fatal, and reported by
// attn_rt_cuda_init.
//
//===----------------------------------------------------------------------===//

#include "attn_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;

constexpr int kAttrSMs = 16;         // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrClockKHz = 13;    // CU_DEVICE_ATTRIBUTE_CLOCK_RATE
constexpr int kAttrMajor = 75;       // ..._COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrMinor = 76;       // ..._COMPUTE_CAPABILITY_MINOR
constexpr int kJitErrorBuffer = 5;   // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorBufferSize = 6; // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
constexpr int kFuncMaxDynamicSmem =
    8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
constexpr int32_t kDefaultSmemLimit = 48 * 1024;
constexpr int kAttrSmemOptin = 97; // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
constexpr int kPoolReleaseThreshold = 4; // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                                 void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuDeviceGetDefaultMemPool)(void **, CUdevice);
  CUresult (*cuMemPoolSetAttribute)(void *, int, void *);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *,
                                     const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int,
                                     int, int, int);
};

struct State {
  bool tried = false;
  bool ok = false;
  std::string why; // why there is no usable device
  Driver d{};
  CUdevice device = 0;
  CUcontext context = nullptr;
};

State &state() {
  static State s;
  return s;
}

std::string errorText(CUresult r) {
  const char *s = nullptr;
  if (state().d.cuGetErrorString && state().d.cuGetErrorString(r, &s) == 0 &&
      s)
    return s;
  return "CUDA error " + std::to_string(r);
}

/// Loads the driver and makes the first device's primary context current.
bool initDriver() {
  State &s = state();
  if (s.tried)
    return s.ok;
  s.tried = true;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    s.why = "cannot load the CUDA driver libcuda.so.1 (" +
            std::string(dlerror()) + "); this machine has no NVIDIA driver";
    return false;
  }
  bool missing = false;
  auto get = [&](auto &fn, const char *name, bool required = true) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(lib, name));
    if (!fn && required) {
      s.why = std::string("libcuda.so.1 lacks ") + name;
      missing = true;
    }
  };
  Driver &d = s.d;
  get(d.cuGetErrorString, "cuGetErrorString");
  get(d.cuInit, "cuInit");
  get(d.cuDeviceGetCount, "cuDeviceGetCount");
  get(d.cuDeviceGet, "cuDeviceGet");
  get(d.cuDeviceGetName, "cuDeviceGetName");
  get(d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  get(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  get(d.cuCtxSetCurrent, "cuCtxSetCurrent");
  get(d.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  get(d.cuModuleUnload, "cuModuleUnload");
  get(d.cuModuleGetFunction, "cuModuleGetFunction");
  get(d.cuFuncSetAttribute, "cuFuncSetAttribute");
  get(d.cuLaunchKernel, "cuLaunchKernel");
  get(d.cuStreamCreate, "cuStreamCreate");
  get(d.cuStreamSynchronize, "cuStreamSynchronize");
  get(d.cuMemAlloc, "cuMemAlloc_v2");
  // Stream-ordered allocation (CUDA 11.2+) is optional: without it, or
  // on a device without memory pools, the split-K workspace falls back to
  // cuMemAlloc/cuMemFree.
  get(d.cuMemAllocAsync, "cuMemAllocAsync", /*required=*/false);
  get(d.cuMemFreeAsync, "cuMemFreeAsync", /*required=*/false);
  get(d.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool",
      /*required=*/false);
  get(d.cuMemPoolSetAttribute, "cuMemPoolSetAttribute", /*required=*/false);
  get(d.cuMemFree, "cuMemFree_v2");
  get(d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  get(d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  get(d.cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  get(d.cuCtxSynchronize, "cuCtxSynchronize");
  // Events time bench's calls on the device (attn_rt_cuda_timing_*).
  get(d.cuEventCreate, "cuEventCreate", /*required=*/false);
  get(d.cuEventRecord, "cuEventRecord", /*required=*/false);
  get(d.cuEventSynchronize, "cuEventSynchronize", /*required=*/false);
  get(d.cuEventElapsedTime, "cuEventElapsedTime", /*required=*/false);
  // TMA tensor maps (CUDA 12+ drivers): only the sm_90a kernels use them.
  get(d.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", /*required=*/false);
  if (missing)
    return false;
  CUresult r = d.cuInit(0);
  if (r != 0) {
    s.why = "cuInit failed: " + errorText(r) + " (no usable NVIDIA GPU?)";
    return false;
  }
  int count = 0;
  if ((r = d.cuDeviceGetCount(&count)) != 0 || count == 0) {
    s.why = r ? "cuDeviceGetCount failed: " + errorText(r)
              : std::string("the CUDA driver reports no device");
    return false;
  }
  if ((r = d.cuDeviceGet(&s.device, 0)) != 0 ||
      (r = d.cuDevicePrimaryCtxRetain(&s.context, s.device)) != 0 ||
      (r = d.cuCtxSetCurrent(s.context)) != 0) {
    s.why = "cannot open device 0: " + errorText(r);
    return false;
  }
  s.ok = true;
  return true;
}

/// A CUDA error after initialization: fatal, with the call that failed.
void check(CUresult r, const char *what) {
  if (r == 0)
    return;
  std::fprintf(stderr, "error: CUDA: %s failed: %s\n", what,
               errorText(r).c_str());
  std::exit(1);
}

/// Modules that failed to load before main (no GPU, or a JIT error).
std::string &moduleError() {
  static std::string e;
  return e;
}

CUmodule loadModule(const void *data, bool ptx) {
  if (!initDriver()) {
    if (moduleError().empty())
      moduleError() = state().why;
    return nullptr;
  }
  char log[8192] = {0};
  int options[] = {kJitErrorBuffer, kJitErrorBufferSize};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
  CUmodule m = nullptr;
  CUresult r = state().d.cuModuleLoadDataEx(&m, data, ptx ? 2 : 0, options,
                                            values);
  if (r != 0) {
    moduleError() = "loading the kernels' " +
                    std::string(ptx ? "PTX" : "module") + " failed: " +
                    errorText(r) + (log[0] ? std::string(": ") + log : "");
    return nullptr;
  }
  return m;
}

/// Whether workspaces come from the device's default pool, stream-ordered
/// (cuMemAllocAsync); decided once. The pool then keeps what is freed (its
/// default threshold 0 returns it to the OS at every synchronization: each
/// step would map it again). Without pools (an older driver, a device
/// without them) workspaces are allocated and freed synchronously.
bool pooledAllocation() {
  static bool pooled = [] {
    Driver &d = state().d;
    void *p = nullptr;
    uint64_t keep = UINT64_MAX;
    return d.cuMemAllocAsync && d.cuMemFreeAsync &&
           d.cuDeviceGetDefaultMemPool && d.cuMemPoolSetAttribute &&
           d.cuDeviceGetDefaultMemPool(&p, state().device) == 0 &&
           d.cuMemPoolSetAttribute(p, kPoolReleaseThreshold, &keep) == 0;
  }();
  return pooled;
}

/// A timed call's events (attn_rt_cuda_timing_begin/end), per host thread:
/// `start` recorded on the thread's stream before the call, `stop` at each
/// of its synchronizations (the last one, after its last kernel, counts).
struct Timing {
  bool on = false, stopped = false;
  CUevent start = nullptr, stop = nullptr;
};
thread_local Timing timing;

} // namespace

//===----------------------------------------------------------------------===//
// The calls of generated host code (MLIR's gpu-to-llvm ABI)
//===----------------------------------------------------------------------===//

extern "C" {

CUmodule mgpuModuleLoad(void *data, size_t /*size*/) {
  return loadModule(data, /*ptx=*/false);
}

CUmodule mgpuModuleLoadJIT(void *data, int /*optLevel*/, size_t /*size*/) {
  return loadModule(data, /*ptx=*/true);
}

void mgpuModuleUnload(CUmodule module) {
  if (module && state().ok)
    state().d.cuModuleUnload(module);
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  if (!module) {
    std::fprintf(stderr, "error: CUDA: no kernels module (%s)\n",
                 moduleError().c_str());
    std::exit(1);
  }
  CUfunction f = nullptr;
  check(state().d.cuModuleGetFunction(&f, module, name),
        "cuModuleGetFunction");
  return f;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, CUstream stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  // An empty grid (q_len or batch 0) has nothing to compute.
  if (gridX <= 0 || gridY <= 0 || gridZ <= 0)
    return;
  // A kernel's dynamic shared memory past 48 KB (the tensor-core attention
  // kernel's Q tile and K/V rings) must be allowed per function first, up
  // to the device's opt-in limit (227 KB on Hopper, 163 KB on an A100, 99 KB
  // on sm_86/sm_89, which run sm_80 builds): each function is raised once.
  if (smem > kDefaultSmemLimit) {
    static std::mutex mu;
    static std::vector<std::pair<CUfunction, int32_t>> raised;
    std::lock_guard<std::mutex> lock(mu);
    auto it = std::find_if(raised.begin(), raised.end(),
                           [&](const auto &r) { return r.first == function; });
    if (it == raised.end() || it->second < smem) {
      int limit = 0;
      check(state().d.cuDeviceGetAttribute(&limit, kAttrSmemOptin,
                                           state().device),
            "cuDeviceGetAttribute (shared memory per block)");
      if (smem > limit) {
        std::fprintf(stderr,
                     "error: CUDA: a kernel needs %d bytes of shared memory "
                     "per block, this GPU allows %d: recompile with a "
                     "smaller --kv-block (32) or --q-block\n",
                     int(smem), limit);
        std::exit(1);
      }
      check(state().d.cuFuncSetAttribute(function, kFuncMaxDynamicSmem, smem),
            "cuFuncSetAttribute (dynamic shared memory past 48 KB)");
      if (it == raised.end())
        raised.emplace_back(function, smem);
      else
        it->second = smem;
    }
  }
  check(state().d.cuLaunchKernel(function, unsigned(gridX), unsigned(gridY),
                                 unsigned(gridZ), unsigned(blockX),
                                 unsigned(blockY), unsigned(blockZ),
                                 unsigned(smem), stream, params, extra),
        "cuLaunchKernel");
}

// The generated host code makes a stream for each launch and for each
// allocation's chain (gpu.wait async), waits for it and destroys it: three
// or four per attention call with split-K. Every call of a host thread runs
// in order anyway, so each thread keeps one stream for all of them: "create"
// hands it out, "destroy" leaves it (it lives until the process ends), and
// a call pays no stream creation.
CUstream mgpuStreamCreate() {
  if (!initDriver()) {
    std::fprintf(stderr, "error: CUDA: %s\n", state().why.c_str());
    std::exit(1);
  }
  thread_local CUstream s = nullptr;
  if (!s)
    check(state().d.cuStreamCreate(&s, /*CU_STREAM_NON_BLOCKING=*/1),
          "cuStreamCreate");
  return s;
}

void mgpuStreamSynchronize(CUstream stream) {
  // (A failed record is no measurement: timing_end reports none.)
  if (timing.on)
    timing.stopped = state().d.cuEventRecord(timing.stop, stream) == 0;
  check(state().d.cuStreamSynchronize(stream),
        "cuStreamSynchronize (the kernel)");
}

void mgpuStreamDestroy(CUstream /*stream*/) {}

/// The split-K workspace of the attention kernels (gpu.alloc async):
/// stream-ordered allocation from the device's default pool, so that a
/// decode step's workspace reuses the last one's memory. Nothing for 0
/// bytes (no split).
void *mgpuMemAlloc(uint64_t bytes, CUstream stream, bool /*hostShared*/) {
  if (bytes == 0)
    return nullptr;
  bool pooled = pooledAllocation();
  CUdeviceptr p = 0;
  Driver &d = state().d;
  if (pooled)
    check(d.cuMemAllocAsync(&p, size_t(bytes), stream),
          "cuMemAllocAsync (the split-K workspace)");
  else
    check(d.cuMemAlloc(&p, size_t(bytes)),
          "cuMemAlloc (the split-K workspace)");
  return reinterpret_cast<void *>(p);
}

void mgpuMemFree(void *ptr, CUstream stream) {
  if (!ptr)
    return;
  Driver &d = state().d;
  if (pooledAllocation())
    check(d.cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), stream),
          "cuMemFreeAsync");
  else
    check(d.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
}

/// The tensor map of a TMA load (nvgpu.tma.create.descriptor): `desc` is a
/// rank-`rank` memref descriptor {allocated, aligned, offset, sizes[rank],
/// strides[rank]} of `dataType` (CUtensorMapDataType) elements, `box` the
/// box's sizes in the memref's order (outermost first). Returns the device
/// address of the 128-byte map, which the kernel reads from global memory.
/// Maps are kept by content (a decode step makes the same ones as the last),
/// at most kTensorMaps: past that the oldest slot is rewritten, long after
/// the launch that used it finished (every call waits for its kernels).
void *mgpuTensorMapEncodeTiledMemref(int64_t rank, void *desc, int64_t dataType,
                                     int64_t interleave, int64_t swizzle,
                                     int64_t l2Promotion, int64_t oobFill,
                                     int64_t *box) {
  constexpr int kTensorMaps = 1024;
  // Bytes per element of each CUtensorMapDataType (uint8 ... tf32_ftz).
  static const int eltBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  if (!initDriver()) {
    std::fprintf(stderr, "error: CUDA: %s\n", state().why.c_str());
    std::exit(1);
  }
  Driver &d = state().d;
  if (!d.cuTensorMapEncodeTiled) {
    std::fprintf(stderr, "error: CUDA: this driver has no "
                         "cuTensorMapEncodeTiled (TMA needs CUDA 12+); "
                         "recompile with --gpu-tma=false\n");
    std::exit(1);
  }
  if (rank < 1 || rank > 5 || dataType < 0 || dataType > 12) {
    std::fprintf(stderr,
                 "error: CUDA: a tensor map of rank %lld, data type %lld: "
                 "ranks 1-5 and CUtensorMapDataType values 0-12 are "
                 "accepted\n",
                 (long long)rank, (long long)dataType);
    std::exit(1);
  }
  // The memref descriptor's fields, then the driver's order (innermost
  // first, strides in bytes of the outer dims).
  auto *fields = static_cast<char **>(desc);
  char *aligned = fields[1];
  auto *ints = reinterpret_cast<int64_t *>(fields + 2);
  int64_t offset = ints[0];
  const int64_t *sizes = ints + 1, *strides = ints + 1 + rank;
  int bytes = eltBytes[dataType];
  uint64_t dims[5], byteStrides[4];
  unsigned boxDims[5], elementStrides[5];
  for (int64_t i = 0; i < rank; ++i) {
    // An empty tensor (batch or keys 0: the launch computes nothing) still
    // gets a valid map: the driver refuses a zero dimension.
    dims[i] = uint64_t(std::max<int64_t>(sizes[rank - 1 - i], 1));
    boxDims[i] = unsigned(box[rank - 1 - i]);
    elementStrides[i] = 1;
  }
  for (int64_t i = 0; i + 1 < rank; ++i)
    byteStrides[i] = uint64_t(strides[rank - 2 - i]) * uint64_t(bytes);
  alignas(64) unsigned char map[128];
  check(d.cuTensorMapEncodeTiled(map, int(dataType), unsigned(rank),
                                 aligned + offset * bytes, dims, byteStrides,
                                 boxDims, elementStrides, int(interleave),
                                 int(swizzle), int(l2Promotion), int(oobFill)),
        "cuTensorMapEncodeTiled");
  struct Slot {
    unsigned char map[128];
    CUdeviceptr device;
  };
  static std::mutex mu;
  static std::vector<Slot> slots;
  static size_t next = 0;
  std::lock_guard<std::mutex> lock(mu);
  for (const Slot &s : slots)
    if (std::memcmp(s.map, map, sizeof(map)) == 0)
      return reinterpret_cast<void *>(s.device);
  Slot *slot;
  if (slots.size() < kTensorMaps) {
    slots.emplace_back();
    slot = &slots.back();
    check(d.cuMemAlloc(&slot->device, sizeof(map)),
          "cuMemAlloc (a TMA tensor map)");
  } else {
    slot = &slots[next];
    next = (next + 1) % kTensorMaps;
  }
  std::memcpy(slot->map, map, sizeof(map));
  check(d.cuMemcpyHtoD(slot->device, map, sizeof(map)),
        "cuMemcpyHtoD (a TMA tensor map)");
  // From pageable memory the copy may still be in flight when it returns,
  // and the kernels' streams do not wait for the legacy one: done before
  // any launch reads the map (only when a map is new).
  check(d.cuCtxSynchronize(), "cuCtxSynchronize (a TMA tensor map)");
  return reinterpret_cast<void *>(slot->device);
}

//===----------------------------------------------------------------------===//
// The runtime's side (runtime/abi/attn_runtime.h)
//===----------------------------------------------------------------------===//

int attn_rt_cuda_init(char *why, int whySize) {
  std::string reason;
  if (!initDriver())
    reason = state().why;
  else if (!moduleError().empty())
    reason = moduleError();
  if (reason.empty())
    return 0;
  std::snprintf(why, size_t(whySize), "%s", reason.c_str());
  return -1;
}

void *attn_rt_cuda_alloc(int64_t bytes) {
  CUdeviceptr p = 0;
  check(state().d.cuMemAlloc(&p, size_t(bytes > 0 ? bytes : 1)),
        "cuMemAlloc");
  return reinterpret_cast<void *>(p);
}

void attn_rt_cuda_free(void *device) {
  if (device)
    check(state().d.cuMemFree(reinterpret_cast<CUdeviceptr>(device)),
          "cuMemFree");
}

void attn_rt_cuda_to_device(void *device, const void *host, int64_t bytes) {
  if (bytes > 0)
    check(state().d.cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host,
                                 size_t(bytes)),
          "cuMemcpyHtoD");
}

void attn_rt_cuda_to_host(void *host, const void *device, int64_t bytes) {
  if (bytes > 0)
    check(state().d.cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device),
                                 size_t(bytes)),
          "cuMemcpyDtoH");
}

double attn_rt_cuda_copy_gbps(int64_t bytes, int repeats) {
  Driver &d = state().d;
  CUdeviceptr a = 0, c = 0;
  check(d.cuMemAlloc(&a, size_t(bytes)), "cuMemAlloc (bandwidth probe)");
  check(d.cuMemAlloc(&c, size_t(bytes)), "cuMemAlloc (bandwidth probe)");
  std::vector<double> seconds;
  for (int i = 0; i <= repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    check(d.cuMemcpyDtoD(c, a, size_t(bytes)), "cuMemcpyDtoD");
    check(d.cuCtxSynchronize(), "cuCtxSynchronize");
    auto t1 = std::chrono::steady_clock::now();
    if (i) // the first copy warms up
      seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  check(d.cuMemFree(a), "cuMemFree");
  check(d.cuMemFree(c), "cuMemFree");
  std::sort(seconds.begin(), seconds.end());
  double median = seconds[seconds.size() / 2];
  return 2.0 * double(bytes) / median / 1e9;
}

int attn_rt_cuda_timing_begin() {
  Driver &d = state().d;
  if (!d.cuEventCreate || !d.cuEventRecord || !d.cuEventSynchronize ||
      !d.cuEventElapsedTime)
    return -1;
  if (!timing.start) {
    check(d.cuEventCreate(&timing.start, /*CU_EVENT_DEFAULT=*/0),
          "cuEventCreate (timing)");
    check(d.cuEventCreate(&timing.stop, /*CU_EVENT_DEFAULT=*/0),
          "cuEventCreate (timing)");
  }
  check(d.cuEventRecord(timing.start, mgpuStreamCreate()),
        "cuEventRecord (timing)");
  timing.on = true;
  timing.stopped = false;
  return 0;
}

double attn_rt_cuda_timing_end() {
  if (!timing.on)
    return -1;
  timing.on = false;
  Driver &d = state().d;
  // Calls that never synchronized their stream (nothing launched): the
  // end is now.
  if (!timing.stopped && d.cuEventRecord(timing.stop, mgpuStreamCreate()) != 0)
    return -1;
  float ms = 0;
  // A failed measurement is no measurement (the caller uses the wall
  // clock's), not an error of the kernels.
  if (d.cuEventSynchronize(timing.stop) != 0 ||
      d.cuEventElapsedTime(&ms, timing.start, timing.stop) != 0)
    return -1;
  return ms;
}

void attn_rt_cuda_describe(char *name, int nameSize, int *sms, int *khz,
                           int *major, int *minor) {
  Driver &d = state().d;
  check(d.cuDeviceGetName(name, nameSize, state().device), "cuDeviceGetName");
  check(d.cuDeviceGetAttribute(sms, kAttrSMs, state().device),
        "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(khz, kAttrClockKHz, state().device),
        "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(major, kAttrMajor, state().device),
        "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(minor, kAttrMinor, state().device),
        "cuDeviceGetAttribute");
}

} // extern "C"
