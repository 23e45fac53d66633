// The activation quantizer: per block, kActPlanes rounding steps of the remainder.
#include "backend/cpu/matmul/exact_float.h"
// (exact_float.h first: it governs the float arithmetic below.)
#include "backend/cpu/matmul/act_quant.h"

#include <cfloat>
#include <cmath>
#include <cstring>

namespace forge {
namespace {

// Round half to even for |v| < 2^22 (adding 1.5 * 2^23 leaves the rounded integer in the low
// mantissa bits).
inline int RoundToInt(float v) {
  const float t = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &t, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

// Blocks whose absmax is below this quantize to zero (keeps every plane's step a normal float).
constexpr float kTinyBlock = 0x1p-100f;

}  // namespace

int ActBlockOf(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
      return 32;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return 256;
    default:
      return 0;
  }
}

void QuantizeActBlock(const float* x, int block, int8_t* q, int64_t plane_stride, float* d,
                      int16_t* sums, int64_t sums_stride) {
  if (block != 32 && block != 256) return;  // the two forms; nothing else is asked for
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < block; ++i) {
    const float a = std::fabs(x[i]);
    finite = finite && a <= FLT_MAX;
    amax = a > amax ? a : amax;
  }
  const int groups = block / kActGroup;
  if (!finite || amax < kTinyBlock) {
    for (int p = 0; p < kActPlanes; ++p) {
      std::memset(q + p * plane_stride, 0, block);
      std::memset(sums + p * sums_stride, 0, sizeof(int16_t) * groups);
    }
    *d = finite ? 0.0f : NAN;  // a NaN or Inf input makes every output of the row NaN
    return;
  }
  float r[256];
  std::memcpy(r, x, sizeof(float) * block);
  float step = amax / 127.0f;
  for (int p = 0; p < kActPlanes; ++p) {
    const float inv = 1.0f / step;
    int8_t* qp = q + p * plane_stride;
    for (int i = 0; i < block; ++i) {
      int v = RoundToInt(r[i] * inv);
      v = v > 127 ? 127 : (v < -127 ? -127 : v);
      qp[i] = static_cast<int8_t>(v);
      const float back = static_cast<float>(v) * step;
      r[i] = r[i] - back;
    }
    for (int g = 0; g < groups; ++g) {
      int s = 0;
      for (int i = 0; i < kActGroup; ++i) s += qp[g * kActGroup + i];
      sums[p * sums_stride + g] = static_cast<int16_t>(s);
    }
    if (p + 1 < kActPlanes) step = step / static_cast<float>(kActRadix);
  }
  *d = step;
}

void ActRows::Resize(int64_t m, int64_t k, int block) {
  m_ = m;
  block_ = block;
  nblocks_ = k / block;
  const size_t blocks = static_cast<size_t>(m * nblocks_);
  if (q_.size() < blocks * kActPlanes * block) q_.resize(blocks * kActPlanes * block);
  if (d_.size() < blocks) d_.resize(blocks);
  const size_t nsums = blocks * kActPlanes * (block / kActGroup);
  if (sums_.size() < nsums) sums_.resize(nsums);
  if (block_sums_.size() < blocks * kActPlanes) block_sums_.resize(blocks * kActPlanes);
}

void ActRows::Quantize(int64_t i, const float* x) {
  const int groups = block_ / kActGroup;
  int8_t* q = q_.data() + i * nblocks_ * kActPlanes * block_;  // as row(i) lays them out
  int16_t* sums = sums_.data() + i * nblocks_ * kActPlanes * groups;
  int32_t* block_sums = block_sums_.data() + i * kActPlanes * nblocks_;
  for (int64_t b = 0; b < nblocks_; ++b) {
    int16_t* bs = sums + b * groups;
    QuantizeActBlock(x + b * block_, block_, q + b * block_, nblocks_ * block_,
                     d_.data() + i * nblocks_ + b, bs, nblocks_ * groups);
    for (int p = 0; p < kActPlanes; ++p) {
      int32_t s = 0;
      for (int g = 0; g < groups; ++g) s += bs[p * nblocks_ * groups + g];
      block_sums[p * nblocks_ + b] = s;
    }
  }
}

ActRow ActRows::row(int64_t i) const {
  ActRow r;
  r.block = block_;
  r.nblocks = nblocks_;
  r.q = q_.data() + i * nblocks_ * kActPlanes * block_;
  r.d = d_.data() + i * nblocks_;
  r.sums = sums_.data() + i * nblocks_ * kActPlanes * (block_ / kActGroup);
  r.block_sums = block_sums_.data() + i * kActPlanes * nblocks_;
  return r;
}

}  // namespace forge
