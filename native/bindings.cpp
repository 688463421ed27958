// The only pybind11 file: translates Python arguments, checks them, releases the GIL
// and calls one native function. No algorithm choices here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>

#include "fit/fit_box.hpp"

namespace py = pybind11;

namespace {

avatar::Resolution parse_resolution(const std::string& name) {
  if (name == "1080p") return avatar::Resolution::P1080;
  if (name == "2k") return avatar::Resolution::K2;
  if (name == "4k") return avatar::Resolution::K4;
  throw py::value_error("unknown resolution '" + name + "'; expected 1080p, 2k or 4k");
}

void check_side(int64_t side, const char* name) {
  if (side < 1 || side > (int64_t{1} << 20)) {
    throw py::value_error(std::string(name) + " must be between 1 and 1048576");
  }
}

std::optional<std::pair<int, int>> fit_box(int64_t width, int64_t height, const std::string& res) {
  check_side(width, "width");
  check_side(height, "height");
  const auto fitted = avatar::fit_box(width, height, parse_resolution(res));
  if (!fitted.larger) return std::nullopt;
  return std::make_pair(fitted.width, fitted.height);
}

// Every source size up to max_w x max_h at once, for exhaustive tests: arrays of
// shape (max_h, max_w) indexed [h - 1, w - 1]; 0 where the output would not be larger.
py::tuple fit_box_table(int64_t max_w, int64_t max_h, const std::string& res) {
  check_side(max_w, "max_w");
  check_side(max_h, "max_h");
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

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "Native kernels of the avatar-service engine";
  m.def("fit_box", &fit_box, py::arg("width"), py::arg("height"), py::arg("resolution"),
        "(out_w, out_h) for the resolution's box, or None when not larger than the source.");
  m.def("fit_box_table", &fit_box_table, py::arg("max_w"), py::arg("max_h"), py::arg("resolution"));
}
