// The tensor-core quantized matmul for decode batches (gemm_quant_mma_cuda, Q4_K and Q6_K): its own
// behaviour (its results against the reference at every row count and column tile: the op harness,
// op_harness_cuda_test.cc). On the host: which matmuls it takes and which the CUDA backend routes
// to it. On the GPU, both formats: k split over 1 to 8 CTAs of a cluster or over CTAs adding
// through a workspace (the same bits), strided activations and outputs, the split it chooses,
// rows that do not depend on the batch, and the backend's Matmul giving the kernel's bits where it
// prefers it; against a reference in double over the CPU's F32 dequantized weights. Outputs are
// poisoned (NaN) and followed by guard bytes; every output must be written and nothing past them.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_test_buffers.h"
#include "backend/cuda/matmul/gemm_quant_mma.h"
#include "backend/cuda/matmul/matmul_dispatch.h"
#include "backend/cuda/quant_test_data.h"
#include "base/half.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::Activations;
using testing::DevBuf;
using testing::QuantMatrix;
using testing::ToBytes;
using testing::ValueAt;

constexpr double kHalfBound = 1e-2;  // DESIGN.md: F16/BF16 activations

// ---- Host: which matmuls the kernel takes. ----

TEST(GemmQuantMmaAppliesTest, TakesQ4KAndQ6KHalfActivationsUpToTheRowLimit) {
  alignas(16) static uint8_t w[64 * 8 * 210 + 16], x[300 * 512 * 2 + 64], out[300 * 64 * 4 + 64];
  MatmulParams p{x, 0, WeightView{GgmlType::kQ4_K, 64, 512, 288, w}, nullptr, out, 0, 1};
  p.x_type = DType::kF16;
  for (DType ot : {DType::kF32, DType::kF16}) {
    p.out_type = ot;
    for (int64_t m : {1, 2, 31, 32, 33, 64, 65, 128, 129, 256}) {
      p.m = m;
      EXPECT_TRUE(cuda::GemmQuantMmaApplies(p)) << DTypeName(ot) << " m=" << m;
    }
  }
  struct Case {
    const char* what;
    void (*edit)(MatmulParams*);
  };
  const Case cases[] = {
      {"more rows than the limit", [](MatmulParams* q) { q->m = cuda::kGemmQuantMmaMaxRows + 1; }},
      {"no rows", [](MatmulParams* q) { q->m = 0; }},
      {"BF16 activations", [](MatmulParams* q) { q->x_type = DType::kBF16; }},
      {"F32 activations", [](MatmulParams* q) { q->x_type = DType::kF32; }},
      {"BF16 out", [](MatmulParams* q) { q->out_type = DType::kBF16; }},
      {"Q6_K weights with k not a multiple of 2048",
       [](MatmulParams* q) {
         q->w.type = GgmlType::kQ6_K;
         q->w.row_bytes = 420;
       }},
      {"Q5_K weights",
       [](MatmulParams* q) {
         q->w.type = GgmlType::kQ5_K;
         q->w.row_bytes = 352;
       }},
      {"k not a multiple of 256",
       [](MatmulParams* q) {
         q->w.cols = 384;
         q->w.row_bytes = 216;
       }},
      {"row bytes not the format's", [](MatmulParams* q) { q->w.row_bytes += 16; }},
      {"weights not 16-byte aligned", [](MatmulParams* q) { q->w.data += 8; }},
      {"x not 16-byte aligned",
       [](MatmulParams* q) { q->x = static_cast<const uint8_t*>(q->x) + 8; }},
      {"x stride not a multiple of 8", [](MatmulParams* q) { q->x_stride = 516; }},
      {"x stride under k", [](MatmulParams* q) { q->x_stride = 256; }},
      {"out stride under n", [](MatmulParams* q) { q->out_stride = 32; }},
      {"misaligned F32 out", [](MatmulParams* q) { q->out = static_cast<uint8_t*>(q->out) + 2; }},
      {"no weights", [](MatmulParams* q) { q->w.data = nullptr; }},
  };
  p.out_type = DType::kF32;
  p.m = 17;
  {
    MatmulParams q6 = p;
    q6.w = WeightView{GgmlType::kQ6_K, 64, 2048, 8 * 210, w};
    EXPECT_TRUE(cuda::GemmQuantMmaApplies(q6)) << "Q6_K at k = 2048";
  }
  ASSERT_TRUE(cuda::GemmQuantMmaApplies(p));
  for (const Case& c : cases) {
    MatmulParams q = p;
    c.edit(&q);
    EXPECT_FALSE(cuda::GemmQuantMmaApplies(q)) << c.what;
  }
}

