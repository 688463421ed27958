// Portable passes: the specification every SIMD variant is checked against.
#include <algorithm>

#include "resample/passes.hpp"

namespace avatar {

namespace {

void widen(const uint8_t* src, int64_t step, int in_size, int padded_in, float* dst) {
  for (int i = 0; i < in_size; ++i) dst[i] = static_cast<float>(src[i * step]);
  const float edge = dst[in_size - 1];
  for (int i = in_size; i < padded_in; ++i) dst[i] = edge;
}

void horizontal_row(const AxisTable& t, const float* src, float* dst) {
  for (int x = 0; x < t.padded_out; ++x) {
    const float* w = t.weights.data() + static_cast<int64_t>(x) * t.taps;
    const float* s = src + t.first[static_cast<size_t>(x)];
    float acc = 0.0f;
    for (int k = 0; k < t.taps; ++k) acc += w[k] * s[k];
    dst[x] = acc;
  }
}

void horizontal(const AxisTable& t, const float* const* src, float* const* dst, int rows) {
  for (int r = 0; r < rows; ++r) horizontal_row(t, src[r], dst[r]);
}

uint8_t round_to_u8(float sum) {
  const float shifted = sum + kRoundingOffset;
  if (!(shifted > 0.0f)) return 0;
  if (shifted >= 255.0f) return 255;
  return static_cast<uint8_t>(static_cast<int>(shifted));
}

void vertical(const float* const* rows, int x0, const float* weights, int taps, int count,
              uint8_t* dst) {
  for (int i = 0; i < count; ++i) {
    float acc = 0.0f;
    for (int k = 0; k < taps; ++k) acc += weights[k] * rows[k][x0 + i];
    dst[i] = round_to_u8(acc);
  }
}

void vertical_pair(const float* const* rows, int x0, const float* weights_a, const float* weights_b,
                   int taps, int step, int count, uint8_t* dst_a, uint8_t* dst_b) {
  vertical(rows, x0, weights_a, taps, count, dst_a);
  vertical(rows + step, x0, weights_b, taps, count, dst_b);
}

void finish() {}

}  // namespace

const PassKernels& scalar_passes() {
  static const PassKernels passes{"scalar", widen, horizontal, vertical, vertical_pair, finish};
  return passes;
}

}  // namespace avatar
