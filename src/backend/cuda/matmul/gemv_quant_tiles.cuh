// The weight side of the quantized GEMV, per format family: one 256-element tile of a warp's
// rows g and g + 8 decoded from shared memory into F16 A fragments and multiplied into F32 sums,
// with the block scales, mins and activation scales applied (gemv_quant_cuda.h).
#pragma once

#include "backend/cuda/matmul/gemv_quant_device.cuh"

namespace forge::cuda::gq {

// ---- Weights: one tile of the warp's rows g (r0) and g + 8 (r1) against the activations. ----

template <int T, int NT>
__device__ __forceinline__ void MmaX(float (&d)[NT][4], uint32_t a0, uint32_t a1, uint32_t a2,
                                     uint32_t a3, const uint2* frag, int j, int lane) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int term = 0; term < T; ++term) {
      Mma(d[nt], a0, a1, a2, a3, frag[((term * NT + nt) * 16 + j) * 32 + lane]);
    }
  }
}

// acc[nt][e] += at[nt][e] * f(row) * sinv(column): e < 2 is row r0, e & 1 the column parity.
template <int NT>
__device__ __forceinline__ void Accumulate(float (&acc)[NT][4], const float (&at)[NT][4], float f0,
                                           float f1, const float* sinv, int t) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const float2 si = *reinterpret_cast<const float2*>(sinv + nt * 8 + 2 * t);
    acc[nt][0] = fmaf(at[nt][0], f0 * si.x, acc[nt][0]);
    acc[nt][1] = fmaf(at[nt][1], f0 * si.y, acc[nt][1]);
    acc[nt][2] = fmaf(at[nt][2], f1 * si.x, acc[nt][2]);
    acc[nt][3] = fmaf(at[nt][3], f1 * si.y, acc[nt][3]);
  }
}

// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: two MMA steps per 32-block, its scale (and minimum times the
// block's x sum) applied in F32.
template <class F, int T, int NT>
__device__ __forceinline__ void ComputeLegacy(const uint8_t* r0, const uint8_t* r1,
                                              const uint8_t* xt, int nblk, float (&acc)[NT][4],
                                              int lane) {
  using S = Smem<F, T, NT>;
  constexpr GgmlType kT = F::kType;
  constexpr bool kMin = kT == GgmlType::kQ4_1 || kT == GgmlType::kQ5_1;
  constexpr bool kFive = kT == GgmlType::kQ5_0 || kT == GgmlType::kQ5_1;
  constexpr int kQh = kMin ? 4 : 2;
  constexpr int kQs = kT == GgmlType::kQ8_0 ? 2 : (kMin ? 4 : 2) + (kFive ? 4 : 0);
  constexpr uint32_t kOff = kT == GgmlType::kQ4_0   ? Half2Bits(-1032)
                            : kT == GgmlType::kQ5_0 ? Half2Bits(-1040)
                            : kT == GgmlType::kQ8_0 ? Half2Bits(-1152)
                                                    : Half2Bits(-1024);
  const int t = lane & 3;
  const uint2* frag = reinterpret_cast<const uint2*>(xt);
  const float* sx32 = reinterpret_cast<const float*>(xt + S::kSx32Off);
  float at[NT][4] = {};
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    if (b >= nblk) break;
    const uint8_t* b0 = r0 + b * F::kBlockBytes;
    const uint8_t* b1 = r1 + b * F::kBlockBytes;
    float db[NT][4] = {};
    if constexpr (kT == GgmlType::kQ8_0) {
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const uint32_t w0 = Word(b0 + kQs + 16 * s, t), w1 = Word(b1 + kQs + 16 * s, t);
        MmaX<T, NT>(db, Hadd2(PairQ8(w0, 0), kOff), Hadd2(PairQ8(w1, 0), kOff),
                    Hadd2(PairQ8(w0, 1), kOff), Hadd2(PairQ8(w1, 1), kOff), frag, 2 * b + s, lane);
      }
    } else {
      const uint32_t w0 = Word(b0 + kQs, t), w1 = Word(b1 + kQs, t);
      uint32_t z0 = 0, z1 = 0;
      if constexpr (kFive) {
        z0 = Q5HighBits(Ld32(b0 + kQh), t);
        z1 = Q5HighBits(Ld32(b1 + kQh), t);
      }
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        uint32_t p0[2], p1[2];  // [pair] of rows r0, r1
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          if constexpr (kFive) {
            p0[p] = PairQ5(w0, z0, s, p);
            p1[p] = PairQ5(w1, z1, s, p);
          } else {
            p0[p] = PairNib(w0, s, p);
            p1[p] = PairNib(w1, s, p);
          }
        }
        MmaX<T, NT>(db, Hadd2(p0[0], kOff), Hadd2(p1[0], kOff), Hadd2(p0[1], kOff),
                    Hadd2(p1[1], kOff), frag, 2 * b + s, lane);
      }
    }
    const float d0 = qd::HalfToF32(Ld16(b0)), d1 = qd::HalfToF32(Ld16(b1));
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      at[nt][0] = fmaf(d0, db[nt][0], at[nt][0]);
      at[nt][1] = fmaf(d0, db[nt][1], at[nt][1]);
      at[nt][2] = fmaf(d1, db[nt][2], at[nt][2]);
      at[nt][3] = fmaf(d1, db[nt][3], at[nt][3]);
    }
    if constexpr (kMin) {
      const float m0 = qd::HalfToF32(Ld16(b0 + 2)), m1 = qd::HalfToF32(Ld16(b1 + 2));
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const float2 sx = *reinterpret_cast<const float2*>(sx32 + b * 16 + nt * 8 + 2 * t);
        at[nt][0] = fmaf(m0, sx.x, at[nt][0]);
        at[nt][1] = fmaf(m0, sx.y, at[nt][1]);
        at[nt][2] = fmaf(m1, sx.x, at[nt][2]);
        at[nt][3] = fmaf(m1, sx.y, at[nt][3]);
      }
    }
  }
  Accumulate<NT>(acc, at, 1.0f, 1.0f, reinterpret_cast<const float*>(xt + S::kSinvOff), t);
}

