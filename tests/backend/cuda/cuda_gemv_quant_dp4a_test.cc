// gemv_quant_dp4a_cuda's own behaviour (one F16 activation row as two int8 terms, DP4A; its results
// against the reference in each of its formats and shapes, with outlier activations: the op
// harness, op_harness_cuda_test.cc): a NaN activation reaching every row, which matmuls it takes,
// and that the backend's one-stream matmul in those formats is this kernel, bit for bit.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "backend/cpu/matmul/matmul.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_test_buffers.h"
#include "backend/cuda/matmul/gemv_quant_dp4a.h"
#include "backend/cuda/quant_test_data.h"
#include "base/half.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::DevBuf;
using testing::QuantMatrix;
using testing::ValueAt;

// x [rows][stride], F16-exact: normal values, one in 61 scaled by 30 (outliers that set their
// block's int8 scale), rounded to F16.
std::vector<float> HalfActivations(int64_t rows, int64_t k, int64_t stride, uint64_t seed) {
  std::vector<float> x = testing::Activations(rows, k, stride, /*half_exact=*/false, seed);
  for (int64_t i = 0; i < rows * stride; ++i) {
    const float v = i % 61 == 7 ? 30.0f * x[i] : x[i];
    x[i] = F16ToF32(F32ToF16(v));
  }
  return x;
}

// A NaN activation reaches every output (it takes part in every row's sum), in every format:
// quantizing x to int8 must not turn it into a finite value.
TEST(CudaGemvQuantDp4aTest, NanActivationGivesNanRows) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  for (GgmlType t :
       {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ2_K, GgmlType::kQ3_K,
        GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1}) {
    const QuantMatrix q = testing::QuantizedRandom(t, 40, 2048, 76);
    SCOPED_TRACE(q.what);
    DevBuf w(q.bytes.data(), q.bytes.size());
    std::vector<float> x = HalfActivations(1, q.k, q.k, 77);
    x[1000] = std::nanf("");
    const std::vector<uint8_t> xb = testing::ToBytes(x, DType::kF16);
    DevBuf xd(xb.data(), xb.size());
    DevBuf out(q.n * 4);
    MatmulParams p;
    p.x = xd.data();
    p.w = {q.type, q.n, q.k, q.row_bytes, w.data()};
    p.out = out.data();
    p.m = 1;
    p.x_type = DType::kF16;
    p.out_type = DType::kF32;
    ASSERT_TRUE(cuda::gemv_quant_dp4a_cuda(p, nullptr).ok());
    bool guards = false;
    const std::vector<uint8_t> ob = out.Download(&guards);
    EXPECT_TRUE(guards);
    int finite = 0;
    for (int64_t r = 0; r < q.n; ++r) finite += std::isfinite(ValueAt(ob, r, DType::kF32));
    EXPECT_EQ(finite, 0);
  }
}

TEST(CudaGemvQuantDp4aTest, TakesItsFormatsWithOneF16ActivationRow) {
  alignas(16) static uint8_t w[4 * 210 * 8], x[2048 * 2], out[16 * 4 * 4];
  MatmulParams p{x, 0, WeightView{GgmlType::kQ4_K, 4, 512, 2 * 144, w}, nullptr, out, 0, 1};
  p.x_type = DType::kF16;
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p));
  p.m = 2;
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "2 rows";
  p.m = 1;
  p.x_type = DType::kF32;
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "F32 x";
  p.x_type = DType::kF16;
  p.out_type = DType::kBF16;
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "BF16 out";
  p.out_type = DType::kF32;
  p.x = x + 2;
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "unaligned x";
  p.x = x;
  p.w.data = w + 16 + 8;
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "unaligned weights";
  p.w = WeightView{GgmlType::kQ5_K, 4, 512, 2 * 176, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q5_K";
  p.w = WeightView{GgmlType::kQ5_K, 4, 8192, 32 * 176, w};
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "Q5_K, k = 8192";
  p.w = WeightView{GgmlType::kQ2_K, 4, 1024, 4 * 84, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q2_K";
  p.w = WeightView{GgmlType::kQ2_K, 4, 512, 2 * 84, w};
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "Q2_K, k not a multiple of 1024";
  p.w = WeightView{GgmlType::kQ2_K, 4, 1024, 4 * 84 + 16, w};
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "Q2_K, rows not as stored";
  p.w = WeightView{GgmlType::kQ3_K, 4, 2048, 8 * 110, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q3_K, one chunk";
  p.w = WeightView{GgmlType::kQ3_K, 4, 1024, 4 * 110, w};
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "Q3_K, part of a chunk";
  p.w = WeightView{GgmlType::kQ6_K, 4, 2048, 8 * 210, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q6_K, one chunk";
  p.w = WeightView{GgmlType::kQ6_K, 4, 512, 2 * 210, w};
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "Q6_K, part of a chunk";
  p.w = WeightView{GgmlType::kQ8_0, 4, 512, 16 * 34, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q8_0";
  p.w = WeightView{GgmlType::kQ4_0, 4, 512, 16 * 18, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q4_0";
  p.w = WeightView{GgmlType::kQ4_0, 4, 96, 3 * 18, w};
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "Q4_0, k not a multiple of 256";
  p.w = WeightView{GgmlType::kQ4_1, 4, 512, 16 * 20, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q4_1";
  p.w = WeightView{GgmlType::kQ5_0, 4, 512, 16 * 22, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q5_0";
  p.w = WeightView{GgmlType::kQ5_1, 4, 512, 16 * 24, w};
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p)) << "Q5_1";
  p.w = WeightView{GgmlType::kQ5_1, 4, 96, 3 * 24, w};
  EXPECT_FALSE(cuda::GemvQuantDp4aApplies(p)) << "Q5_1, k not a multiple of 256";
}

// The backend's Matmul on each of the formats with one F16 activation row gives exactly this
// kernel's bits.
TEST(CudaGemvQuantDp4aTest, BackendOneStreamMatmulIsThisKernel) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  for (GgmlType t :
       {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ2_K, GgmlType::kQ3_K,
        GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1}) {
    const QuantMatrix q = testing::RandomBlocks(t, 300, 2048, 69);
    SCOPED_TRACE(q.what);
    DevBuf w(q.bytes.data(), q.bytes.size());
    const std::vector<float> x = HalfActivations(1, q.k, q.k, 70);
    const std::vector<uint8_t> xb = testing::ToBytes(x, DType::kF16);
    DevBuf xd(xb.data(), xb.size());
    DevBuf direct(q.n * 4), via(q.n * 4);
    MatmulParams p;
    p.x = xd.data();
    p.w = {q.type, q.n, q.k, q.row_bytes, w.data()};
    p.out = direct.data();
    p.m = 1;
    p.x_type = DType::kF16;
    p.out_type = DType::kF32;
    ASSERT_TRUE(cuda::gemv_quant_dp4a_cuda(p, nullptr).ok());
    p.out = via.data();
    const Status st = be.Matmul(p);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(be.Synchronize().ok());
    bool g1 = false, g2 = false;
    const std::vector<uint8_t> a = direct.Download(&g1), b = via.Download(&g2);
    EXPECT_TRUE(g1 && g2);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), q.n * 4));
  }
}

}  // namespace
}  // namespace forge
