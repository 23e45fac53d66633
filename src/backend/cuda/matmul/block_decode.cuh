// Reading GGUF weight blocks on the device (and on the host, for tests): 2-byte-aligned loads,
// byte permutes, and Dequant8, which dequantizes eight consecutive elements of a stored row with
// the CPU reference's float operations in the same order and no FMA contraction (bit identical).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "quant/type_table.h"
#ifndef __CUDA_ARCH__
#include "base/half.h"
#endif

#define FORGE_HD __host__ __device__ __forceinline__

namespace forge::cuda::qd {

// The ten block formats the quantized kernels take.
inline constexpr bool IsQuantFormat(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}
inline constexpr bool IsKQuant(GgmlType t) {
  return t == GgmlType::kQ2_K || t == GgmlType::kQ3_K || t == GgmlType::kQ4_K ||
         t == GgmlType::kQ5_K || t == GgmlType::kQ6_K;
}
inline constexpr int BlockElems(GgmlType t) { return IsKQuant(t) ? 256 : 32; }
inline constexpr int BlockBytes(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
      return 18;
    case GgmlType::kQ4_1:
      return 20;
    case GgmlType::kQ5_0:
      return 22;
    case GgmlType::kQ5_1:
      return 24;
    case GgmlType::kQ8_0:
      return 34;
    case GgmlType::kQ2_K:
      return 84;
    case GgmlType::kQ3_K:
      return 110;
    case GgmlType::kQ4_K:
      return 144;
    case GgmlType::kQ5_K:
      return 176;
    case GgmlType::kQ6_K:
      return 210;
    default:
      return 0;
  }
}

FORGE_HD uint32_t Ld8(const uint8_t* p) { return *p; }
// Requires: p 2-byte aligned.
FORGE_HD uint32_t Ld16(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint16_t*>(p);
#else
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
#endif
}
// Four contiguous bytes, little-endian. Requires: p 2-byte aligned.
FORGE_HD uint32_t Ld32(const uint8_t* p) { return Ld16(p) | (Ld16(p + 2) << 16); }

// __byte_perm(a, b, sel): byte i of the result is byte (sel >> 4i) & 7 of the 8 bytes {b:a}.
FORGE_HD uint32_t BytePerm(uint32_t a, uint32_t b, uint32_t sel) {
#ifdef __CUDA_ARCH__
  return __byte_perm(a, b, sel);
#else
  const uint64_t v = (static_cast<uint64_t>(b) << 32) | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t s = (sel >> (4 * i)) & 7;
    r |= static_cast<uint32_t>((v >> (8 * s)) & 0xFF) << (8 * i);
  }
  return r;
#endif
}

// x >> n for n >= 0, x << -n for n < 0 (n a compile-time constant in the kernels).
FORGE_HD uint32_t ShiftR(uint32_t x, int n) { return n >= 0 ? x >> n : x << -n; }

// F16 bits -> F32 (exact).
FORGE_HD float HalfToF32(uint32_t h) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
#else
  return F16ToF32(static_cast<uint16_t>(h));
#endif
}

// Single-rounding float ops the compiler may not fuse into an FMA (the CPU reference rounds the
// product and the sum separately).
FORGE_HD float FMul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
FORGE_HD float FAdd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
FORGE_HD float FSub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// The 6-bit scale and min of group g (0..7) of a Q4_K/Q5_K block's packed scales[12].
FORGE_HD void ScaleMinK4(const uint8_t* s, int g, int* sc, int* m) {
  if (g < 4) {
    *sc = s[g] & 63;
    *m = s[g + 4] & 63;
  } else {
    *sc = (s[g + 4] & 0x0F) | ((s[g - 4] >> 6) << 4);
    *m = (s[g + 4] >> 4) | ((s[g] >> 6) << 4);
  }
}

