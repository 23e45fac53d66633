// Test data for the half-precision paths: values rounded to F16/BF16, their bit patterns and bytes,
// matmul activations, and paged-cache block tables of shuffled block ids (scattered over the pool,
// as a busy cache is).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"

namespace forge::testing {

inline uint16_t ToBits(float f, DType t) { return t == DType::kF16 ? F32ToF16(f) : F32ToBF16(f); }
inline float FromBits(uint16_t b, DType t) { return t == DType::kF16 ? F16ToF32(b) : BF16ToF32(b); }

// Values as the dtype holds them (F32 unchanged).
inline std::vector<float> Rounded(std::vector<float> v, DType t) {
  if (t != DType::kF32) {
    for (float& x : v) x = FromBits(ToBits(x, t), t);
  }
  return v;
}

inline std::vector<uint16_t> Bits(const std::vector<float>& v, DType t) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = ToBits(v[i], t);
  return b;
}

inline std::vector<float> Floats(const std::vector<uint16_t>& b, DType t) {
  std::vector<float> v(b.size());
  for (size_t i = 0; i < b.size(); ++i) v[i] = FromBits(b[i], t);
  return v;
}

// Values as stored bytes of dtype t (F32 values must be exact in t for the comparisons).
inline std::vector<uint8_t> ToBytes(const std::vector<float>& v, DType t) {
  std::vector<uint8_t> b(v.size() * DTypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(b.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = ToBits(v[i], t);
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
  }
  return b;
}

inline float ValueAt(const std::vector<uint8_t>& b, size_t i, DType t) {
  if (t == DType::kF32) {
    float f;
    std::memcpy(&f, b.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, b.data() + 2 * i, 2);
  return FromBits(h, t);
}

// x [rows][stride]: F32 normal values, or (exact) values that F16 and BF16 both hold exactly.
inline std::vector<float> Activations(int64_t rows, int64_t k, int64_t stride, bool half_exact,
                                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(rows * stride, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      float v = d(rng);
      if (half_exact) v = std::clamp(std::round(v * 32.0f), -127.0f, 127.0f) / 32.0f;
      x[r * stride + c] = v;
    }
  }
  return x;
}

// Block tables [lens.size(), width] for sequences of lens[s] tokens in blocks of block_size:
// ids drawn without repeats from a shuffle of [0, num_blocks), -1 past each sequence's blocks.
template <typename Len>
std::vector<int32_t> ShuffledBlockTables(const std::vector<Len>& lens, int64_t block_size,
                                         int64_t width, int64_t num_blocks, uint64_t seed) {
  std::vector<int32_t> ids(num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(seed));
  std::vector<int32_t> tables(lens.size() * width, -1);
  int64_t next = 0;
  for (size_t s = 0; s < lens.size(); ++s) {
    for (int64_t k = 0; k < (int64_t{lens[s]} + block_size - 1) / block_size; ++k) {
      tables[s * width + k] = ids[next++];
    }
  }
  return tables;
}

}  // namespace forge::testing
