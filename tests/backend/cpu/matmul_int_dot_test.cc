// The CPU matmul's integer dot products (act_quant.h, int_dot.h): the activation planes rebuild x
// to F32-grade accuracy; every instruction-set path this CPU runs (forced through SetCpuIsa)
// equals matmul_ref bit for bit in every block format, for random bytes (every quant pattern,
// both signs of every scale) and quantized values, at block counts below, at and past the 8-block
// batch, for every row count and thread count; and the result equals an independent double dot
// of the dequantized weights (src/quant's dequantizers, checked against llama.cpp's files) with
// the rebuilt activations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "backend/cpu/matmul/act_quant.h"
#include "backend/cpu/matmul/int_dot.h"
#include "backend/cuda/quant_test_data.h"
#include "base/thread_pool.h"
#include "support/op_harness.h"

namespace forge {
namespace {

using testing::QuantFormats;
using testing::QuantMatrix;
using testing::RandomVector;

// x as the planes say: d * sum_p 254^(P-1-p) q_p, in double.
std::vector<double> Rebuilt(const ActRow& r) {
  std::vector<double> x(r.nblocks * r.block);
  for (int64_t b = 0; b < r.nblocks; ++b) {
    for (int i = 0; i < r.block; ++i) {
      double v = 0;
      for (int p = 0; p < kActPlanes; ++p) v = v * kActRadix + r.Q(b, p)[i];
      x[b * r.block + i] = v * r.d[b];
    }
  }
  return x;
}

// Activations with one element in 61 scaled by 30 (a block's absmax far above the rest).
std::vector<float> Activations(int64_t n, uint64_t seed) {
  std::vector<float> x = RandomVector(n, seed);
  for (int64_t i = 5; i < n; i += 61) x[i] *= 30.0f;
  return x;
}

// Restores the active path and the pool size however a test ends.
struct PathGuard {
  ~PathGuard() {
    SetCpuIsa(BestCpuIsa());
    ThreadPool::SetGlobalThreads(0);
  }
};

TEST(ActQuantTest, PlanesRebuildTheBlockToF32Accuracy) {
  for (int block : {32, 256}) {
    const int64_t k = 4 * block;
    std::vector<float> x = Activations(k, block);
    for (int i = 0; i < block; ++i) x[2 * block + i] = 0.0f;  // a zero block
    ActRows rows;
    rows.Resize(1, k, block);
    rows.Quantize(0, x.data());
    const ActRow r = rows.row(0);
    const std::vector<double> back = Rebuilt(r);
    for (int64_t b = 0; b < r.nblocks; ++b) {
      double amax = 0;
      for (int i = 0; i < block; ++i) amax = std::max(amax, std::fabs(double(x[b * block + i])));
      for (int i = 0; i < block; ++i) {
        // One rounding step of the last plane is amax / (127 * 254^2) ~ 1.2e-7 amax.
        EXPECT_LE(std::fabs(back[b * block + i] - x[b * block + i]), 2.5e-7 * amax)
            << "block " << block << " #" << b << " element " << i;
      }
      for (int p = 0; p < kActPlanes; ++p) {
        for (int g = 0; g < block / kActGroup; ++g) {
          int s = 0;
          for (int i = 0; i < kActGroup; ++i) s += r.Q(b, p)[g * kActGroup + i];
          EXPECT_EQ(r.Sums(b, p)[g], s);
          for (int i = 0; i < kActGroup; ++i)
            EXPECT_LE(std::abs(r.Q(b, p)[g * kActGroup + i]), 127);
        }
      }
    }
    EXPECT_EQ(r.d[2], 0.0f);
  }
}

TEST(ActQuantTest, NonFiniteInputMakesTheOutputNaN) {
  const QuantMatrix w = testing::QuantizedRandom(GgmlType::kQ4_0, 3, 64, 5);
  std::vector<float> x = RandomVector(64, 6), out(3);
  x[40] = INFINITY;
  const WeightView v{w.type, w.n, w.k, w.row_bytes, w.bytes.data()};
  ASSERT_TRUE(matmul_cpu({x.data(), 0, v, nullptr, out.data(), 0, 1}).ok());
  for (float o : out) EXPECT_TRUE(std::isnan(o));
}

struct Shape {
  int64_t n, blocks;
};

// Every path this CPU runs, one and three threads, one and several rows: matmul_cpu ==
// matmul_ref.
TEST(MatmulIntDotTest, EveryPathEqualsTheReferenceBitForBit) {
  PathGuard guard;
  std::printf("paths: scalar .. %s\n", CpuIsaName(BestCpuIsa()));
  for (GgmlType t : QuantFormats()) {
    const int64_t block = GetTypeTraits(t).block_elems;
    for (Shape s : {Shape{5, 1}, Shape{13, 3}, Shape{9, 11}}) {
      const int64_t k = s.blocks * block;
      for (bool random_bytes : {true, false}) {
        const QuantMatrix w = random_bytes ? testing::RandomBlocks(t, s.n, k, 17 + s.blocks)
                                           : testing::QuantizedRandom(t, s.n, k, 17 + s.blocks);
        const WeightView v{w.type, w.n, w.k, w.row_bytes, w.bytes.data()};
        const int64_t m = 7;
        const std::vector<float> x = Activations(m * k, 100 + s.n), bias = RandomVector(s.n, 3);
        std::vector<float> want(m * s.n);
        ASSERT_TRUE(matmul_ref({x.data(), 0, v, bias.data(), want.data(), 0, m}).ok());
        for (int isa = 0; isa <= static_cast<int>(BestCpuIsa()); ++isa) {
          SetCpuIsa(static_cast<CpuIsa>(isa));
          for (int threads : {1, 3}) {
            ThreadPool::SetGlobalThreads(threads);
            for (int64_t rows : {int64_t{1}, m}) {
              std::vector<float> got(rows * s.n, NAN);
              ASSERT_TRUE(matmul_cpu({x.data(), 0, v, bias.data(), got.data(), 0, rows}).ok());
              EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4))
                  << w.what << ": " << CpuIsaName(static_cast<CpuIsa>(isa)) << ", " << threads
                  << " threads, m=" << rows;
            }
          }
        }
      }
    }
  }
}

