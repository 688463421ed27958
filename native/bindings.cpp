// The only pybind11 file: translates Python arguments, checks them, releases the GIL
// and calls one native function. No algorithm choices here.
//
// Where arguments are checked: this file checks only what guards memory at the boundary
// (dimensions, dtype, strides, writeability, sizes against native/limits.hpp, the thread
// count, finite offsets, an ISA this CPU can run), so the kernels can assume valid input.
// Names are translated to enums here; listing the allowed names, checking Python types, the
// `out` overlap and which ISA a caller asked for (AVATAR_ISA) are engine/resample.py's and
// engine/fit.py's part.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "detail/detail.hpp"
#include "fit/fit_box.hpp"
#include "limits.hpp"
#include "resample/dispatch.hpp"
#include "resample/resampler.hpp"
#include "resample/thread_pool.hpp"

namespace py = pybind11;

namespace {

using avatar::kMaxOutputSide;
using avatar::kMaxSourceSide;

avatar::Resolution parse_resolution(const std::string& name) {
  if (name == "1080p") return avatar::Resolution::P1080;
  if (name == "2k") return avatar::Resolution::K2;
  if (name == "4k") return avatar::Resolution::K4;
  throw py::value_error("unknown resolution '" + name + "'");
}

void check_side(int64_t side, int64_t limit, const char* name) {
  if (side < 1 || side > limit) {
    throw py::value_error(std::string(name) + "=" + std::to_string(side) + " is outside 1.." +
                          std::to_string(limit));
  }
}

std::optional<std::pair<int, int>> fit_box(int64_t width, int64_t height, const std::string& res) {
  check_side(width, kMaxSourceSide, "width");
  check_side(height, kMaxSourceSide, "height");
  const auto fitted = avatar::fit_box(width, height, parse_resolution(res));
  if (!fitted.larger) return std::nullopt;
  return std::make_pair(fitted.width, fitted.height);
}

std::pair<int64_t, int64_t> box_size(int64_t width, int64_t height, const std::string& res) {
  check_side(width, kMaxSourceSide, "width");
  check_side(height, kMaxSourceSide, "height");
  const auto box = avatar::box_for(width, height, parse_resolution(res));
  return {box.width, box.height};
}

// Every source size up to max_w x max_h at once, for exhaustive tests: arrays of
// shape (max_h, max_w) indexed [h - 1, w - 1]; 0 where the output would not be larger.
py::tuple fit_box_table(int64_t max_w, int64_t max_h, const std::string& res) {
  check_side(max_w, kMaxSourceSide, "max_w");
  check_side(max_h, kMaxSourceSide, "max_h");
  if (max_w * max_h > (int64_t{1} << 26)) throw py::value_error("table larger than 2**26 entries");
  const auto resolution = parse_resolution(res);
  py::array_t<int32_t> out_w({max_h, max_w});
  py::array_t<int32_t> out_h({max_h, max_w});
  auto ow = out_w.mutable_unchecked<2>();
  auto oh = out_h.mutable_unchecked<2>();
  {
    py::gil_scoped_release release;
    for (int64_t h = 1; h <= max_h; ++h) {
      for (int64_t w = 1; w <= max_w; ++w) {
        const auto fitted = avatar::fit_box(w, h, resolution);
        ow(h - 1, w - 1) = fitted.width;
        oh(h - 1, w - 1) = fitted.height;
      }
    }
  }
  return py::make_tuple(out_w, out_h);
}

constexpr int kMaxThreads = 256;

avatar::Filter parse_filter(const std::string& name) {
  if (name == "lanczos3") return avatar::Filter::Lanczos3;
  if (name == "bicubic") return avatar::Filter::Bicubic;
  if (name == "bilinear") return avatar::Filter::Bilinear;
  throw py::value_error("unknown filter '" + name + "'");
}

// `name` is a variant engine.resample checked against this CPU; None runs the widest.
// Checked again here: a variant the CPU lacks would die on an illegal instruction.
avatar::Isa isa_to_run(const std::optional<std::string>& name) {
  if (!name) return avatar::best_isa();
  const auto isa = avatar::parse_isa(*name);
  if (!isa || !avatar::isa_available(*isa)) {
    throw py::value_error("isa '" + *name + "' is not available on this CPU");
  }
  return *isa;
}

int choose_threads(std::optional<int> threads) {
  if (!threads) return avatar::available_cpus();
  check_side(*threads, kMaxThreads, "threads");
  return *threads;
}

bool is_uint8(const py::array& array) { return array.dtype().is(py::dtype::of<uint8_t>()); }

avatar::ImageView source_view(const py::array& plane) {
  if (plane.ndim() != 2 || !is_uint8(plane)) {
    throw py::value_error("plane must be a 2-D numpy array of dtype uint8");
  }
  const int64_t h = plane.shape(0), w = plane.shape(1);
  if (h < 1 || w < 1) throw py::value_error("plane must not be empty");
  check_side(h, kMaxSourceSide, "plane height");
  check_side(w, kMaxSourceSide, "plane width");
  return {static_cast<const uint8_t*>(plane.data()), plane.strides(0), plane.strides(1),
          static_cast<int>(w), static_cast<int>(h)};
}

// A fresh C-contiguous image whose first byte is 64-byte aligned (streaming stores).
py::array_t<uint8_t> aligned_image(int width, int height) {
  const size_t bytes = (static_cast<size_t>(width) * height + 63) / 64 * 64;
  void* memory = std::aligned_alloc(64, bytes);
  if (memory == nullptr) throw std::bad_alloc();
  py::capsule owner(memory, [](void* p) { std::free(p); });
  return py::array_t<uint8_t>({height, width}, {width, 1}, static_cast<uint8_t*>(memory), owner);
}

avatar::OutputView output_view(py::array& out, int width, int height) {
  if (out.ndim() != 2 || !is_uint8(out) || out.shape(0) != height || out.shape(1) != width) {
    throw py::value_error("out must be a uint8 array of shape (" + std::to_string(height) + ", " +
                          std::to_string(width) + ")");
  }
  if (!out.writeable()) throw py::value_error("out must be writeable");
  if (out.strides(1) != 1) throw py::value_error("out rows must be contiguous (pixel stride 1)");
  return {static_cast<uint8_t*>(out.mutable_data()), out.strides(0), width, height};
}

// Returns (result, name of the variant that ran).
py::tuple resample(const py::array& plane, int out_w, int out_h, const std::string& filter,
                   double dx, double dy, std::optional<int> threads, std::optional<py::array> out,
                   const std::optional<std::string>& isa) {
  const avatar::ImageView src = source_view(plane);
  check_side(out_w, kMaxOutputSide, "out_w");
  check_side(out_h, kMaxOutputSide, "out_h");
  if (!std::isfinite(dx) || !std::isfinite(dy)) throw py::value_error("offset must be finite");
  avatar::ResampleOptions options;
  options.filter = parse_filter(filter);
  options.dx = dx;
  options.dy = dy;
  options.threads = choose_threads(threads);
  options.isa = isa_to_run(isa);
  py::array result = out ? *out : aligned_image(out_w, out_h);
  const avatar::OutputView dst = output_view(result, out_w, out_h);
  {
    py::gil_scoped_release release;
    avatar::resample(src, dst, options);
  }
  return py::make_tuple(result, avatar::isa_name(options.isa));
}

// The learned filter's 2x pass: `weights` float32 (buckets, phases, taps), `thresholds`
// float32 (2,); returns (result of shape (2 h, 2 w), name of the variant that ran).
py::tuple detail2x(const py::array& plane, const py::array_t<float, py::array::c_style>& weights,
                   const py::array_t<float, py::array::c_style>& thresholds,
                   std::optional<int> threads, std::optional<py::array> out,
                   const std::optional<std::string>& isa) {
  const avatar::ImageView src = source_view(plane);
  check_side(src.width, kMaxOutputSide, "plane width");
  check_side(src.height, kMaxOutputSide, "plane height");
  if (weights.ndim() != 3 || weights.shape(0) != avatar::kDetailBuckets ||
      weights.shape(1) != avatar::kDetailPhases || weights.shape(2) != avatar::kDetailTaps) {
    throw py::value_error("weights must have shape (" + std::to_string(avatar::kDetailBuckets) +
                          ", " + std::to_string(avatar::kDetailPhases) + ", " +
                          std::to_string(avatar::kDetailTaps) + ")");
  }
  if (thresholds.ndim() != 1 || thresholds.shape(0) != 2) {
    throw py::value_error("thresholds must have shape (2,)");
  }
  const float* w = weights.data();
  const float* t = thresholds.data();
  if (!std::all_of(w, w + weights.size(), [](float v) { return std::isfinite(v); }) ||
      !std::isfinite(t[0]) || !std::isfinite(t[1])) {
    throw py::value_error("weights and thresholds must be finite");
  }
  const avatar::DetailModel model{w, {t[0], t[1]}};
  const int run_threads = choose_threads(threads);
  const avatar::Isa run_isa = isa_to_run(isa);
  py::array result = out ? *out : aligned_image(2 * src.width, 2 * src.height);
  const avatar::OutputView dst = output_view(result, 2 * src.width, 2 * src.height);
  {
    py::gil_scoped_release release;
    avatar::detail2x(src, dst, model, run_threads, run_isa);
  }
  return py::make_tuple(result, avatar::isa_name(run_isa));
}

py::tuple weight_table(int in_size, int out_size, const std::string& filter, double shift) {
  check_side(in_size, kMaxSourceSide, "in_size");
  check_side(out_size, kMaxOutputSide, "out_size");
  if (!std::isfinite(shift)) throw py::value_error("shift must be finite");
  const auto table = avatar::axis_table(in_size, out_size, parse_filter(filter), shift);
  py::array_t<int32_t> first(out_size);
  py::array_t<float> weights({out_size, table->taps});
  std::copy_n(table->first.data(), out_size, first.mutable_data());
  std::copy_n(table->weights.data(), static_cast<size_t>(out_size) * table->taps,
              weights.mutable_data());
  return py::make_tuple(first, weights);
}

py::dict kernel_info() {
  py::dict info;
  py::list isas;
  for (avatar::Isa isa : avatar::available_isas()) isas.append(avatar::isa_name(isa));
  info["isas"] = isas;
  info["isa"] = avatar::isa_name(avatar::best_isa());
  info["threads"] = avatar::available_cpus();
  return info;
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "Native kernels of the avatar-service engine";
  m.attr("MAX_OUTPUT_SIDE") = kMaxOutputSide;
  m.attr("MAX_SCALE") = avatar::kMaxScale;
  py::list isas;
  for (avatar::Isa isa : avatar::kAllIsas) isas.append(avatar::isa_name(isa));
  m.attr("ISAS") = py::tuple(isas);
  m.def("fit_box", &fit_box, py::arg("width"), py::arg("height"), py::arg("resolution"),
        "(out_w, out_h) for the resolution's box, or None when not larger than the source.");
  m.def("box_size", &box_size, py::arg("width"), py::arg("height"), py::arg("resolution"),
        "(box_w, box_h) of the resolution's box for this source: portrait when taller than wide.");
  m.def("fit_box_table", &fit_box_table, py::arg("max_w"), py::arg("max_h"), py::arg("resolution"));
  m.def("resample", &resample, py::arg("plane"), py::arg("out_w"), py::arg("out_h"),
        py::arg("filter"), py::arg("dx"), py::arg("dy"), py::arg("threads"), py::arg("out"),
        py::arg("isa"),
        "Resample a 2-D uint8 plane into `out` (or a new array); returns (array, isa that ran).");
  m.def("detail2x", &detail2x, py::arg("plane"), py::arg("weights"), py::arg("thresholds"),
        py::arg("threads"), py::arg("out"), py::arg("isa"),
        "The learned filter's 2x pass into `out` (or a new array); returns (array, isa that ran).");
  m.def("weight_table", &weight_table, py::arg("in_size"), py::arg("out_size"), py::arg("filter"),
        py::arg("shift"),
        "(first, weights) of one axis: the coefficients every native pass applies.");
  m.def("kernel_info", &kernel_info, "Instruction sets this CPU runs and the defaults.");
}
