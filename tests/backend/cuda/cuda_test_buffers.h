// Device buffers for the CUDA kernel tests: poisoned bytes followed by guard bytes that must
// survive (out-of-bounds writes), and host conversions between F32 values and F32/F16/BF16 bytes.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"

namespace forge::testing {

inline constexpr size_t kGuard = 64;
inline constexpr uint8_t kPoison = 0xFF;  // NaN in F32, F16 and BF16

// Device bytes followed by kGuard guard bytes; everything starts poisoned.
class DevBuf {
 public:
  explicit DevBuf(size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&p_, bytes + kGuard), cudaSuccess);
    EXPECT_EQ(cudaMemset(p_, kPoison, bytes + kGuard), cudaSuccess);
  }
  DevBuf(const void* host, size_t bytes) : DevBuf(bytes) {
    EXPECT_EQ(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DevBuf() { cudaFree(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(p_); }
  // All bytes; *guards_ok whether the guard bytes are untouched.
  std::vector<uint8_t> Download(bool* guards_ok) const {
    std::vector<uint8_t> h(bytes_ + kGuard);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(h.data(), p_, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    *guards_ok = true;
    for (size_t i = bytes_; i < h.size(); ++i) *guards_ok = *guards_ok && h[i] == kPoison;
    return h;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_;
};

inline uint16_t HalfBits(float v, DType t) { return t == DType::kF16 ? F32ToF16(v) : F32ToBF16(v); }
inline float FromHalfBits(uint16_t b, DType t) {
  return t == DType::kF16 ? F16ToF32(b) : BF16ToF32(b);
}

// Values as stored bytes of dtype t (F32 values must be exact in t for the comparisons).
inline std::vector<uint8_t> ToBytes(const std::vector<float>& v, DType t) {
  std::vector<uint8_t> b(v.size() * DTypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kF32) {
      std::memcpy(b.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = HalfBits(v[i], t);
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
  return FromHalfBits(h, t);
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

}  // namespace forge::testing
