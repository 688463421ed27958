// AVX-512 (F, BW, DQ, VL) passes: 16 float lanes. Built with those flags and -mfma;
// only called after the dispatcher saw every one of them.
#include <immintrin.h>

#include "resample/passes.hpp"

namespace avatar {

namespace {

#define AVATAR_INLINE inline __attribute__((always_inline))

void widen(const uint8_t* src, int64_t step, int in_size, int padded_in, float* dst) {
  int i = 0;
  if (step == 1) {
    for (; i + 16 <= in_size; i += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      _mm512_storeu_ps(dst + i, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)));
    }
  }
  for (; i < in_size; ++i) dst[i] = static_cast<float>(src[i * step]);
  const __m512 edge = _mm512_set1_ps(dst[in_size - 1]);
  for (; i + 16 <= padded_in; i += 16) _mm512_storeu_ps(dst + i, edge);
  for (; i < padded_in; ++i) dst[i] = dst[in_size - 1];
}

// One unaligned load and one permute per tap feed sixteen outputs (LaneBlocks);
// Rows rows share each load of the block's lanes and weights.
template <int Taps, int Rows>
void horizontal_permute(const AxisTable& t, const float* const* src, float* const* dst) {
  const LaneBlocks& b = t.blocks16;
  const int taps = Taps > 0 ? Taps : t.taps;
  const int blocks = t.padded_out / 16;
  for (int i = 0; i < blocks; ++i) {
    const __m512i lane = _mm512_load_si512(b.lane.data() + i * 16);
    const int base = b.base[static_cast<size_t>(i)];
    const float* w = b.weights.data() + static_cast<int64_t>(i) * taps * 16;
    __m512 acc[Rows];
    const __m512 w0 = _mm512_load_ps(w);
    for (int r = 0; r < Rows; ++r) {
      acc[r] = _mm512_mul_ps(w0, _mm512_permutexvar_ps(lane, _mm512_loadu_ps(src[r] + base)));
    }
    for (int k = 1; k < taps; ++k) {
      const __m512 wk = _mm512_load_ps(w + k * 16);
      for (int r = 0; r < Rows; ++r) {
        const __m512 v = _mm512_permutexvar_ps(lane, _mm512_loadu_ps(src[r] + base + k));
        acc[r] = _mm512_fmadd_ps(wk, v, acc[r]);
      }
    }
    for (int r = 0; r < Rows; ++r) _mm512_store_ps(dst[r] + i * 16, acc[r]);
  }
}

// Downscaled axes: windows of one block spread wider than a vector, so gather.
void horizontal_gather(const AxisTable& t, const float* src, float* dst) {
  const LaneBlocks& b = t.blocks16;
  const int blocks = t.padded_out / 16;
  for (int i = 0; i < blocks; ++i) {
    __m512i index = _mm512_loadu_si512(t.first.data() + i * 16);
    const float* w = b.weights.data() + static_cast<int64_t>(i) * t.taps * 16;
    __m512 acc = _mm512_mul_ps(_mm512_load_ps(w), _mm512_i32gather_ps(index, src, 4));
    for (int k = 1; k < t.taps; ++k) {
      index = _mm512_add_epi32(index, _mm512_set1_epi32(1));
      acc = _mm512_fmadd_ps(_mm512_load_ps(w + k * 16), _mm512_i32gather_ps(index, src, 4), acc);
    }
    _mm512_store_ps(dst + i * 16, acc);
  }
}

template <int Taps>
void horizontal_rows(const AxisTable& t, const float* const* src, float* const* dst, int rows) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) horizontal_permute<Taps, 4>(t, src + r, dst + r);
  for (; r + 2 <= rows; r += 2) horizontal_permute<Taps, 2>(t, src + r, dst + r);
  for (; r < rows; ++r) horizontal_permute<Taps, 1>(t, src + r, dst + r);
}