// The backend takes it for Q4_K from 9 to 256 rows, for Q6_K from 2 to 256.
TEST(GemmQuantMmaAppliesTest, PreferredWhereMeasuredFaster) {
  alignas(16) static uint8_t w[16], x[16], out[16];  // never dereferenced
  for (int64_t k : {4096, 8192, 14336}) {
    MatmulParams p{x, 0, WeightView{GgmlType::kQ4_K, 4096, k, k / 256 * 144, w}, nullptr, out,
                   0, 1};
    p.x_type = DType::kF16;
    p.out_type = DType::kF32;
    for (int64_t m : {1, 8, 9, 16, 17, 32, 64, 65, 128, 129, 256, 257, 512}) {
      p.m = m;
      const bool want = m >= 9 && m <= 256;
      EXPECT_EQ(cuda::MatmulVariantTakes("gemm_quant_mma", p), want) << "k=" << k << " m=" << m;
      MatmulParams q6 = p;
      q6.w = WeightView{GgmlType::kQ6_K, 4096, k, k / 256 * 210, w};
      EXPECT_EQ(cuda::MatmulVariantTakes("gemm_quant_mma", q6), m >= 2 && m <= 256)
          << "Q6_K k=" << k << " m=" << m;
    }
  }
}

// ---- GPU. ----

// want[c][r] = sum_k x[c][k] w[r][k] (+ bias[r]) in double over the F32 dequantized weights.
std::vector<float> Reference(const QuantMatrix& q, const std::vector<float>& x, int64_t xs,
                             int64_t m, const std::vector<float>& bias) {
  std::vector<float> ref(m * q.n);
  for (int64_t c = 0; c < m; ++c) {
    for (int64_t r = 0; r < q.n; ++r) {
      double s = 0;
      for (int64_t i = 0; i < q.k; ++i) {
        s += static_cast<double>(x[c * xs + i]) * q.values[r * q.k + i];
      }
      ref[c * q.n + r] = static_cast<float>(s + (bias.empty() ? 0.0 : bias[r]));
    }
  }
  return ref;
}

struct MmaRun {
  int64_t m = 0, x_stride = 0, out_stride = 0;
  DType out_type = DType::kF32;
  const float* bias = nullptr;  // device
  int nsplit = 0;
  bool global = false;  // the split without a cluster, through Workspace()
};

// A workspace for the global splits, as the backend holds one (zero counters).
cuda::GemmQuantMmaWorkspace Workspace() {
  static void* ws = [] {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, cuda::kGemmQuantMmaWorkspaceBytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(p, 0, cuda::kGemmQuantMmaWorkspaceBytes), cudaSuccess);
    return p;
  }();
  return {ws, cuda::kGemmQuantMmaWorkspaceBytes};
}

// Runs the kernel; out[c][r] widened to F32, with the guard and unwritten-output checks.
std::vector<float> RunMma(const QuantMatrix& q, const DevBuf& w, const DevBuf& x, const MmaRun& g) {
  const int64_t os = g.out_stride ? g.out_stride : q.n;
  DevBuf out(((g.m - 1) * os + q.n) * DTypeSize(g.out_type));
  MatmulParams p;
  p.x = x.data();
  p.x_stride = g.x_stride;
  p.w = WeightView{q.type, q.n, q.k, q.row_bytes, w.data()};
  p.bias = g.bias;
  p.out = out.data();
  p.out_stride = g.out_stride;
  p.m = g.m;
  p.x_type = DType::kF16;
  p.out_type = g.out_type;
  EXPECT_TRUE(cuda::GemmQuantMmaApplies(p));
  const Status st = g.global ? cuda::gemm_quant_mma_cuda(p, nullptr, g.nsplit, Workspace(), true)
                             : cuda::gemm_quant_mma_cuda(
                                   p, nullptr, g.nsplit,
                                   g.nsplit == 0 ? Workspace() : cuda::GemmQuantMmaWorkspace{});
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  bool guards = false;
  const std::vector<uint8_t> ob = out.Download(&guards);
  EXPECT_TRUE(guards) << "write past the output";
  std::vector<float> got(g.m * q.n);
  int unwritten = 0;
  for (int64_t c = 0; c < g.m; ++c) {
    for (int64_t r = 0; r < q.n; ++r) {
      got[c * q.n + r] = ValueAt(ob, c * os + r, g.out_type);
      unwritten += std::isnan(got[c * q.n + r]) ? 1 : 0;
    }
  }
  EXPECT_EQ(unwritten, 0) << "outputs left as the NaN poison";
  return got;
}

class CudaQuantMmaTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  void SetUp() override { FORGE_REQUIRE_GPU_OR_SKIP(); }
};

std::string FormatName(const ::testing::TestParamInfo<GgmlType>& info) {
  return std::string(TypeName(info.param));
}

// k split over 1 to 8 CTAs of a cluster (Q4_K: 9 super-blocks, the last CTAs get fewer or none;
// Q6_K: 24; 3, 5, 6, 7: ranks that reduce unequal row ranges), each tile width, and strided
// activations and outputs; the same splits over CTAs that are not a cluster (partials added from
// the workspace) give the cluster's result bit for bit, twice in a row (the counters are left
// zero); a split of 9, and a global split without a workspace, are refused.
TEST_P(CudaQuantMmaTest, EverySplitAndStride) {
  const GgmlType t = GetParam();
  const QuantMatrix q =
      testing::RandomBlocks(t, 257, t == GgmlType::kQ6_K ? 24 * 256 : 9 * 256, 101);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const std::vector<float> bias = testing::RandomVector(q.n, 102);
  DevBuf bias_dev(bias.data(), bias.size() * 4);
  const int64_t xs = q.k + 40, max_m = 200;
  const std::vector<float> x = Activations(max_m, q.k, xs, true, 103);
  const std::vector<uint8_t> xb = ToBytes(x, DType::kF16);
  DevBuf xd(xb.data(), xb.size());
  const std::vector<float> ref = Reference(q, x, xs, max_m, bias);
  for (int64_t m : {5, 20, 40, 200}) {
    for (int nsplit : {1, 2, 3, 4, 5, 6, 7, 8}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " split " + std::to_string(nsplit));
      MmaRun g;
      g.m = m;
      g.x_stride = xs;
      g.out_stride = q.n + 3;
      g.bias = reinterpret_cast<const float*>(bias_dev.data());
      g.nsplit = nsplit;
      const std::vector<float> got = RunMma(q, w, xd, g);
      EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), m * q.n, kHalfBound);
      if (nsplit == 1) continue;
      g.global = true;
      for (int rep = 0; rep < 2; ++rep) {
        const std::vector<float> global = RunMma(q, w, xd, g);
        int differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += FloatBits(got[i]) != FloatBits(global[i]);
        EXPECT_EQ(differ, 0) << "the global split differs from the cluster's (run " << rep << ")";
      }
    }
  }
  DevBuf out(q.n * 4);
  MatmulParams p;
  p.x = xd.data();
  p.x_stride = xs;
  p.w = WeightView{q.type, q.n, q.k, q.row_bytes, w.data()};
  p.out = out.data();
  p.m = 1;
  p.x_type = DType::kF16;
  p.out_type = DType::kF32;
  EXPECT_EQ(cuda::gemm_quant_mma_cuda(p, nullptr, 9).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda::gemm_quant_mma_cuda(p, nullptr, 2, {}, true).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda::gemm_quant_mma_cuda(p, nullptr, 1, Workspace(), true).code(),
            StatusCode::kInvalidArgument);
  cuda::GemmQuantMmaWorkspace small = Workspace();
  small.bytes = cuda::kGemmQuantMmaCounters * 4 + 1024;
  EXPECT_EQ(cuda::gemm_quant_mma_cuda(p, nullptr, 8, small, true).code(),
            StatusCode::kInvalidArgument);
}

// The split chosen for a matrix of 32 row tiles (4096 x 4096, 65 rows: one 128-row column tile),
// where clusters of 4 do not all fit on an H100 / H200 and a global split may be taken, against
// the reference; and it equals the same split given explicitly, cluster or global.
TEST_P(CudaQuantMmaTest, ChosenSplitOf4096RowsMatchesReference) {
  const QuantMatrix q = testing::RandomBlocks(GetParam(), 4096, 4096, 131);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const int64_t m = 65;
  const std::vector<float> x = Activations(m, q.k, q.k, true, 132);
  const std::vector<uint8_t> xb = ToBytes(x, DType::kF16);
  DevBuf xd(xb.data(), xb.size());
  MmaRun g;
  g.m = m;
  const std::vector<float> chosen = RunMma(q, w, xd, g);
  EXPECT_NORMALIZED_NEAR(Reference(q, x, q.k, m, {}).data(), chosen.data(), m * q.n, kHalfBound);
  int equal_to = 0;
  for (int nsplit = 2; nsplit <= 8; ++nsplit) {
    for (bool global : {false, true}) {
      g.nsplit = nsplit;
      g.global = global;
      const std::vector<float> got = RunMma(q, w, xd, g);
      int differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += FloatBits(got[i]) != FloatBits(chosen[i]);
      equal_to += differ == 0 ? 1 : 0;
    }
  }
  EXPECT_GE(equal_to, 2) << "the chosen split is none of 2 to 8";
}

