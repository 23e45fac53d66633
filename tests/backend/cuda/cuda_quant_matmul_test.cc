// The quantized-weight kernels on the GPU against the CPU reference, every block format:
// gemv_quant_cuda (1, 2, 3, 8, 16 activation rows; odd n; k of one tile, several, a partial legacy
// tile, 14336; x F32, F16, BF16; split-K clusters; a view at an unaligned row; strides) against
// matmul_ref on the same dequantized weights; dequantize_rows_cuda and the embedding gather bit for
// bit against DequantizeRow; and the prefill path (17, 64, 512 rows: dequantize, then cuBLAS).
// Outputs are poisoned, followed by guard bytes that must survive.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/matmul/matmul.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_test_buffers.h"
#include "backend/cuda/matmul/dequantize_cuda.h"
#include "backend/cuda/matmul/gemv_quant_cuda.h"
#include "backend/cuda/matmul/gemv_quant_reg.h"
#include "backend/cuda/quant_test_data.h"
#include "base/half.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::QuantMatrix;

constexpr double kF32Bound = 1e-5;
constexpr double kHalfBound = 1e-2;

using testing::Activations;
using testing::DevBuf;
using testing::HalfBits;
using testing::ToBytes;
using testing::ValueAt;

struct GemvRun {
  const DevBuf* w = nullptr;
  int64_t first_row = 0, n = 0;  // the view: rows [first_row, first_row + n)
  const std::vector<float>* x = nullptr;
  int64_t x_stride = 0, out_stride = 0;
  const float* bias = nullptr;  // device
  int m = 0;
  DType x_type = DType::kF32, out_type = DType::kF32;
};

// Runs gemv_quant_cuda and returns out[c][r] (c < m, r < n) widened to F32.
std::vector<float> RunGemv(const QuantMatrix& q, const GemvRun& g) {
  const std::vector<uint8_t> xb = ToBytes(*g.x, g.x_type);
  DevBuf x(xb.data(), xb.size());
  const int64_t os = g.out_stride ? g.out_stride : g.n;
  const size_t out_elems = (g.m - 1) * os + g.n;
  DevBuf out(out_elems * DTypeSize(g.out_type));
  MatmulParams p;
  p.x = x.data();
  p.x_stride = g.x_stride;
  p.w = WeightView{q.type, q.n, q.k, q.row_bytes, g.w->data()}.Rows(g.first_row, g.n);
  p.bias = g.bias;
  p.out = out.data();
  p.out_stride = g.out_stride;
  p.m = g.m;
  p.x_type = g.x_type;
  p.out_type = g.out_type;
  EXPECT_TRUE(cuda::GemvQuantApplies(p));
  const Status st = cuda::gemv_quant_cuda(p, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
  bool guards = false;
  const std::vector<uint8_t> ob = out.Download(&guards);
  EXPECT_TRUE(guards) << "write past the output";
  std::vector<float> got(g.m * g.n);
  for (int c = 0; c < g.m; ++c) {
    for (int64_t r = 0; r < g.n; ++r) got[c * g.n + r] = ValueAt(ob, c * os + r, g.out_type);
  }
  return got;
}

// ref [rows][ref_stride] restricted to rows < m and columns [first, first + n).
std::vector<float> Slice(const std::vector<float>& ref, int64_t ref_stride, int m, int64_t first,
                         int64_t n) {
  std::vector<float> s(m * n);
  for (int c = 0; c < m; ++c) {
    for (int64_t r = 0; r < n; ++r) s[c * n + r] = ref[c * ref_stride + first + r];
  }
  return s;
}

class CudaQuantMatmulTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  void SetUp() override { FORGE_REQUIRE_GPU_OR_SKIP(); }

  std::vector<QuantMatrix> GemvMatrices() const {
    const GgmlType t = GetParam();
    std::vector<QuantMatrix> ms;
    if (testing::IsKQuantType(t)) {
      ms.push_back(testing::RandomBlocks(t, 33, 256, 1));
      ms.push_back(testing::RandomBlocks(t, 33, 768, 2));
      ms.push_back(testing::QuantizedRandom(t, 7, 14336, 3));
      ms.push_back(testing::RandomBlocks(t, 4097, 4096, 4));
    } else {
      ms.push_back(testing::RandomBlocks(t, 33, 256, 1));
      ms.push_back(testing::RandomBlocks(t, 33, 96, 2));  // k = 3 blocks: one partial tile
      ms.push_back(testing::QuantizedRandom(t, 129, 800, 5));
      ms.push_back(testing::QuantizedRandom(t, 7, 14336, 3));
      ms.push_back(testing::RandomBlocks(t, 4097, 4096, 4));
    }
    QuantMatrix o;
    if (testing::OracleMatrix(t, "blk.0.ffn_down.weight", &o)) ms.push_back(std::move(o));
    return ms;
  }
};

