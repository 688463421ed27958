// Portable detail pass: the specification the SIMD variants are checked against. Built
// with -ffp-contract=off: every product and sum is rounded on its own, as in numpy.
#include <algorithm>
#include <cmath>

#include "detail/detail.hpp"

namespace avatar {

namespace {

int angle_sector(float a, float b) {
  const float abs_a = std::fabs(a), abs_b = std::fabs(b);
  if (abs_b <= kTan22_5 * abs_a) return a >= 0.0f ? 0 : 4;
  if (abs_a <= kTan22_5 * abs_b) return b >= 0.0f ? 2 : 6;
  if (a > 0.0f) return b > 0.0f ? 1 : 7;
  return b > 0.0f ? 3 : 5;
}

// Bucket of the pixel at padded column i (source column i - 2).
int bucket(const float* const* rows, int i, const float* thresholds) {
  float gxx = 0.0f, gyy = 0.0f, gxy = 0.0f;
  for (int d = 1; d <= 3; ++d) {
    for (int c = i - 1; c <= i + 1; ++c) {
      const float gx = rows[d][c + 1] - rows[d][c - 1];
      const float gy = rows[d + 1][c] - rows[d - 1][c];
      gxx += gx * gx;
      gyy += gy * gy;
      gxy += gx * gy;
    }
  }
  const float a = gxx - gyy, b = gxy + gxy, trace = gxx + gyy;
  const int strength = trace >= thresholds[0] ? 1 : 0;
  const float spread = thresholds[1] * trace;
  const int coherence = a * a + b * b > spread * spread ? 1 : 0;
  return (angle_sector(a, b) * kDetailStrengths + strength) * kDetailCoherences + coherence;
}

uint8_t round_to_u8(float sum) {
  const float shifted = std::min(std::max(sum + 0.5f, 0.0f), 255.0f);
  return static_cast<uint8_t>(static_cast<int>(shifted));
}

void row(const float* const* rows, int width, const DetailTable& table, uint8_t* even,
         uint8_t* odd) {
  uint8_t* out[2] = {even, odd};
  for (int x = 0; x < width; ++x) {
    const int i = x + kDetailRadius;
    const int b = bucket(rows, i, table.thresholds);
    for (int phase = 0; phase < kDetailPhases; ++phase) {
      const float* w = table.weights + phase * kDetailTaps * kDetailTableBuckets + b;
      float acc = 0.0f;
      for (int d = 0; d < 5; ++d) {
        for (int c = 0; c < 5; ++c) acc += w[(d * 5 + c) * kDetailTableBuckets] * rows[d][x + c];
      }
      out[phase / 2][2 * x + phase % 2] = round_to_u8(acc);
    }
  }
}

}  // namespace

const DetailKernel& detail_scalar() {
  static const DetailKernel kernel{"scalar", row};
  return kernel;
}

}  // namespace avatar
