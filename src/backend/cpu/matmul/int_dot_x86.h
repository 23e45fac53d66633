// The x86 integer row dots (int_dot.h), written once for two paths: included by int_dot_avx2.cc
// (kVnni false: 256-bit vectors, byte products by maddubs + madd) and int_dot_vnni.cc (kVnni
// true, FORGE_INT_DOT_512: 512-bit vectors, vpdpbusd for the legacy formats), each under its own
// target pragma and inside its own namespace, so the two copies never meet. Legacy formats:
// eight blocks at a time, one int32 sum per block and plane by a transposing reduction, the
// offsets and minimums from the activation's block sums, the float tail on eight lanes at once.
// K-quants: per block, the group scales applied in int32 lanes (madd), one reduction for all
// planes' sums, the float tail per block.
// Requires: the including file has set the target (AVX2, FMA, F16C at least) and included
// exact_float.h first.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul/int_dot.h"
#include "backend/cpu/matmul/int_dot_formats.h"
#include "quant/blocks.h"

namespace forge::int_dot::FORGE_INT_DOT_NS {

using int_dot_formats::KScales;

inline int32_t HSum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// [sum v0, ..., sum v7]: each vector's eight lanes added.
inline __m256i Reduce8(const __m256i* v) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i a = _mm256_hadd_epi32(h01, h23), b = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

// Lanes of four byte products u * q summed (u unsigned, q signed; u * q pairs within int16 on the
// maddubs path: |u| <= 128).
template <bool kVnni>
inline __m256i DotQuads(__m256i u, __m256i q) {
  if constexpr (kVnni) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, q);
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), _mm256_set1_epi16(1));
  }
}

inline __m256i Load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// ---- Legacy formats (blocks of 32) ----

// The 32 stored integers of a legacy block: nibbles (+ fifth bits) or Q8_0's bytes.
template <GgmlType T>
inline __m256i LegacyU(const uint8_t* blk) {
  constexpr int_dot_formats::LegacyLayout l = int_dot_formats::LegacyLayoutOf(T);
  if constexpr (T == GgmlType::kQ8_0) {
    return Load32(blk + l.qs_at);
  } else {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + l.qs_at));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    __m256i u =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low4), _mm_and_si128(raw, low4));
    if constexpr (l.qh_at >= 0) {
      uint32_t qh;
      std::memcpy(&qh, blk + l.qh_at, 4);
      // Byte j gets bit j of qh: byte j / 8 of qh spread over 8 bytes, each masked by its bit.
      const __m256i spread =
          _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                              _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2,
                                               2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
      const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
      u = _mm256_or_si256(u, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
    }
    return u;
  }
}

template <GgmlType T>
constexpr int64_t LegacyBytes() {
  return T == GgmlType::kQ4_0   ? sizeof(BlockQ4_0)
         : T == GgmlType::kQ4_1 ? sizeof(BlockQ4_1)
         : T == GgmlType::kQ5_0 ? sizeof(BlockQ5_0)
         : T == GgmlType::kQ5_1 ? sizeof(BlockQ5_1)
                                : sizeof(BlockQ8_0);
}
// log2 of the offset o of Q4_0 (8) and Q5_0 (16); -1 for the others.
template <GgmlType T>
constexpr int LegacyOffsetShift() {
  return T == GgmlType::kQ4_0 ? 3 : T == GgmlType::kQ5_0 ? 4 : -1;
}
template <GgmlType T>
constexpr bool LegacyHasMin() {
  return T == GgmlType::kQ4_1 || T == GgmlType::kQ5_1;
}

// One block's sum u * q_p as lanes to be added (Q8_0: |w| times q with w's sign).
template <GgmlType T, bool kVnni>
inline void LegacyBlockLanes(const uint8_t* blk, const ActRow& x, int64_t b, __m256i* a) {
  const __m256i u = LegacyU<T>(blk);
  if constexpr (T == GgmlType::kQ8_0) {
    const __m256i aw = _mm256_abs_epi8(u);
    for (int p = 0; p < kActPlanes; ++p) {
      a[p] = DotQuads<kVnni>(aw, _mm256_sign_epi8(Load32(x.Q(b, p)), u));
    }
  } else {
    for (int p = 0; p < kActPlanes; ++p) a[p] = DotQuads<kVnni>(u, Load32(x.Q(b, p)));
  }
}