TEST_P(CudaQuantMatmulTest, GemvMatchesReference) {
  for (const QuantMatrix& q : GemvMatrices()) {
    SCOPED_TRACE(q.what);
    DevBuf w(q.bytes.data(), q.bytes.size());
    const std::vector<float> bias = testing::RandomVector(q.n, 9);
    DevBuf bias_dev(bias.data(), bias.size() * 4);
    const std::vector<float> x32 = Activations(16, q.k, q.k, false, 10);
    const std::vector<float> xh = Activations(16, q.k, q.k, true, 11);
    const std::vector<float> ref32 = testing::QuantReference(q, x32, 16, q.k, bias.data());
    const std::vector<float> refh = testing::QuantReference(q, xh, 16, q.k, bias.data());
    struct Combo {
      DType x, out;
      double bound;
    };
    const Combo combos[] = {{DType::kF32, DType::kF32, kF32Bound},
                            {DType::kF16, DType::kF32, kF32Bound},
                            {DType::kF16, DType::kF16, kHalfBound},
                            {DType::kBF16, DType::kF32, kF32Bound},
                            {DType::kBF16, DType::kBF16, kHalfBound}};
    for (int m : {1, 2, 3, 8, 16}) {
      for (const Combo& cb : combos) {
        SCOPED_TRACE("m=" + std::to_string(m) + " x " + DTypeName(cb.x) + " out " +
                     DTypeName(cb.out));
        GemvRun g;
        g.w = &w;
        g.n = q.n;
        g.x = cb.x == DType::kF32 ? &x32 : &xh;
        g.x_stride = q.k;
        g.bias = reinterpret_cast<const float*>(bias_dev.data());
        g.m = m;
        g.x_type = cb.x;
        g.out_type = cb.out;
        const std::vector<float> got = RunGemv(q, g);
        const std::vector<float> want = Slice(cb.x == DType::kF32 ? ref32 : refh, q.n, m, 0, q.n);
        EXPECT_NORMALIZED_NEAR(want.data(), got.data(), m * q.n, cb.bound);
      }
    }
  }
}

// A view starting at row 1 (not 16-byte aligned for most formats), strides past the row ends,
// no bias.
TEST_P(CudaQuantMatmulTest, GemvViewsAndStrides) {
  const GgmlType t = GetParam();
  const QuantMatrix q = testing::RandomBlocks(t, 40, testing::IsKQuantType(t) ? 256 : 96, 21);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const int64_t xs = q.k + 40;
  const std::vector<float> xh = Activations(5, q.k, xs, true, 22);
  const std::vector<float> ref = testing::QuantReference(q, xh, 5, xs, nullptr);
  for (DType xt : {DType::kF16, DType::kBF16}) {
    GemvRun g;
    g.w = &w;
    g.first_row = 1;
    g.n = q.n - 1;
    g.x = &xh;
    g.x_stride = xs;
    g.out_stride = q.n + 3;
    g.m = 5;
    g.x_type = xt;
    g.out_type = DType::kF32;
    const std::vector<float> got = RunGemv(q, g);
    const std::vector<float> want = Slice(ref, q.n, 5, 1, q.n - 1);
    EXPECT_NORMALIZED_NEAR(want.data(), got.data(), 5 * (q.n - 1), kF32Bound) << DTypeName(xt);
  }
}

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