// Q2_K, Q3_K: the thread's 16 quant bytes are four groups of 16 (bit pairs k); the group scale,
// times 4^-k, is folded into the F16 weight (q * scale, exact), the mins run as one more step.
template <class F, int T, int NT>
__device__ __forceinline__ void ComputeQ2K(const uint8_t* r0, const uint8_t* r1, const uint8_t* xt,
                                           float (&acc)[NT][4], int lane) {
  using S = Smem<F, T, NT>;
  constexpr bool kQ3 = F::kType == GgmlType::kQ3_K;
  const int t = lane & 3;
  const uint8_t* rows[2] = {r0, r1};
  uint32_t sc[2][4], bias[2][4], amin[2][2];
  float dd[2], dm[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const uint8_t* p = rows[r];
    uint32_t mn[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int g = OwnGroupQ2K(t, k);
      // F16 2^(10 - 2k) + s 2^-2k minus the offset leaves the scale times 4^-k.
      const uint32_t s = kQ3 ? static_cast<uint32_t>(qd::ScaleQ3K(p + 96, g)) : (p[g] & 0x0Fu);
      sc[r][k] = Hadd2(s * 0x10001u | Half2Bits(1, 2 * k - 10),
                       kQ3 ? Half2Bits(-1056, 2 * k) : Half2Bits(-1, 2 * k - 10));
      bias[r][k] = Hmul2(sc[r][k], Half2Bits(-1024));
      mn[k] = kQ3 ? s : (p[g] >> 4);
    }
    const uint32_t off = kQ3 ? Half2Bits(-1056) : Half2Bits(-1024);
    amin[r][0] = Hadd2((mn[0] | (mn[1] << 16)) | kMagic2, off);
    amin[r][1] = Hadd2((mn[2] | (mn[3] << 16)) | kMagic2, off);
    dd[r] = qd::HalfToF32(Ld16(p + (kQ3 ? 108 : 80)));
    dm[r] = kQ3 ? 4.0f * dd[r] : qd::HalfToF32(Ld16(p + 82));
  }
  const uint2* frag = reinterpret_cast<const uint2*>(xt);
  float dq[NT][4] = {}, dmin[NT][4] = {};
  const int qoff = (kQ3 ? 32 : 16) + QuantOffsetQ2K(t);
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const uint32_t w0 = Ld32(r0 + qoff + 4 * u), w1 = Ld32(r1 + qoff + 4 * u);
    uint32_t h0 = 0, h1 = 0;
    if constexpr (kQ3) {
      h0 = Ld32(r0 + 16 * (t & 1) + 4 * u) >> (4 * (t >> 1));
      h1 = Ld32(r1 + 16 * (t & 1) + 4 * u) >> (4 * (t >> 1));
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint32_t p0[2], p1[2];
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        p0[p] = Hfma2(kQ3 ? PairQ3K(w0, h0, k, p) : PairQ2K(w0, k, p), sc[0][k], bias[0][k]);
        p1[p] = Hfma2(kQ3 ? PairQ3K(w1, h1, k, p) : PairQ2K(w1, k, p), sc[1][k], bias[1][k]);
      }
      MmaX<T, NT>(dq, p0[0], p1[0], p0[1], p1[1], frag, 4 * k + u, lane);
    }
  }
  const uint2* mf = reinterpret_cast<const uint2*>(xt + S::kMinOff);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int term = 0; term < 2; ++term) {
      Mma(dmin[nt], amin[0][0], amin[1][0], amin[0][1], amin[1][1],
          mf[(term * NT + nt) * 32 + lane]);
    }
  }
  float at[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) at[nt][e] = dd[e >> 1] * dq[nt][e] - dm[e >> 1] * dmin[nt][e];
  }
  Accumulate<NT>(acc, at, 1.0f, 1.0f, reinterpret_cast<const float*>(xt + S::kSinvOff), t);
}

