// The stored integers and scales of each block format, read as the dequantizers in src/quant read
// them (quant/blocks.h documents the layouts).
#include "backend/cpu/matmul/int_dot_formats.h"

#include <cstddef>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"

namespace forge::int_dot_formats {
namespace {

template <typename Block>
Block LoadBlock(const uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof(Block));
  return b;
}

// Q4_K / Q5_K: the 6-bit scale and minimum of group g (of 32).
void ScaleMinK4(int g, const uint8_t* s, int* sc, int* m) {
  if (g < 4) {
    *sc = s[g] & 63;
    *m = s[g + 4] & 63;
  } else {
    *sc = (s[g + 4] & 0x0F) | ((s[g - 4] >> 6) << 4);
    *m = (s[g + 4] >> 4) | ((s[g] >> 6) << 4);
  }
}

void ScalesK4(const uint8_t* scales, KScales* s) {
  for (int g = 0; g < 8; ++g) {
    int sc, m;
    ScaleMinK4(g, scales, &sc, &m);
    s->sc[2 * g] = s->sc[2 * g + 1] = sc;
    s->mn[2 * g] = s->mn[2 * g + 1] = m;
  }
}

}  // namespace

void LegacyUnpack(GgmlType t, const uint8_t* blk, int16_t* u) {
  const LegacyLayout l = LegacyLayoutOf(t);
  const uint8_t* qs = blk + l.qs_at;
  if (t == GgmlType::kQ8_0) {
    for (int j = 0; j < 32; ++j) u[j] = static_cast<int8_t>(qs[j]);
    return;
  }
  uint32_t qh = 0;
  if (l.qh_at >= 0) std::memcpy(&qh, blk + l.qh_at, 4);
  for (int j = 0; j < 16; ++j) {
    u[j] = static_cast<int16_t>((qs[j] & 0x0F) | (((qh >> j) & 1) << 4));
    u[j + 16] = static_cast<int16_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
  }
}

void KDecodeScales(GgmlType t, const uint8_t* blk, KScales* s) {
  switch (t) {
    case GgmlType::kQ2_K: {
      const BlockQ2_K b = LoadBlock<BlockQ2_K>(blk);
      for (int g = 0; g < 16; ++g) {
        s->sc[g] = b.scales[g] & 0x0F;
        s->mn[g] = b.scales[g] >> 4;
      }
      s->offset = 0;
      s->has_min = true;
      s->d = F16ToF32(b.d);
      s->dmin = F16ToF32(b.dmin);
      return;
    }
    case GgmlType::kQ3_K: {
      const BlockQ3_K b = LoadBlock<BlockQ3_K>(blk);
      for (int g = 0; g < 16; ++g) {
        const int low = g < 8 ? (b.scales[g] & 0x0F) : (b.scales[g - 8] >> 4);
        const int high = (b.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
        s->sc[g] = (low | (high << 4)) - 32;
        s->mn[g] = 0;
      }
      s->offset = 4;
      s->has_min = false;
      s->d = F16ToF32(b.d);
      s->dmin = 0;
      return;
    }
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      // Q4_K and Q5_K share the first 16 bytes: d, dmin, scales.
      const BlockQ4_K b = LoadBlock<BlockQ4_K>(blk);
      ScalesK4(b.scales, s);
      s->offset = 0;
      s->has_min = true;
      s->d = F16ToF32(b.d);
      s->dmin = F16ToF32(b.dmin);
      return;
    }
    case GgmlType::kQ6_K: {
      const BlockQ6_K b = LoadBlock<BlockQ6_K>(blk);
      for (int g = 0; g < 16; ++g) {
        s->sc[g] = b.scales[g];
        s->mn[g] = 0;
      }
      s->offset = 32;
      s->has_min = false;
      s->d = F16ToF32(b.d);
      s->dmin = 0;
      return;
    }
    default:
      return;
  }
}

void KUnpack(GgmlType t, const uint8_t* blk, int16_t* u, KScales* s) {
  KDecodeScales(t, blk, s);
  switch (t) {
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K: {
      // Element 128h + 32k + l: bits 2k..2k+1 of qs[32h + l]; Q3_K's third bit at hmask[l] bit
      // 4h + k.
      const uint8_t* qs =
          t == GgmlType::kQ2_K ? blk + offsetof(BlockQ2_K, qs) : blk + offsetof(BlockQ3_K, qs);
      const uint8_t* hmask = blk + offsetof(BlockQ3_K, hmask);
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 4; ++k) {
          for (int l = 0; l < 32; ++l) {
            int v = (qs[32 * h + l] >> (2 * k)) & 3;
            if (t == GgmlType::kQ3_K) v |= ((hmask[l] >> (4 * h + k)) & 1) << 2;
            u[128 * h + 32 * k + l] = static_cast<int16_t>(v);
          }
        }
      }
      return;
    }
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      // Element 64j + 32nib + l: nibble nib of qs[32j + l]; Q5_K's fifth bit at qh[l] bit 2j + nib.
      const bool five = t == GgmlType::kQ5_K;
      const uint8_t* qs = five ? blk + offsetof(BlockQ5_K, qs) : blk + offsetof(BlockQ4_K, qs);
      const uint8_t* qh = blk + offsetof(BlockQ5_K, qh);
      for (int j = 0; j < 4; ++j) {
        for (int nib = 0; nib < 2; ++nib) {
          for (int l = 0; l < 32; ++l) {
            int v = (qs[32 * j + l] >> (4 * nib)) & 0x0F;
            if (five) v |= ((qh[l] >> (2 * j + nib)) & 1) << 4;
            u[64 * j + 32 * nib + l] = static_cast<int16_t>(v);
          }
        }
      }
      return;
    }
    case GgmlType::kQ6_K: {
      // Element 128h + 32k + l: low nibble (k < 2) or high nibble (k >= 2) of ql[64h + 32(k % 2)
      // + l]; high two bits at qh[32h + l] bits 2k, 2k + 1.
      const uint8_t* ql = blk + offsetof(BlockQ6_K, ql);
      const uint8_t* qh = blk + offsetof(BlockQ6_K, qh);
      for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 4; ++k) {
          for (int l = 0; l < 32; ++l) {
            const int low = (ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0F;
            const int high = (qh[32 * h + l] >> (2 * k)) & 3;
            u[128 * h + 32 * k + l] = static_cast<int16_t>(low | (high << 4));
          }
        }
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace forge::int_dot_formats