// More than 16 activation rows: the weights dequantized to a scratch F16 (or F32) matrix, then
// the CUDA backend's matmul of that matrix (cuBLAS), as the backend does for prefill.
TEST_P(CudaQuantMatmulTest, PrefillPathMatchesReference) {
  const GgmlType t = GetParam();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  std::vector<QuantMatrix> ms;
  ms.push_back(testing::RandomBlocks(t, 33, testing::IsKQuantType(t) ? 768 : 800, 51));
  QuantMatrix o;
  if (testing::OracleMatrix(t, "blk.0.ffn_down.weight", &o)) ms.push_back(std::move(o));
  for (const QuantMatrix& q : ms) {
    SCOPED_TRACE(q.what);
    DevBuf w(q.bytes.data(), q.bytes.size());
    for (int m : {17, 64, 512}) {
      for (DType dt : {DType::kF16, DType::kF32}) {
        if (dt == DType::kF32 && m != 17) continue;
        SCOPED_TRACE("m=" + std::to_string(m) + " " + DTypeName(dt));
        const std::vector<float> x = Activations(m, q.k, q.k, dt != DType::kF32, 52);
        const std::vector<float> ref = testing::QuantReference(q, x, m, q.k, nullptr);
        DevBuf scratch(q.n * q.k * DTypeSize(dt));
        ASSERT_TRUE(
            cuda::dequantize_rows_cuda(w.data(), q.type, q.n, q.k, scratch.data(), dt, nullptr)
                .ok());
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<uint8_t> xb = ToBytes(x, dt);
        DevBuf xd(xb.data(), xb.size());
        DevBuf out(m * q.n * 4);
        MatmulParams p;
        p.x = xd.data();
        p.w = {dt == DType::kF16 ? GgmlType::kF16 : GgmlType::kF32, q.n, q.k,
               q.k * static_cast<int64_t>(DTypeSize(dt)), scratch.data()};
        p.out = out.data();
        p.m = m;
        p.x_type = dt;
        p.out_type = DType::kF32;
        const Status st = be.Matmul(p);
        ASSERT_TRUE(st.ok()) << st.ToString();
        ASSERT_TRUE(be.Synchronize().ok());
        bool guards = false;
        const std::vector<uint8_t> ob = out.Download(&guards);
        EXPECT_TRUE(guards);
        std::vector<float> got(m * q.n);
        std::memcpy(got.data(), ob.data(), got.size() * 4);
        EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), m * q.n,
                               dt == DType::kF16 ? kHalfBound : kF32Bound);
      }
    }
  }
}

// The register-decoding kernel for every tile count (1, 2, 4, 8 tiles of 8 activation rows):
// Q4_K and Q5_K weights (random blocks, 72 rows: a partial 16-row group; and llama.cpp's
// quantized ffn_down where present) against the CPU reference, with a bias and F32 or F16 out;
// and each output row bit for bit the same whatever m (row 0 against m = 1, row 8 against m = 9).
TEST(CudaGemvQuantRegTest, UpTo32RowsMatchTheReferenceAndRowsDoNotDependOnM) {
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
      const std::vector<float> x = Activations(32, q.k, q.k, true, 63);
      const std::vector<float> ref = testing::QuantReference(q, x, 32, q.k, bias.data());
      const std::vector<uint8_t> xb = ToBytes(x, DType::kF16);
      DevBuf xd(xb.data(), xb.size());
      std::vector<std::vector<float>> rows0(2);  // rows 0 and 8 at their first m
      for (int m : {1, 8, 9, 16, 17, 32}) {
        for (DType out_type : {DType::kF32, DType::kF16}) {
          SCOPED_TRACE("m=" + std::to_string(m) + " out " + DTypeName(out_type));
          DevBuf out(m * q.n * DTypeSize(out_type));
          MatmulParams p;
          p.x = xd.data();
          p.w = {q.type, q.n, q.k, q.row_bytes, w.data()};
          p.bias = reinterpret_cast<const float*>(bias_dev.data());
          p.out = out.data();
          p.m = m;
          p.x_type = DType::kF16;
          p.out_type = out_type;
          ASSERT_TRUE(cuda::GemvQuantRegApplies(p));
          const Status st = cuda::gemv_quant_reg_cuda(p, nullptr);
          ASSERT_TRUE(st.ok()) << st.ToString();
          bool guards = false;
          const std::vector<uint8_t> ob = out.Download(&guards);
          EXPECT_TRUE(guards) << "write past the output";
          std::vector<float> got(m * q.n);
          for (int64_t i = 0; i < m * q.n; ++i) got[i] = ValueAt(ob, i, out_type);
          const std::vector<float> want = Slice(ref, q.n, m, 0, q.n);
          EXPECT_NORMALIZED_NEAR(want.data(), got.data(), m * q.n,
                                 out_type == DType::kF32 ? kF32Bound : kHalfBound);
          if (out_type != DType::kF32) continue;
          for (int r = 0; r < 2; ++r) {
            const int row = 8 * r;
            if (row >= m) continue;
            const std::vector<float> mine(got.begin() + row * q.n, got.begin() + (row + 1) * q.n);
            if (rows0[r].empty()) {
              rows0[r] = mine;
              continue;
            }
            int differ = 0;
            for (int64_t i = 0; i < q.n; ++i) {
              differ += std::memcmp(&mine[i], &rows0[r][i], 4) != 0;
            }
            EXPECT_EQ(differ, 0) << "row " << row << " differs from its first m";
          }
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
