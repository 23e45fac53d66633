// The quantized kernels' block decoding, run on the host (no GPU needed): Dequant8 bit for bit
// against the CPU dequantizer, and every tensor-core fragment slot of the GEMV decoding (the same
// __host__ __device__ functions the kernels call) against the CPU value of the element the
// activations are laid out to meet.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "backend/cuda/matmul/block_decode.cuh"
#include "backend/cuda/matmul/gemv_quant_cuda.h"
#include "backend/cuda/matmul/gemv_quant_fragments.cuh"
#include "backend/cuda/quant_test_data.h"

namespace forge {
namespace {

namespace qd = cuda::qd;
namespace gq = cuda::gq;
using testing::QuantMatrix;

std::vector<QuantMatrix> Matrices(GgmlType type) {
  std::vector<QuantMatrix> ms;
  const bool kq = testing::IsKQuantType(type);
  ms.push_back(testing::RandomBlocks(type, 5, kq ? 768 : 800, 11));
  ms.push_back(testing::QuantizedRandom(type, 3, kq ? 512 : 96, 12));
  QuantMatrix o;
  if (testing::OracleMatrix(type, "blk.0.ffn_down.weight", &o)) ms.push_back(std::move(o));
  return ms;
}

template <GgmlType kT>
void Dequant8Row(const uint8_t* row, int64_t k, float* out) {
  for (int64_t e = 0; e < k; e += 8) qd::Dequant8<kT>(row, e, out + e);
}

void Dequant8Any(GgmlType t, const uint8_t* row, int64_t k, float* out) {
  switch (t) {
    case GgmlType::kQ4_0:
      return Dequant8Row<GgmlType::kQ4_0>(row, k, out);
    case GgmlType::kQ4_1:
      return Dequant8Row<GgmlType::kQ4_1>(row, k, out);
    case GgmlType::kQ5_0:
      return Dequant8Row<GgmlType::kQ5_0>(row, k, out);
    case GgmlType::kQ5_1:
      return Dequant8Row<GgmlType::kQ5_1>(row, k, out);
    case GgmlType::kQ8_0:
      return Dequant8Row<GgmlType::kQ8_0>(row, k, out);
    case GgmlType::kQ2_K:
      return Dequant8Row<GgmlType::kQ2_K>(row, k, out);
    case GgmlType::kQ3_K:
      return Dequant8Row<GgmlType::kQ3_K>(row, k, out);
    case GgmlType::kQ4_K:
      return Dequant8Row<GgmlType::kQ4_K>(row, k, out);
    case GgmlType::kQ5_K:
      return Dequant8Row<GgmlType::kQ5_K>(row, k, out);
    case GgmlType::kQ6_K:
      return Dequant8Row<GgmlType::kQ6_K>(row, k, out);
    default:
      FAIL() << "not a block format";
  }
}

class QuantDecodeTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QuantDecodeTest, Dequant8IsBitExact) {
  for (const QuantMatrix& q : Matrices(GetParam())) {
    SCOPED_TRACE(q.what);
    std::vector<float> got(q.k);
    int bad = 0;
    for (int64_t r = 0; r < q.n; ++r) {
      Dequant8Any(q.type, q.bytes.data() + r * q.row_bytes, q.k, got.data());
      for (int64_t c = 0; c < q.k; ++c) {
        const float want = q.values[r * q.k + c];
        if (FloatBits(got[c]) != FloatBits(want) && bad++ < 5) {
          ADD_FAILURE() << "row " << r << " element " << c << ": got " << got[c] << ", want "
                        << want;
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// The value v of a pair's half hh (1024 + v in F16): checks the exponent is untouched.
int PairValue(uint32_t pair, int hh) {
  const uint32_t h = (pair >> (16 * hh)) & 0xFFFF;
  EXPECT_EQ(h & 0xFC00u, 0x6400u) << "pair half " << hh << " overflowed its mantissa";
  return static_cast<int>(h & 0x3FF);
}

// The weight the GEMV kernel computes with at step j, thread t, pair p, half hh of a row's tile,
// following gemv_quant_kernel.cuh (scales and mins in double).
double KernelWeight(GgmlType type, const uint8_t* tile, int j, int t, int p, int hh) {
  using qd::HalfToF32;
  using qd::Ld16;
  using qd::Ld32;
  const int bb = qd::BlockBytes(type);
  switch (type) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1: {
      const bool min = type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1;
      const bool five = type == GgmlType::kQ5_0 || type == GgmlType::kQ5_1;
      const uint8_t* b = tile + (j / 2) * bb;
      const int s = j % 2;
      const uint32_t w = gq::Word(b + (min ? 4 : 2) + (five ? 4 : 0), t);
      const uint32_t pair = five ? gq::PairQ5(w, gq::Q5HighBits(Ld32(b + (min ? 4 : 2)), t), s, p)
                                 : gq::PairNib(w, s, p);
      const int v = PairValue(pair, hh);
      const double d = HalfToF32(Ld16(b));
      if (min) return d * v + HalfToF32(Ld16(b + 2));
      return d * (v - (five ? 16 : 8));
    }
    case GgmlType::kQ8_0: {
      const uint8_t* b = tile + (j / 2) * bb;
      const uint32_t w = gq::Word(b + 2 + 16 * (j % 2), t);
      return static_cast<double>(HalfToF32(Ld16(b))) * (PairValue(gq::PairQ8(w, p), hh) - 128);
    }
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K: {
      const bool q3 = type == GgmlType::kQ3_K;
      const int k = j / 4, u = j % 4, g = gq::OwnGroupQ2K(t, k);
      const uint32_t w = Ld32(tile + (q3 ? 32 : 16) + gq::QuantOffsetQ2K(t) + 4 * u);
      uint32_t pair;
      if (q3) {
        const uint32_t hm = Ld32(tile + 16 * (t & 1) + 4 * u) >> (4 * (t >> 1));
        pair = gq::PairQ3K(w, hm, k, p);
      } else {
        pair = gq::PairQ2K(w, k, p);
      }
      const int v = PairValue(pair, hh);
      EXPECT_EQ(v % (1 << (2 * k)), 0) << "bits outside bit pair " << k;
      const int q = v >> (2 * k);
      if (q3) {
        const double d = HalfToF32(Ld16(tile + 108));
        return d * (qd::ScaleQ3K(tile + 96, g) - 32) * (q - 4);
      }
      const double d = HalfToF32(Ld16(tile + 80)), dmin = HalfToF32(Ld16(tile + 82));
      return d * (tile[g] & 15) * q - dmin * (tile[g] >> 4);
    }
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      const bool q5 = type == GgmlType::kQ5_K;
      const int u = j / 2, nib = j % 2, g = 2 * t + nib;
      const uint32_t w = Ld32(tile + (q5 ? 48 : 16) + 32 * t + 4 * u);
      const uint32_t pair =
          q5 ? gq::PairQ5K(w, Ld32(tile + 16 + 4 * u) >> (2 * t), nib, p) : gq::PairQ4K(w, nib, p);
      int sc, mn;
      qd::ScaleMinK4(tile + 4, g, &sc, &mn);
      const double d = HalfToF32(Ld16(tile)), dmin = HalfToF32(Ld16(tile + 2));
      return d * sc * PairValue(pair, hh) - dmin * mn;
    }
    case GgmlType::kQ6_K: {
      const int h = j / 8, q = (j % 8) / 2, s = j % 2;
      const uint32_t wl = gq::Word(tile + 64 * h + 32 * (q & 1) + 16 * s, t);
      const uint32_t wh = gq::Word(tile + 128 + 32 * h + 16 * s, t);
      const double d = HalfToF32(Ld16(tile + 208));
      return d * static_cast<int8_t>(tile[192 + j]) *
             (PairValue(gq::PairQ6K(wl, wh, q, p), hh) - 32);
    }
    default:
      ADD_FAILURE() << "not a block format";
      return 0;
  }
}

int PiOf(GgmlType type, int v) {
  switch (gq::LayoutOf(type)) {
    case gq::Layout::kQ2K:
      return gq::Pi<gq::Layout::kQ2K>(v);
    case gq::Layout::kQ4K:
      return gq::Pi<gq::Layout::kQ4K>(v);
    default:
      return gq::Pi<gq::Layout::kLegacy>(v);
  }
}

TEST_P(QuantDecodeTest, GemvFragmentsHoldTheElementsTheActivationsMeet) {
  const GgmlType type = GetParam();
  const int tile_bytes =
      testing::IsKQuantType(type) ? qd::BlockBytes(type) : 8 * qd::BlockBytes(type);
  for (const QuantMatrix& q : Matrices(type)) {
    SCOPED_TRACE(q.what);
    int bad = 0;
    for (int64_t r = 0; r < q.n; ++r) {
      for (int64_t tile = 0; tile * 256 < q.k; ++tile) {
        const uint8_t* tp = q.bytes.data() + r * q.row_bytes + tile * tile_bytes;
        const int64_t elems = std::min<int64_t>(256, q.k - tile * 256);
        for (int v = 0; v < 256; ++v) {
          const int e = PiOf(type, v);
          if (e >= elems) continue;  // a partial legacy tile: blocks past k are never decoded
          const int j = v >> 4, t = (v >> 1) & 3, p = (v >> 3) & 1, hh = v & 1;
          const double got = KernelWeight(type, tp, j, t, p, hh);
          const double want = q.values[r * q.k + tile * 256 + e];
          if (std::fabs(got - want) > 1e-6 * std::fabs(want) + 1e-12 && bad++ < 5) {
            ADD_FAILURE() << "row " << r << " tile " << tile << " step " << j << " thread " << t
                          << " pair " << p << " half " << hh << " (element " << e
                          << "): kernel weight " << got << ", CPU " << want;
          }
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, QuantDecodeTest, ::testing::ValuesIn(testing::QuantFormats()),
                         [](const auto& info) { return std::string(TypeName(info.param)); });

TEST(QuantDecodeLayoutTest, ElementOrdersArePermutations) {
  for (gq::Layout l : {gq::Layout::kLegacy, gq::Layout::kQ2K, gq::Layout::kQ4K}) {
    std::set<int> seen;
    for (int v = 0; v < 256; ++v) {
      const int e = l == gq::Layout::kLegacy ? gq::Pi<gq::Layout::kLegacy>(v)
                    : l == gq::Layout::kQ2K  ? gq::Pi<gq::Layout::kQ2K>(v)
                                             : gq::Pi<gq::Layout::kQ4K>(v);
      EXPECT_TRUE(e >= 0 && e < 256);
      seen.insert(e);
    }
    EXPECT_EQ(seen.size(), 256u);
  }
  // Legacy steps never mix 32-blocks (their scales are applied per block after two steps).
  for (int v = 0; v < 256; ++v) EXPECT_EQ(gq::Pi<gq::Layout::kLegacy>(v) / 32, (v >> 4) / 2);
  // The min step's slots hold each group once: Q2_K/Q3_K all 16, Q4_K/Q5_K the 8 of 32.
  std::set<int> g16, g32;
  for (int s = 0; s < 16; ++s) {
    g16.insert(gq::MinGroup<gq::Layout::kQ2K>(s));
    if (gq::MinGroup<gq::Layout::kQ4K>(s) >= 0) g32.insert(gq::MinGroup<gq::Layout::kQ4K>(s));
  }
  EXPECT_EQ(g16.size(), 16u);
  EXPECT_EQ(g32.size(), 8u);
  EXPECT_EQ(*g16.rbegin(), 15);
  EXPECT_EQ(*g32.rbegin(), 7);
}

TEST(QuantDecodeLayoutTest, GemvQuantAppliesChecksItsArguments) {
  alignas(16) static uint8_t w[4096], x[256], out[256];
  MatmulParams p;
  p.w = {GgmlType::kQ4_K, 2, 256, 144, w};
  p.x = x;
  p.out = out;
  p.m = 1;
  p.x_type = DType::kF16;
  p.out_type = DType::kF32;
  EXPECT_TRUE(cuda::GemvQuantApplies(p));
  p.m = 16;
  EXPECT_TRUE(cuda::GemvQuantApplies(p));
  p.m = 17;
  EXPECT_FALSE(cuda::GemvQuantApplies(p));
  p.m = 0;
  EXPECT_FALSE(cuda::GemvQuantApplies(p));
  p.m = 1;
  p.w.data = w + 1;  // odd address
  EXPECT_FALSE(cuda::GemvQuantApplies(p));
  p.w.data = w + 2;
  EXPECT_TRUE(cuda::GemvQuantApplies(p));
  p.w.row_bytes = 160;  // not Q4_K's
  EXPECT_FALSE(cuda::GemvQuantApplies(p));
  p.w = {GgmlType::kF16, 2, 256, 512, w};
  EXPECT_FALSE(cuda::GemvQuantApplies(p));
  p.w = {GgmlType::kQ4_0, 2, 96, 54, w};  // k a multiple of 32, not of 256
  EXPECT_TRUE(cuda::GemvQuantApplies(p));
  p.x_stride = 64;  // shorter than a row
  EXPECT_FALSE(cuda::GemvQuantApplies(p));
}

}  // namespace
}  // namespace forge