// The integer result against a double dot of the dequantized weights with the rebuilt
// activations (independent of the kernels' unpacking), and within DESIGN's F32 bound of the
// plain F32 product.
TEST(MatmulIntDotTest, EqualsTheDequantizedProduct) {
  for (GgmlType t : QuantFormats()) {
    const int64_t block = GetTypeTraits(t).block_elems, k = 9 * block, n = 11;
    const QuantMatrix w = testing::RandomBlocks(t, n, k, 91);
    const WeightView v{w.type, w.n, w.k, w.row_bytes, w.bytes.data()};
    const std::vector<float> x = Activations(k, 92);
    std::vector<float> got(n);
    ASSERT_TRUE(matmul_cpu({x.data(), 0, v, nullptr, got.data(), 0, 1}).ok());
    ActRows rows;
    rows.Resize(1, k, static_cast<int>(block));
    rows.Quantize(0, x.data());
    const std::vector<double> xq = Rebuilt(rows.row(0));
    std::vector<float> f32(n);
    double max_ref = 0, max_diff = 0;
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0, plain = 0;
      for (int64_t c = 0; c < k; ++c) {
        exact += w.values[j * k + c] * xq[c];
        magnitude += std::fabs(w.values[j * k + c] * xq[c]);
        plain += double(w.values[j * k + c]) * x[c];
      }
      // The float tail rounds about once per block and once per accumulation step.
      EXPECT_LE(std::fabs(got[j] - exact), 1e-6 * magnitude) << w.what << " row " << j;
      max_ref = std::max(max_ref, std::fabs(plain));
      max_diff = std::max(max_diff, std::fabs(got[j] - plain));
    }
    EXPECT_LE(max_diff, 1e-5 * max_ref) << w.what << ": against the F32 activations";
  }
}

TEST(MatmulIntDotTest, RowsDoNotDependOnTheBatch) {
  for (GgmlType t : QuantFormats()) {
    const int64_t k = 2 * GetTypeTraits(t).block_elems, n = 21, m = 9;
    const QuantMatrix w = testing::QuantizedRandom(t, n, k, 33);
    const WeightView v{w.type, w.n, w.k, w.row_bytes, w.bytes.data()};
    const std::vector<float> x = Activations(m * k, 34);
    std::vector<float> all(m * n), one(n);
    ASSERT_TRUE(matmul_cpu({x.data(), 0, v, nullptr, all.data(), 0, m}).ok());
    for (int64_t i = 0; i < m; ++i) {
      ASSERT_TRUE(matmul_cpu({x.data() + i * k, 0, v, nullptr, one.data(), 0, 1}).ok());
      EXPECT_EQ(0, std::memcmp(one.data(), all.data() + i * n, n * 4)) << w.what << " row " << i;
    }
  }
}

}  // namespace
}  // namespace forge
