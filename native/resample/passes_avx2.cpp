// AVX2 + FMA passes: 8 float lanes. Built with -mavx2 -mfma; only called after the
// dispatcher saw both features.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "resample/passes.hpp"

namespace avatar {

namespace {

#define AVATAR_INLINE inline __attribute__((always_inline))

// A load that feeds several FMAs. Left to itself GCC folds it into each of them as a
// memory operand, one load per use; the empty asm makes it a register value, loaded
// once. Where the uses share unaligned loads, those loads were the bottleneck.
AVATAR_INLINE __m256 load_once(const float* p) {
  __m256 v = _mm256_loadu_ps(p);
  asm("" : "+x"(v));
  return v;
}

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

// One unaligned load and one permute per tap feed the eight outputs of block i
// (LaneBlocks); Rows rows share each load of the block's lanes and weights, and
// their independent FMA chains hide each other's latency.
template <int Taps, int Rows>
AVATAR_INLINE void permute_block(const AxisTable& t, const float* const* src, float* const* dst,
                                 int i) {
  const LaneBlocks& b = t.blocks8;
  const int taps = Taps > 0 ? Taps : t.taps;
  const __m256i lane = _mm256_load_si256(reinterpret_cast<const __m256i*>(b.lane.data() + i * 8));
  const int base = b.base[static_cast<size_t>(i)];
  const float* w = b.weights.data() + static_cast<int64_t>(i) * taps * 8;
  __m256 acc[Rows];
  const __m256 w0 = _mm256_load_ps(w);
  for (int r = 0; r < Rows; ++r) {
    acc[r] = _mm256_mul_ps(w0, _mm256_permutevar8x32_ps(_mm256_loadu_ps(src[r] + base), lane));
  }
  for (int k = 1; k < taps; ++k) {
    const __m256 wk = _mm256_load_ps(w + k * 8);
    for (int r = 0; r < Rows; ++r) {
      const __m256 v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src[r] + base + k), lane);
      acc[r] = _mm256_fmadd_ps(wk, v, acc[r]);
    }
  }
  for (int r = 0; r < Rows; ++r) _mm256_store_ps(dst[r] + i * 8, acc[r]);
}

template <int Taps, int Rows>
void horizontal_permute(const AxisTable& t, const float* const* src, float* const* dst) {
  const int blocks = t.padded_out / 8;
  for (int i = 0; i < blocks; ++i) permute_block<Taps, Rows>(t, src, dst, i);
}

// Doubling (PeriodicBlocks with period 2): both phases' weights stay in registers and each source
// vector is one unaligned load shared by the phases (the odd phase reads Shift
// further). The same products and sums as permute_block, in the same order.
template <int Taps, int Shift, int Blocks>
AVATAR_INLINE void twofold_blocks(const __m256* even, const __m256* odd, const float* s,
                                  float* dst) {
  __m256 sum_e[Blocks], sum_o[Blocks];
#pragma GCC unroll 16
  for (int k = 0; k < Taps + Shift; ++k) {
    for (int i = 0; i < Blocks; ++i) {  // independent chains hide the FMA latency
      const __m256 v = load_once(s + 8 * i + k);  // both phases use it
      if (k < Taps) {
        sum_e[i] = k == 0 ? _mm256_mul_ps(even[0], v) : _mm256_fmadd_ps(even[k], v, sum_e[i]);
      }
      if (k >= Shift) {
        const int j = k - Shift;
        sum_o[i] = j == 0 ? _mm256_mul_ps(odd[0], v) : _mm256_fmadd_ps(odd[j], v, sum_o[i]);
      }
    }
  }
  for (int i = 0; i < Blocks; ++i) {
    const __m256 low = _mm256_unpacklo_ps(sum_e[i], sum_o[i]);   // e0 o0 e1 o1 | e4 o4 e5 o5
    const __m256 high = _mm256_unpackhi_ps(sum_e[i], sum_o[i]);  // e2 o2 e3 o3 | e6 o6 e7 o7
    _mm256_store_ps(dst + 16 * i, _mm256_permute2f128_ps(low, high, 0x20));
    _mm256_store_ps(dst + 16 * i + 8, _mm256_permute2f128_ps(low, high, 0x31));
  }
}

