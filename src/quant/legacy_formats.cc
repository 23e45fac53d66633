// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 (blocks of 32): dequantization, and quantization by
// llama.cpp's deterministic round-to-nearest reference rules (same scale choice, same float
// arithmetic, same truncations), so the bytes equal those llama-quantize writes.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/formats.h"

namespace forge::quant_internal {
namespace {

// The element of largest magnitude, with its sign (the first one on ties).
float SignedAbsMax(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void MinMax(const float* x, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// Float -> small integer by truncation toward zero, as C's (int8_t)/(uint8_t) casts of values
// known to be in range.
inline int Trunc(float v) { return static_cast<int>(v); }

// Symmetric blocks (Q4_0, Q5_0): d = (signed absmax) / divisor, stored as F16. Returns 1 / d (0
// for a block of zeros).
float SymmetricScale(const float* x, float divisor, uint16_t* d16) {
  const float d = SignedAbsMax(x) / divisor;
  *d16 = F32ToF16(d);
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// Affine blocks (Q4_1, Q5_1): d = (max - min) / levels and m = min, stored as F16. Returns 1 / d
// (0 when every element is equal), and min in *min.
float AffineScale(const float* x, float levels, uint16_t* d16, uint16_t* m16, float* min) {
  float max;
  MinMax(x, min, &max);
  const float d = (max - *min) / levels;
  *d16 = F32ToF16(d);
  *m16 = F32ToF16(*min);
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// 5-bit blocks (Q5_0, Q5_1): elements j and j + 16 share qs[j] (low nibbles); their fifth bits are
// bits j and j + 16 of qh.
void PackQ5(int j, int q0, int q1, uint8_t* qs, uint32_t* qh) {
  qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
  *qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
  *qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + kQK / 2);
}

void UnpackQ5(const uint8_t* qs, uint32_t qh, int j, int* q0, int* q1) {
  *q0 = (qs[j] & 0x0F) | (static_cast<int>((qh >> j) & 1) << 4);
  *q1 = (qs[j] >> 4) | (static_cast<int>((qh >> (j + kQK / 2)) & 1) << 4);
}

}  // namespace

void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
    const BlockQ4_0 b = Load<BlockQ4_0>(src, i);
    const float d = F16ToF32(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
    const BlockQ4_1 b = Load<BlockQ4_1>(src, i);
    const float d = F16ToF32(b.d);
    const float m = F16ToF32(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
      const float v0 = static_cast<float>(b.qs[j] & 0x0F) * d;
      const float v1 = static_cast<float>(b.qs[j] >> 4) * d;
      dst[j] = v0 + m;
      dst[j + kQK / 2] = v1 + m;
    }
  }
}

void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
    const BlockQ5_0 b = Load<BlockQ5_0>(src, i);
    const float d = F16ToF32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      int q0, q1;
      UnpackQ5(b.qs, qh, j, &q0, &q1);
      dst[j] = static_cast<float>(q0 - 16) * d;
      dst[j + kQK / 2] = static_cast<float>(q1 - 16) * d;
    }
  }
}

void DequantizeQ5_1(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
    const BlockQ5_1 b = Load<BlockQ5_1>(src, i);
    const float d = F16ToF32(b.d);
    const float m = F16ToF32(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      int q0, q1;
      UnpackQ5(b.qs, qh, j, &q0, &q1);
      const float v0 = static_cast<float>(q0) * d;
      const float v1 = static_cast<float>(q1) * d;
      dst[j] = v0 + m;
      dst[j + kQK / 2] = v1 + m;
    }
  }
}

void DequantizeQ8_0(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, dst += kQK) {
    const BlockQ8_0 b = Load<BlockQ8_0>(src, i);
    const float d = F16ToF32(b.d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// d = (signed absmax) / -8, so that element maps to q = 0 exactly; q = min(15, trunc(x/d + 8.5)).
void QuantizeQ4_0(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
    BlockQ4_0 b;
    const float id = SymmetricScale(src, -8, &b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, Trunc(src[j] * id + 8.5f));
      const int q1 = std::min(15, Trunc(src[j + kQK / 2] * id + 8.5f));
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    Store(b, dst, i);
  }
}

// d = (max - min) / 15, m = min; q = min(15, trunc((x - min)/d + 0.5)).
void QuantizeQ4_1(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
    BlockQ4_1 b;
    float min;
    const float id = AffineScale(src, 15, &b.d, &b.m, &min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, Trunc((src[j] - min) * id + 0.5f));
      const int q1 = std::min(15, Trunc((src[j + kQK / 2] - min) * id + 0.5f));
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    Store(b, dst, i);
  }
}

// d = (signed absmax) / -16; q = min(31, trunc(x/d + 16.5)).
void QuantizeQ5_0(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
    BlockQ5_0 b;
    const float id = SymmetricScale(src, -16, &b.d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(31, Trunc(src[j] * id + 16.5f));
      const int q1 = std::min(31, Trunc(src[j + kQK / 2] * id + 16.5f));
      PackQ5(j, q0, q1, b.qs, &qh);
    }
    std::memcpy(b.qh, &qh, 4);
    Store(b, dst, i);
  }
}

// d = (max - min) / 31, m = min; q = trunc((x - min)/d + 0.5) (llama.cpp does not clamp here).
void QuantizeQ5_1(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
    BlockQ5_1 b;
    float min;
    const float id = AffineScale(src, 31, &b.d, &b.m, &min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = Trunc((src[j] - min) * id + 0.5f) & 0xFF;
      const int q1 = Trunc((src[j + kQK / 2] - min) * id + 0.5f) & 0xFF;
      PackQ5(j, q0, q1, b.qs, &qh);
    }
    std::memcpy(b.qh, &qh, 4);
    Store(b, dst, i);
  }
}

// d = absmax / 127; q = roundf(x/d) (half away from zero).
void QuantizeQ8_0(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = F32ToF16(d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(std::round(src[j] * id));
    Store(b, dst, i);
  }
}

int NearestInt(float x) {
  // Adding 1.5 * 2^23 leaves the integer part in the low mantissa bits, rounded to nearest even.
  const float v = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &v, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace forge::quant_internal
