// Size bounds the native code is written for. The binding refuses anything beyond them,
// so the kernels can assume them; Python reads kMaxOutputSide from the module
// (engine._native.MAX_OUTPUT_SIDE) instead of repeating the number.
#pragma once
#include <cstdint>

namespace avatar {

// Widest or tallest resample output. The vertical pass treats a whole output row as one
// strip of at most this many pixels (resampler.cpp).
inline constexpr int kMaxOutputSide = 16384;

// Widest or tallest source: of a resampled plane, a weight table's input axis, or a size
// given to box fitting. Keeps sides in an int and every product of two sides, or of a side
// and a box side, exact in int64.
inline constexpr int64_t kMaxSourceSide = int64_t{1} << 20;

}  // namespace avatar
