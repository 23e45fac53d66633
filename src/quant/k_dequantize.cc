// Dequantization of the k-quants Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and of Q8_K (super-blocks of
// 256), following the ggml block layouts in blocks.h with ggml's float arithmetic and order.
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/formats.h"

namespace forge::quant_internal {
namespace {

// The 6-bit scale and min of group g (0..7) of a Q4_K/Q5_K block.
void ScaleMinK4(int g, const uint8_t* s, int* sc, int* m) {
  if (g < 4) {
    *sc = s[g] & 63;
    *m = s[g + 4] & 63;
  } else {
    *sc = (s[g + 4] & 0x0F) | ((s[g - 4] >> 6) << 4);
    *m = (s[g + 4] >> 4) | ((s[g] >> 6) << 4);
  }
}

// Q4_K and Q5_K: 8 groups of 32 elements, each with a 6-bit scale and min (ScaleMinK4);
// quant(b, j, nib, l) is the quant of element l of group 2 * j + nib.
template <typename Block, typename Quant>
void DequantizeScaleMinK4(const uint8_t* src, float* dst, int64_t nblocks, Quant quant) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const Block b = Load<Block>(src, i);
    const float d = F16ToF32(b.d);
    const float dmin = F16ToF32(b.dmin);
    for (int j = 0; j < 4; ++j) {
      for (int nib = 0; nib < 2; ++nib) {
        int sc, m;
        ScaleMinK4(2 * j + nib, b.scales, &sc, &m);
        const float d1 = d * static_cast<float>(sc);
        const float m1 = dmin * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
          const float v = d1 * static_cast<float>(quant(b, j, nib, l));
          *dst++ = v - m1;
        }
      }
    }
  }
}

}  // namespace

void DequantizeQ2_K(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const BlockQ2_K b = Load<BlockQ2_K>(src, i);
    const float d = F16ToF32(b.d);
    const float dmin = F16ToF32(b.dmin);
    int g = 0;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int sub = 0; sub < 2; ++sub, ++g) {
          const float dl = d * static_cast<float>(b.scales[g] & 0x0F);
          const float ml = dmin * static_cast<float>(b.scales[g] >> 4);
          for (int l = 0; l < 16; ++l) {
            const float v = dl * static_cast<float>((q[l + 16 * sub] >> shift) & 3);
            *dst++ = v - ml;
          }
        }
      }
    }
  }
}

void DequantizeQ3_K(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const BlockQ3_K b = Load<BlockQ3_K>(src, i);
    const float d = F16ToF32(b.d);
    int scales[16];
    for (int g = 0; g < 16; ++g) {
      const int low = g < 8 ? (b.scales[g] & 0x0F) : (b.scales[g - 8] >> 4);
      const int high = (b.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
      scales[g] = (low | (high << 4)) - 32;
    }
    int g = 0;
    uint8_t mask = 1;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2, mask <<= 1) {
        for (int sub = 0; sub < 2; ++sub, ++g) {
          const float dl = d * static_cast<float>(scales[g]);
          for (int l = 16 * sub; l < 16 * sub + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - ((b.hmask[l] & mask) ? 0 : 4);
            *dst++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void DequantizeQ4_K(const uint8_t* src, float* dst, int64_t nblocks) {
  DequantizeScaleMinK4<BlockQ4_K>(src, dst, nblocks, [](const BlockQ4_K& b, int j, int nib, int l) {
    return (b.qs[32 * j + l] >> (4 * nib)) & 0x0F;
  });
}

void DequantizeQ5_K(const uint8_t* src, float* dst, int64_t nblocks) {
  DequantizeScaleMinK4<BlockQ5_K>(src, dst, nblocks, [](const BlockQ5_K& b, int j, int nib, int l) {
    const int hbit = 2 * j + nib;
    return ((b.qs[32 * j + l] >> (4 * nib)) & 0x0F) | (((b.qh[l] >> hbit) & 1) << 4);
  });
}

void DequantizeQ6_K(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const BlockQ6_K b = Load<BlockQ6_K>(src, i);
    const float d = F16ToF32(b.d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t* qh = b.qh + 32 * half;
      const int8_t* sc = b.scales + 8 * half;
      float* y = dst + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int g = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[g]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[g + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[g + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[g + 6]) * static_cast<float>(q4);
      }
    }
    dst += kQK_K;
  }
}

void DequantizeQ8_K(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const BlockQ8_K b = Load<BlockQ8_K>(src, i);
    for (int j = 0; j < kQK_K; ++j) *dst++ = b.d * static_cast<float>(b.qs[j]);
  }
}

}  // namespace forge::quant_internal