// The 6-bit scale (0..63, the value is this minus 32) of group g (0..15) of a Q3_K block.
FORGE_HD int ScaleQ3K(const uint8_t* s, int g) {
  const int low = g < 8 ? (s[g] & 0x0F) : (s[g - 8] >> 4);
  const int high = (s[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
  return low | (high << 4);
}

// Elements e0 .. e0 + 7 (e0 a multiple of 8) of a stored row of type kT, into v.
template <GgmlType kT>
FORGE_HD void Dequant8(const uint8_t* row, int64_t e0, float* v) {
  constexpr int kBE = BlockElems(kT);
  const uint8_t* b = row + (e0 / kBE) * BlockBytes(kT);
  const int o = static_cast<int>(e0 % kBE);
  if constexpr (kT == GgmlType::kQ4_0 || kT == GgmlType::kQ4_1 || kT == GgmlType::kQ5_0 ||
                kT == GgmlType::kQ5_1) {
    constexpr bool kMin = kT == GgmlType::kQ4_1 || kT == GgmlType::kQ5_1;
    constexpr bool kFive = kT == GgmlType::kQ5_0 || kT == GgmlType::kQ5_1;
    constexpr int kQh = kMin ? 4 : 2;
    constexpr int kQs = (kMin ? 4 : 2) + (kFive ? 4 : 0);
    const float d = HalfToF32(Ld16(b));
    const float m = kMin ? HalfToF32(Ld16(b + 2)) : 0.0f;
    const uint32_t qh = kFive ? Ld32(b + kQh) : 0;
    for (int i = 0; i < 8; ++i) {
      const int e = o + i;
      const uint32_t byte = b[kQs + (e & 15)];
      int q = static_cast<int>(e < 16 ? (byte & 0x0F) : (byte >> 4));
      if (kFive) q |= static_cast<int>((qh >> e) & 1) << 4;
      if constexpr (kMin) {
        v[i] = FAdd(FMul(static_cast<float>(q), d), m);
      } else {
        v[i] = FMul(static_cast<float>(q - (kFive ? 16 : 8)), d);
      }
    }
  } else if constexpr (kT == GgmlType::kQ8_0) {
    const float d = HalfToF32(Ld16(b));
    for (int i = 0; i < 8; ++i) {
      v[i] = FMul(static_cast<float>(static_cast<int8_t>(b[2 + o + i])), d);
    }
  } else if constexpr (kT == GgmlType::kQ2_K || kT == GgmlType::kQ3_K) {
    // Element 128h + 32k + l: bits 2k of qs[32h + l]; group 16 of it: 8h + 2k + l / 16.
    const int h = o >> 7, k = (o >> 5) & 3, l0 = o & 31;
    const int g = 8 * h + 2 * k + (l0 >> 4);
    if constexpr (kT == GgmlType::kQ2_K) {
      const uint8_t* qs = b + 16;
      const float d = HalfToF32(Ld16(b + 80));
      const float dmin = HalfToF32(Ld16(b + 82));
      const float dl = FMul(d, static_cast<float>(b[g] & 0x0F));
      const float ml = FMul(dmin, static_cast<float>(b[g] >> 4));
      for (int i = 0; i < 8; ++i) {
        const int q = (qs[32 * h + l0 + i] >> (2 * k)) & 3;
        v[i] = FSub(FMul(dl, static_cast<float>(q)), ml);
      }
    } else {
      const uint8_t* hmask = b;
      const uint8_t* qs = b + 32;
      const float d = HalfToF32(Ld16(b + 108));
      const float dl = FMul(d, static_cast<float>(ScaleQ3K(b + 96, g) - 32));
      for (int i = 0; i < 8; ++i) {
        const int l = l0 + i;
        const int q = ((qs[32 * h + l] >> (2 * k)) & 3) - (((hmask[l] >> (4 * h + k)) & 1) ? 0 : 4);
        v[i] = FMul(dl, static_cast<float>(q));
      }
    }
  } else if constexpr (kT == GgmlType::kQ4_K || kT == GgmlType::kQ5_K) {
    // Element 64j + 32nib + l: nibble nib of qs[32j + l]; group 32 of it: 2j + nib.
    constexpr bool kFive = kT == GgmlType::kQ5_K;
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + (kFive ? 48 : 16);
    const int j = o >> 6, nib = (o >> 5) & 1, l0 = o & 31;
    const int g = 2 * j + nib;
    int sc, mn;
    ScaleMinK4(b + 4, g, &sc, &mn);
    const float d1 = FMul(HalfToF32(Ld16(b)), static_cast<float>(sc));
    const float m1 = FMul(HalfToF32(Ld16(b + 2)), static_cast<float>(mn));
    for (int i = 0; i < 8; ++i) {
      const int l = l0 + i;
      int q = (qs[32 * j + l] >> (4 * nib)) & 0x0F;
      if (kFive) q |= ((qh[l] >> g) & 1) << 4;
      v[i] = FSub(FMul(d1, static_cast<float>(q)), m1);
    }
  } else if constexpr (kT == GgmlType::kQ6_K) {
    // Element 128h + 32q + l: low 4 bits in nibble q / 2 of ql[64h + 32(q % 2) + l], high 2 bits
    // at bit 2q of qh[32h + l]; scale scales[8h + 2q + l / 16].
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
    const float d = HalfToF32(Ld16(b + 208));
    const int h = o >> 7, q4 = (o >> 5) & 3, l0 = o & 31;
    const float ds = FMul(d, static_cast<float>(scales[8 * h + 2 * q4 + (l0 >> 4)]));
    for (int i = 0; i < 8; ++i) {
      const int l = l0 + i;
      const int lo = (ql[64 * h + 32 * (q4 & 1) + l] >> (4 * (q4 >> 1))) & 0x0F;
      const int hi = (qh[32 * h + l] >> (2 * q4)) & 3;
      v[i] = FMul(ds, static_cast<float>((lo | (hi << 4)) - 32));
    }
  }
}

}  // namespace forge::cuda::qd