// Q4_K, Q5_K: the thread's 32 quant bytes are groups 2t and 2t + 1; scale folded into the F16
// weight (q * scale <= 1953, exact), mins as one more step.
template <class F, int T, int NT>
__device__ __forceinline__ void ComputeQ4K(const uint8_t* r0, const uint8_t* r1, const uint8_t* xt,
                                           float (&acc)[NT][4], int lane) {
  using S = Smem<F, T, NT>;
  constexpr bool kQ5 = F::kType == GgmlType::kQ5_K;
  const int t = lane & 3;
  const uint8_t* rows[2] = {r0, r1};
  uint32_t sc[2][2], bias[2][2], amin[2];
  float dd[2], dm[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const uint8_t* p = rows[r];
    int s0, m0, s1, m1;
    qd::ScaleMinK4(p + 4, 2 * t, &s0, &m0);
    qd::ScaleMinK4(p + 4, 2 * t + 1, &s1, &m1);
    sc[r][0] = Hadd2(static_cast<uint32_t>(s0) * 0x10001u | kMagic2, Half2Bits(-1024));
    sc[r][1] = Hadd2(static_cast<uint32_t>(s1) * 0x10001u | kMagic2, Half2Bits(-1024));
    bias[r][0] = Hmul2(sc[r][0], Half2Bits(-1024));
    bias[r][1] = Hmul2(sc[r][1], Half2Bits(-1024));
    amin[r] = Hadd2(static_cast<uint32_t>(m0 | (m1 << 16)) | kMagic2, Half2Bits(-1024));
    dd[r] = qd::HalfToF32(Ld16(p));
    dm[r] = qd::HalfToF32(Ld16(p + 2));
  }
  const uint2* frag = reinterpret_cast<const uint2*>(xt);
  float dq[NT][4] = {}, dmin[NT][4] = {};
  constexpr int kQs = kQ5 ? 48 : 16;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const uint32_t w0 = Ld32(r0 + kQs + 32 * t + 4 * u), w1 = Ld32(r1 + kQs + 32 * t + 4 * u);
    uint32_t h0 = 0, h1 = 0;
    if constexpr (kQ5) {
      h0 = Ld32(r0 + 16 + 4 * u) >> (2 * t);
      h1 = Ld32(r1 + 16 + 4 * u) >> (2 * t);
    }
#pragma unroll
    for (int nib = 0; nib < 2; ++nib) {
      uint32_t p0[2], p1[2];
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        p0[p] =
            Hfma2(kQ5 ? PairQ5K(w0, h0, nib, p) : PairQ4K(w0, nib, p), sc[0][nib], bias[0][nib]);
        p1[p] =
            Hfma2(kQ5 ? PairQ5K(w1, h1, nib, p) : PairQ4K(w1, nib, p), sc[1][nib], bias[1][nib]);
      }
      MmaX<T, NT>(dq, p0[0], p1[0], p0[1], p1[1], frag, 2 * u + nib, lane);
    }
  }
  const uint2* mf = reinterpret_cast<const uint2*>(xt + S::kMinOff);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int term = 0; term < 2; ++term) {
      Mma(dmin[nt], amin[0], amin[1], 0u, 0u, mf[(term * NT + nt) * 32 + lane]);
    }
  }
  float at[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) at[nt][e] = dd[e >> 1] * dq[nt][e] - dm[e >> 1] * dmin[nt][e];
  }
  Accumulate<NT>(acc, at, 1.0f, 1.0f, reinterpret_cast<const float*>(xt + S::kSinvOff), t);
}