// A row's result does not depend on m: the rows of a 256-row call equal the same rows computed
// alone and in a 40-row call, bit for bit (the same split).
TEST_P(CudaQuantMmaTest, RowsDoNotDependOnTheBatch) {
  const QuantMatrix q = testing::QuantizedRandom(GetParam(), 300, 2048, 111);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const std::vector<float> x = Activations(256, q.k, q.k, true, 112);
  const std::vector<uint8_t> xb = ToBytes(x, DType::kF16);
  DevBuf xd(xb.data(), xb.size());
  MmaRun g;
  g.nsplit = 2;
  g.m = 256;
  const std::vector<float> all = RunMma(q, w, xd, g);
  g.m = 40;
  const std::vector<float> some = RunMma(q, w, xd, g);
  g.m = 1;
  const std::vector<float> one = RunMma(q, w, xd, g);
  for (int64_t r = 0; r < q.n; ++r) {
    ASSERT_EQ(FloatBits(one[r]), FloatBits(all[r])) << "row " << r;
    for (int64_t c = 0; c < 40; ++c) {
      ASSERT_EQ(FloatBits(some[c * q.n + r]), FloatBits(all[c * q.n + r])) << r << " " << c;
    }
  }
}

// The CUDA backend's Matmul gives exactly what gemm_quant_mma_cuda gives (the kernel is
// deterministic) where it is preferred (Q4_K: 9 to 256 rows, Q6_K: 2 to 256; k = 4096 and 8192):
// the kernel ran; where it is not (Q4_K at 2 rows, both at 300) the backend's result is within the
// bound.
TEST_P(CudaQuantMmaTest, BackendMatmulTakesItWherePreferred) {
  const GgmlType t = GetParam();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  for (int64_t k : {4096, 8192}) {
    const QuantMatrix q = testing::RandomBlocks(t, 129, k, 121);
    SCOPED_TRACE(q.what);
    DevBuf w(q.bytes.data(), q.bytes.size());
    for (int64_t m : {2, 9, 17, 64, 100, 256, 300}) {
      SCOPED_TRACE("m=" + std::to_string(m));
      const std::vector<float> x = Activations(m, q.k, q.k, true, 122);
      const std::vector<uint8_t> xb = ToBytes(x, DType::kF16);
      DevBuf xd(xb.data(), xb.size());
      DevBuf out(m * q.n * 4);
      MatmulParams p;
      p.x = xd.data();
      p.w = WeightView{q.type, q.n, q.k, q.row_bytes, w.data()};
      p.out = out.data();
      p.m = m;
      p.x_type = DType::kF16;
      p.out_type = DType::kF32;
      const bool preferred = m >= (t == GgmlType::kQ6_K ? 2 : 9) && m <= 256;
      ASSERT_EQ(cuda::MatmulVariantTakes("gemm_quant_mma", p), preferred);
      const Status st = be.Matmul(p);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_TRUE(be.Synchronize().ok());
      bool guards = false;
      const std::vector<uint8_t> ob = out.Download(&guards);
      EXPECT_TRUE(guards);
      std::vector<float> got(m * q.n);
      std::memcpy(got.data(), ob.data(), got.size() * 4);
      if (preferred) {
        MmaRun g;
        g.m = m;
        const std::vector<float> direct = RunMma(q, w, xd, g);
        int differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += FloatBits(got[i]) != FloatBits(direct[i]);
        EXPECT_EQ(differ, 0) << "the backend's result is not the kernel's";
      }
      EXPECT_NORMALIZED_NEAR(Reference(q, x, q.k, m, {}).data(), got.data(), m * q.n, kHalfBound);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, CudaQuantMmaTest,
                         ::testing::Values(GgmlType::kQ4_K, GgmlType::kQ6_K), FormatName);

}  // namespace
}  // namespace forge
