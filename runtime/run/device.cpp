//===- device.cpp - kernel calls on the CPU or through CUDA buffers -------===//
//
// This file implements how the executables' commands call a compiled kernel:
// on host buffers for CPU executables, through device copies (DeviceBuffer,
// DeviceCall over runtime/abi/cuda.cpp) for CUDA ones, and the GPU's description
// and peaks.
//
//===----------------------------------------------------------------------===//

#include "cli.h"
#include "narrow.h"

namespace attn_rt {
namespace cli {

bool gCuda = false;
DeviceInfo gDevice;


void describeDevice() {
  char name[256] = {0};
  int khz = 0;
  attn_rt_cuda_describe(name, sizeof(name), &gDevice.sms, &khz,
                        &gDevice.major, &gDevice.minor);
  gDevice.name = name;
  gDevice.mhz = khz / 1000.0;
  bool hopper = gDevice.major >= 9;
  double clk = khz * 1e3;
  gDevice.fp32Tflops = gDevice.sms * clk * (hopper ? 256 : 128) / 1e12;
  gDevice.tensorTflops = gDevice.sms * clk * (hopper ? 4096 : 2048) / 1e12;
  gDevice.copyGbps = attn_rt_cuda_copy_gbps(int64_t(1) << 30, 5);
}

void requireDevice(const char *command) {
  if (!gCuda)
    return;
  char why[1024];
  if (attn_rt_cuda_init(why, sizeof(why)) != 0)
    fail(std::string(command) +
         ": this executable runs its attention on an NVIDIA GPU (compiled "
         "with --target=cuda) and none is usable here: " + why);
}

DeviceBuffer::DeviceBuffer(const void *host, int64_t n) : bytes(n) {
  ptr = attn_rt_cuda_alloc(n);
  if (host)
    attn_rt_cuda_to_device(ptr, host, n);
}

DeviceBuffer::~DeviceBuffer() { attn_rt_cuda_free(ptr); }

void OnDevice::back() {
  for (auto &[host, dev] : outs)
    attn_rt_cuda_to_host(host, dev->ptr, dev->bytes);
}

void callKernel(void (*fn)(void), const attn_rt_kind &kind,
                attn_rt_memref_f32_4 *out, attn_rt_memref_f32_4 *q,
                attn_rt_memref_f32_4 *k, attn_rt_memref_f32_4 *v,
                attn_rt_memref_i64_1 *lens, Buf<float> *table);

/// One call of a CUDA kernel: inputs to the device, the kernel, the output
/// back into `out`.
void DeviceCall::callInto(void (*fn)(void), const attn_rt_kind &kind,
                          Buf<float> &out) {
  call(fn, kind);
  if (!qoNarrow(kind)) {
    attn_rt_cuda_to_host(out.data(), this->out.ptr, this->out.bytes);
    return;
  }
  Buf<uint16_t> bits(out.size());
  attn_rt_cuda_to_host(bits.data(), this->out.ptr, this->out.bytes);
  widenFromQO(kind, bits, out);
}

void runOnDevice(void (*fn)(void), const attn_rt_kind &kind, Buf<float> &q,
                 const std::vector<int64_t> &qs, Buf<float> &k,
                 const std::vector<int64_t> &ks, Buf<float> &v,
                 const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
                 Buf<float> &out);

namespace {

/// "f32", "bf16" or "f16" for an ATTN_RT_KV_* element type.
const char *nameOf(int dtype) {
  return dtype == ATTN_RT_KV_BF16  ? "bf16"
         : dtype == ATTN_RT_KV_F16 ? "f16"
                                   : "f32";
}

/// x's bf16 (or IEEE half: `half`) bits, rounded to nearest even.
Buf<uint16_t> narrowAll(const Buf<float> &x, bool half) {
  Buf<uint16_t> bits(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    bits[i] = narrowBits(x[i], half);
  return bits;
}

/// x rounded in place to the values bf16 (or half) holds.
void roundAll(Buf<float> &x, bool half) {
  for (float &f : x)
    f = widenBits(narrowBits(f, half), half);
}

} // namespace

const char *kvDtypeName(const attn_rt_kind &kind) {
  return nameOf(kind.kv_dtype);
}

const char *qoDtypeName(const attn_rt_kind &kind) {
  return nameOf(kind.qo_dtype);
}

Buf<uint16_t> narrowToKV(const attn_rt_kind &kind, const Buf<float> &x) {
  return narrowAll(x, kvIsHalf(kind));
}

Buf<uint16_t> narrowToQO(const attn_rt_kind &kind, const Buf<float> &x) {
  return narrowAll(x, kind.qo_dtype == ATTN_RT_KV_F16);
}

void roundToQO(const attn_rt_kind &kind, Buf<float> &x) {
  if (qoNarrow(kind))
    roundAll(x, kind.qo_dtype == ATTN_RT_KV_F16);
}

void widenFromQO(const attn_rt_kind &kind, const Buf<uint16_t> &bits,
                 Buf<float> &x) {
  bool half = kind.qo_dtype == ATTN_RT_KV_F16;
  x.resize(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    x[i] = widenBits(bits[i], half);
}

void roundToKV(const attn_rt_kind &kind, Buf<float> &x) {
  if (kind.kv_dtype != ATTN_RT_KV_F32)
    roundAll(x, kvIsHalf(kind));
}

HostCall::HostCall(const attn_rt_kind &kind, Buf<float> &q,
                   const std::vector<int64_t> &qs, Buf<float> &k,
                   const std::vector<int64_t> &ks, Buf<float> &v,
                   const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
                   Buf<float> *table, Buf<float> &out)
    : table(table), kind(&kind) {
  float *kp = k.data(), *vp = v.data();
  if (kind.kv_dtype != ATTN_RT_KV_F32) {
    // The kernel's descriptors carry an untyped pointer (the layout of a
    // memref descriptor does not depend on its element type): the bf16/f16
    // bits go where the float32 values would.
    k16 = narrowToKV(kind, k);
    v16 = narrowToKV(kind, v);
    kp = reinterpret_cast<float *>(k16.data());
    vp = reinterpret_cast<float *>(v16.data());
  }
  describe(q, qs, kp, ks, vp, vs, lens, out);
}

HostCall::HostCall(const attn_rt_kind &kind, Buf<float> &q,
                   const std::vector<int64_t> &qs, Buf<uint16_t> &&k,
                   const std::vector<int64_t> &ks, Buf<uint16_t> &&v,
                   const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
                   Buf<float> *table, Buf<float> &out)
    : k16(std::move(k)), v16(std::move(v)), table(table), kind(&kind) {
  describe(q, qs, reinterpret_cast<float *>(k16.data()), ks,
           reinterpret_cast<float *>(v16.data()), vs, lens, out);
}

void HostCall::describe(Buf<float> &q, const std::vector<int64_t> &qs, float *k,
                        const std::vector<int64_t> &ks, float *v,
                        const std::vector<int64_t> &vs,
                        std::vector<int64_t> &lens, Buf<float> &out) {
  std::vector<int64_t> os = {qs[0], qs[1], qs[2], vs[3]};
  out.resize(os[0] * os[1] * os[2] * os[3]);
  dout = view4(out.data(), os);
  dq = view4(q.data(), qs);
  if (qoNarrow(*kind)) {
    // The descriptors' untyped pointers again: 16-bit q and output.
    q16 = narrowToQO(*kind, q);
    out16.resize(out.size());
    dq = view4(reinterpret_cast<float *>(q16.data()), qs);
    dout = view4(reinterpret_cast<float *>(out16.data()), os);
    this->out = &out;
  }
  dk = view4(k, ks);
  dv = view4(v, vs);
  dl = {lens.data(), lens.data(), 0, {int64_t(lens.size())}, {1}};
}

void HostCall::call(void (*fn)(void), const attn_rt_kind &kind) {
  callKernel(fn, kind, &dout, &dq, &dk, &dv, &dl, table);
}

void HostCall::finish() {
  if (out)
    widenFromQO(*kind, out16, *out);
}

void run(void (*fn)(void), const attn_rt_kind &kind, Buf<float> &q,
         const std::vector<int64_t> &qs, Buf<float> &k,
         const std::vector<int64_t> &ks, Buf<float> &v,
         const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
         Buf<float> *table, Buf<float> &out) {
  if (gCuda) {
    out.resize(qs[0] * qs[1] * qs[2] * vs[3]);
    return runOnDevice(fn, kind, q, qs, k, ks, v, vs, lens, out);
  }
  HostCall c(kind, q, qs, k, ks, v, vs, lens, table, out);
  c.call(fn, kind);
  c.finish();
}

void callKernel(void (*fn)(void), const attn_rt_kind &kind,
                attn_rt_memref_f32_4 *out, attn_rt_memref_f32_4 *q,
                attn_rt_memref_f32_4 *k, attn_rt_memref_f32_4 *v,
                attn_rt_memref_i64_1 *lens, Buf<float> *table) {
  if (kind.bias_buckets > 0) {
    attn_rt_memref_f32_2 dt{table->data(), table->data(), 0,
                            {kind.bias_buckets, kind.num_heads},
                            {kind.num_heads, 1}};
    reinterpret_cast<attn_rt_sdpa_bias_fn>(fn)(out, q, k, v, lens, &dt);
  } else if (kind.has_sinks) {
    attn_rt_memref_f32_1 ds{table->data(), table->data(), 0,
                            {kind.num_heads}, {1}};
    reinterpret_cast<attn_rt_sdpa_sinks_fn>(fn)(out, q, k, v, lens, &ds);
  } else {
    reinterpret_cast<attn_rt_sdpa_fn>(fn)(out, q, k, v, lens);
  }
}

DeviceCall::HostKV::HostKV(const attn_rt_kind &kind, const Buf<float> &x)
    : bits(kind.kv_dtype == ATTN_RT_KV_F32 ? Buf<uint16_t>()
                                           : narrowToKV(kind, x)),
      data(kind.kv_dtype == ATTN_RT_KV_F32 ? (const void *)x.data()
                                           : (const void *)bits.data()),
      bytes(kvElementBytes(kind) * int64_t(x.size())) {}

DeviceCall::HostKV::HostKV(const Buf<uint16_t> &x)
    : data(x.data()), bytes(2 * int64_t(x.size())) {}

DeviceCall::DeviceCall(const attn_rt_kind &kind, Buf<float> &hq,
                       const std::vector<int64_t> &qs, Buf<float> &hk,
                       const std::vector<int64_t> &ks, Buf<float> &hv,
                       const std::vector<int64_t> &vs, std::vector<int64_t> &hl,
                       int64_t outElems)
    : DeviceCall(kind, hq, qs, HostKV(kind, hk), ks, HostKV(kind, hv), vs, hl,
                 outElems) {}

DeviceCall::DeviceCall(const attn_rt_kind &kind, Buf<float> &hq,
                       const std::vector<int64_t> &qs, const Buf<uint16_t> &hk,
                       const std::vector<int64_t> &ks, const Buf<uint16_t> &hv,
                       const std::vector<int64_t> &vs, std::vector<int64_t> &hl,
                       int64_t outElems)
    : DeviceCall(kind, hq, qs, HostKV(hk), ks, HostKV(hv), vs, hl, outElems) {}

DeviceCall::DeviceCall(const attn_rt_kind &kind, Buf<float> &hq,
                       const std::vector<int64_t> &qs, const HostKV &hk,
                       const std::vector<int64_t> &ks, const HostKV &hv,
                       const std::vector<int64_t> &vs, std::vector<int64_t> &hl,
                       int64_t outElems)
    : q16(qoNarrow(kind) ? narrowToQO(kind, hq) : Buf<uint16_t>()),
      out(nullptr, (qoNarrow(kind) ? 2 : 4) * outElems),
      q(qoNarrow(kind) ? (void *)q16.data() : (void *)hq.data(),
        (qoNarrow(kind) ? 2 : 4) * int64_t(hq.size())),
      k(hk.data, hk.bytes), v(hv.data, hv.bytes),
      lens(hl.data(), 8 * int64_t(hl.size())) {
  describe(qs, ks, vs, int64_t(hl.size()));
}

void DeviceCall::describe(const std::vector<int64_t> &qs,
                          const std::vector<int64_t> &ks,
                          const std::vector<int64_t> &vs, int64_t batch) {
  // The descriptors carry untyped pointers: a 16-bit cache's device
  // buffer goes where the float32 one would (see HostCall).
  std::vector<int64_t> os = {qs[0], qs[1], qs[2], vs[3]};
  dout = view4(static_cast<float *>(out.ptr), os);
  dq = view4(static_cast<float *>(q.ptr), qs);
  dk = view4(static_cast<float *>(k.ptr), ks);
  dv = view4(static_cast<float *>(v.ptr), vs);
  auto *l = static_cast<int64_t *>(lens.ptr);
  dl = {l, l, 0, {batch}, {1}};
}

void DeviceCall::call(void (*fn)(void), const attn_rt_kind &kind) {
  callKernel(fn, kind, &dout, &dq, &dk, &dv, &dl, nullptr);
}

void runOnDevice(void (*fn)(void), const attn_rt_kind &kind, Buf<float> &q,
                 const std::vector<int64_t> &qs, Buf<float> &k,
                 const std::vector<int64_t> &ks, Buf<float> &v,
                 const std::vector<int64_t> &vs, std::vector<int64_t> &lens,
                 Buf<float> &out) {
  DeviceCall(kind, q, qs, k, ks, v, vs, lens, int64_t(out.size()))
      .callInto(fn, kind, out);
}

} // namespace cli
} // namespace attn_rt
