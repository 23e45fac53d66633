// Quantization to Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and Q8_K: plain round-to-nearest with min/max
// group scales, then the group scales themselves rounded to the format's scale grid (no search;
// these make test and benchmark models, not users' weights). Q8_K follows ggml's reference rule.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/formats.h"

namespace forge::quant_internal {
namespace {

// A value stored as F16 and read back.
float RoundF16(float v) { return F16ToF32(F32ToF16(v)); }

// Asymmetric groups: value = d * sc[g] * q - dmin * m[g], q in [0, qmax], sc and m in
// [0, smax]. Fills d, dmin (F16 bits), sc, m and q (one per element) for n_groups of size gs.
void QuantizeAsymmetric(const float* x, int n_groups, int gs, int qmax, int smax, uint16_t* d16,
                        uint16_t* dmin16, int* sc, int* m, uint8_t* q) {
  float scale[16], offset[16];  // per group: (max - min) / qmax and -min (min clamped to <= 0)
  float max_scale = 0.0f, max_offset = 0.0f;
  for (int g = 0; g < n_groups; ++g) {
    const float* xg = x + g * gs;
    float lo = 0.0f, hi = xg[0];
    for (int l = 0; l < gs; ++l) {
      lo = std::min(lo, xg[l]);
      hi = std::max(hi, xg[l]);
    }
    scale[g] = (hi - lo) / static_cast<float>(qmax);
    offset[g] = -lo;
    max_scale = std::max(max_scale, scale[g]);
    max_offset = std::max(max_offset, offset[g]);
  }
  *d16 = F32ToF16(max_scale / static_cast<float>(smax));
  *dmin16 = F32ToF16(max_offset / static_cast<float>(smax));
  const float d = F16ToF32(*d16);
  const float dmin = F16ToF32(*dmin16);
  for (int g = 0; g < n_groups; ++g) {
    sc[g] = d > 0.0f ? std::clamp(NearestInt(scale[g] / d), 0, smax) : 0;
    m[g] = dmin > 0.0f ? std::clamp(NearestInt(offset[g] / dmin), 0, smax) : 0;
    const float dl = d * static_cast<float>(sc[g]);
    const float ml = dmin * static_cast<float>(m[g]);
    for (int l = 0; l < gs; ++l) {
      const int e = g * gs + l;
      q[e] =
          static_cast<uint8_t>(dl > 0.0f ? std::clamp(NearestInt((x[e] + ml) / dl), 0, qmax) : 0);
    }
  }
}

// Symmetric groups of 16: value = d * sc[g] * q, q in [-qneg, qneg - 1], sc in [-sneg, sneg - 1].
// The element of largest magnitude in a group maps to -qneg, the largest group scale to -sneg
// (as ggml's reference quantizers do), so both ends of the grids are used. Returns d.
float QuantizeSymmetric(const float* x, int qneg, int sneg, int* sc, int* q) {
  float scale[16];
  float max_scale = 0.0f, max_abs_scale = 0.0f;
  for (int g = 0; g < 16; ++g) {
    float amax = 0.0f, max = 0.0f;
    for (int l = 0; l < 16; ++l) {
      if (std::fabs(x[16 * g + l]) > amax) {
        amax = std::fabs(x[16 * g + l]);
        max = x[16 * g + l];
      }
    }
    scale[g] = max / static_cast<float>(-qneg);
    if (std::fabs(scale[g]) > max_abs_scale) {
      max_abs_scale = std::fabs(scale[g]);
      max_scale = scale[g];
    }
  }
  const float d = RoundF16(max_scale / static_cast<float>(-sneg));
  for (int g = 0; g < 16; ++g) {
    sc[g] = d != 0.0f ? std::clamp(NearestInt(scale[g] / d), -sneg, sneg - 1) : 0;
    const float dl = d * static_cast<float>(sc[g]);
    for (int l = 0; l < 16; ++l) {
      const int e = 16 * g + l;
      q[e] = dl != 0.0f ? std::clamp(NearestInt(x[e] / dl), -qneg, qneg - 1) : 0;
    }
  }
  return d;
}

// Packs 8 six-bit scales and mins the way ScaleMinK4 (k_dequantize.cc) reads them.
void PackScaleMinK4(const int* sc, const int* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

// Q4_K and Q5_K: 8 asymmetric groups of 32 with 6-bit scales and mins, quants in [0, qmax];
// pack(q, &b) stores the block's quants (q: one per element).
template <typename Block, typename Pack>
void QuantizeScaleMinK4(const float* src, uint8_t* dst, int64_t nblocks, int qmax, Pack pack) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
    Block b;
    int sc[8], m[8];
    uint8_t q[kQK_K];
    QuantizeAsymmetric(src, 8, 32, qmax, 63, &b.d, &b.dmin, sc, m, q);
    PackScaleMinK4(sc, m, b.scales);
    pack(q, &b);
    Store(b, dst, i);
  }
}

}  // namespace

