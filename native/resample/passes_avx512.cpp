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

// One unaligned load and one permute per tap feed the sixteen outputs of block i
// (LaneBlocks); Rows rows share each load of the block's lanes and weights.
template <int Taps, int Rows>
AVATAR_INLINE void permute_block(const AxisTable& t, const float* const* src, float* const* dst,
                                 int i) {
  const LaneBlocks& b = t.blocks16;
  const int taps = Taps > 0 ? Taps : t.taps;
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

template <int Taps, int Rows>
void horizontal_permute(const AxisTable& t, const float* const* src, float* const* dst) {
  const int blocks = t.padded_out / 16;
  for (int i = 0; i < blocks; ++i) permute_block<Taps, Rows>(t, src, dst, i);
}

// Doubling (PeriodicBlocks with period 2), 32 outputs from two usable 16-output blocks at a time:
// both phases' weights stay in registers and each source vector is one unaligned
// load shared by the phases (the odd phase reads Shift further). The same products
// and sums as permute_block, in the same order.
template <int Taps, int Shift>
void horizontal_twofold(const AxisTable& t, const float* src, float* dst) {
  const PeriodicBlocks& twofold = t.periodic;
  __m512 even[Taps], odd[Taps];
  for (int k = 0; k < Taps; ++k) {
    even[k] = _mm512_set1_ps(twofold.weights.data()[k]);
    odd[k] = _mm512_set1_ps(twofold.weights.data()[Taps + k]);
  }
  // Output 2j takes even[j], output 2j + 1 takes odd[j] (index bit 4 picks `odd`).
  const __m512i first_half =
      _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second_half =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const int blocks = t.padded_out / 16;
  for (int b = 0; b < blocks;) {
    if (b + 1 >= blocks || !twofold.usable[static_cast<size_t>(b)] ||
        !twofold.usable[static_cast<size_t>(b) + 1]) {
      permute_block<Taps, 1>(t, &src, &dst, b);
      ++b;
      continue;
    }
    const float* s = src + t.first[static_cast<size_t>(b) * 16];
    __m512 sum_e = _mm512_setzero_ps(), sum_o = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int k = 0; k < Taps + Shift; ++k) {
      const __m512 v = _mm512_loadu_ps(s + k);
      if (k < Taps) sum_e = k == 0 ? _mm512_mul_ps(even[0], v) : _mm512_fmadd_ps(even[k], v, sum_e);
      if (k >= Shift) {
        const int j = k - Shift;
        sum_o = j == 0 ? _mm512_mul_ps(odd[0], v) : _mm512_fmadd_ps(odd[j], v, sum_o);
      }
    }
    _mm512_store_ps(dst + b * 16, _mm512_permutex2var_ps(sum_e, first_half, sum_o));
    _mm512_store_ps(dst + b * 16 + 16, _mm512_permutex2var_ps(sum_e, second_half, sum_o));
    b += 2;
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
  if (Taps > 0 && t.periodic.any && t.periodic.period == 2) {
    for (int r = 0; r < rows; ++r) {
      if (t.periodic.shift[1] == 0) {
        horizontal_twofold<Taps, 0>(t, src[r], dst[r]);
      } else {
        horizontal_twofold<Taps, 1>(t, src[r], dst[r]);
      }
    }
    return;
  }
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

// 16 pixels from sums that already hold the rounding offset: clamp to 0..255, then
// truncate (max returns its second operand, 0, for a NaN).
AVATAR_INLINE __m128i round_pack(__m512 v) {
  const __m512 clamped =
      _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
  return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(clamped));
}

AVATAR_INLINE __m512i pack64(const __m512* acc) {
  __m512i pixels = _mm512_castsi128_si512(round_pack(acc[0]));
  pixels = _mm512_inserti32x4(pixels, round_pack(acc[1]), 1);
  pixels = _mm512_inserti32x4(pixels, round_pack(acc[2]), 2);
  return _mm512_inserti32x4(pixels, round_pack(acc[3]), 3);
}

// 64 pixels.
template <int Taps>
AVATAR_INLINE __m512i vertical_block(const float* const* rows, int x, const float* weights,
                                     int taps) {
  if (Taps > 0) taps = Taps;
  __m512 acc[4];
  const __m512 w0 = _mm512_set1_ps(weights[0]);
  const __m512 offset = _mm512_set1_ps(kRoundingOffset);
  for (int j = 0; j < 4; ++j) {
    acc[j] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(rows[0] + x + 16 * j), offset);
  }
#pragma GCC unroll 8
  for (int k = 1; k < taps; ++k) {
    const __m512 w = _mm512_set1_ps(weights[k]);
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm512_fmadd_ps(w, _mm512_loadu_ps(rows[k] + x + 16 * j), acc[j]);
    }
  }
  return pack64(acc);
}