template <int Taps, int Shift>
void horizontal_twofold(const AxisTable& t, const float* src, float* dst) {
  const PeriodicBlocks& twofold = t.periodic;
  __m256 even[Taps], odd[Taps];
  for (int k = 0; k < Taps; ++k) {
    even[k] = _mm256_broadcast_ss(twofold.weights.data() + k);
    odd[k] = _mm256_broadcast_ss(twofold.weights.data() + Taps + k);
  }
  const auto usable = [&](int b) { return twofold.usable[static_cast<size_t>(b)] != 0; };
  const int blocks = t.padded_out / 16;
  for (int b = 0; b < blocks;) {
    const float* s = src + t.first[static_cast<size_t>(b) * 16];
    if (b + 1 < blocks && usable(b) && usable(b + 1)) {
      twofold_blocks<Taps, Shift, 2>(even, odd, s, dst + b * 16);
      b += 2;
    } else if (usable(b)) {
      twofold_blocks<Taps, Shift, 1>(even, odd, s, dst + b * 16);
      b += 1;
    } else {
      permute_block<Taps, 1>(t, &src, &dst, 2 * b);
      permute_block<Taps, 1>(t, &src, &dst, 2 * b + 1);
      b += 1;
    }
  }
}

// Phase p of Blocks consecutive 8-output blocks of a periodic axis (PeriodicBlocks):
// lane j of block b reads s + shift[p] + 8b + j + k with plain loads, and each weight
// broadcast serves every block. The same products and sums as permute_block, in the
// same order.
template <int Taps, int Blocks>
AVATAR_INLINE void phase_sums(const PeriodicBlocks& periodic, int p, const float* s, __m256* acc) {
  const float* w = periodic.weights.data() + p * Taps;
  const float* sp = s + periodic.shift[p];
#pragma GCC unroll 16
  for (int k = 0; k < Taps; ++k) {
    const __m256 weight = _mm256_broadcast_ss(w + k);
    for (int b = 0; b < Blocks; ++b) {
      const __m256 v = _mm256_loadu_ps(sp + 8 * b + k);
      acc[b] = k == 0 ? _mm256_mul_ps(weight, v) : _mm256_fmadd_ps(weight, v, acc[b]);
    }
  }
}