void QuantizeQ2_K(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
    BlockQ2_K b;
    int sc[16], m[16];
    uint8_t q[kQK_K];
    QuantizeAsymmetric(src, 16, 16, 3, 15, &b.d, &b.dmin, sc, m, q);
    for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<uint8_t>(sc[g] | (m[g] << 4));
    std::memset(b.qs, 0, sizeof(b.qs));
    // Element 128 * half + 32 * k + l (l < 32) -> qs[32 * half + l], bits 2k.
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      b.qs[32 * half + l] |= static_cast<uint8_t>(q[e] << (2 * k));
    }
    Store(b, dst, i);
  }
}

void QuantizeQ3_K(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
    BlockQ3_K b;
    int sc[16], q[kQK_K];
    b.d = F32ToF16(QuantizeSymmetric(src, 4, 32, sc, q));
    std::memset(b.scales, 0, sizeof(b.scales));
    for (int g = 0; g < 16; ++g) {
      const int s = sc[g] + 32;  // 6 bits
      b.scales[g % 8] |= static_cast<uint8_t>((s & 0x0F) << (g < 8 ? 0 : 4));
      b.scales[8 + g % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (g / 4)));
    }
    std::memset(b.qs, 0, sizeof(b.qs));
    std::memset(b.hmask, 0, sizeof(b.hmask));
    // q + 4 in [0, 7]: low 2 bits as Q2_K, the high bit in hmask[l] bit (4 * half + k).
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      const int u = q[e] + 4;
      b.qs[32 * half + l] |= static_cast<uint8_t>((u & 3) << (2 * k));
      b.hmask[l] |= static_cast<uint8_t>((u >> 2) << (4 * half + k));
    }
    Store(b, dst, i);
  }
}

void QuantizeQ4_K(const float* src, uint8_t* dst, int64_t nblocks) {
  QuantizeScaleMinK4<BlockQ4_K>(src, dst, nblocks, 15, [](const uint8_t* q, BlockQ4_K* b) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        b->qs[32 * j + l] = static_cast<uint8_t>(q[64 * j + l] | (q[64 * j + 32 + l] << 4));
      }
    }
  });
}

void QuantizeQ5_K(const float* src, uint8_t* dst, int64_t nblocks) {
  QuantizeScaleMinK4<BlockQ5_K>(src, dst, nblocks, 31, [](const uint8_t* q, BlockQ5_K* b) {
    std::memset(b->qh, 0, sizeof(b->qh));
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        const int lo = q[64 * j + l], hi = q[64 * j + 32 + l];
        b->qs[32 * j + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
        b->qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * j)) | ((hi >> 4) << (2 * j + 1)));
      }
    }
  });
}

void QuantizeQ6_K(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
    BlockQ6_K b;
    int sc[16], q[kQK_K];
    b.d = F32ToF16(QuantizeSymmetric(src, 32, 128, sc, q));
    for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(sc[g]);
    std::memset(b.ql, 0, sizeof(b.ql));
    std::memset(b.qh, 0, sizeof(b.qh));
    // Element 128 * half + 32 * k + l: low nibble in ql[64 * half + 32 * (k & 1) + l] at bit
    // 4 * (k >> 1), high 2 bits in qh[32 * half + l] at bit 2k.
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, k = (e % 128) / 32, l = e % 32;
      const int u = q[e] + 32;
      b.ql[64 * half + 32 * (k & 1) + l] |= static_cast<uint8_t>((u & 0x0F) << (4 * (k >> 1)));
      b.qh[32 * half + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
    }
    Store(b, dst, i);
  }
}

// ggml's reference: the element of largest magnitude maps to -127 (clamped at 127 above);
// d = 1 / iscale; bsums are the sums of each group of 16 quants.
void QuantizeQ8_K(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, src += kQK_K) {
    BlockQ8_K b;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&b, 0, sizeof(b));
    } else {
      const float iscale = -127.0f / max;
      for (int j = 0; j < kQK_K; ++j) {
        b.qs[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * src[j])));
      }
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
        b.bsums[g] = static_cast<int16_t>(sum);
      }
      b.d = 1.0f / iscale;
    }
    Store(b, dst, i);
  }
}

}  // namespace forge::quant_internal