inline float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline int U16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// The F16 field at byte `at` of eight blocks `bytes` apart from w0, as floats.
inline __m256 F16Fields8(const uint8_t* w0, int64_t bytes, int at) {
  const uint8_t* p = w0 + at;
  const __m128i h = _mm_setr_epi16(
      static_cast<int16_t>(U16At(p)), static_cast<int16_t>(U16At(p + bytes)),
      static_cast<int16_t>(U16At(p + 2 * bytes)), static_cast<int16_t>(U16At(p + 3 * bytes)),
      static_cast<int16_t>(U16At(p + 4 * bytes)), static_cast<int16_t>(U16At(p + 5 * bytes)),
      static_cast<int16_t>(U16At(p + 6 * bytes)), static_cast<int16_t>(U16At(p + 7 * bytes)));
  return _mm256_cvtph_ps(h);
}

// w1 = d and w2 = m (0 without a minimum) of the eight blocks from w0.
template <GgmlType T>
inline void LegacyScales8(const uint8_t* w0, __m256* w1, __m256* w2) {
  *w1 = F16Fields8(w0, LegacyBytes<T>(), 0);
  *w2 = LegacyHasMin<T>() ? F16Fields8(w0, LegacyBytes<T>(), 2) : _mm256_setzero_ps();
}

// The planes' sums of eight blocks combined exactly, then rounded to float: in int64 where
// AVX-512 DQ is there (legacy blocks: A_0 * 254 + A_1 stays within int32), else in double (every
// value stays below 2^53).
inline __m256 CombinePlanes(const __m256i* v) {
#if defined(FORGE_INT_DOT_512)
  __m512i c = _mm512_cvtepi32_epi64(v[0]);
  for (int p = 1; p < kActPlanes; ++p) {
    static_assert(kActRadix == 254);  // x * 254 = (x << 8) - (x << 1)
    c = _mm512_add_epi64(_mm512_sub_epi64(_mm512_slli_epi64(c, 8), _mm512_slli_epi64(c, 1)),
                         _mm512_cvtepi32_epi64(v[p]));
  }
  return _mm512_cvtepi64_ps(c);
#else
  __m256d lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(v[0]));
  __m256d hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(v[0], 1));
  const __m256d radix = _mm256_set1_pd(kActRadix);
  for (int p = 1; p < kActPlanes; ++p) {
    lo = _mm256_add_pd(_mm256_mul_pd(lo, radix), _mm256_cvtepi32_pd(_mm256_castsi256_si128(v[p])));
    hi = _mm256_add_pd(_mm256_mul_pd(hi, radix),
                       _mm256_cvtepi32_pd(_mm256_extracti128_si256(v[p], 1)));
  }
  return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
#endif
}

// The float tail of eight blocks at once (lanes = blocks), added to acc lane by lane. Without a
// minimum term (B = 0, w2 = 0) r = t1 + (+-0): t1 itself but for the sign of a zero, and acc,
// starting at +0 and never made -0 by an addition of +-0, ends the same, so the term is left out.
template <bool kHasMin>
inline __m256 Tail8(const __m256i* a, const __m256i* b, __m256 w1, __m256 w2, __m256 dx,
                    __m256 acc) {
  const __m256 fa = CombinePlanes(a);
  const __m256 s1 = _mm256_mul_ps(w1, dx);
  __m256 r = _mm256_mul_ps(fa, s1);
  if constexpr (kHasMin) {
    const __m256 fb = CombinePlanes(b), s2 = _mm256_mul_ps(w2, dx);
    r = _mm256_add_ps(r, _mm256_mul_ps(fb, s2));
  }
  return _mm256_add_ps(acc, r);
}

// The eight blocks' sums u * q_p (a) into A_p and B_p: the offset taken off, or the block
// sums as B_p.
template <GgmlType T>
inline void LegacyFinishInts(const ActRow& x, int64_t b0, __m256i* a, __m256i* b) {
  for (int p = 0; p < kActPlanes; ++p) {
    const __m256i s = Load32(x.BlockSums(p) + b0);
    if constexpr (LegacyOffsetShift<T>() >= 0) {
      a[p] = _mm256_sub_epi32(a[p], _mm256_slli_epi32(s, LegacyOffsetShift<T>()));
    }
    b[p] = LegacyHasMin<T>() ? s : _mm256_setzero_si256();
  }
}

