// The weight decoding of the quantized GEMM (gemm_quant_cuda.h), for host and device: a row's
// 256-element unit is decoded in four 64-element windows, each by two threads that produce 32 F32
// values apiece, bit for bit the CPU dequantizer's (the same float operations on the same
// operands; only the bit extraction differs: whole words, and integers turned into floats through
// the exponent of 2^23). The host build lets tests check every window against the CPU values.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cuda/matmul/block_decode.cuh"

// Loop unrolling for the device pass only (the host compiler does not know the pragma).
#ifdef __CUDA_ARCH__
#define FORGE_GM_UNROLL _Pragma("unroll")
#else
#define FORGE_GM_UNROLL
#endif

namespace forge::cuda::gm {

using qd::HalfToF32;
using qd::Ld16;
using qd::Ld32;

inline constexpr int kUnitElems = 256;   // elements of a row staged together
inline constexpr int kWindowElems = 64;  // elements of a row decoded together

// Bytes of one unit of a row of type t: a K-quant super-block, or eight 32-element blocks.
constexpr int UnitBytes(GgmlType t) {
  return qd::IsKQuant(t) ? qd::BlockBytes(t) : 8 * qd::BlockBytes(t);
}

FORGE_HD float BitsF32(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// a * b + c with one rounding. Where a * b is exact in F32 (every use below), this equals the
// CPU's separately rounded product and sum.
FORGE_HD float FFma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Sixteen bytes at p (2-byte aligned) as four little-endian words. The device reads the five
// aligned words around them (up to 4 bytes past p + 16) and funnel-shifts.
FORGE_HD void Load16(const uint8_t* p, uint32_t (&w)[4]) {
#ifdef __CUDA_ARCH__
  const uint32_t mis = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 3);
  const uint32_t* q = reinterpret_cast<const uint32_t*>(p - mis);  // keeps p's address space
  const uint32_t sh = mis * 8;
  uint32_t v[5];
  FORGE_GM_UNROLL
  for (int i = 0; i < 5; ++i) v[i] = q[i];
  FORGE_GM_UNROLL
  for (int i = 0; i < 4; ++i) w[i] = __funnelshift_r(v[i], v[i + 1], sh);
#else
  std::memcpy(w, p, 16);
#endif
}

// Byte c of w as the float 2^23 + byte (exact); minus 2^23 + offset it is byte - offset, exactly.
FORGE_HD float Magic(uint32_t w, int c) {
  return BitsF32(qd::BytePerm(w, 0x4B000000u, 0x7440u | static_cast<uint32_t>(c)));
}
FORGE_HD float IntOf(uint32_t w, int c, int offset) {
  return qd::FSub(Magic(w, c), 8388608.0f + static_cast<float>(offset));
}

// Bits 0..3 of x moved to bit 0 of bytes 0..3.
FORGE_HD uint32_t Spread4(uint32_t x) { return ((x & 0xFu) * 0x00204081u) & 0x01010101u; }

// Window qq (elements [64 qq, 64 qq + 64) of a unit), half h (0, 1). Legacy formats: half h is
// block 2 qq + h. K-quants: half h is the bytes l in [16 h, 16 h + 16) of the window's two quant
// runs (32 elements each), every bit field of them the window holds (so each byte is read once);
// its slots j take run j / 2 xor h, so that at every j the two halves of a row store into
// different 64-byte halves of the tile row (the kernel's stores meet no bank conflicts). Slot j
// (0..3) of the half is the 8 elements 64 qq + 8 WindowSlot<kT>(h, j) + [0, 8) of the unit.
template <GgmlType kT>
FORGE_HD constexpr int WindowSlot(int h, int j) {
  return qd::IsKQuant(kT) ? 4 * ((j >> 1) ^ h) + 2 * h + (j & 1) : 4 * h + j;
}

enum class Family { kQ8, kNibble, kK2, kK4, kK6 };
constexpr Family FamilyOf(GgmlType t) {
  switch (t) {
    case GgmlType::kQ8_0:
      return Family::kQ8;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
      return Family::kK2;
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
      return Family::kK4;
    case GgmlType::kQ6_K:
      return Family::kK6;
    default:
      return Family::kNibble;  // Q4_0, Q4_1, Q5_0, Q5_1
  }
}

// A half window: Load reads its bytes (unit: the unit's first byte, 2-byte aligned; shared memory
// in the kernel) and the scales; Slot(j, v) then gives slot j as the CPU dequantizer's F32 values
// from registers alone (so the kernel can spread the slots between its MMA steps).
template <GgmlType kT, Family = FamilyOf(kT)>
struct WindowDecoder;

// Q8_0: slot j is quants 8j .. 8j + 7 of the block.
template <GgmlType kT>
struct WindowDecoder<kT, Family::kQ8> {
  float d;
  uint32_t w[8];  // the quants + 128, four per word
  FORGE_HD void Load(const uint8_t* unit, int qq, int h) {
    const uint8_t* b = unit + (2 * qq + h) * qd::BlockBytes(kT);
    d = HalfToF32(Ld16(b));
    uint32_t lo[4], hi[4];
    Load16(b + 2, lo);
    Load16(b + 18, hi);
    FORGE_GM_UNROLL
    for (int i = 0; i < 4; ++i) {
      w[i] = lo[i] ^ 0x80808080u;
      w[4 + i] = hi[i] ^ 0x80808080u;
    }
  }
  FORGE_HD void Slot(int j, float (&v)[8]) const {
    FORGE_GM_UNROLL
    for (int e = 0; e < 8; ++e) v[e] = qd::FMul(IntOf(w[2 * j + (e >> 2)], e & 3, 128), d);
  }
};

// Q4_0, Q4_1, Q5_0, Q5_1: element 16 hi + 4 wi + c of the block is nibble hi of byte 4 wi + c of
// qs (plus bit 16 hi + 4 wi + c of qh as the fifth bit); slot j: hi = j / 2, wi = 2 (j % 2) + 0, 1.
template <GgmlType kT>
struct WindowDecoder<kT, Family::kNibble> {
  static constexpr bool kMin = kT == GgmlType::kQ4_1 || kT == GgmlType::kQ5_1;
  static constexpr bool kFive = kT == GgmlType::kQ5_0 || kT == GgmlType::kQ5_1;
  static constexpr int kQh = kMin ? 4 : 2;
  static constexpr int kQs = kQh + (kFive ? 4 : 0);
  static constexpr int kOff = kMin ? 0 : (kFive ? 16 : 8);
  float d, m;
  uint32_t qh;
  uint32_t w[4];
  FORGE_HD void Load(const uint8_t* unit, int qq, int h) {
    const uint8_t* b = unit + (2 * qq + h) * qd::BlockBytes(kT);
    d = HalfToF32(Ld16(b));
    m = kMin ? HalfToF32(Ld16(b + 2)) : 0.0f;
    qh = kFive ? Ld32(b + kQh) : 0u;
    Load16(b + kQs, w);
  }
  FORGE_HD void Slot(int j, float (&v)[8]) const {
    const int hi = j >> 1;
    FORGE_GM_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int wi = 2 * (j & 1) + i;
      uint32_t q = (w[wi] >> (4 * hi)) & 0x0F0F0F0Fu;
      if constexpr (kFive) q |= Spread4(qh >> (16 * hi + 4 * wi)) << 4;
      FORGE_GM_UNROLL
      for (int c = 0; c < 4; ++c) {
        const float f = IntOf(q, c, kOff);
        v[4 * i + c] = kMin ? FFma(f, d, m) : qd::FMul(f, d);
      }
    }
  }
};