void horizontal(const AxisTable& t, const float* const* src, float* const* dst, int rows) {
  if (!t.blocks16.usable) {
    for (int r = 0; r < rows; ++r) horizontal_gather(t, src[r], dst[r]);
    return;
  }
  switch (t.taps) {
    case 2: return horizontal_rows<2>(t, src, dst, rows);
    case 4: return horizontal_rows<4>(t, src, dst, rows);
    case 6: return horizontal_rows<6>(t, src, dst, rows);
    default: return horizontal_rows<0>(t, src, dst, rows);
  }
}

// Round half up and saturate to 0..255, as the scalar pass; 16 pixels.
AVATAR_INLINE __m128i round_pack(__m512 v) {
  const __m512 shifted = _mm512_add_ps(v, _mm512_set1_ps(kRoundingOffset));
  const __m512 clamped =
      _mm512_min_ps(_mm512_max_ps(shifted, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
  return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(clamped));
}

// 64 pixels.
template <int Taps>
AVATAR_INLINE __m512i vertical_block(const float* const* rows, int x, const float* weights, int taps) {
  if (Taps > 0) taps = Taps;
  __m512 acc[4];
  const __m512 w0 = _mm512_set1_ps(weights[0]);
  for (int j = 0; j < 4; ++j) acc[j] = _mm512_mul_ps(w0, _mm512_loadu_ps(rows[0] + x + 16 * j));
  for (int k = 1; k < taps; ++k) {
    const __m512 w = _mm512_set1_ps(weights[k]);
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm512_fmadd_ps(w, _mm512_loadu_ps(rows[k] + x + 16 * j), acc[j]);
    }
  }
  __m512i pixels = _mm512_castsi128_si512(round_pack(acc[0]));
  pixels = _mm512_inserti32x4(pixels, round_pack(acc[1]), 1);
  pixels = _mm512_inserti32x4(pixels, round_pack(acc[2]), 2);
  return _mm512_inserti32x4(pixels, round_pack(acc[3]), 3);
}

template <int Taps>
void vertical_n(const float* const* rows, int x0, const float* weights, int taps, int count,
                uint8_t* dst) {
  int i = 0;
  for (; i + 64 <= count; i += 64) {
    const __m512i pixels = vertical_block<Taps>(rows, x0 + i, weights, taps);
    auto* out = reinterpret_cast<__m512i*>(dst + i);
    if (reinterpret_cast<uintptr_t>(out) % 64 == 0) {
      _mm512_stream_si512(out, pixels);  // the output is not read again soon
    } else {
      _mm512_storeu_si512(out, pixels);
    }
  }
  if (i < count) {
    const __mmask64 keep = ~__mmask64{0} >> (64 - (count - i));
    _mm512_mask_storeu_epi8(dst + i, keep, vertical_block<Taps>(rows, x0 + i, weights, taps));
  }
}

void vertical(const float* const* rows, int x0, const float* weights, int taps, int count,
              uint8_t* dst) {
  switch (taps) {
    case 2: return vertical_n<2>(rows, x0, weights, taps, count, dst);
    case 4: return vertical_n<4>(rows, x0, weights, taps, count, dst);
    case 6: return vertical_n<6>(rows, x0, weights, taps, count, dst);
    default: return vertical_n<0>(rows, x0, weights, taps, count, dst);
  }
}

void vertical_pair(const float* const* rows, int x0, const float* weights_a,
                   const float* weights_b, int taps, int step, int count, uint8_t* dst_a,
                   uint8_t* dst_b) {
  vertical(rows, x0, weights_a, taps, count, dst_a);
  vertical(rows + step, x0, weights_b, taps, count, dst_b);
}

void finish() { _mm_sfence(); }

}  // namespace

const PassKernels& avx512_passes() {
  static const PassKernels passes{"avx512", widen, horizontal, vertical, vertical_pair, finish};
  return passes;
}

}  // namespace avatar
