/*===- narrow.h - float32 to bfloat16 / IEEE half bits ------------*- C++ -*-===*
 *
 * The one rounding rule for writing fp32 values into a bf16 or f16 KV cache
 * (round to nearest even), shared by the executables' `bench --page-size`
 * and attn-bench. Header-only, no dependencies.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_NARROW_H
#define ATTN_RUNTIME_NARROW_H

#include <cstdint>
#include <cstring>

namespace attn_rt {

/// The bits of `f` as bfloat16 (`half` false) or IEEE half (`half` true),
/// rounded to nearest even. Halves below 2^-14 flush to a signed zero and
/// past 65504 become infinity: benchmark data stays far from both.
inline uint16_t narrowBits(float f, bool half) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (!half)
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a < 0x38800000u)
    return uint16_t(sign);
  if (a >= 0x477ff000u)
    return uint16_t(sign | 0x7c00u);
  return uint16_t(sign | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));
}

} // namespace attn_rt

#endif // ATTN_RUNTIME_NARROW_H