#if defined(__AVX512F__) || defined(FORGE_INT_DOT_512)
// Eight blocks as four 512-bit vectors of two blocks each (plane p): [sum of block 0, ..., 7].
inline __m256i Reduce8x512(__m512i z0, __m512i z1, __m512i z2, __m512i z3) {
  const __m512i t01 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(z0, z1), _mm512_unpackhi_epi32(z0, z1));
  const __m512i t23 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(z2, z3), _mm512_unpackhi_epi32(z2, z3));
  const __m512i u =
      _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  // Each 128-bit lane L of u: [z0, z1, z2, z3]'s lane L summed; lanes 0-1 hold the first block
  // of each pair, 2-3 the second.
  const __m512i v = _mm512_add_epi32(_mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm256_permutevar8x32_epi32(_mm512_castsi512_si256(v),
                                     _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

#endif

// dot(w, xs[r]) into out[r * stride] for r < nrows (at most kIntDotMaxRows): each batch of eight
// blocks unpacked once for all the rows.
template <GgmlType T, bool kVnni>
void LegacyRowDots(const uint8_t* w, const ActRow* xs, int nrows, float* out, int64_t stride) {
  constexpr int64_t kBytes = LegacyBytes<T>();
  constexpr bool kQ8 = T == GgmlType::kQ8_0;
  const int64_t nblocks = xs[0].nblocks, full = nblocks / 8 * 8;
  __m256 acc[kIntDotMaxRows];
  for (int r = 0; r < nrows; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b0 = 0; b0 < full; b0 += 8) {
    const uint8_t* w0 = w + b0 * kBytes;
    __m256 w1, w2;
    LegacyScales8<T>(w0, &w1, &w2);
    __m256i a[kActPlanes], bs[kActPlanes];
#if defined(__AVX512F__) || defined(FORGE_INT_DOT_512)
    if constexpr (kVnni) {
      // Two blocks per vector; Q8_0 as |w| with w's signs moved onto q.
      __m512i u[4];
      __mmask64 neg[4] = {};
      for (int j = 0; j < 4; ++j) {
        u[j] = _mm512_inserti64x4(_mm512_zextsi256_si512(LegacyU<T>(w0 + 2 * j * kBytes)),
                                  LegacyU<T>(w0 + (2 * j + 1) * kBytes), 1);
        if constexpr (kQ8) {
          neg[j] = _mm512_movepi8_mask(u[j]);
          u[j] = _mm512_abs_epi8(u[j]);
        }
      }
      for (int r = 0; r < nrows; ++r) {
        const ActRow& x = xs[r];
        for (int p = 0; p < kActPlanes; ++p) {
          const int8_t* q = x.Q(b0, p);  // the eight blocks of plane p, contiguous
          __m512i z[4];
          for (int j = 0; j < 4; ++j) {
            __m512i qv = _mm512_loadu_si512(q + 64 * j);
            if constexpr (kQ8) qv = _mm512_mask_sub_epi8(qv, neg[j], _mm512_setzero_si512(), qv);
            z[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[j], qv);
          }
          a[p] = Reduce8x512(z[0], z[1], z[2], z[3]);
        }
        LegacyFinishInts<T>(x, b0, a, bs);
        acc[r] = Tail8<LegacyHasMin<T>()>(a, bs, w1, w2, _mm256_loadu_ps(x.d + b0), acc[r]);
      }
      continue;
    }
#endif
    __m256i u[8], aw[8];
    for (int j = 0; j < 8; ++j) {
      u[j] = LegacyU<T>(w0 + j * kBytes);
      aw[j] = kQ8 ? _mm256_abs_epi8(u[j]) : u[j];
    }
    for (int r = 0; r < nrows; ++r) {
      const ActRow& x = xs[r];
      for (int p = 0; p < kActPlanes; ++p) {
        __m256i v[8];
        for (int j = 0; j < 8; ++j) {
          const __m256i q = Load32(x.Q(b0 + j, p));
          v[j] = DotQuads<kVnni>(aw[j], kQ8 ? _mm256_sign_epi8(q, u[j]) : q);
        }
        a[p] = Reduce8(v);
      }
      LegacyFinishInts<T>(x, b0, a, bs);
      acc[r] = Tail8<LegacyHasMin<T>()>(a, bs, w1, w2, _mm256_loadu_ps(x.d + b0), acc[r]);
    }
  }
  constexpr int kMinAt = LegacyHasMin<T>() ? 2 : -1;
  for (int r = 0; r < nrows; ++r) {
    const ActRow& x = xs[r];
    alignas(32) float accs[8];
    _mm256_store_ps(accs, acc[r]);
    for (int64_t b = full; b < nblocks; ++b) {
      const uint8_t* blk = w + b * kBytes;
      __m256i la[kActPlanes];
      LegacyBlockLanes<T, kVnni>(blk, x, b, la);
      int32_t ia[kActPlanes], ib[kActPlanes];
      for (int p = 0; p < kActPlanes; ++p) {
        const int32_t sum = x.BlockSums(p)[b];
        ia[p] = HSum(la[p]);
        if constexpr (LegacyOffsetShift<T>() >= 0) ia[p] -= sum * (1 << LegacyOffsetShift<T>());
        ib[p] = LegacyHasMin<T>() ? sum : 0;
      }
      accs[b % 8] +=
          BlockResult(ia, ib, F16At(blk), kMinAt >= 0 ? F16At(blk + kMinAt) : 0.0f, x.d[b]);
    }
    out[r * stride] = FinishAcc(accs);
  }
}

// ---- K-quants (blocks of 256) ----

// The 32 stored integers of chunk c (elements 32c .. 32c + 31) of a k-quant block.
template <GgmlType T>
inline __m256i KChunkU(const uint8_t* blk, int c) {
  const __m256i m2 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1), m4 = _mm256_set1_epi8(0x0F);
  if constexpr (T == GgmlType::kQ2_K || T == GgmlType::kQ3_K) {
    const int h = c / 4, k = c % 4;
    const uint8_t* qs =
        blk + (T == GgmlType::kQ2_K ? offsetof(BlockQ2_K, qs) : offsetof(BlockQ3_K, qs));
    __m256i u =
        _mm256_and_si256(_mm256_srl_epi16(Load32(qs + 32 * h), _mm_cvtsi32_si128(2 * k)), m2);
    if constexpr (T == GgmlType::kQ3_K) {
      const __m256i hb = _mm256_and_si256(
          _mm256_srl_epi16(Load32(blk + offsetof(BlockQ3_K, hmask)), _mm_cvtsi32_si128(c)), m1);
      u = _mm256_or_si256(u, _mm256_slli_epi16(hb, 2));
    }
    return u;
  } else if constexpr (T == GgmlType::kQ4_K || T == GgmlType::kQ5_K) {
    const int j = c / 2, nib = c % 2;
    const uint8_t* qs =
        blk + (T == GgmlType::kQ4_K ? offsetof(BlockQ4_K, qs) : offsetof(BlockQ5_K, qs));
    __m256i u =
        _mm256_and_si256(_mm256_srl_epi16(Load32(qs + 32 * j), _mm_cvtsi32_si128(4 * nib)), m4);
    if constexpr (T == GgmlType::kQ5_K) {
      const __m256i hb = _mm256_and_si256(
          _mm256_srl_epi16(Load32(blk + offsetof(BlockQ5_K, qh)), _mm_cvtsi32_si128(c)), m1);
      u = _mm256_or_si256(u, _mm256_slli_epi16(hb, 4));
    }
    return u;
  } else {  // Q6_K
    const int h = c / 4, k = c % 4;
    const __m256i low = _mm256_and_si256(
        _mm256_srl_epi16(Load32(blk + offsetof(BlockQ6_K, ql) + 64 * h + 32 * (k % 2)),
                         _mm_cvtsi32_si128(4 * (k / 2))),
        m4);
    const __m256i high = _mm256_and_si256(
        _mm256_srl_epi16(Load32(blk + offsetof(BlockQ6_K, qh) + 32 * h), _mm_cvtsi32_si128(2 * k)),
        m2);
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
  }
}

template <GgmlType T>
constexpr int KOffset() {
  return T == GgmlType::kQ3_K ? 4 : T == GgmlType::kQ6_K ? 32 : 0;
}
template <GgmlType T>
constexpr bool KHasMin() {
  return T == GgmlType::kQ2_K || T == GgmlType::kQ4_K || T == GgmlType::kQ5_K;
}

// A k-quant block's group scales and minimums as 16 int16 lanes (per group of 16), and its d
// and dmin: the values int_dot_formats::KDecodeScales gives, decoded in registers.
struct KBlockScales {
  __m256i sc, mn;
  float d = 0, dmin = 0;
};

// Eight byte scales of groups of 32 (four in lo, four in hi), each twice: 16 int16 lanes.
inline __m256i SpreadScales(uint32_t lo, uint32_t hi) {
  const __m128i v =
      _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(hi), static_cast<int>(lo)));
  return _mm256_set_m128i(_mm_unpackhi_epi16(v, v), _mm_unpacklo_epi16(v, v));
}

