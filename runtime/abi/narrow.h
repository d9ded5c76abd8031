/*===- narrow.h - float32 to bfloat16 / IEEE half bits ------------*- C++ -*-===*
 *
 * The one rounding rule for writing fp32 values into a bf16 or f16 KV cache
 * (round to nearest even) and its exact inverse, shared by the executables
 * (sdpa, check, bench) and attn-bench. Header-only, no dependencies.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTN_RUNTIME_NARROW_H
#define ATTN_RUNTIME_NARROW_H

#include <cstdint>
#include <cstring>

namespace attn_rt {

/// The bits of `f` as bfloat16 (`half` false) or IEEE half (`half` true),
/// rounded to nearest even; NaN stays NaN. Halves below 2^-14 flush to a
/// signed zero and past 65504 become infinity: benchmark data stays far
/// from both.
inline uint16_t narrowBits(float f, bool half) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  // NaN: a quiet NaN keeping its payload's top bits (rounding could carry
  // it into infinity or zero).
  if (a > 0x7f800000u)
    return half ? uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu))
                : uint16_t((u >> 16) | 0x40u);
  if (!half)
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  if (a < 0x38800000u)
    return uint16_t(sign);
  if (a >= 0x477ff000u)
    return uint16_t(sign | 0x7c00u);
  return uint16_t(sign | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));
}

/// The float32 value of bfloat16 (`half` false) or IEEE half (`half` true)
/// bits: exact (every such value is a float32), subnormal halves, infinities
/// and NaNs included.
inline float widenBits(uint16_t h, bool half) {
  uint32_t u;
  if (!half) {
    u = uint32_t(h) << 16;
  } else {
    uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu,
             m = h & 0x3ffu;
    if (e == 0x1f) { // infinity or NaN
      u = sign | 0x7f800000u | (m << 13);
    } else if (e != 0) {
      u = sign | ((e + 112) << 23) | (m << 13);
    } else if (m == 0) {
      u = sign;
    } else { // subnormal: m * 2^-24, normalized
      int shift = 0;
      while (!(m & 0x400u)) {
        m <<= 1;
        ++shift;
      }
      u = sign | (uint32_t(113 - shift) << 23) | ((m & 0x3ffu) << 13);
    }
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace attn_rt

#endif // ATTN_RUNTIME_NARROW_H
