// Output rows shared out among the tasks of one resample call. Each task owns one
// contiguous range and takes batches from its front; a task whose range runs dry
// takes the back half of the largest range left. Threads so finish within a batch
// of each other while the rows stay in few pieces: every piece a task starts costs
// it the filter's first taps - 1 source rows again.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace avatar {

class RowRanges {
 public:
  // Rows [0, rows) in `parts` ranges of equal length. Ranges shorter than
  // 2 * min_piece rows are not split further.
  RowRanges(int rows, int parts, int min_piece)
      : parts_(parts), min_piece_(min_piece), ranges_(new Range[static_cast<size_t>(parts)]) {
    for (int i = 0; i < parts; ++i) {
      const auto begin = static_cast<int>(static_cast<int64_t>(rows) * i / parts);
      const auto end = static_cast<int>(static_cast<int64_t>(rows) * (i + 1) / parts);
      ranges_[static_cast<size_t>(i)].span.store(pack(begin, end), std::memory_order_relaxed);
    }
  }

  // Claims the front rows [begin, end) of range `part`, where end is what `limit`
  // allows for begin (limit(begin) > begin) but no further than the range goes.
  // Only the task that owns `part` calls this. False once the range is empty.
  template <typename Limit>
  bool take_front(int part, Limit&& limit, int& begin, int& end) {
    std::atomic<uint64_t>& span = ranges_[static_cast<size_t>(part)].span;
    uint64_t seen = span.load(std::memory_order_acquire);
    for (;;) {
      begin = low(seen);
      const int stop = high(seen);
      if (begin >= stop) return false;
      end = std::min(stop, limit(begin));
      if (span.compare_exchange_weak(seen, pack(end, stop), std::memory_order_acq_rel)) {
        return true;
      }
    }
  }

  // Moves the back half of the largest range into range `part`, which must be empty
  // and owned by the caller. False when no range is long enough to split.
  bool steal(int part) {
    for (;;) {
      int victim = -1;
      int longest = 2 * min_piece_ - 1;
      uint64_t seen = 0;
      for (int i = 0; i < parts_; ++i) {
        const uint64_t span = ranges_[static_cast<size_t>(i)].span.load(std::memory_order_acquire);
        if (high(span) - low(span) > longest) {
          victim = i;
          longest = high(span) - low(span);
          seen = span;
        }
      }
      if (victim < 0) return false;
      const int middle = low(seen) + longest / 2;
      std::atomic<uint64_t>& span = ranges_[static_cast<size_t>(victim)].span;
      if (span.compare_exchange_strong(seen, pack(low(seen), middle), std::memory_order_acq_rel)) {
        ranges_[static_cast<size_t>(part)].span.store(pack(middle, high(seen)),
                                                      std::memory_order_release);
        return true;
      }
    }
  }

 private:
  // One cache line per range: the owner's claims do not slow the other ranges' owners.
  struct alignas(64) Range {
    std::atomic<uint64_t> span{0};  // begin in the low half, end in the high half
  };

  static uint64_t pack(int begin, int end) {
    return static_cast<uint32_t>(begin) | static_cast<uint64_t>(static_cast<uint32_t>(end)) << 32;
  }
  static int low(uint64_t span) { return static_cast<int>(static_cast<uint32_t>(span)); }
  static int high(uint64_t span) { return static_cast<int>(span >> 32); }

  int parts_;
  int min_piece_;
  std::unique_ptr<Range[]> ranges_;
};

}  // namespace avatar
