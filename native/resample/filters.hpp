// Filter math and the weight tables built from it. A table says, for each output
// pixel of one axis, which source pixels it reads and with which weights; the passes
// (passes_*.cpp) only apply tables.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "resample/aligned.hpp"

namespace avatar {

enum class Filter { Lanczos3, Bicubic, Bilinear };

// Half-width of the filter in source pixels at scale 1 (the kernel is 0 at and past it).
double filter_support(Filter filter);
// The continuous kernel: Lanczos with a = 3, Keys cubic with a = -0.5, or the tent.
double filter_value(Filter filter, double x);

// The same table laid out for a SIMD pass with `lanes` outputs per vector. Output
// lanes of a block read source indices base + lane[i] + k for tap k; when `usable`,
// every lane[i] < lanes, so one unaligned load of `lanes` source values per tap and
// one permute feed a whole block (true whenever the axis is not downscaled).
struct LaneBlocks {
  int lanes = 0;
  bool usable = false;
  std::vector<int32_t> base;      // [blocks]
  AlignedBuffer<int32_t> lane;    // [blocks][lanes]
  AlignedBuffer<float> weights;   // [blocks][taps][lanes]
};

// Axes scaled by an integer factor P = out / in (2, 3 or 4) are periodic away from the
// edges: output P*j + p (phase p) reads source first[P*j] + shift[p] + j' with the
// same weights everywhere. In each 16-output chunk marked usable, every output has
// exactly (bit for bit) those phase weights, so a pass can keep them in registers
// and read the source with plain unaligned loads.
struct PeriodicBlocks {
  int period = 0;                // 0: the axis is not periodic in this sense
  bool any = false;
  int shift[4] = {0, 0, 0, 0};   // first[P*j + p] - first[P*j]
  std::vector<uint8_t> usable;   // [padded_out / 16]
  AlignedBuffer<float> weights;  // [period][taps]
};

// Invariants: 0 <= first[x] <= in_size - 1 and first[] never decreases; taps past
// the source edge were folded onto the edge pixel (edge replication), so a window
// first[x] .. first[x] + taps - 1 only reaches past in_size - 1 with zero weights;
// each output's float32 weights, summed in tap order starting from 0.0f, equal 1.0f
// exactly. Outputs from out_size up to padded_out repeat the last window with zero
// weights so SIMD passes can run whole blocks.
struct AxisTable {
  int in_size = 0;
  int out_size = 0;
  int taps = 0;
  int padded_out = 0;           // out_size rounded up to a multiple of 16
  int padded_in = 0;            // source elements a pass may read (edge-replicated tail)
  std::vector<int32_t> first;   // [padded_out]
  AlignedBuffer<float> weights; // [padded_out][taps]
  LaneBlocks blocks8;
  LaneBlocks blocks16;
  PeriodicBlocks periodic;
};

// Output pixel x samples the source at (x + 0.5) * in / out - 0.5 + shift; a
// downscaled axis stretches the filter by in / out. Positions are exact in double.
std::shared_ptr<const AxisTable> build_axis_table(int in_size, int out_size, Filter filter,
                                                  double shift);

// Cached build_axis_table: tables are reused for the same (sizes, filter, shift).
std::shared_ptr<const AxisTable> axis_table(int in_size, int out_size, Filter filter, double shift);

}  // namespace avatar
