#include "fit/fit_box.hpp"

namespace avatar {
namespace {

// Nearest even integer to num / den (num, den > 0); a tie goes to the smaller.
int64_t nearest_even(int64_t num, int64_t den) {
  const int64_t half_den = 2 * den;  // value / 2 = num / half_den
  const int64_t k = num / half_den;
  const int64_t rem = num - k * half_den;
  return 2 * (2 * rem > half_den ? k + 1 : k);
}

}  // namespace

Box box_for(int64_t width, int64_t height, Resolution res) {
  int64_t long_side = 1920, short_side = 1080;
  if (res == Resolution::K2) {
    long_side = 2560;
    short_side = 1440;
  } else if (res == Resolution::K4) {
    long_side = 3840;
    short_side = 2160;
  }
  if (width >= height) return {long_side, short_side};
  return {short_side, long_side};
}

FitResult fit_box(int64_t width, int64_t height, Resolution res) {
  const auto [box_w, box_h] = box_for(width, height, res);

  // scale <= 1 exactly when one box side does not exceed the source side.
  if (box_w <= width || box_h <= height) return {false, 0, 0};

  const bool width_binds = box_w * height <= box_h * width;  // box_w/w <= box_h/h
  const int64_t bind_num = width_binds ? box_w : box_h;
  const int64_t bind_den = width_binds ? width : height;
  if (bind_num >= kMaxScale * bind_den) {
    return {true, static_cast<int32_t>(kMaxScale * width),
            static_cast<int32_t>(kMaxScale * height)};
  }
  if (width_binds) {
    return {true, static_cast<int32_t>(box_w),
            static_cast<int32_t>(nearest_even(height * box_w, width))};
  }
  return {true, static_cast<int32_t>(nearest_even(width * box_h, height)),
          static_cast<int32_t>(box_h)};
}

}  // namespace avatar
