// The two passes of the separable resampler, one set per instruction set.
// passes_scalar.cpp is the specification; the SIMD sets must agree with it to
// within float32 rounding (they may fuse multiply-adds) and round the same way.
#pragma once
#include <cstdint>

#include "resample/filters.hpp"

namespace avatar {

// Every pass accumulates in float32 in tap order, starting from 0.0f. The
// intermediate rows stay unclamped float32; the vertical pass rounds once:
// out = clamp(trunc(sum + kRoundingOffset), 0, 255), i.e. round half up, as the
// reference. The offset is a hair above 0.5 because float32 sums of weights such as
// 1/6 and 5/6 miss exact ties (k + 1/2 in rational arithmetic) by a few ulps; the
// slack (2^-14) is above that error and far below the rounding step.
// SIMD variants fuse the multiply-adds and start the vertical sum from the offset
// instead of adding it last; that changes results only through float32 rounding.
inline constexpr float kRoundingOffset = 0.5f + 1.0f / 16384.0f;
inline constexpr int kSweepRows = 4;

struct PassKernels {
  const char* name;
  // dst[0 .. padded_in) = src[i * step] as float, the last pixel repeated past in_size.
  void (*widen)(const uint8_t* src, int64_t step, int in_size, int padded_in, float* dst);
  // dst[r][0 .. t.padded_out) = horizontal filter of widened row src[r], for
  // r < rows <= kSweepRows: one sweep through the table serves several rows.
  void (*horizontal)(const AxisTable& t, const float* const* src, float* const* dst, int rows);
  // dst[i] = rounded sum_k weights[k] * rows[k][x0 + i] for 0 <= i < count. May read
  // rows[k][x0 .. x0 + count rounded up to 64); writes exactly `count` bytes.
  void (*vertical)(const float* const* rows, int x0, const float* weights, int taps, int count,
                   uint8_t* dst);
  // Two output rows at once: row a reads rows[0 .. taps) with weights_a, row b reads
  // rows[step .. step + taps) with weights_b (step is 0 or 1), each exactly as
  // `vertical` would; the shared source rows are loaded once.
  void (*vertical_pair)(const float* const* rows, int x0, const float* weights_a,
                        const float* weights_b, int taps, int step, int count, uint8_t* dst_a,
                        uint8_t* dst_b);
  // Makes the pass's (possibly non-temporal) stores visible before the call returns.
  void (*finish)();
};

const PassKernels& scalar_passes();
#ifdef AVATAR_HAVE_X86
const PassKernels& avx2_passes();
const PassKernels& avx512_passes();
#endif

}  // namespace avatar