template <GgmlType T>
inline void KScalesOf(const uint8_t* blk, KBlockScales* s) {
  if constexpr (T == GgmlType::kQ4_K || T == GgmlType::kQ5_K) {
    // Bytes 0-3: scales 0-3 (low 6 bits); 4-7: minimums 0-3; 8-11: low nibbles of scales 4-7
    // and high nibbles of minimums 4-7; the top 2 bits of bytes 0-7 complete groups 4-7.
    uint32_t w[3];
    std::memcpy(w, blk + 4, 12);
    const uint32_t sc_lo = w[0] & 0x3f3f3f3f, mn_lo = w[1] & 0x3f3f3f3f;
    const uint32_t sc_hi = (w[2] & 0x0f0f0f0f) | (((w[0] >> 6) & 0x03030303) << 4);
    const uint32_t mn_hi = ((w[2] >> 4) & 0x0f0f0f0f) | (((w[1] >> 6) & 0x03030303) << 4);
    s->sc = SpreadScales(sc_lo, sc_hi);
    s->mn = SpreadScales(mn_lo, mn_hi);
    s->d = F16At(blk);
    s->dmin = F16At(blk + 2);
  } else if constexpr (T == GgmlType::kQ2_K) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
    s->sc = _mm256_cvtepu8_epi16(_mm_and_si128(raw, _mm_set1_epi8(0x0F)));
    s->mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F)));
    s->d = F16At(blk + offsetof(BlockQ2_K, d));
    s->dmin = F16At(blk + offsetof(BlockQ2_K, dmin));
  } else if constexpr (T == GgmlType::kQ6_K) {
    s->sc = _mm256_cvtepi8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales))));
    s->mn = _mm256_setzero_si256();
    s->d = F16At(blk + offsetof(BlockQ6_K, d));
  } else {  // Q3_K: the packed 6-bit scales decoded one by one
    KScales k;
    int_dot_formats::KDecodeScales(T, blk, &k);
    alignas(32) int16_t sc16[16];
    for (int g = 0; g < 16; ++g) sc16[g] = static_cast<int16_t>(k.sc[g]);
    s->sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(sc16));
    s->mn = _mm256_setzero_si256();
    s->d = k.d;
  }
}

