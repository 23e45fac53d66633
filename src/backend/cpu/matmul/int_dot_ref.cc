// The portable integer row dots: each block's weights unpacked to their integers u (as the
// dequantizers in src/quant read them), the plane sums of int_dot.h by plain loops, its float
// tail. matmul_ref and the CPU backend's scalar path both run these.
#include "backend/cpu/matmul/exact_float.h"
// (exact_float.h first: it governs the float arithmetic below.)
#include <cstring>

#include "backend/cpu/matmul/int_dot.h"
#include "backend/cpu/matmul/int_dot_formats.h"
#include "base/half.h"
#include "quant/blocks.h"

namespace forge {
namespace {

using int_dot::BlockResult;
using int_dot::FinishAcc;

// sum_i (u[i] - o) q[i] over n elements.
inline int32_t DotU(const int16_t* u, const int8_t* q, int n, int o) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += (static_cast<int32_t>(u[i]) - o) * q[i];
  return s;
}

inline int32_t Sum(const int16_t* sums, int from, int count) {
  int32_t s = 0;
  for (int i = 0; i < count; ++i) s += sums[from + i];
  return s;
}

// A block's integers and float factors: the unpacked u, the per-group scales and minimums, the
// offset o, the group size.
struct Unpacked {
  int16_t u[256];          // the stored integers (Q8_0: signed)
  int32_t sc[16], mn[16];  // per group
  int group = 32, groups = 1, offset = 0;
  bool has_min = false;  // B_p = sum_g mn_g sum_g q_p
  float w1 = 0, w2 = 0;
};

void Unpack(GgmlType t, const uint8_t* blk, Unpacked* k) {
  using namespace int_dot_formats;
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0: {
      const LegacyLayout l = LegacyLayoutOf(t);
      k->group = 32;
      k->groups = 1;
      k->sc[0] = 1;
      k->mn[0] = 1;
      k->offset = l.offset;
      k->has_min = l.has_min;
      uint16_t d, m = 0;
      std::memcpy(&d, blk, 2);
      if (l.has_min) std::memcpy(&m, blk + 2, 2);
      k->w1 = F16ToF32(d);
      k->w2 = l.has_min ? F16ToF32(m) : 0.0f;
      LegacyUnpack(t, blk, k->u);
      return;
    }
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K: {
      KScales s;
      KUnpack(t, blk, k->u, &s);
      k->group = 16;
      k->groups = 16;
      for (int g = 0; g < 16; ++g) {
        k->sc[g] = s.sc[g];
        k->mn[g] = s.mn[g];
      }
      k->offset = s.offset;
      k->has_min = s.has_min;
      k->w1 = s.d;
      k->w2 = s.has_min ? -s.dmin : 0.0f;
      return;
    }
    default:
      return;
  }
}

template <GgmlType T>
float RowDotScalar(const uint8_t* w, const ActRow& x) {
  const int64_t block_bytes = GetTypeTraits(T).block_bytes;
  float acc[8] = {};
  Unpacked k;
  for (int64_t b = 0; b < x.nblocks; ++b) {
    Unpack(T, w + b * block_bytes, &k);
    int32_t a[kActPlanes], bb[kActPlanes];
    for (int p = 0; p < kActPlanes; ++p) {
      const int8_t* q = x.Q(b, p);
      const int16_t* sums = x.Sums(b, p);
      const int per = k.group / kActGroup;  // kept sums per group
      int32_t sa = 0, sb = 0;
      for (int g = 0; g < k.groups; ++g) {
        const int32_t qs = Sum(sums, g * per, per);
        sa += k.sc[g] * DotU(k.u + g * k.group, q + g * k.group, k.group, 0);
        sa -= k.sc[g] * k.offset * qs;
        if (k.has_min) sb += k.mn[g] * qs;
      }
      a[p] = sa;
      bb[p] = sb;
    }
    acc[b % 8] += BlockResult(a, bb, k.w1, k.w2, x.d[b]);
  }
  return FinishAcc(acc);
}

template <GgmlType T>
void RowDotsScalar(const uint8_t* w, const ActRow* x, int nrows, float* out, int64_t stride) {
  for (int r = 0; r < nrows; ++r) out[r * stride] = RowDotScalar<T>(w, x[r]);
}

}  // namespace

namespace int_dot {

IntRowDots ScalarRowDots(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
      return RowDotsScalar<GgmlType::kQ4_0>;
    case GgmlType::kQ4_1:
      return RowDotsScalar<GgmlType::kQ4_1>;
    case GgmlType::kQ5_0:
      return RowDotsScalar<GgmlType::kQ5_0>;
    case GgmlType::kQ5_1:
      return RowDotsScalar<GgmlType::kQ5_1>;
    case GgmlType::kQ8_0:
      return RowDotsScalar<GgmlType::kQ8_0>;
    case GgmlType::kQ2_K:
      return RowDotsScalar<GgmlType::kQ2_K>;
    case GgmlType::kQ3_K:
      return RowDotsScalar<GgmlType::kQ3_K>;
    case GgmlType::kQ4_K:
      return RowDotsScalar<GgmlType::kQ4_K>;
    case GgmlType::kQ5_K:
      return RowDotsScalar<GgmlType::kQ5_K>;
    case GgmlType::kQ6_K:
      return RowDotsScalar<GgmlType::kQ6_K>;
    default:
      return nullptr;
  }
}

}  // namespace int_dot
}  // namespace forge
