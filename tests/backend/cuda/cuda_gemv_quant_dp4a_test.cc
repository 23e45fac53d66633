// gemv_quant_dp4a_cuda (Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 weights, one
// F16 activation row as two int8 terms, DP4A) against the CPU reference on the same dequantized
// weights and the same F16-rounded activations: a partial chunk (k of 3 super-blocks, Q2_K 4),
// one chunk (Q6_K and Q3_K, k = 2048), long rows (k = 14336, 7 chunks), several row groups per
// warp and a row count no group size divides, narrow matrices whose chunks several warps split,
// activations with outliers, bias or none, F32 and F16 out; a NaN activation reaching every row;
// which matmuls it takes; and that the backend's one-stream matmul in those formats is this kernel.
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
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::DevBuf;
using testing::QuantMatrix;
using testing::ValueAt;

constexpr double kHalfBound = 1e-2;  // DESIGN.md: F16 activations

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

std::vector<QuantMatrix> Matrices() {
  std::vector<QuantMatrix> ms;
  ms.push_back(testing::RandomBlocks(GgmlType::kQ4_K, 72, 768, 61));  // 3 super-blocks a row
  ms.push_back(testing::QuantizedRandom(GgmlType::kQ4_K, 9, 14336, 62));
  ms.push_back(testing::RandomBlocks(GgmlType::kQ4_K, 5003, 1280, 63));  // > 1 row group a warp
  ms.push_back(testing::RandomBlocks(GgmlType::kQ6_K, 71, 2048, 66));    // one chunk a row
  ms.push_back(testing::QuantizedRandom(GgmlType::kQ6_K, 9, 14336, 67));
  ms.push_back(testing::RandomBlocks(GgmlType::kQ6_K, 5003, 4096, 68));
  // Narrow: warps split each row group's chunks (2 ways here, 4 for the 9-row matrices).
  ms.push_back(testing::RandomBlocks(GgmlType::kQ4_K, 1000, 4096, 74));
  ms.push_back(testing::RandomBlocks(GgmlType::kQ6_K, 1000, 4096, 75));
  // Q2_K: k a multiple of 1024 (a partial chunk of 4 super-blocks); Q3_K: of 2048, as Q6_K.
  for (GgmlType t : {GgmlType::kQ2_K, GgmlType::kQ3_K}) {
    const int64_t k0 = t == GgmlType::kQ2_K ? 1024 : 2048;
    ms.push_back(testing::RandomBlocks(t, 72, k0, 81));
    ms.push_back(testing::QuantizedRandom(t, 9, 14336, 82));
    ms.push_back(testing::RandomBlocks(t, 5003, t == GgmlType::kQ2_K ? 3072 : 4096, 83));
    ms.push_back(testing::RandomBlocks(t, 1000, 4096, 84));
  }
  for (GgmlType t : {GgmlType::kQ5_K, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1,
                     GgmlType::kQ5_0, GgmlType::kQ5_1}) {
    ms.push_back(testing::RandomBlocks(t, 72, 768, 71));  // a partial chunk
    // Q5_K is taken below k = 8192 only.
    ms.push_back(testing::QuantizedRandom(t, 9, t == GgmlType::kQ5_K ? 4096 : 14336, 72));
    ms.push_back(testing::RandomBlocks(t, 5003, 1280, 73));
  }
  for (GgmlType t :
       {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ2_K, GgmlType::kQ3_K,
        GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1}) {
    QuantMatrix o;
    if (testing::OracleMatrix(t, "blk.0.ffn_down.weight", &o) && o.k % 2048 == 0 &&
        (t != GgmlType::kQ5_K || o.k < 8192)) {
      ms.push_back(std::move(o));
    }
  }
  return ms;
}

TEST(CudaGemvQuantDp4aTest, MatchesTheReference) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  for (const QuantMatrix& q : Matrices()) {
    SCOPED_TRACE(q.what);
    DevBuf w(q.bytes.data(), q.bytes.size());
    const std::vector<float> bias = testing::RandomVector(q.n, 64);
    DevBuf bias_dev(bias.data(), bias.size() * 4);
    const std::vector<float> x = HalfActivations(1, q.k, q.k, 65);
    const std::vector<uint8_t> xb = testing::ToBytes(x, DType::kF16);
    DevBuf xd(xb.data(), xb.size());
    for (bool with_bias : {true, false}) {
      const std::vector<float> ref =
          testing::QuantReference(q, x, 1, q.k, with_bias ? bias.data() : nullptr);
      for (DType out_type : {DType::kF32, DType::kF16}) {
        SCOPED_TRACE(std::string("out ") + DTypeName(out_type) + (with_bias ? " bias" : ""));
        DevBuf out(q.n * DTypeSize(out_type));
        MatmulParams p;
        p.x = xd.data();
        p.w = {q.type, q.n, q.k, q.row_bytes, w.data()};
        p.bias = with_bias ? reinterpret_cast<const float*>(bias_dev.data()) : nullptr;
        p.out = out.data();
        p.m = 1;
        p.x_type = DType::kF16;
        p.out_type = out_type;
        ASSERT_TRUE(cuda::GemvQuantDp4aApplies(p));
        const Status st = cuda::gemv_quant_dp4a_cuda(p, nullptr);
        ASSERT_TRUE(st.ok()) << st.ToString();
        bool guards = false;
        const std::vector<uint8_t> ob = out.Download(&guards);
        EXPECT_TRUE(guards) << "write past the output";
        std::vector<float> got(q.n);
        for (int64_t r = 0; r < q.n; ++r) got[r] = ValueAt(ob, r, out_type);
        EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), q.n, kHalfBound);
        // The two int8 terms carry the activations to ~1e-5 of their blocks' maxima: F32 out
        // stays far inside the bound (a lost term or scale would not).
        if (out_type == DType::kF32) {
          EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), q.n, 1e-4);
        }
      }
    }
  }
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
