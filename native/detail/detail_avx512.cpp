// AVX-512 (F, BW, DQ, VL) detail pass: 16 source pixels, so 64 output pixels, per block.
// Each pixel's weights are picked from a 32-entry table row by one two-source permute per
// tap and phase. Buckets match the scalar pass exactly (their sums are exact integers);
// the filter sums use fused multiply-adds, so outputs may differ from it by float rounding.
#include <immintrin.h>

#include <cstring>

#include "detail/detail.hpp"

namespace avatar {

namespace {

#define AVATAR_INLINE inline __attribute__((always_inline))

// Buckets of the 16 pixels at padded columns i .. i + 15.
AVATAR_INLINE __m512i buckets(const float* const* rows, int i, const DetailTable& table) {
  __m512 gxx = _mm512_setzero_ps(), gyy = _mm512_setzero_ps(), gxy = _mm512_setzero_ps();
  for (int d = 1; d <= 3; ++d) {
    for (int c = i - 1; c <= i + 1; ++c) {
      const __m512 gx =
          _mm512_sub_ps(_mm512_loadu_ps(rows[d] + c + 1), _mm512_loadu_ps(rows[d] + c - 1));
      const __m512 gy =
          _mm512_sub_ps(_mm512_loadu_ps(rows[d + 1] + c), _mm512_loadu_ps(rows[d - 1] + c));
      gxx = _mm512_fmadd_ps(gx, gx, gxx);  // exact: integers below 2**24
      gyy = _mm512_fmadd_ps(gy, gy, gyy);
      gxy = _mm512_fmadd_ps(gx, gy, gxy);
    }
  }
  const __m512 a = _mm512_sub_ps(gxx, gyy), b = _mm512_add_ps(gxy, gxy);
  const __m512 abs_a = _mm512_abs_ps(a), abs_b = _mm512_abs_ps(b);
  const __m512 tan = _mm512_set1_ps(kTan22_5);
  const __m512 zero = _mm512_setzero_ps();
  const __mmask16 near_a = _mm512_cmp_ps_mask(abs_b, _mm512_mul_ps(tan, abs_a), _CMP_LE_OQ);
  const __mmask16 near_b = _mm512_cmp_ps_mask(abs_a, _mm512_mul_ps(tan, abs_b), _CMP_LE_OQ);
  const __mmask16 a_pos = _mm512_cmp_ps_mask(a, zero, _CMP_GT_OQ);
  const __mmask16 b_pos = _mm512_cmp_ps_mask(b, zero, _CMP_GT_OQ);
  const __mmask16 a_nonneg = _mm512_cmp_ps_mask(a, zero, _CMP_GE_OQ);
  const __mmask16 b_nonneg = _mm512_cmp_ps_mask(b, zero, _CMP_GE_OQ);
  const auto pick = [](__mmask16 m, int yes, int no) {
    return _mm512_mask_blend_epi32(m, _mm512_set1_epi32(no), _mm512_set1_epi32(yes));
  };
  const __m512i diagonal = _mm512_mask_blend_epi32(a_pos, pick(b_pos, 3, 5), pick(b_pos, 1, 7));
  __m512i sector = _mm512_mask_blend_epi32(near_b, diagonal, pick(b_nonneg, 2, 6));
  sector = _mm512_mask_blend_epi32(near_a, sector, pick(a_nonneg, 0, 4));
  const __m512 trace = _mm512_add_ps(gxx, gyy);
  const __mmask16 strong =
      _mm512_cmp_ps_mask(trace, _mm512_set1_ps(table.thresholds[0]), _CMP_GE_OQ);
  const __m512 spread = _mm512_mul_ps(_mm512_set1_ps(table.thresholds[1]), trace);
  const __m512 length = _mm512_add_ps(_mm512_mul_ps(a, a), _mm512_mul_ps(b, b));
  const __mmask16 coherent = _mm512_cmp_ps_mask(length, _mm512_mul_ps(spread, spread), _CMP_GT_OQ);
  // bucket = (sector * 2 + strength) * 2 + coherence
  __m512i bucket = _mm512_slli_epi32(sector, 2);
  bucket = _mm512_mask_add_epi32(bucket, strong, bucket, _mm512_set1_epi32(2));
  return _mm512_mask_add_epi32(bucket, coherent, bucket, _mm512_set1_epi32(1));
}

AVATAR_INLINE __m512i to_u8(__m512 sum) {
  const __m512 v = _mm512_add_ps(sum, _mm512_set1_ps(0.5f));
  const __m512 clamped =
      _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
  return _mm512_cvttps_epi32(clamped);
}

// Output pixels 2 x .. 2 x + 31 of both rows into even and odd (32 bytes each).
AVATAR_INLINE void block(const float* const* rows, int x, const DetailTable& table, uint8_t* even,
                         uint8_t* odd) {
  const __m512i bucket = buckets(rows, x + kDetailRadius, table);
  __m512 acc[kDetailPhases];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int d = 0; d < 5; ++d) {
    for (int c = 0; c < 5; ++c) {
      const __m512 s = _mm512_loadu_ps(rows[d] + x + c);
      const float* w = table.weights + (d * 5 + c) * kDetailTableBuckets;
      for (int p = 0; p < kDetailPhases; ++p) {
        const float* row = w + p * kDetailTaps * kDetailTableBuckets;
        const __m512 wp =
            _mm512_permutex2var_ps(_mm512_load_ps(row), bucket, _mm512_load_ps(row + 16));
        acc[p] = _mm512_fmadd_ps(wp, s, acc[p]);
      }
    }
  }
  // Two phases' bytes in one 16-bit lane: little-endian, so px = 0 lands first.
  const auto pair = [&](int p) {
    const __m512i lo = to_u8(acc[p]), hi = to_u8(acc[p + 1]);
    return _mm512_cvtepi32_epi16(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 8)));
  };
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(even), pair(0));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(odd), pair(2));
}

void row(const float* const* rows, int width, const DetailTable& table, uint8_t* even,
         uint8_t* odd) {
  int x = 0;
  for (; x + 16 <= width; x += 16) block(rows, x, table, even + 2 * x, odd + 2 * x);
  if (x < width) {
    alignas(32) uint8_t tail[2][32];
    block(rows, x, table, tail[0], tail[1]);
    std::memcpy(even + 2 * x, tail[0], 2 * static_cast<size_t>(width - x));
    std::memcpy(odd + 2 * x, tail[1], 2 * static_cast<size_t>(width - x));
  }
}

}  // namespace

const DetailKernel& detail_avx512() {
  static const DetailKernel kernel{"avx512", row};
  return kernel;
}

}  // namespace avatar
