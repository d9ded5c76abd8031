// runtime/abi/narrow.h, the one fp32 -> bf16/f16 rounding the executables
// use (K/V caches, --qo-dtype's q and outputs): round to nearest even, ties
// to even, NaN stays a quiet NaN (f16 made it infinity, bf16 could carry it
// into -0), infinities and overflow, and widenBits its exact inverse.
#include "narrow.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>

using attn_rt::narrowBits;
using attn_rt::widenBits;

static int failures = 0;

static void expect(bool ok, const char *what) {
  if (!ok) {
    std::printf("FAIL %s\n", what);
    ++failures;
  }
}

static float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int main() {
  for (int half = 0; half < 2; ++half) {
    // NaNs of every payload, both signs, stay NaN of their sign.
    for (uint32_t u : {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xffffffffu,
                       0xff800001u, 0x7fbfffffu}) {
      uint16_t b = narrowBits(fromBits(u), half);
      float w = widenBits(b, half);
      expect(std::isnan(w), half ? "f16: NaN stays NaN" : "bf16: NaN stays NaN");
      expect(std::signbit(w) == bool(u >> 31), "NaN keeps its sign");
    }
    float inf = std::numeric_limits<float>::infinity();
    expect(widenBits(narrowBits(inf, half), half) == inf, "+inf");
    expect(widenBits(narrowBits(-inf, half), half) == -inf, "-inf");
    // Every 16-bit value goes through widen and narrow unchanged.
    int changed = 0;
    for (uint32_t b = 0; b < 0x10000; ++b) {
      float w = widenBits(uint16_t(b), half);
      if (std::isnan(w))
        continue;
      if (half && (b & 0x7c00u) == 0 && (b & 0x3ffu)) // subnormals flush
        continue;
      changed += narrowBits(w, half) != b;
    }
    expect(changed == 0, "widen then narrow is the identity");
  }
  // Ties to even: 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7 (even: 1);
  // 1 + 3·2^-8 halfway between 1 + 2^-7 and 1 + 2^-6 (even: 1 + 2^-6).
  expect(widenBits(narrowBits(1.0f + 0x1p-8f, false), false) == 1.0f,
         "bf16 tie to even (down)");
  expect(widenBits(narrowBits(1.0f + 3 * 0x1p-8f, false), false) ==
             1.0f + 0x1p-6f,
         "bf16 tie to even (up)");
  expect(widenBits(narrowBits(1.0f + 0x1p-11f, true), true) == 1.0f,
         "f16 tie to even");
  expect(std::isinf(widenBits(narrowBits(70000.0f, true), true)),
         "f16 overflow is infinity");
  if (failures == 0)
    std::printf("ok narrowBits/widenBits\n");
  return failures != 0;
}
