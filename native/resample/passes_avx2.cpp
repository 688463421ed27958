// AVX2 + FMA passes: 8 float lanes. Built with -mavx2 -mfma; only called after the
// dispatcher saw both features.
#include <immintrin.h>

#include <cstring>

#include "resample/passes.hpp"

namespace avatar {

namespace {

void widen(const uint8_t* src, int64_t step, int in_size, int padded_in, float* dst) {
  int i = 0;
  if (step == 1) {
    for (; i + 8 <= in_size; i += 8) {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i));
      _mm256_storeu_ps(dst + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
    }
  }
  for (; i < in_size; ++i) dst[i] = static_cast<float>(src[i * step]);
  const __m256 edge = _mm256_set1_ps(dst[in_size - 1]);
  for (; i + 8 <= padded_in; i += 8) _mm256_storeu_ps(dst + i, edge);
  for (; i < padded_in; ++i) dst[i] = dst[in_size - 1];
}

// One unaligned load and one permute per tap feed eight outputs (LaneBlocks).
template <int Taps>
void horizontal_permute(const AxisTable& t, const float* src, float* dst) {
  const LaneBlocks& b = t.blocks8;
  const int taps = Taps > 0 ? Taps : t.taps;
  const int blocks = t.padded_out / 8;
  for (int i = 0; i < blocks; ++i) {
    const __m256i lane = _mm256_load_si256(reinterpret_cast<const __m256i*>(b.lane.data() + i * 8));
    const float* s = src + b.base[static_cast<size_t>(i)];
    const float* w = b.weights.data() + static_cast<int64_t>(i) * taps * 8;
    __m256 acc = _mm256_mul_ps(_mm256_load_ps(w), _mm256_permutevar8x32_ps(_mm256_loadu_ps(s), lane));
    for (int k = 1; k < taps; ++k) {
      const __m256 v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(s + k), lane);
      acc = _mm256_fmadd_ps(_mm256_load_ps(w + k * 8), v, acc);
    }
    _mm256_store_ps(dst + i * 8, acc);
  }
}

// Downscaled axes: windows of one block spread wider than a vector, so gather.
void horizontal_gather(const AxisTable& t, const float* src, float* dst) {
  const LaneBlocks& b = t.blocks8;
  const int blocks = t.padded_out / 8;
  for (int i = 0; i < blocks; ++i) {
    __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.first.data() + i * 8));
    const float* w = b.weights.data() + static_cast<int64_t>(i) * t.taps * 8;
    __m256 acc = _mm256_mul_ps(_mm256_load_ps(w), _mm256_i32gather_ps(src, index, 4));
    for (int k = 1; k < t.taps; ++k) {
      index = _mm256_add_epi32(index, _mm256_set1_epi32(1));
      acc = _mm256_fmadd_ps(_mm256_load_ps(w + k * 8), _mm256_i32gather_ps(src, index, 4), acc);
    }
    _mm256_store_ps(dst + i * 8, acc);
  }
}

void horizontal(const AxisTable& t, const float* src, float* dst) {
  if (!t.blocks8.usable) return horizontal_gather(t, src, dst);
  switch (t.taps) {
    case 2: return horizontal_permute<2>(t, src, dst);
    case 4: return horizontal_permute<4>(t, src, dst);
    case 6: return horizontal_permute<6>(t, src, dst);
    default: return horizontal_permute<0>(t, src, dst);
  }
}

// Round half up and saturate to 0..255, as the scalar pass; 32 pixels.
__m256i round_pack(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 top = _mm256_set1_ps(256.0f);  // keeps cvtt away from its overflow value
  const auto to_int = [&](__m256 v) {
    return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_add_ps(v, half), top));
  };
  const __m256i ab = _mm256_packs_epi32(to_int(a), to_int(b));
  const __m256i cd = _mm256_packs_epi32(to_int(c), to_int(d));
  const __m256i bytes = _mm256_packus_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <int Taps>
__m256i vertical_block(const float* const* rows, int x, const float* weights, int taps) {
  if (Taps > 0) taps = Taps;
  __m256 acc[4];
  const __m256 w0 = _mm256_broadcast_ss(weights);
  for (int j = 0; j < 4; ++j) acc[j] = _mm256_mul_ps(w0, _mm256_loadu_ps(rows[0] + x + 8 * j));
  for (int k = 1; k < taps; ++k) {
    const __m256 w = _mm256_broadcast_ss(weights + k);
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm256_fmadd_ps(w, _mm256_loadu_ps(rows[k] + x + 8 * j), acc[j]);
    }
  }
  return round_pack(acc[0], acc[1], acc[2], acc[3]);
}

template <int Taps>
void vertical_n(const float* const* rows, int x0, const float* weights, int taps, int count,
                uint8_t* dst) {
  int i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i pixels = vertical_block<Taps>(rows, x0 + i, weights, taps);
    auto* out = reinterpret_cast<__m256i*>(dst + i);
    if (reinterpret_cast<uintptr_t>(out) % 32 == 0) {
      _mm256_stream_si256(out, pixels);  // the output is not read again soon
    } else {
      _mm256_storeu_si256(out, pixels);
    }
  }
  if (i < count) {
    alignas(32) uint8_t tail[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(tail),
                       vertical_block<Taps>(rows, x0 + i, weights, taps));
    std::memcpy(dst + i, tail, static_cast<size_t>(count - i));
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

void finish() { _mm_sfence(); }

}  // namespace

const PassKernels& avx2_passes() {
  static const PassKernels passes{"avx2", widen, horizontal, vertical, finish};
  return passes;
}

}  // namespace avatar
