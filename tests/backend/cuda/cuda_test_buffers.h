// Device buffers for the CUDA kernel tests: poisoned bytes followed by guard bytes that must
// survive (out-of-bounds writes). Host conversions between F32 values and F32/F16/BF16 bytes, and
// activations: support/half_data.h.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"
#include "support/half_data.h"

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

}  // namespace forge::testing