// The k-quants' block integers A_p, B_p of one row once its plane sums (the scaled lanes) are
// in: offsets off lane by lane, the minimums' sums, one reduction for all.
inline void KFinishInts(const ActRow& x, int64_t b, const __m256i* sums, __m256i scv, __m256i mnv,
                        int offset, int32_t* out8) {
  static_assert(2 * kActPlanes <= 8);
  __m256i lanes[8];
  for (int p = 0; p < kActPlanes; ++p) {
    __m256i sum = sums[p];
    const __m256i qsums = Load32(x.Sums(b, p));  // 16 int16: the groups' quant sums
    if (offset != 0) {
      sum = _mm256_sub_epi32(
          sum, _mm256_mullo_epi32(_mm256_madd_epi16(qsums, scv), _mm256_set1_epi32(offset)));
    }
    lanes[p] = sum;
    lanes[kActPlanes + p] = _mm256_madd_epi16(qsums, mnv);  // zero without minimums
  }
  for (int i = 2 * kActPlanes; i < 8; ++i) lanes[i] = _mm256_setzero_si256();
  _mm256_store_si256(reinterpret_cast<__m256i*>(out8), Reduce8(lanes));
}

// dot(w, xs[r]) into out[r * stride] for r < nrows: each block unpacked once for all the rows.
template <GgmlType T, bool kWide>
void KRowDots(const uint8_t* w, const ActRow* xs, int nrows, float* out, int64_t stride) {
  constexpr int64_t kBytes = GgmlType::kQ2_K == T   ? sizeof(BlockQ2_K)
                             : GgmlType::kQ3_K == T ? sizeof(BlockQ3_K)
                             : GgmlType::kQ4_K == T ? sizeof(BlockQ4_K)
                             : GgmlType::kQ5_K == T ? sizeof(BlockQ5_K)
                                                    : sizeof(BlockQ6_K);
  float acc[kIntDotMaxRows][8] = {};
  const int64_t nblocks = xs[0].nblocks;
  for (int64_t b = 0; b < nblocks; ++b) {
    const uint8_t* blk = w + b * kBytes;
    KBlockScales s;
    KScalesOf<T>(blk, &s);
    const float w2 = KHasMin<T>() ? -s.dmin : 0.0f;
    alignas(32) int32_t ints[8];
#if defined(__AVX512F__) || defined(FORGE_INT_DOT_512)
    if constexpr (kWide) {
      // Two chunks per 512-bit vector; each group's scale spread over its 8 pair lanes.
      __m512i us[4], scales[4];
      const __m512i sc512 = _mm512_zextsi256_si512(s.sc);
      for (int c = 0; c < 4; ++c) {
        us[c] = _mm512_inserti64x4(_mm512_zextsi256_si512(KChunkU<T>(blk, 2 * c)),
                                   KChunkU<T>(blk, 2 * c + 1), 1);
        const __m512i idx = _mm512_srli_epi16(
            _mm512_add_epi16(
                _mm512_set1_epi16(static_cast<int16_t>(32 * c)),
                _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15,
                                 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)),
            3);
        scales[c] = _mm512_permutexvar_epi16(idx, sc512);
      }
      for (int r = 0; r < nrows; ++r) {
        __m256i sums[kActPlanes];
        for (int p = 0; p < kActPlanes; ++p) {
          const int8_t* q = xs[r].Q(b, p);
          __m512i sum = _mm512_setzero_si512();
          for (int c = 0; c < 4; ++c) {
            const __m512i pairs = _mm512_maddubs_epi16(us[c], _mm512_loadu_si512(q + 64 * c));
            sum = _mm512_add_epi32(sum, _mm512_madd_epi16(pairs, scales[c]));
          }
          sums[p] =
              _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
        }
        KFinishInts(xs[r], b, sums, s.sc, s.mn, KOffset<T>(), ints);
        acc[r][b % 8] += BlockResult(ints, ints + kActPlanes, s.d, w2, xs[r].d[b]);
      }
      continue;
    }
#endif
    alignas(32) int16_t sc16[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(sc16), s.sc);
    __m256i us[8], scales[8];
    for (int c = 0; c < 8; ++c) {
      us[c] = KChunkU<T>(blk, c);
      scales[c] = _mm256_set_m128i(_mm_set1_epi16(sc16[2 * c + 1]), _mm_set1_epi16(sc16[2 * c]));
    }
    for (int r = 0; r < nrows; ++r) {
      __m256i sums[kActPlanes];
      for (int p = 0; p < kActPlanes; ++p) {
        const int8_t* q = xs[r].Q(b, p);
        __m256i sum = _mm256_setzero_si256();
        for (int c = 0; c < 8; ++c) {
          const __m256i pairs = _mm256_maddubs_epi16(us[c], Load32(q + 32 * c));
          sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, scales[c]));
        }
        sums[p] = sum;
      }
      KFinishInts(xs[r], b, sums, s.sc, s.mn, KOffset<T>(), ints);
      acc[r][b % 8] += BlockResult(ints, ints + kActPlanes, s.d, w2, xs[r].d[b]);
    }
  }
  for (int r = 0; r < nrows; ++r) out[r * stride] = FinishAcc(acc[r]);
}

template <bool kVnni>
IntRowDots RowDotsFor(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
      return LegacyRowDots<GgmlType::kQ4_0, kVnni>;
    case GgmlType::kQ4_1:
      return LegacyRowDots<GgmlType::kQ4_1, kVnni>;
    case GgmlType::kQ5_0:
      return LegacyRowDots<GgmlType::kQ5_0, kVnni>;
    case GgmlType::kQ5_1:
      return LegacyRowDots<GgmlType::kQ5_1, kVnni>;
    case GgmlType::kQ8_0:
      return LegacyRowDots<GgmlType::kQ8_0, kVnni>;
    case GgmlType::kQ2_K:
      return KRowDots<GgmlType::kQ2_K, kVnni>;
    case GgmlType::kQ3_K:
      return KRowDots<GgmlType::kQ3_K, kVnni>;
    case GgmlType::kQ4_K:
      return KRowDots<GgmlType::kQ4_K, kVnni>;
    case GgmlType::kQ5_K:
      return KRowDots<GgmlType::kQ5_K, kVnni>;
    case GgmlType::kQ6_K:
      return KRowDots<GgmlType::kQ6_K, kVnni>;
    default:
      return nullptr;
  }
}

}  // namespace forge::int_dot::FORGE_INT_DOT_NS
