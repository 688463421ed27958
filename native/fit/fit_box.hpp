// Box fitting for the upscale task: the output size for a 1080p, 2k or 4k box.
#pragma once
#include <cstdint>

namespace avatar {

enum class Resolution { P1080, K2, K4 };

// No fitted side exceeds this many times its source side.
inline constexpr int64_t kMaxScale = 4;

struct Box {
  int64_t width;
  int64_t height;
};

// The box of `res` a width x height source is fitted into: landscape when
// width >= height, else portrait.
Box box_for(int64_t width, int64_t height, Resolution res);

struct FitResult {
  bool larger;       // false: the fitted output would not be larger than the source
  int32_t width;     // even, <= box side, <= 4x the source side
  int32_t height;
};

// Fits (width, height) into the landscape box of `res` when width >= height,
// else into the portrait box. scale = min(box_w / w, box_h / h, 4), compared
// exactly in integers. The binding side equals the box side (or 4x at the cap);
// the other side is the even number nearest to side * scale, a tie going to the
// smaller one. Requires width, height >= 1.
FitResult fit_box(int64_t width, int64_t height, Resolution res);

}  // namespace avatar
