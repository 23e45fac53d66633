// The int8 form a quantized matmul's activations take once per op (its _ref twin takes the same):
// each block of B elements (32 for the legacy formats, 256 for the k-quants) becomes kActPlanes
// int8 planes and one F32 scale d with
//   x[i] ~= d * (254^2 q0[i] + 254 q1[i] + q2[i]),  |q| <= 127,
// plane 0 the block rounded to its absmax / 127, each further plane the remainder rounded to 1/254
// of the previous step: |error| <= about absmax / (2 * 127 * 254^2), F32-grade accuracy from
// integer dot products. Per plane, the sums of each 16 consecutive quants are kept (the k-quants'
// minimums and the offsets of unsigned weights need them).
#pragma once

#include <cstdint>
#include <vector>

#include "quant/type_table.h"

namespace forge {

inline constexpr int kActPlanes = 3;
inline constexpr int kActRadix = 254;  // plane p weighs kActRadix^(kActPlanes - 1 - p)
inline constexpr int kActGroup = 16;   // elements per kept sum

// One quantized activation row of nblocks blocks of `block` elements.
struct ActRow {
  int block = 32;
  int64_t nblocks = 0;
  // Plane-major, so that a plane's consecutive blocks are contiguous.
  const int8_t* q = nullptr;            // [kActPlanes][nblocks][block]
  const float* d = nullptr;             // [nblocks]: the scale of the last plane
  const int16_t* sums = nullptr;        // [kActPlanes][nblocks][block / kActGroup]
  const int32_t* block_sums = nullptr;  // [kActPlanes][nblocks]: each block's sum

  const int8_t* Q(int64_t b, int p) const { return q + (p * nblocks + b) * block; }
  const int16_t* Sums(int64_t b, int p) const {
    return sums + (p * nblocks + b) * (block / kActGroup);
  }
  const int32_t* BlockSums(int p) const { return block_sums + p * nblocks; }
};

// The activation block a weight format's integer dot product takes: 256 for the k-quants, 32 for
// the legacy formats, 0 for formats without one (F32, F16, BF16).
int ActBlockOf(GgmlType weight_type);

// Storage for m quantized rows of k elements (k a multiple of `block`).
class ActRows {
 public:
  void Resize(int64_t m, int64_t k, int block);
  // Quantizes row i from x[0, k).
  void Quantize(int64_t i, const float* x);
  ActRow row(int64_t i) const;
  int64_t m() const { return m_; }

 private:
  int64_t m_ = 0, nblocks_ = 0;
  int block_ = 32;
  std::vector<int8_t> q_;
  std::vector<float> d_;
  std::vector<int16_t> sums_;
  std::vector<int32_t> block_sums_;
};

// Quantizes one block of `block` elements (the one rule ActRows and every test use): plane p's
// quants at q + p * plane_stride, its sums of 16 at sums + p * sums_stride.
void QuantizeActBlock(const float* x, int block, int8_t* q, int64_t plane_stride, float* d,
                      int16_t* sums, int64_t sums_stride);

}  // namespace forge
