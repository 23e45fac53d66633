// The quantized-weight kernels' own behaviour on the GPU, every block format (their results
// against the reference, for every variant, format and row count: the op harness,
// op_harness_cuda_test.cc): dequantize_rows_cuda and the embedding gather bit for bit against
// DequantizeRow (halves rounded, unaligned outputs, ids outside the table giving NaN rows); the
// register-decoding GEMV's rows not depending on m; and which matmuls that GEMV takes. Outputs are
// poisoned, followed by guard bytes that must survive.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/matmul/matmul.h"
#include "backend/cuda/cuda_test_buffers.h"
#include "backend/cuda/matmul/dequantize_cuda.h"
#include "backend/cuda/matmul/gemv_quant_reg.h"
#include "backend/cuda/quant_test_data.h"
#include "base/half.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::DevBuf;
using testing::HalfBits;
using testing::QuantMatrix;
using testing::ToBytes;
using testing::ValueAt;

class CudaQuantMatmulTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  void SetUp() override { FORGE_REQUIRE_GPU_OR_SKIP(); }
};

std::vector<QuantMatrix> DequantMatrices(GgmlType t) {
  const bool kq = testing::IsKQuantType(t);
  std::vector<QuantMatrix> ms;
  ms.push_back(testing::RandomBlocks(t, 37, kq ? 768 : 800, 31));
  ms.push_back(testing::QuantizedRandom(t, 5, kq ? 256 : 96, 32));
  QuantMatrix o;
  if (testing::OracleMatrix(t, "blk.0.ffn_down.weight", &o)) ms.push_back(std::move(o));
  return ms;
}