// Q4_K, Q5_K: window qq is groups 2 qq (low nibbles of qs[32 qq + l]) and 2 qq + 1 (high
// nibbles; Q5_K: bit 2 qq + nib of qh[l] as the fifth bit); slot j: nibble nib = j / 2 xor h,
// words 2 (j % 2) + 0, 1 of the half's 16 bytes.
template <GgmlType kT>
struct WindowDecoder<kT, Family::kK4> {
  static constexpr bool kFive = kT == GgmlType::kQ5_K;
  float d1[2], nm1[2];  // by j / 2: group scale, minus group minimum
  uint32_t w[4], hq[4];
  int h;
  FORGE_HD void Load(const uint8_t* unit, int qq, int half) {
    h = half;
    const float d = HalfToF32(Ld16(unit)), dmin = HalfToF32(Ld16(unit + 2));
    FORGE_GM_UNROLL
    for (int r = 0; r < 2; ++r) {
      int sc, mn;
      qd::ScaleMinK4(unit + 4, 2 * qq + (r ^ h), &sc, &mn);
      d1[r] = qd::FMul(d, static_cast<float>(sc));
      nm1[r] = -qd::FMul(dmin, static_cast<float>(mn));
    }
    Load16(unit + (kFive ? 48 : 16) + 32 * qq + 16 * h, w);
    if constexpr (kFive) {
      Load16(unit + 16 + 16 * h, hq);
      FORGE_GM_UNROLL
      for (int i = 0; i < 4; ++i) hq[i] >>= 2 * qq;
    }
  }
  FORGE_HD void Slot(int j, float (&v)[8]) const {
    const int r = j >> 1, nib = r ^ h;
    FORGE_GM_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int wi = 2 * (j & 1) + i;
      uint32_t q = (w[wi] >> (4 * nib)) & 0x0F0F0F0Fu;
      if constexpr (kFive) q |= ((hq[wi] >> nib) & 0x01010101u) << 4;
      FORGE_GM_UNROLL
      for (int c = 0; c < 4; ++c) v[4 * i + c] = FFma(d1[r], IntOf(q, c, 0), nm1[r]);
    }
  }
};

