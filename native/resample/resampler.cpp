#include "resample/resampler.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <vector>

#include "limits.hpp"
#include "resample/row_ranges.hpp"
#include "resample/thread_pool.hpp"

namespace avatar {

namespace {

// Columns per vertical strip. Strips sized for L1 (256 columns) measured 6-10%
// slower than whole rows on Zen 3 (1080p->2160p, 720p->1080p, 4x, one thread): the
// per-call costs (weights, dispatch, ragged ends) outweigh reading the ring from L2,
// which streams well. So a strip is a whole row, as wide as the widest output.
constexpr int kStrip = kMaxOutputSide;
// Input rows the ring holds beyond one output row's taps, so a batch of output
// rows shares one sweep through the strips.
constexpr int kRingSlack = 8;
// Below this many output pixels per task, threads cost more than they save.
constexpr int64_t kPixelsPerTask = 1 << 15;
// Output rows below which a task does not split another's range: the piece would
// spend more on re-filtering its first source rows than the split saves.
constexpr int kMinPiece = 16;

struct Plan {
  const ImageView* src;
  const OutputView* dst;
  const AxisTable* tx;
  const AxisTable* ty;
  const PassKernels* passes;
  int ring_rows;
  int64_t ring_stride;  // floats per ring row
};

struct Scratch {
  AlignedBuffer<float> widened;
  AlignedBuffer<float> ring;
  std::vector<const float*> rows;
};

// Last input row output row y reads (rows past the edge only carry zero weights).
int last_row(const AxisTable& ty, int y) {
  return std::min(ty.first[static_cast<size_t>(y)] + ty.taps - 1, ty.in_size - 1);
}

// Filters input rows [row, row + count), count <= kSweepRows, into their ring slots.
void horizontal_rows(const Plan& plan, Scratch& scratch, int row, int count) {
  const ImageView& src = *plan.src;
  const float* widened[kSweepRows];
  float* slots[kSweepRows];
  for (int r = 0; r < count; ++r) {
    const uint8_t* line = src.data + static_cast<int64_t>(row + r) * src.row_stride;
    float* buffer = scratch.widened.data() + static_cast<int64_t>(r) * plan.tx->padded_in;
    plan.passes->widen(line, src.pixel_stride, src.width, plan.tx->padded_in, buffer);
    widened[r] = buffer;
    slots[r] = scratch.ring.data() + ((row + r) % plan.ring_rows) * plan.ring_stride;
  }
  plan.passes->horizontal(*plan.tx, widened, slots, count);
}

// Pixels [begin, end) of strip s of a row whose first 64-byte boundary is `head`
// pixels in; strips after the first start on that boundary.
void strip_bounds(int head, int s, int width, int& begin, int& end) {
  begin = s == 0 ? 0 : std::min(width, head + (s - 1) * kStrip);
  end = std::min(width, head + s * kStrip);
}

// Output row y of a batch and, when it can share source rows with y + 1, that one too.
void vertical_rows(const Plan& plan, const float* const* rows, int y, bool pair, int s) {
  const AxisTable& ty = *plan.ty;
  const OutputView& dst = *plan.dst;
  uint8_t* line = dst.data + static_cast<int64_t>(y) * dst.row_stride;
  const int head = static_cast<int>((64 - reinterpret_cast<uintptr_t>(line) % 64) % 64);
  int begin = 0, end = 0;
  strip_bounds(head, s, dst.width, begin, end);
  if (begin >= end) return;
  const float* weights = ty.weights.data() + static_cast<int64_t>(y) * ty.taps;
  if (!pair) {
    plan.passes->vertical(rows, begin, weights, ty.taps, end - begin, line + begin);
    return;
  }
  const int step = ty.first[static_cast<size_t>(y) + 1] - ty.first[static_cast<size_t>(y)];
  plan.passes->vertical_pair(rows, begin, weights, weights + ty.taps, ty.taps, step, end - begin,
                             line + begin, line + dst.row_stride + begin);
}

void vertical_batch(const Plan& plan, Scratch& scratch, int y_begin, int y_end) {
  const AxisTable& ty = *plan.ty;
  const OutputView& dst = *plan.dst;
  // Ring rows of every output row of the batch, one beyond its taps for pairing,
  // looked up once (no division per strip).
  const size_t span = static_cast<size_t>(ty.taps) + 1;
  scratch.rows.resize(span * static_cast<size_t>(y_end - y_begin));
  for (int y = y_begin; y < y_end; ++y) {
    const int first = ty.first[static_cast<size_t>(y)];
    for (size_t k = 0; k < span; ++k) {
      const int row = std::min(first + static_cast<int>(k), ty.in_size - 1);
      scratch.rows[(y - y_begin) * span + k] =
          scratch.ring.data() + (row % plan.ring_rows) * plan.ring_stride;
    }
  }
  // Rows pair up when the next one starts at most one source row further and
  // shares the strip layout (same alignment).
  const auto head = [&dst](int y) {
    return reinterpret_cast<uintptr_t>(dst.data + static_cast<int64_t>(y) * dst.row_stride) % 64;
  };
  const int strips = 1 + (dst.width + kStrip - 1) / kStrip;
  for (int s = 0; s < strips; ++s) {
    for (int y = y_begin; y < y_end;) {
      const auto first = [&ty](int row) { return ty.first[static_cast<size_t>(row)]; };
      const bool pair = y + 1 < y_end && head(y) == head(y + 1) && first(y + 1) <= first(y) + 1;
      vertical_rows(plan, scratch.rows.data() + (y - y_begin) * span, y, pair, s);
      y += pair ? 2 : 1;
    }
  }
}

// Batches of output rows whose source rows fit the ring together, from the front of
// range `part` and then of the ranges this task takes over.
void run_task(const Plan& plan, Scratch& scratch, RowRanges& ranges, int part) {
  const AxisTable& ty = *plan.ty;
  const auto batch_end = [&](int y) {
    const int lo = ty.first[static_cast<size_t>(y)];
    int end = y + 1;
    while (end < ty.out_size && last_row(ty, end) - lo + 1 <= plan.ring_rows) ++end;
    return end;
  };
  int next = 0;    // next input row to filter horizontally
  int follow = -1; // the output row after the last batch: the ring holds its inputs so far
  do {
    int y = 0, end = 0;
    while (ranges.take_front(part, batch_end, y, end)) {
      const int lo = ty.first[static_cast<size_t>(y)];
      next = y == follow ? std::max(next, lo) : lo;
      for (const int hi = last_row(ty, end - 1); next <= hi;) {
        const int count = std::min(kSweepRows, hi - next + 1);
        horizontal_rows(plan, scratch, next, count);
        next += count;
      }
      vertical_batch(plan, scratch, y, end);
      follow = end;
    }
  } while (ranges.steal(part));
  plan.passes->finish();
}

Scratch& thread_scratch(const Plan& plan) {
  thread_local Scratch scratch;
  scratch.widened.reserve(static_cast<size_t>(plan.tx->padded_in) * kSweepRows);
  const size_t ring = static_cast<size_t>(plan.ring_rows) * plan.ring_stride;
  if (scratch.ring.size() < ring) {
    scratch.ring.reserve(ring);
    // Lanes past out_width are read (never stored) by whole-vector passes.
    std::memset(scratch.ring.data(), 0, ring * sizeof(float));
  }
  return scratch;
}

}  // namespace

void resample(const ImageView& src, const OutputView& dst, const ResampleOptions& options) {
  const auto tx = axis_table(src.width, dst.width, options.filter, options.dx);
  const auto ty = axis_table(src.height, dst.height, options.filter, options.dy);
  const int ring_rows = std::min(ty->taps + kRingSlack, ty->in_size);
  const auto ring_stride = static_cast<int64_t>((tx->padded_out + 63) / 64 * 64 + 64);
  Plan plan{&src, &dst, tx.get(), ty.get(), &passes_for(options.isa), ring_rows, ring_stride};

  const int64_t pixels = static_cast<int64_t>(dst.width) * dst.height;
  const int tasks = static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>({options.threads, dst.height / kMinPiece, pixels / kPixelsPerTask})));
  RowRanges ranges(dst.height, tasks, kMinPiece);
  std::atomic<bool> out_of_memory{false};
  ThreadPool::instance().run(tasks, options.threads, [&](int task) {
    try {
      run_task(plan, thread_scratch(plan), ranges, task);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
  });
  if (out_of_memory) throw std::bad_alloc();
}

}  // namespace avatar