// out (of type t) against the CPU values: F32 bit for bit, halves the CPU values rounded.
void ExpectBitExact(const std::vector<uint8_t>& out, size_t offset, const float* want, size_t n,
                    DType t) {
  int bad = 0;
  for (size_t i = 0; i < n; ++i) {
    bool same;
    if (t == DType::kF32) {
      uint32_t g;
      std::memcpy(&g, out.data() + 4 * (offset + i), 4);
      same = g == FloatBits(want[i]);
    } else {
      uint16_t g;
      std::memcpy(&g, out.data() + 2 * (offset + i), 2);
      same = g == HalfBits(want[i], t);
    }
    if (!same && bad++ < 5) {
      ADD_FAILURE() << "element " << i << ": got " << ValueAt(out, offset + i, t) << ", want "
                    << want[i] << " (" << DTypeName(t) << ")";
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST_P(CudaQuantMatmulTest, DequantizeRowsBitExact) {
  for (const QuantMatrix& q : DequantMatrices(GetParam())) {
    SCOPED_TRACE(q.what);
    DevBuf w(q.bytes.data(), q.bytes.size());
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (size_t shift : {size_t{0}, size_t{1}}) {  // 1: an output not 16-byte aligned
        const size_t n = q.n * q.k;
        DevBuf out((n + shift) * DTypeSize(t));
        const Status st = cuda::dequantize_rows_cuda(w.data(), q.type, q.n, q.k,
                                                     out.data() + shift * DTypeSize(t), t, nullptr);
        ASSERT_TRUE(st.ok()) << st.ToString();
        bool guards = false;
        const std::vector<uint8_t> got = out.Download(&guards);
        EXPECT_TRUE(guards);
        ExpectBitExact(got, shift, q.values.data(), n, t);
      }
    }
  }
}

TEST_P(CudaQuantMatmulTest, GatherRowsBitExact) {
  const GgmlType t = GetParam();
  QuantMatrix q;
  if (!testing::OracleMatrix(t, "token_embd.weight", &q)) q = testing::RandomBlocks(t, 50, 256, 41);
  SCOPED_TRACE(q.what);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const int64_t rows = q.n;
  const std::vector<int32_t> ids = {0,  static_cast<int32_t>(rows - 1), 3, 3, 17,
                                    -1, static_cast<int32_t>(rows)};
  DevBuf ids_dev(ids.data(), ids.size() * 4);
  for (DType ot : {DType::kF32, DType::kF16}) {
    const size_t n = ids.size() * q.k;
    DevBuf out(n * DTypeSize(ot));
    const Status st = cuda::dequantize_gather_rows_cuda(
        w.data(), q.type, q.k, rows, reinterpret_cast<const int32_t*>(ids_dev.data()),
        static_cast<int64_t>(ids.size()), out.data(), ot, nullptr);
    ASSERT_TRUE(st.ok()) << st.ToString();
    bool guards = false;
    const std::vector<uint8_t> got = out.Download(&guards);
    EXPECT_TRUE(guards);
    for (size_t i = 0; i < ids.size(); ++i) {
      SCOPED_TRACE("id " + std::to_string(ids[i]) + " " + DTypeName(ot));
      if (ids[i] < 0 || ids[i] >= rows) {
        for (int64_t c = 0; c < q.k; ++c) EXPECT_TRUE(std::isnan(ValueAt(got, i * q.k + c, ot)));
      } else {
        ExpectBitExact(got, i * q.k, q.values.data() + ids[i] * q.k, q.k, ot);
      }
    }
  }
}

// The register-decoding kernel for every tile count (1, 2, 4, 8 tiles of 8 activation rows), on
// Q4_K and Q5_K weights (random blocks, 72 rows: a partial 16-row group; and llama.cpp's quantized
// ffn_down where present), with a bias: each output row is bit for bit the same whatever m (row 0
// against m = 1, row 8 against m = 9).
TEST(CudaGemvQuantRegTest, RowsDoNotDependOnM) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  for (GgmlType t : {GgmlType::kQ4_K, GgmlType::kQ5_K}) {
    std::vector<QuantMatrix> ms;
    ms.push_back(testing::RandomBlocks(t, 72, 768, 61));
    QuantMatrix o;
    if (testing::OracleMatrix(t, "blk.0.ffn_down.weight", &o)) ms.push_back(std::move(o));
    for (const QuantMatrix& q : ms) {
      SCOPED_TRACE(q.what);
      DevBuf w(q.bytes.data(), q.bytes.size());
      const std::vector<float> bias = testing::RandomVector(q.n, 62);
      DevBuf bias_dev(bias.data(), bias.size() * 4);
      const std::vector<uint8_t> xb =
          ToBytes(testing::Activations(32, q.k, q.k, true, 63), DType::kF16);
      DevBuf xd(xb.data(), xb.size());
      std::vector<std::vector<float>> rows0(2);  // rows 0 and 8 at their first m
      for (int m : {1, 8, 9, 16, 17, 32}) {
        SCOPED_TRACE("m=" + std::to_string(m));
        DevBuf out(m * q.n * 4);
        MatmulParams p;
        p.x = xd.data();
        p.w = {q.type, q.n, q.k, q.row_bytes, w.data()};
        p.bias = reinterpret_cast<const float*>(bias_dev.data());
        p.out = out.data();
        p.m = m;
        p.x_type = DType::kF16;
        p.out_type = DType::kF32;
        ASSERT_TRUE(cuda::GemvQuantRegApplies(p));
        const Status st = cuda::gemv_quant_reg_cuda(p, nullptr);
        ASSERT_TRUE(st.ok()) << st.ToString();
        bool guards = false;
        const std::vector<uint8_t> ob = out.Download(&guards);
        EXPECT_TRUE(guards) << "write past the output";
        for (int r = 0; r < 2; ++r) {
          const int row = 8 * r;
          if (row >= m) continue;
          std::vector<float> mine(q.n);
          std::memcpy(mine.data(), ob.data() + row * q.n * 4, q.n * 4);
          if (rows0[r].empty()) {
            rows0[r] = mine;
            continue;
          }
          EXPECT_EQ(std::memcmp(mine.data(), rows0[r].data(), q.n * 4), 0)
              << "row " << row << " differs from its first m";
        }
      }
    }
  }
}

// Which decode matmuls take the register-decoding kernel (so that the Q4_K / Q5_K cases above,
// F16 x with m <= 32, run it, and the rest the staged kernel): no GPU needed.
TEST(GemvQuantRegDispatchTest, AlignedKQuantsWithF16ActivationsAndUpTo32Rows) {
  alignas(16) static uint8_t w[4 * 176 * 2], x[2 * 512 * 4], out[16 * 4 * 4];
  for (GgmlType t : {GgmlType::kQ4_K, GgmlType::kQ5_K}) {
    SCOPED_TRACE(TypeName(t));
    const int64_t rb = t == GgmlType::kQ4_K ? 2 * 144 : 2 * 176;
    MatmulParams p{x, 0, WeightView{t, 4, 512, rb, w}, nullptr, out, 0, 1};
    p.x_type = DType::kF16;
    for (int64_t m : {1, 2, 3, 8, 9, 16, 17, 32}) {
      p.m = m;
      EXPECT_TRUE(cuda::GemvQuantRegApplies(p)) << m;
    }
    p.m = 33;
    EXPECT_FALSE(cuda::GemvQuantRegApplies(p)) << "33 rows";
    p.m = 1;
    p.x_type = DType::kF32;
    EXPECT_FALSE(cuda::GemvQuantRegApplies(p)) << "F32 x";
    p.x_type = DType::kF16;
    p.out_type = DType::kBF16;
    EXPECT_FALSE(cuda::GemvQuantRegApplies(p)) << "BF16 out";
    p.out_type = DType::kF32;
    p.w.data = w + 2;
    EXPECT_FALSE(cuda::GemvQuantRegApplies(p)) << "unaligned weights";
    p.w.data = w;
    p.x = x + 2;
    EXPECT_FALSE(cuda::GemvQuantRegApplies(p)) << "unaligned x";
  }
  MatmulParams q{x, 0, WeightView{GgmlType::kQ6_K, 4, 512, 2 * 210, w}, nullptr, out, 0, 1};
  q.x_type = DType::kF16;
  EXPECT_FALSE(cuda::GemvQuantRegApplies(q)) << "Q6_K blocks are not 16-byte aligned";
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, CudaQuantMatmulTest,
                         ::testing::ValuesIn(testing::QuantFormats()),
                         [](const auto& info) { return std::string(TypeName(info.param)); });

}  // namespace
}  // namespace forge