// Q6_K: one MMA step per group of 16 (q - 32 exact in F16), the signed 8-bit scale in F32.
template <class F, int T, int NT>
__device__ __forceinline__ void ComputeQ6K(const uint8_t* r0, const uint8_t* r1, const uint8_t* xt,
                                           float (&acc)[NT][4], int lane) {
  using S = Smem<F, T, NT>;
  constexpr uint32_t kOff = Half2Bits(-1056);
  const int t = lane & 3;
  const uint2* frag = reinterpret_cast<const uint2*>(xt);
  float at[NT][4] = {};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const uint32_t la0 = Word(r0 + 64 * h + 16 * s, t), lb0 = Word(r0 + 64 * h + 32 + 16 * s, t);
      const uint32_t la1 = Word(r1 + 64 * h + 16 * s, t), lb1 = Word(r1 + 64 * h + 32 + 16 * s, t);
      const uint32_t wh0 = Word(r0 + 128 + 32 * h + 16 * s, t);
      const uint32_t wh1 = Word(r1 + 128 + 32 * h + 16 * s, t);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int j = 8 * h + 2 * q + s;
        const uint32_t l0 = (q & 1) ? lb0 : la0, l1 = (q & 1) ? lb1 : la1;
        float dg[NT][4] = {};
        MmaX<T, NT>(dg, Hadd2(PairQ6K(l0, wh0, q, 0), kOff), Hadd2(PairQ6K(l1, wh1, q, 0), kOff),
                    Hadd2(PairQ6K(l0, wh0, q, 1), kOff), Hadd2(PairQ6K(l1, wh1, q, 1), kOff), frag,
                    j, lane);
        const float s0 = static_cast<float>(static_cast<int8_t>(r0[192 + j]));
        const float s1 = static_cast<float>(static_cast<int8_t>(r1[192 + j]));
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          at[nt][0] = fmaf(s0, dg[nt][0], at[nt][0]);
          at[nt][1] = fmaf(s0, dg[nt][1], at[nt][1]);
          at[nt][2] = fmaf(s1, dg[nt][2], at[nt][2]);
          at[nt][3] = fmaf(s1, dg[nt][3], at[nt][3]);
        }
      }
    }
  }
  Accumulate<NT>(acc, at, qd::HalfToF32(Ld16(r0 + 208)), qd::HalfToF32(Ld16(r1 + 208)),
                 reinterpret_cast<const float*>(xt + S::kSinvOff), t);
}

template <class F, int T, int NT>
__device__ __forceinline__ void ComputeTile(const uint8_t* r0, const uint8_t* r1, const uint8_t* xt,
                                            int nblk, float (&acc)[NT][4], int lane) {
  if constexpr (F::kType == GgmlType::kQ6_K) {
    ComputeQ6K<F, T, NT>(r0, r1, xt, acc, lane);
  } else if constexpr (F::kLayout == Layout::kQ2K) {
    ComputeQ2K<F, T, NT>(r0, r1, xt, acc, lane);
  } else if constexpr (F::kLayout == Layout::kQ4K) {
    ComputeQ4K<F, T, NT>(r0, r1, xt, acc, lane);
  } else {
    ComputeLegacy<F, T, NT>(r0, r1, xt, nblk, acc, lane);
  }
}

}  // namespace forge::cuda::gq
