#include "resample/filters.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <mutex>
#include <tuple>

namespace avatar {

namespace {

constexpr double kPi = 3.14159265358979323846;

double sinc(double x) {
  if (x == 0.0) return 1.0;
  return std::sin(kPi * x) / (kPi * x);
}

// Raw (unnormalised, unfolded) taps of one output pixel: the source indices t
// with |t - center| < reach, from `start`, with their double weights. Interior
// zeros of the kernel stay in, so the first index never decreases along the axis.
struct RawTaps {
  int64_t start = 0;
  std::vector<double> weights;
};

// The center is whole + fraction; taps and weights depend on the fraction only,
// so outputs of the same phase get bit-identical weights.
RawTaps raw_taps(int64_t whole, double fraction, double stretch, double reach, Filter filter) {
  RawTaps raw;
  const auto from = static_cast<int64_t>(std::floor(fraction - reach)) + 1;
  const auto to = static_cast<int64_t>(std::ceil(fraction + reach)) - 1;
  raw.start = whole + from;
  double total = 0.0;
  for (int64_t t = from; t <= to; ++t) {
    const double w = filter_value(filter, (static_cast<double>(t) - fraction) / stretch);
    raw.weights.push_back(w);
    total += w;
  }
  for (double& w : raw.weights) w /= total;
  return raw;
}

// Folds raw taps onto [0, in_size - 1] (edge replication). Returns the first
// index and writes the folded weights to `folded`.
int fold_taps(const RawTaps& raw, int in_size, std::vector<double>& folded) {
  const int64_t last = raw.start + static_cast<int64_t>(raw.weights.size()) - 1;
  const auto clamp = [in_size](int64_t t) {
    return static_cast<int>(std::clamp<int64_t>(t, 0, in_size - 1));
  };
  const int first = clamp(raw.start);
  folded.assign(static_cast<size_t>(clamp(last) - first + 1), 0.0);
  for (size_t i = 0; i < raw.weights.size(); ++i) {
    folded[static_cast<size_t>(clamp(raw.start + static_cast<int64_t>(i)) - first)] +=
        raw.weights[i];
  }
  return first;
}

float in_order_sum(const float* w, size_t count) {
  float sum = 0.0f;
  for (size_t i = 0; i < count; ++i) sum += w[i];
  return sum;
}

// Rounds to float32, then moves one weight at a time (largest first) until the
// in-order float sum is exactly 1: first by the whole residue, then ulp by ulp,
// since a large weight's ulp can step over 1.0f where a smaller one's does not.
void to_unit_floats(const std::vector<double>& weights, float* out) {
  const size_t count = weights.size();
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) {
    out[i] = static_cast<float>(weights[i]);
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::fabs(weights[a]) > std::fabs(weights[b]);
  });
  for (size_t j : order) {
    const float original = out[j];
    for (int step = 0; step < 40; ++step) {
      const float sum = in_order_sum(out, count);
      if (sum == 1.0f) return;
      if (step < 2) {
        out[j] += 1.0f - sum;
      } else {
        out[j] = std::nextafter(out[j], sum < 1.0f ? 2.0f : -2.0f);
      }
    }
    out[j] = original;
  }
}

void build_blocks(const AxisTable& t, int lanes, LaneBlocks& blocks) {
  const int count = t.padded_out / lanes;
  blocks.lanes = lanes;
  blocks.usable = true;
  blocks.base.resize(static_cast<size_t>(count));
  blocks.lane.reserve(static_cast<size_t>(count) * lanes);
  blocks.weights.reserve(static_cast<size_t>(count) * t.taps * lanes);
  for (int b = 0; b < count; ++b) {
    const int base = t.first[static_cast<size_t>(b * lanes)];
    blocks.base[static_cast<size_t>(b)] = base;
    for (int i = 0; i < lanes; ++i) {
      const int x = b * lanes + i;
      const int offset = t.first[static_cast<size_t>(x)] - base;
      if (offset < 0 || offset >= lanes) blocks.usable = false;
      blocks.lane.data()[b * lanes + i] = offset;
      for (int k = 0; k < t.taps; ++k) {
        blocks.weights.data()[(static_cast<size_t>(b) * t.taps + k) * lanes + i] =
            t.weights.data()[static_cast<size_t>(x) * t.taps + k];
      }
    }
  }
}

bool same_window(const AxisTable& t, int x, int reference, int shift) {
  if (t.first[static_cast<size_t>(x)] != t.first[static_cast<size_t>(reference)] + shift) {
    return false;
  }
  const float* a = t.weights.data() + static_cast<size_t>(x) * t.taps;
  const float* b = t.weights.data() + static_cast<size_t>(reference) * t.taps;
  return std::memcmp(a, b, sizeof(float) * t.taps) == 0;
}

