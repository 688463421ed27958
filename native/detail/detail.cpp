#include "detail/detail.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>

#include "resample/aligned.hpp"
#include "resample/thread_pool.hpp"

namespace avatar {

namespace {

// Source rows per task at least: fewer cost more in start-up than threads save.
constexpr int kMinRowsPerTask = 16;
// Floats a pass may read past a padded row's width + 4.
constexpr int kRowSlack = 64;
constexpr int kWindowRows = 2 * kDetailRadius + 1;

const DetailKernel& kernel_for(Isa isa) {
#ifdef AVATAR_HAVE_X86
  if (isa == Isa::Avx2) return detail_avx2();
  if (isa == Isa::Avx512) return detail_avx512();
#endif
  return detail_scalar();
}

std::unique_ptr<DetailTable> transpose(const DetailModel& model) {
  auto table = std::make_unique<DetailTable>();
  std::fill(std::begin(table->weights), std::end(table->weights), 0.0f);
  for (int b = 0; b < kDetailBuckets; ++b) {
    for (int p = 0; p < kDetailPhases; ++p) {
      for (int k = 0; k < kDetailTaps; ++k) {
        table->weights[(p * kDetailTaps + k) * kDetailTableBuckets + b] =
            model.weights[(b * kDetailPhases + p) * kDetailTaps + k];
      }
    }
  }
  table->thresholds[0] = model.thresholds[0];
  table->thresholds[1] = model.thresholds[1];
  return table;
}

// Source row `row` (clamped to the plane) as floats with kDetailRadius edge pixels each side.
void widen(const ImageView& src, int row, float* dst) {
  row = std::clamp(row, 0, src.height - 1);
  const uint8_t* line = src.data + static_cast<int64_t>(row) * src.row_stride;
  float* pixels = dst + kDetailRadius;
  for (int x = 0; x < src.width; ++x) pixels[x] = line[x * src.pixel_stride];
  for (int d = 1; d <= kDetailRadius; ++d) {
    pixels[-d] = pixels[0];
    pixels[src.width - 1 + d] = pixels[src.width - 1];
  }
}

// Source rows [begin, end): a ring of five widened rows, one new row per output row pair.
void run_rows(const ImageView& src, const OutputView& dst, const DetailTable& table,
              const DetailKernel& kernel, int begin, int end) {
  const int64_t stride = (src.width + 2 * kDetailRadius + kRowSlack + 15) / 16 * 16;
  thread_local AlignedBuffer<float> ring;
  const size_t floats = static_cast<size_t>(stride) * kWindowRows;
  if (ring.size() < floats) {
    ring.reserve(floats);
    std::fill_n(ring.data(), ring.size(), 0.0f);  // the slack passes read must be finite
  }
  const auto slot = [&](int row) {
    return ring.data() + ((row % kWindowRows + kWindowRows) % kWindowRows) * stride;
  };
  for (int r = begin - kDetailRadius; r < begin + kDetailRadius; ++r) widen(src, r, slot(r));
  for (int y = begin; y < end; ++y) {
    widen(src, y + kDetailRadius, slot(y + kDetailRadius));
    const float* rows[kWindowRows];
    for (int d = 0; d < kWindowRows; ++d) rows[d] = slot(y - kDetailRadius + d);
    uint8_t* even = dst.data + static_cast<int64_t>(2 * y) * dst.row_stride;
    kernel.row(rows, src.width, table, even, even + dst.row_stride);
  }
}

}  // namespace

void detail2x(const ImageView& src, const OutputView& dst, const DetailModel& model, int threads,
              Isa isa) {
  const auto table = transpose(model);
  const DetailKernel& kernel = kernel_for(isa);
  const int tasks = std::max(1, std::min(threads, src.height / kMinRowsPerTask));
  std::atomic<bool> out_of_memory{false};
  ThreadPool::instance().run(tasks, threads, [&](int task) {
    const int begin = static_cast<int>(static_cast<int64_t>(src.height) * task / tasks);
    const int end = static_cast<int>(static_cast<int64_t>(src.height) * (task + 1) / tasks);
    try {
      run_rows(src, dst, *table, kernel, begin, end);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
  });
  if (out_of_memory) throw std::bad_alloc();
}

}  // namespace avatar