// Non-temporal (the output is not read again soon) only for a whole aligned line:
// a line that also takes ordinary stores would be flushed back and forth.
AVATAR_INLINE void store_pixels(uint8_t* dst, __m512i pixels) {
  auto* out = reinterpret_cast<__m512i*>(dst);
  if (reinterpret_cast<uintptr_t>(out) % 64 == 0) {
    _mm512_stream_si512(out, pixels);
  } else {
    _mm512_storeu_si512(out, pixels);
  }
}

// Writes the first `count` (< 64) bytes only.
AVATAR_INLINE void store_tail(uint8_t* dst, __m512i pixels, int count) {
  _mm512_mask_storeu_epi8(dst, ~__mmask64{0} >> (64 - count), pixels);
}

template <int Taps>
void vertical_n(const float* const* rows, int x0, const float* weights, int taps, int count,
                uint8_t* dst) {
  int i = 0;
  for (; i + 64 <= count; i += 64) {
    store_pixels(dst + i, vertical_block<Taps>(rows, x0 + i, weights, taps));
  }
  if (i < count) store_tail(dst + i, vertical_block<Taps>(rows, x0 + i, weights, taps), count - i);
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

// 64 pixels of two rows; eight independent accumulators, one load per source vector.
template <int Taps, int Step>
AVATAR_INLINE void pair_block(const float* const* rows, int x, const float* wa, const float* wb,
                              __m512i& pixels_a, __m512i& pixels_b) {
  __m512 a[4], b[4];
  const __m512 offset = _mm512_set1_ps(kRoundingOffset);
#pragma GCC unroll 16
  for (int k = 0; k < Taps + Step; ++k) {
    for (int j = 0; j < 4; ++j) {
      const __m512 v = _mm512_loadu_ps(rows[k] + x + 16 * j);
      if (k < Taps) a[j] = _mm512_fmadd_ps(_mm512_set1_ps(wa[k]), v, k == 0 ? offset : a[j]);
      if (k >= Step) {
        b[j] = _mm512_fmadd_ps(_mm512_set1_ps(wb[k - Step]), v, k == Step ? offset : b[j]);
      }
    }
  }
  pixels_a = pack64(a);
  pixels_b = pack64(b);
}

template <int Taps, int Step>
void vertical_pair_n(const float* const* rows, int x0, const float* wa, const float* wb, int count,
                     uint8_t* dst_a, uint8_t* dst_b) {
  int i = 0;
  __m512i pixels_a, pixels_b;
  for (; i + 64 <= count; i += 64) {
    pair_block<Taps, Step>(rows, x0 + i, wa, wb, pixels_a, pixels_b);
    store_pixels(dst_a + i, pixels_a);
    store_pixels(dst_b + i, pixels_b);
  }
  if (i < count) {
    pair_block<Taps, Step>(rows, x0 + i, wa, wb, pixels_a, pixels_b);
    store_tail(dst_a + i, pixels_a, count - i);
    store_tail(dst_b + i, pixels_b, count - i);
  }
}

void vertical_pair(const float* const* rows, int x0, const float* weights_a, const float* weights_b,
                   int taps, int step, int count, uint8_t* dst_a, uint8_t* dst_b) {
  switch (taps * 2 + step) {
    case 4: return vertical_pair_n<2, 0>(rows, x0, weights_a, weights_b, count, dst_a, dst_b);
    case 5: return vertical_pair_n<2, 1>(rows, x0, weights_a, weights_b, count, dst_a, dst_b);
    case 8: return vertical_pair_n<4, 0>(rows, x0, weights_a, weights_b, count, dst_a, dst_b);
    case 9: return vertical_pair_n<4, 1>(rows, x0, weights_a, weights_b, count, dst_a, dst_b);
    case 12: return vertical_pair_n<6, 0>(rows, x0, weights_a, weights_b, count, dst_a, dst_b);
    case 13: return vertical_pair_n<6, 1>(rows, x0, weights_a, weights_b, count, dst_a, dst_b);
    default:
      vertical(rows, x0, weights_a, taps, count, dst_a);
      vertical(rows + step, x0, weights_b, taps, count, dst_b);
  }
}

void finish() { _mm_sfence(); }

}  // namespace

const PassKernels& avx512_passes() {
  static const PassKernels passes{"avx512", widen, horizontal, vertical, vertical_pair, finish};
  return passes;
}

}  // namespace avatar