void build_periodic(AxisTable& t) {
  PeriodicBlocks& periodic = t.periodic;
  const int period = t.out_size / t.in_size;
  if (period < 2 || period > 4 || t.out_size != period * t.in_size) return;
  const int middle = t.in_size / 2 * period;  // a phase-0 output near the middle
  const auto first_of = [&t](int x) { return t.first[static_cast<size_t>(x)]; };
  for (int p = 0; p < period; ++p) periodic.shift[p] = first_of(middle + p) - first_of(middle);
  periodic.period = period;
  periodic.weights.reserve(static_cast<size_t>(period) * t.taps);
  std::memcpy(periodic.weights.data(), t.weights.data() + static_cast<size_t>(middle) * t.taps,
              sizeof(float) * period * t.taps);
  const int chunks = t.padded_out / 16;
  periodic.usable.assign(static_cast<size_t>(chunks), 0);
  for (int c = 0; c < chunks; ++c) {
    bool usable = (c + 1) * 16 <= t.out_size;
    for (int x = c * 16; usable && x < c * 16 + 16; ++x) {
      const int phase = x % period;
      usable = same_window(t, x, middle + phase, (x - phase - middle) / period);
    }
    periodic.usable[static_cast<size_t>(c)] = usable ? 1 : 0;
    periodic.any = periodic.any || usable;
  }
}

}  // namespace

double filter_support(Filter filter) {
  switch (filter) {
    case Filter::Lanczos3: return 3.0;
    case Filter::Bicubic: return 2.0;
    case Filter::Bilinear: return 1.0;
  }
  return 1.0;
}

double filter_value(Filter filter, double x) {
  const double ax = std::fabs(x);
  switch (filter) {
    case Filter::Lanczos3: return ax < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
    case Filter::Bicubic: {
      constexpr double a = -0.5;
      if (ax < 1.0) return ((a + 2.0) * ax - (a + 3.0)) * ax * ax + 1.0;
      if (ax < 2.0) return ((a * ax - 5.0 * a) * ax + 8.0 * a) * ax - 4.0 * a;
      return 0.0;
    }
    case Filter::Bilinear: return ax < 1.0 ? 1.0 - ax : 0.0;
  }
  return 0.0;
}

// center = (x + 0.5) * in / out - 0.5 + shift = whole + fraction, with the integer
// part taken exactly from ((2x + 1) * in - out) / (2 * out).
void split_center(int x, int in_size, int out_size, double shift, int64_t& whole,
                  double& fraction) {
  const int64_t twice_out = 2 * static_cast<int64_t>(out_size);
  const int64_t numerator = (2 * static_cast<int64_t>(x) + 1) * in_size - out_size;
  whole = numerator >= 0 ? numerator / twice_out : -((twice_out - 1 - numerator) / twice_out);
  fraction = static_cast<double>(numerator - whole * twice_out) / twice_out + shift;
}

std::shared_ptr<const AxisTable> build_axis_table(int in_size, int out_size, Filter filter,
                                                  double shift) {
  auto table = std::make_shared<AxisTable>();
  table->in_size = in_size;
  table->out_size = out_size;
  table->padded_out = (out_size + 15) / 16 * 16;
  const double stretch = std::max(static_cast<double>(in_size) / out_size, 1.0);
  const double reach = filter_support(filter) * stretch;

  std::vector<std::vector<double>> folded(static_cast<size_t>(out_size));
  table->first.resize(static_cast<size_t>(table->padded_out));
  int taps = 1;
  for (int x = 0; x < out_size; ++x) {
    int64_t whole = 0;
    double fraction = 0.0;
    split_center(x, in_size, out_size, shift, whole, fraction);
    const RawTaps raw = raw_taps(whole, fraction, stretch, reach, filter);
    auto& weights = folded[static_cast<size_t>(x)];
    table->first[static_cast<size_t>(x)] = fold_taps(raw, in_size, weights);
    taps = std::max(taps, static_cast<int>(weights.size()));
  }
  table->taps = taps;
  table->padded_in = in_size + taps + 16;
  const size_t cells = static_cast<size_t>(table->padded_out) * taps;
  std::memset(table->weights.reserve(cells), 0, sizeof(float) * cells);
  for (int x = 0; x < out_size; ++x) {
    to_unit_floats(folded[static_cast<size_t>(x)],
                   table->weights.data() + static_cast<size_t>(x) * taps);
  }
  for (int x = out_size; x < table->padded_out; ++x) {
    table->first[static_cast<size_t>(x)] = table->first[static_cast<size_t>(out_size) - 1];
  }
  build_blocks(*table, 8, table->blocks8);
  build_blocks(*table, 16, table->blocks16);
  build_periodic(*table);
  return table;
}

std::shared_ptr<const AxisTable> axis_table(int in_size, int out_size, Filter filter,
                                            double shift) {
  using Key = std::tuple<int, int, int, double>;
  constexpr size_t kCapacity = 32;  // a pipeline uses a handful (luma and chroma, x and y)
  static std::mutex mutex;
  static std::list<std::pair<Key, std::shared_ptr<const AxisTable>>> recent;
  const Key key{in_size, out_size, static_cast<int>(filter), shift};
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = recent.begin(); it != recent.end(); ++it) {
      if (it->first == key) {
        recent.splice(recent.begin(), recent, it);
        return it->second;
      }
    }
  }
  auto table = build_axis_table(in_size, out_size, filter, shift);
  std::lock_guard<std::mutex> lock(mutex);
  recent.emplace_front(key, table);
  if (recent.size() > kCapacity) recent.pop_back();
  return table;
}

}  // namespace avatar
