// The separable resampler: horizontal pass first into a small ring of float rows
// that stays in L2, then the vertical pass over whole rows read from that ring.
#pragma once
#include <cstdint>

#include "resample/dispatch.hpp"
#include "resample/filters.hpp"

namespace avatar {

// A 2-D uint8 image: row y starts at data + y * row_stride, pixel x of it at
// + x * pixel_stride (strides in bytes, row_stride may be negative).
struct ImageView {
  const uint8_t* data;
  int64_t row_stride;
  int64_t pixel_stride;
  int width;
  int height;
};

// Output rows must have contiguous pixels; any row stride.
struct OutputView {
  uint8_t* data;
  int64_t row_stride;
  int width;
  int height;
};

struct ResampleOptions {
  Filter filter = Filter::Lanczos3;
  double dx = 0.0;
  double dy = 0.0;
  int threads = 1;
  Isa isa = Isa::Scalar;
};

// Requires valid views (sides >= 1) and an available ISA. Throws std::bad_alloc
// when scratch memory cannot be had; never throws from inside a worker.
void resample(const ImageView& src, const OutputView& dst, const ResampleOptions& options);

}  // namespace avatar