// Q2_K, Q3_K: window qq is half hh = qq / 2 of the super-block, bit pairs k = 2 (qq % 2) + kk of
// qs[32 hh + l] (Q3_K: bit 4 hh + k of hmask[l] as the high bit), group of 16 8 hh + 2 k + l / 16;
// slot j: kk = j / 2 xor h, words 2 (j % 2) + 0, 1 of the half's 16 bytes.
template <GgmlType kT>
struct WindowDecoder<kT, Family::kK2> {
  static constexpr bool kQ3 = kT == GgmlType::kQ3_K;
  float dl[2], nml[2];  // by j / 2: group scale, minus group minimum (Q2_K)
  uint32_t w[4], hm[4];
  int h;
  FORGE_HD void Load(const uint8_t* unit, int qq, int half) {
    h = half;
    const int hh = qq >> 1, k0 = 2 * (qq & 1);
    Load16(unit + (kQ3 ? 32 : 16) + 32 * hh + 16 * h, w);
    FORGE_GM_UNROLL
    for (int i = 0; i < 4; ++i) w[i] >>= 2 * k0;
    if constexpr (kQ3) {
      Load16(unit + 16 * h, hm);
      FORGE_GM_UNROLL
      for (int i = 0; i < 4; ++i) hm[i] >>= 4 * hh + k0;
    }
    const float d = HalfToF32(Ld16(unit + (kQ3 ? 108 : 80)));
    const float dmin = kQ3 ? 0.0f : HalfToF32(Ld16(unit + 82));
    FORGE_GM_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int g = 8 * hh + 2 * (k0 + (r ^ h)) + h;
      if constexpr (kQ3) {
        dl[r] = qd::FMul(d, static_cast<float>(qd::ScaleQ3K(unit + 96, g) - 32));
        nml[r] = 0.0f;
      } else {
        dl[r] = qd::FMul(d, static_cast<float>(unit[g] & 0x0F));
        nml[r] = -qd::FMul(dmin, static_cast<float>(unit[g] >> 4));
      }
    }
  }
  FORGE_HD void Slot(int j, float (&v)[8]) const {
    const int r = j >> 1, kk = r ^ h;
    FORGE_GM_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int wi = 2 * (j & 1) + i;
      uint32_t q = (w[wi] >> (2 * kk)) & 0x03030303u;
      if constexpr (kQ3) q |= ((hm[wi] >> kk) & 0x01010101u) << 2;  // q + 4
      FORGE_GM_UNROLL
      for (int c = 0; c < 4; ++c) {
        v[4 * i + c] = kQ3 ? qd::FMul(dl[r], IntOf(q, c, 4)) : FFma(dl[r], IntOf(q, c, 0), nml[r]);
      }
    }
  }
};

// Q6_K: window qq is half hh = qq / 2, q4 = 2 (qq % 2) + kk: low 4 bits in nibble qq % 2 of
// ql[64 hh + 32 kk + l], high 2 bits at bit 2 q4 of qh[32 hh + l], scale 8 hh + 2 q4 + l / 16;
// slot j: kk = j / 2 xor h, words 2 (j % 2) + 0, 1 of the half's 16 bytes.
template <GgmlType kT>
struct WindowDecoder<kT, Family::kK6> {
  float ds[2];               // by j / 2
  uint32_t wl[2][4], wh[4];  // wl by j / 2
  int h;
  FORGE_HD void Load(const uint8_t* unit, int qq, int half) {
    h = half;
    const int hh = qq >> 1, odd = qq & 1;
    const float d = HalfToF32(Ld16(unit + 208));
    Load16(unit + 128 + 32 * hh + 16 * h, wh);
    FORGE_GM_UNROLL
    for (int i = 0; i < 4; ++i) wh[i] >>= 4 * odd;
    FORGE_GM_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int kk = r ^ h;
      const int8_t sc = static_cast<int8_t>(unit[192 + 8 * hh + 2 * (2 * odd + kk) + h]);
      ds[r] = qd::FMul(d, static_cast<float>(sc));
      Load16(unit + 64 * hh + 32 * kk + 16 * h, wl[r]);
      FORGE_GM_UNROLL
      for (int i = 0; i < 4; ++i) wl[r][i] >>= 4 * odd;
    }
  }
  FORGE_HD void Slot(int j, float (&v)[8]) const {
    const int r = j >> 1, kk = r ^ h;
    FORGE_GM_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int wi = 2 * (j & 1) + i;
      const uint32_t q = (wl[r][wi] & 0x0F0F0F0Fu) | (((wh[wi] >> (2 * kk)) & 0x03030303u) << 4);
      FORGE_GM_UNROLL
      for (int c = 0; c < 4; ++c) v[4 * i + c] = qd::FMul(ds[r], IntOf(q, c, 32));
    }
  }
};

// The whole half window: v[j] = slot j.
template <GgmlType kT>
FORGE_HD void DecodeWindow(const uint8_t* unit, int qq, int h, float (&v)[4][8]) {
  WindowDecoder<kT> dec;
  dec.Load(unit, qq, h);
  FORGE_GM_UNROLL
  for (int j = 0; j < 4; ++j) dec.Slot(j, v[j]);
}

}  // namespace forge::cuda::gm
