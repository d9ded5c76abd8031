/*===- descriptors.h - memref descriptors over contiguous buffers -*- C++ -*-===*
 *
 * MLIR's memref descriptors (attn_runtime.h) over row-major contiguous float
 * buffers: what the C API and the executables' commands hand the kernels.
 * Internal to the runtime, header-only, on the ABI header alone.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RT_DESCRIPTORS_H
#define ATTN_RT_DESCRIPTORS_H

#include "attn_runtime.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

// Weak: CUDA executables do not link the OpenMP runtime (a GPU machine may
// have none); CPU executables do, and the kernels' threads follow these.
extern "C" __attribute__((weak)) void omp_set_num_threads(int);
extern "C" __attribute__((weak)) int omp_get_max_threads(void);

namespace attn_rt {

/// A contiguous (row-major) descriptor of rank N over `data`, of the N
/// sizes at `s`.
template <typename Desc, int N>
Desc contiguousView(float *data, const int64_t *s) {
  Desc d;
  d.allocated = d.aligned = data;
  d.offset = 0;
  int64_t stride = 1;
  for (int i = N - 1; i >= 0; --i) {
    d.sizes[i] = s[i];
    d.strides[i] = stride;
    stride *= s[i];
  }
  return d;
}

/// A descriptor of a contiguous [d0, d1, d2, d3] ([d0, d1, d2], [d0, d1])
/// buffer, its sizes in a vector or an array (an attn_tensor's shape: no
/// allocation).
inline attn_rt_memref_f32_4 view4(float *data, const std::vector<int64_t> &s) {
  return contiguousView<attn_rt_memref_f32_4, 4>(data, s.data());
}
inline attn_rt_memref_f32_3 view3(float *data, const std::vector<int64_t> &s) {
  return contiguousView<attn_rt_memref_f32_3, 3>(data, s.data());
}
inline attn_rt_memref_f32_2 view2(float *data, const std::vector<int64_t> &s) {
  return contiguousView<attn_rt_memref_f32_2, 2>(data, s.data());
}
inline attn_rt_memref_f32_4 view4(float *data, const int64_t *s) {
  return contiguousView<attn_rt_memref_f32_4, 4>(data, s);
}
inline attn_rt_memref_f32_3 view3(float *data, const int64_t *s) {
  return contiguousView<attn_rt_memref_f32_3, 3>(data, s);
}
inline attn_rt_memref_f32_2 view2(float *data, const int64_t *s) {
  return contiguousView<attn_rt_memref_f32_2, 2>(data, s);
}

/// The page pools' layouts the benchmarks lay out: "hnd" [pages, Hkv, P, d]
/// (the C API's default), "nhd" [pages, P, Hkv, d] (vLLM's), "head-major"
/// [Hkv, pages, P, d].
inline bool isPoolLayout(std::string_view layout) {
  return layout == "hnd" || layout == "nhd" || layout == "head-major";
}

/// The strides of a page pool [pages, Hkv, P, d] laid out as `layout`
/// (isPoolLayout) says. The CPU paged kernels take any strides whose rows
/// are contiguous.
inline std::array<int64_t, 4> poolStrides(std::string_view layout,
                                          int64_t pages, int64_t hkv,
                                          int64_t page, int64_t d) {
  if (layout == "nhd")
    return {page * hkv * d, d, hkv * d, 1};
  if (layout == "head-major")
    return {page * d, pages * page * d, d, 1};
  return {hkv * page * d, page * d, d, 1};
}

} // namespace attn_rt

#endif // ATTN_RT_DESCRIPTORS_H