// Quadrupling (PeriodicBlocks with period 4), 32 outputs from two usable chunks: the
// four phase vectors of one block, interleaved.
template <int Taps>
AVATAR_INLINE void fourfold_block(const PeriodicBlocks& periodic, const float* s, float* dst) {
  __m256 acc[4];
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) phase_sums<Taps, 1>(periodic, p, s, &acc[p]);
  const __m256 t0 = _mm256_unpacklo_ps(acc[0], acc[1]);  // a0 b0 a1 b1 | a4 b4 a5 b5
  const __m256 t1 = _mm256_unpackhi_ps(acc[0], acc[1]);  // a2 b2 a3 b3 | a6 b6 a7 b7
  const __m256 t2 = _mm256_unpacklo_ps(acc[2], acc[3]);  // c0 d0 c1 d1 | c4 d4 c5 d5
  const __m256 t3 = _mm256_unpackhi_ps(acc[2], acc[3]);  // c2 d2 c3 d3 | c6 d6 c7 d7
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);     // a0 b0 c0 d0 | a4 b4 c4 d4
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, 0xEE);     // a1 b1 c1 d1 | a5 b5 c5 d5
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);     // a2 b2 c2 d2 | a6 b6 c6 d6
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, 0xEE);     // a3 b3 c3 d3 | a7 b7 c7 d7
  _mm256_store_ps(dst, _mm256_permute2f128_ps(u0, u1, 0x20));
  _mm256_store_ps(dst + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
  _mm256_store_ps(dst + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
  _mm256_store_ps(dst + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
}

template <int Taps>
void horizontal_fourfold(const AxisTable& t, const float* src, float* dst) {
  const PeriodicBlocks& periodic = t.periodic;
  const auto usable = [&](int c) { return periodic.usable[static_cast<size_t>(c)] != 0; };
  const int chunks = t.padded_out / 16;
  for (int c = 0; c < chunks;) {
    if (c + 1 < chunks && usable(c) && usable(c + 1)) {
      fourfold_block<Taps>(periodic, src + t.first[static_cast<size_t>(c) * 16], dst + c * 16);
      c += 2;
    } else {
      permute_block<Taps, 1>(t, &src, &dst, 2 * c);
      permute_block<Taps, 1>(t, &src, &dst, 2 * c + 1);
      c += 1;
    }
  }
}

// Tripling (PeriodicBlocks with period 3), 48 outputs from three usable chunks, as two
// blocks of 24 (six independent FMA chains). The three phase vectors a, b, c of each
// block are interleaved into a0 b0 c0 a1 .. c7 with one permute per vector and
// output, and two blends per output. One permute per tap and block, as permute_block
// needs, made that path 2.4x slower per output than the doubling one.
template <int Taps>
AVATAR_INLINE void threefold_blocks(const PeriodicBlocks& periodic, const float* s, float* dst) {
  __m256 acc[3][2];  // [phase][block]
#pragma GCC unroll 3
  for (int p = 0; p < 3; ++p) phase_sums<Taps, 2>(periodic, p, s, acc[p]);
  // For each output vector, the lanes it needs from a, b and c, moved into place; then
  // blended (mask bits: the lanes taken from b, then those from c).
  const __m256i from_a[3] = {_mm256_setr_epi32(0, 0, 0, 1, 0, 0, 2, 0),
                             _mm256_setr_epi32(0, 3, 0, 0, 4, 0, 0, 5),
                             _mm256_setr_epi32(0, 0, 6, 0, 0, 7, 0, 0)};
  const __m256i from_b[3] = {_mm256_setr_epi32(0, 0, 0, 0, 1, 0, 0, 2),
                             _mm256_setr_epi32(0, 0, 3, 0, 0, 4, 0, 0),
                             _mm256_setr_epi32(5, 0, 0, 6, 0, 0, 7, 0)};
  const __m256i from_c[3] = {_mm256_setr_epi32(0, 0, 0, 0, 0, 1, 0, 0),
                             _mm256_setr_epi32(2, 0, 0, 3, 0, 0, 4, 0),
                             _mm256_setr_epi32(0, 5, 0, 0, 6, 0, 0, 7)};
  constexpr int kFromB[3] = {0x92, 0x24, 0x49};  // b at lanes 1 4 7, 2 5, 0 3 6
  constexpr int kFromC[3] = {0x24, 0x49, 0x92};  // c at lanes 2 5, 0 3 6, 1 4 7
  for (int b = 0; b < 2; ++b) {
#pragma GCC unroll 3
    for (int o = 0; o < 3; ++o) {
      const __m256 pa = _mm256_permutevar8x32_ps(acc[0][b], from_a[o]);
      const __m256 pb = _mm256_permutevar8x32_ps(acc[1][b], from_b[o]);
      const __m256 pc = _mm256_permutevar8x32_ps(acc[2][b], from_c[o]);
      _mm256_store_ps(dst + 24 * b + 8 * o,
                      _mm256_blend_ps(_mm256_blend_ps(pa, pb, kFromB[o]), pc, kFromC[o]));
    }
  }
}

template <int Taps>
void horizontal_threefold(const AxisTable& t, const float* src, float* dst) {
  const PeriodicBlocks& periodic = t.periodic;
  const auto usable = [&](int c) { return periodic.usable[static_cast<size_t>(c)] != 0; };
  const int chunks = t.padded_out / 16;
  int c = 0;
  for (; c + 3 <= chunks; c += 3) {  // 48 outputs start each group: phase 0
    if (usable(c) && usable(c + 1) && usable(c + 2)) {
      threefold_blocks<Taps>(periodic, src + t.first[static_cast<size_t>(c) * 16], dst + c * 16);
    } else {
      for (int i = 2 * c; i < 2 * c + 6; ++i) permute_block<Taps, 1>(t, &src, &dst, i);
    }
  }
  for (int i = 2 * c; i < t.padded_out / 8; ++i) permute_block<Taps, 1>(t, &src, &dst, i);
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

template <int Taps>
void horizontal_rows(const AxisTable& t, const float* const* src, float* const* dst, int rows) {
  if (Taps > 0 && t.periodic.any && t.periodic.period == 4) {
    for (int r = 0; r < rows; ++r) horizontal_fourfold<Taps>(t, src[r], dst[r]);
    return;
  }
  if (Taps > 0 && t.periodic.any && t.periodic.period == 3) {
    for (int r = 0; r < rows; ++r) horizontal_threefold<Taps>(t, src[r], dst[r]);
    return;
  }
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
  if (!t.blocks8.usable) {
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

// 32 pixels from sums that already hold the rounding offset: truncate, then
// saturate to 0..255 (|sum| stays far below 2^31, cvtt's overflow value).
AVATAR_INLINE __m256i round_pack(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256i ab = _mm256_packs_epi32(_mm256_cvttps_epi32(a), _mm256_cvttps_epi32(b));
  const __m256i cd = _mm256_packs_epi32(_mm256_cvttps_epi32(c), _mm256_cvttps_epi32(d));
  const __m256i bytes = _mm256_packus_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <int Taps>
AVATAR_INLINE __m256i vertical_block(const float* const* rows, int x, const float* weights,
                                     int taps) {
  if (Taps > 0) taps = Taps;
  __m256 acc[4];
  const __m256 w0 = _mm256_broadcast_ss(weights);
  const __m256 half = _mm256_set1_ps(kRoundingOffset);
  for (int j = 0; j < 4; ++j) {
    acc[j] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(rows[0] + x + 8 * j), half);
  }
#pragma GCC unroll 8
  for (int k = 1; k < taps; ++k) {
    const __m256 w = _mm256_broadcast_ss(weights + k);
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm256_fmadd_ps(w, _mm256_loadu_ps(rows[k] + x + 8 * j), acc[j]);
    }
  }
  return round_pack(acc[0], acc[1], acc[2], acc[3]);
}

// Which 32-pixel stores of a run of `count` pixels at `begin` go non-temporal (the
// output is not read again soon): those at offsets i in [lo, hi), i.e. 32-byte
// aligned ones whose whole 64-byte line lies inside the run. A line that also takes
// ordinary stores (a row's ragged ends) would be flushed back and forth. Worked out
// once per run, not per store.
struct StreamRange {
  int lo = 0;
  int hi = 0;

  StreamRange(const uint8_t* begin, int count) {
    const auto at = reinterpret_cast<uintptr_t>(begin);
    if (at % 32 != 0) return;  // no store is aligned: none streams
    lo = static_cast<int>((64 - at % 64) % 64);  // first line boundary in the run
    // Stores at i < hi end on or before the last line boundary in the run.
    hi = static_cast<int>(((at + count) & ~uintptr_t{63}) - at) - 31;
  }
};

AVATAR_INLINE void store_pixels(uint8_t* begin, int i, const StreamRange& stream, __m256i pixels) {
  auto* out = reinterpret_cast<__m256i*>(begin + i);
  if (i >= stream.lo && i < stream.hi) {
    _mm256_stream_si256(out, pixels);
  } else {
    _mm256_storeu_si256(out, pixels);
  }
}

template <int Taps>
void vertical_n(const float* const* rows, int x0, const float* weights, int taps, int count,
                uint8_t* dst) {
  const StreamRange stream(dst, count);
  int i = 0;
  for (; i + 32 <= count; i += 32) {
    store_pixels(dst, i, stream, vertical_block<Taps>(rows, x0 + i, weights, taps));
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

// 32 pixels of two rows; eight independent accumulators, one load per source vector.
// The weights are broadcast where used: kept in registers, 12 of them and 8
// accumulators spill.
template <int Taps, int Step>
AVATAR_INLINE void pair_block(const float* const* rows, int x, const float* wa, const float* wb,
                              __m256i& pixels_a, __m256i& pixels_b) {
  __m256 a[4], b[4];
  const __m256 half = _mm256_set1_ps(kRoundingOffset);
#pragma GCC unroll 16
  for (int k = 0; k < Taps + Step; ++k) {
    const __m256 weight_a = _mm256_broadcast_ss(wa + (k < Taps ? k : 0));
    const __m256 weight_b = _mm256_broadcast_ss(wb + (k >= Step ? k - Step : 0));
    for (int j = 0; j < 4; ++j) {
      const __m256 v = load_once(rows[k] + x + 8 * j);  // both rows use it
      if (k < Taps) a[j] = _mm256_fmadd_ps(v, weight_a, k == 0 ? half : a[j]);
      if (k >= Step) b[j] = _mm256_fmadd_ps(v, weight_b, k == Step ? half : b[j]);
    }
  }
  pixels_a = round_pack(a[0], a[1], a[2], a[3]);
  pixels_b = round_pack(b[0], b[1], b[2], b[3]);
}

template <int Taps, int Step>
void vertical_pair_n(const float* const* rows, int x0, const float* weights_a,
                     const float* weights_b, int count, uint8_t* dst_a, uint8_t* dst_b) {
  const StreamRange stream_a(dst_a, count), stream_b(dst_b, count);
  int i = 0;
  __m256i pixels_a, pixels_b;
  for (; i + 32 <= count; i += 32) {
    asm("" : "+r"(weights_a), "+r"(weights_b));  // keeps the broadcasts in the loop
    pair_block<Taps, Step>(rows, x0 + i, weights_a, weights_b, pixels_a, pixels_b);
    store_pixels(dst_a, i, stream_a, pixels_a);
    store_pixels(dst_b, i, stream_b, pixels_b);
  }
  if (i < count) {
    alignas(32) uint8_t tail[64];
    pair_block<Taps, Step>(rows, x0 + i, weights_a, weights_b, pixels_a, pixels_b);
    _mm256_store_si256(reinterpret_cast<__m256i*>(tail), pixels_a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(tail + 32), pixels_b);
    std::memcpy(dst_a + i, tail, static_cast<size_t>(count - i));
    std::memcpy(dst_b + i, tail + 32, static_cast<size_t>(count - i));
  }
}

void vertical_pair(const float* const* rows, int x0, const float* weights_a, const float* weights_b,
                   int taps, int step, int count, uint8_t* dst_a, uint8_t* dst_b) {
  const int shape = taps * 2 + step;
  switch (shape) {
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

const PassKernels& avx2_passes() {
  static const PassKernels passes{"avx2", widen, horizontal, vertical, vertical_pair, finish};
  return passes;
}

}  // namespace avatar
