// The learned `detail` filter: doubles both sides of a plane with one small filter per
// bucket of local structure and per output phase (RAISR-style). engine/detail/reference.py
// states the math; detail_scalar.cpp is its native specification.
#pragma once
#include <cstdint>

#include "resample/dispatch.hpp"
#include "resample/resampler.hpp"

namespace avatar {

inline constexpr int kDetailAngles = 8;
inline constexpr int kDetailStrengths = 2;
inline constexpr int kDetailCoherences = 2;
inline constexpr int kDetailBuckets = kDetailAngles * kDetailStrengths * kDetailCoherences;
inline constexpr int kDetailPhases = 4;  // 2 * py + px of output pixel (2 y + py, 2 x + px)
inline constexpr int kDetailRadius = 2;  // the 5 x 5 window; gradients also reach 2 pixels
inline constexpr int kDetailTaps = (2 * kDetailRadius + 1) * (2 * kDetailRadius + 1);
// A table row holds every bucket: one or two whole vectors.
inline constexpr int kDetailTableBuckets = 32;
static_assert(kDetailBuckets <= kDetailTableBuckets);

// weights: [kDetailBuckets][kDetailPhases][kDetailTaps] as training writes them.
struct DetailModel {
  const float* weights;
  float thresholds[2];  // the trace level of strength 1; the coherence level
};

// The weights transposed for the passes: table[(phase * kDetailTaps + tap) *
// kDetailTableBuckets + bucket], buckets past kDetailBuckets zero.
struct DetailTable {
  alignas(64) float weights[kDetailPhases * kDetailTaps * kDetailTableBuckets];
  float thresholds[2];
};

// One source row through the filter. rows[d] (d = 0..4) is source row y - 2 + d as float,
// edge-replicated: rows[d][i] is pixel i - 2 for 0 <= i < width + 4 (edge pixels
// repeated), and rows may be read up to 64 floats further (any finite values).
// Writes output rows 2 y (even) and 2 y + 1 (odd), 2 * width bytes each.
struct DetailKernel {
  const char* name;
  void (*row)(const float* const* rows, int width, const DetailTable& table, uint8_t* even,
              uint8_t* odd);
};

// Sector 0..7 of (a, b), as reference.angle_sector. The bucket's rounded products and sums
// must not be fused (the detail files are built with -ffp-contract=off).
inline constexpr float kTan22_5 = 0.41421356237309503f;

const DetailKernel& detail_scalar();
#ifdef AVATAR_HAVE_X86
const DetailKernel& detail_avx2();
const DetailKernel& detail_avx512();
#endif

// dst is (2 * src.height) x (2 * src.width). Requires valid views and an available ISA;
// throws std::bad_alloc when scratch memory cannot be had.
void detail2x(const ImageView& src, const OutputView& dst, const DetailModel& model, int threads,
              Isa isa);

}  // namespace avatar
