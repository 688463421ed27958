// AVX2 detail pass: 8 source pixels, so 32 output pixels, per block. Each pixel's weights are
// gathered from the table row of their tap and phase. Buckets match the scalar pass exactly
// (their sums are exact integers); the filter sums use fused multiply-adds, so outputs may
// differ from it by float rounding.
#include <immintrin.h>

#include <cstring>

#include "detail/detail.hpp"

namespace avatar {

namespace {

#define AVATAR_INLINE inline __attribute__((always_inline))

AVATAR_INLINE __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

AVATAR_INLINE __m256i pick(__m256 mask, int yes, int no) {
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32(no)),
                                              _mm256_castsi256_ps(_mm256_set1_epi32(yes)), mask));
}

AVATAR_INLINE __m256i select(__m256 mask, __m256i yes, __m256i no) {
  return _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(no), _mm256_castsi256_ps(yes), mask));
}

// Buckets of the 8 pixels at padded columns i .. i + 7.
AVATAR_INLINE __m256i buckets(const float* const* rows, int i, const DetailTable& table) {
  __m256 gxx = _mm256_setzero_ps(), gyy = _mm256_setzero_ps(), gxy = _mm256_setzero_ps();
  for (int d = 1; d <= 3; ++d) {
    for (int c = i - 1; c <= i + 1; ++c) {
      const __m256 gx =
          _mm256_sub_ps(_mm256_loadu_ps(rows[d] + c + 1), _mm256_loadu_ps(rows[d] + c - 1));
      const __m256 gy =
          _mm256_sub_ps(_mm256_loadu_ps(rows[d + 1] + c), _mm256_loadu_ps(rows[d - 1] + c));
      gxx = _mm256_fmadd_ps(gx, gx, gxx);  // exact: integers below 2**24
      gyy = _mm256_fmadd_ps(gy, gy, gyy);
      gxy = _mm256_fmadd_ps(gx, gy, gxy);
    }
  }
  const __m256 a = _mm256_sub_ps(gxx, gyy), b = _mm256_add_ps(gxy, gxy);
  const __m256 abs_a = abs_ps(a), abs_b = abs_ps(b);
  const __m256 tan = _mm256_set1_ps(kTan22_5);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 near_a = _mm256_cmp_ps(abs_b, _mm256_mul_ps(tan, abs_a), _CMP_LE_OQ);
  const __m256 near_b = _mm256_cmp_ps(abs_a, _mm256_mul_ps(tan, abs_b), _CMP_LE_OQ);
  const __m256 a_pos = _mm256_cmp_ps(a, zero, _CMP_GT_OQ);
  const __m256 b_pos = _mm256_cmp_ps(b, zero, _CMP_GT_OQ);
  const __m256 a_nonneg = _mm256_cmp_ps(a, zero, _CMP_GE_OQ);
  const __m256 b_nonneg = _mm256_cmp_ps(b, zero, _CMP_GE_OQ);
  const __m256i diagonal = select(a_pos, pick(b_pos, 1, 7), pick(b_pos, 3, 5));
  __m256i sector = select(near_b, pick(b_nonneg, 2, 6), diagonal);
  sector = select(near_a, pick(a_nonneg, 0, 4), sector);
  const __m256 trace = _mm256_add_ps(gxx, gyy);
  const __m256 spread = _mm256_mul_ps(_mm256_set1_ps(table.thresholds[1]), trace);
  const __m256 length = _mm256_add_ps(_mm256_mul_ps(a, a), _mm256_mul_ps(b, b));
  // A true compare is all ones (-1): bucket = (sector * 2 + strength) * 2 + coherence.
  const __m256i strong =
      _mm256_castps_si256(_mm256_cmp_ps(trace, _mm256_set1_ps(table.thresholds[0]), _CMP_GE_OQ));
  const __m256i coherent =
      _mm256_castps_si256(_mm256_cmp_ps(length, _mm256_mul_ps(spread, spread), _CMP_GT_OQ));
  const __m256i bucket =
      _mm256_sub_epi32(_mm256_slli_epi32(sector, 2), _mm256_add_epi32(strong, strong));
  return _mm256_sub_epi32(bucket, coherent);
}

AVATAR_INLINE __m256i to_u8(__m256 sum) {
  const __m256 v = _mm256_add_ps(sum, _mm256_set1_ps(0.5f));
  const __m256 clamped =
      _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
  return _mm256_cvttps_epi32(clamped);
}

// Output pixels 2 x .. 2 x + 15 of both rows into even and odd (16 bytes each).
AVATAR_INLINE void block(const float* const* rows, int x, const DetailTable& table, uint8_t* even,
                         uint8_t* odd) {
  const __m256i bucket = buckets(rows, x + kDetailRadius, table);
  __m256 acc[kDetailPhases];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int d = 0; d < 5; ++d) {
    for (int c = 0; c < 5; ++c) {
      const __m256 s = _mm256_loadu_ps(rows[d] + x + c);
      const float* w = table.weights + (d * 5 + c) * kDetailTableBuckets;
      for (int p = 0; p < kDetailPhases; ++p) {
        const float* row = w + p * kDetailTaps * kDetailTableBuckets;
        acc[p] = _mm256_fmadd_ps(_mm256_i32gather_ps(row, bucket, 4), s, acc[p]);
      }
    }
  }
  // Two phases' bytes in one 16-bit lane (px = 0 first), packed to 8 lanes in the low half.
  const auto pair = [&](int p) {
    const __m256i both = _mm256_or_si256(to_u8(acc[p]), _mm256_slli_epi32(to_u8(acc[p + 1]), 8));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(both, both), 0b1000);
    return _mm256_castsi256_si128(packed);
  };
  _mm_storeu_si128(reinterpret_cast<__m128i*>(even), pair(0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(odd), pair(2));
}

void row(const float* const* rows, int width, const DetailTable& table, uint8_t* even,
         uint8_t* odd) {
  int x = 0;
  for (; x + 8 <= width; x += 8) block(rows, x, table, even + 2 * x, odd + 2 * x);
  if (x < width) {
    alignas(16) uint8_t tail[2][16];
    block(rows, x, table, tail[0], tail[1]);
    std::memcpy(even + 2 * x, tail[0], 2 * static_cast<size_t>(width - x));
    std::memcpy(odd + 2 * x, tail[1], 2 * static_cast<size_t>(width - x));
  }
}

}  // namespace

const DetailKernel& detail_avx2() {
  static const DetailKernel kernel{"avx2", row};
  return kernel;
}

}  // namespace avatar
