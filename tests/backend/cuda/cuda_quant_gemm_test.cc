// The fused quantized GEMM (gemm_quant_cuda), every block format: its own behaviour (its results
// against the reference at every row count, with views and strides, are the op harness's:
// op_harness_cuda_test.cc). On the host (no GPU needed): the window decoding bit for bit against
// the CPU dequantizer, and which matmuls the GEMM takes. On the GPU: k split over 1 to 8 CTAs, a
// 4097 x 4096 matrix at 512 rows (a last row block of one row), one-hot activations that must
// reproduce the rounded weights exactly, and the CUDA backend's matmul giving the kernel's bits
// where it prefers it. Outputs are poisoned and followed by guard bytes; every output must be
// written.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_test_buffers.h"
#include "backend/cuda/matmul/gemm_quant_cuda.h"
#include "backend/cuda/matmul/matmul_dispatch.h"
#include "backend/cuda/matmul/gemm_quant_decode.cuh"
#include "backend/cuda/quant_test_data.h"
#include "base/half.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

namespace gm = cuda::gm;
using testing::Activations;
using testing::DevBuf;
using testing::HalfBits;
using testing::QuantMatrix;
using testing::ToBytes;
using testing::ValueAt;

constexpr double kHalfBound = 1e-2;  // DESIGN.md: F16/BF16 activations

std::string FormatName(const ::testing::TestParamInfo<GgmlType>& info) {
  return std::string(TypeName(info.param));
}

// ---- Host: the window decoding. ----

// Every window of every row decoded as the kernel does, against the CPU values bit for bit.
template <GgmlType kT>
void CheckWindows(const QuantMatrix& q) {
  int bad = 0;
  const int units = static_cast<int>((q.k + 255) / 256);
  for (int64_t r = 0; r < q.n; ++r) {
    const uint8_t* row = q.bytes.data() + r * q.row_bytes;
    for (int u = 0; u < units; ++u) {
      for (int qq = 0; qq < 4; ++qq) {
        for (int h = 0; h < 2; ++h) {
          const int64_t first = 256 * u + 64 * qq;
          // A legacy row may end inside a unit: half h is block 2 qq + h.
          if (!cuda::qd::IsKQuant(kT) && first + 32 * h >= q.k) continue;
          float v[4][8];
          gm::DecodeWindow<kT>(row + u * gm::UnitBytes(kT), qq, h, v);
          for (int j = 0; j < 4; ++j) {
            for (int e = 0; e < 8; ++e) {
              const int64_t c = first + 8 * gm::WindowSlot<kT>(h, j) + e;
              const float want = q.values[r * q.k + c];
              if (FloatBits(v[j][e]) != FloatBits(want) && bad++ < 5) {
                ADD_FAILURE() << "row " << r << " element " << c << " (window " << qq << ", half "
                              << h << ", slot " << j << "): got " << v[j][e] << ", want " << want;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

void CheckWindowsAny(const QuantMatrix& q) {
  switch (q.type) {
#define FORGE_CASE(T) \
  case GgmlType::T:   \
    return CheckWindows<GgmlType::T>(q);
    FORGE_CASE(kQ4_0)
    FORGE_CASE(kQ4_1)
    FORGE_CASE(kQ5_0)
    FORGE_CASE(kQ5_1)
    FORGE_CASE(kQ8_0)
    FORGE_CASE(kQ2_K)
    FORGE_CASE(kQ3_K)
    FORGE_CASE(kQ4_K)
    FORGE_CASE(kQ5_K)
    FORGE_CASE(kQ6_K)
#undef FORGE_CASE
    default:
      FAIL() << "not a block format";
  }
}

class GemmQuantDecodeTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GemmQuantDecodeTest, WindowsMatchTheCpuDequantizer) {
  const GgmlType t = GetParam();
  const bool kq = testing::IsKQuantType(t);
  std::vector<QuantMatrix> ms;
  ms.push_back(testing::RandomBlocks(t, 6, kq ? 768 : 800, 61));  // 800: a unit of one block
  ms.push_back(testing::QuantizedRandom(t, 3, kq ? 512 : 96, 62));
  QuantMatrix o;
  if (testing::OracleMatrix(t, "blk.0.ffn_down.weight", &o)) ms.push_back(std::move(o));
  for (const QuantMatrix& q : ms) {
    SCOPED_TRACE(q.what);
    CheckWindowsAny(q);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, GemmQuantDecodeTest,
                         ::testing::ValuesIn(testing::QuantFormats()), FormatName);

// ---- Host: which matmuls the GEMM takes. ----

TEST(GemmQuantAppliesTest, AcceptsTheFormatsHalfActivationsAndAnyRows) {
  alignas(16) static uint8_t w[64 * 210 * 2 + 16], x[600 * 512 * 2 + 64], out[600 * 64 * 4 + 64];
  for (GgmlType t : testing::QuantFormats()) {
    SCOPED_TRACE(TypeName(t));
    const int64_t k = 512;
    const int64_t rb = RowBytes(t, k).value();
    MatmulParams p{x, 0, WeightView{t, 64, k, rb, w}, nullptr, out, 0, 1};
    for (DType xt : {DType::kF16, DType::kBF16}) {
      p.x_type = xt;
      for (DType ot : {DType::kF32, xt}) {
        p.out_type = ot;
        for (int64_t m : {1, 16, 17, 64, 65, 512}) {
          p.m = m;
          EXPECT_TRUE(cuda::GemmQuantApplies(p)) << DTypeName(xt) << " " << DTypeName(ot) << m;
        }
      }
    }
    p.x_type = DType::kF16;
    p.out_type = DType::kF32;
    p.m = 17;
    p.w.data = w + 2;  // 2-byte aligned rows are fine
    EXPECT_TRUE(cuda::GemmQuantApplies(p)) << "2-byte aligned weights";
    p.w.data = w;
  }
}

// The backend takes the fused kernel only where it measured faster: Q4_0 and Q4_K up to 64 rows.
TEST(GemmQuantAppliesTest, PreferredWhereMeasuredFaster) {
  alignas(16) static uint8_t w[16], x[16], out[16];  // never dereferenced
  for (GgmlType t : testing::QuantFormats()) {
    SCOPED_TRACE(TypeName(t));
    for (int64_t k : {4096, 8192, 14336}) {
      MatmulParams p{x, 0, WeightView{t, 4096, k, RowBytes(t, k).value(), w}, nullptr, out, 0, 1};
      p.x_type = DType::kF16;
      p.out_type = DType::kF32;
      const bool small_ok = t == GgmlType::kQ4_0 || t == GgmlType::kQ4_K;
      for (int64_t m : {17, 64, 65, 128, 256, 399, 400, 512, 513, 2048}) {
        p.m = m;
        ASSERT_TRUE(cuda::GemmQuantApplies(p));
        EXPECT_EQ(cuda::MatmulVariantTakes("gemm_quant", p), small_ok && m <= 64) << k << " " << m;
      }
      p.m = 32;
      p.x_type = DType::kF32;
      EXPECT_FALSE(cuda::MatmulVariantTakes("gemm_quant", p)) << "F32 activations";
    }
  }
}

TEST(GemmQuantAppliesTest, RejectsWhatTheKernelCannotTake) {
  alignas(16) static uint8_t w[64 * 144 * 4 + 16], x[64 * 1024 * 4 + 64], out[64 * 64 * 4 + 64];
  const int64_t k = 512, rb = 2 * 144;
  const MatmulParams base{x,       0,           WeightView{GgmlType::kQ4_K, 64, k, rb, w},
                          nullptr, out,         0,
                          17,      DType::kF16, DType::kF32};
  ASSERT_TRUE(cuda::GemmQuantApplies(base));
  struct Case {
    const char* what;
    void (*edit)(MatmulParams*);
  };
  const Case cases[] = {
      {"F32 activations (the slab path)", [](MatmulParams* p) { p->x_type = DType::kF32; }},
      {"BF16 out from F16 x", [](MatmulParams* p) { p->out_type = DType::kBF16; }},
      {"F16 out from BF16 x",
       [](MatmulParams* p) {
         p->x_type = DType::kBF16;
         p->out_type = DType::kF16;
       }},
      {"no rows", [](MatmulParams* p) { p->m = 0; }},
      {"F16 weights", [](MatmulParams* p) { p->w.type = GgmlType::kF16; }},
      {"k not a multiple of the block",
       [](MatmulParams* p) {
         p->w.cols = 288;
         p->w.row_bytes = 144;
       }},
      {"row bytes not the format's", [](MatmulParams* p) { p->w.row_bytes += 2; }},
      {"odd weight address", [](MatmulParams* p) { p->w.data += 1; }},
      {"x not 16-byte aligned",
       [](MatmulParams* p) { p->x = static_cast<const uint8_t*>(p->x) + 8; }},
      {"x stride not a multiple of 8", [](MatmulParams* p) { p->x_stride = 516; }},
      {"x stride under k", [](MatmulParams* p) { p->x_stride = 256; }},
      {"out stride under n", [](MatmulParams* p) { p->out_stride = 32; }},
      {"misaligned F32 out", [](MatmulParams* p) { p->out = static_cast<uint8_t*>(p->out) + 2; }},
      {"no x", [](MatmulParams* p) { p->x = nullptr; }},
  };
  for (const Case& c : cases) {
    MatmulParams p = base;
    c.edit(&p);
    EXPECT_FALSE(cuda::GemmQuantApplies(p)) << c.what;
  }
}

// ---- GPU. ----

// The CPU values rounded to F16 or BF16, as F32 [n][k].
std::vector<float> RoundedWeights(const QuantMatrix& q, DType t) {
  std::vector<float> w(q.values.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const uint16_t b = HalfBits(q.values[i], t);
    w[i] = t == DType::kF16 ? F16ToF32(b) : BF16ToF32(b);
  }
  return w;
}

// ref[c][r] = sum_k x[row c][k] w[r][k] in double, for activation rows `rows` of x [..][xs] and
// weight rows [first, first + n) of w [..][k]; no bias.
std::vector<float> Reference(const std::vector<float>& w, int64_t k, int64_t first, int64_t n,
                             const std::vector<float>& x, int64_t xs,
                             const std::vector<int64_t>& rows) {
  std::vector<float> ref(rows.size() * n);
  for (size_t i = 0; i < rows.size(); ++i) {
    const float* xr = x.data() + rows[i] * xs;
    for (int64_t r = 0; r < n; ++r) {
      const float* wr = w.data() + (first + r) * k;
      double s = 0;
      for (int64_t c = 0; c < k; ++c) s += static_cast<double>(xr[c]) * wr[c];
      ref[i * n + r] = static_cast<float>(s);
    }
  }
  return ref;
}

std::vector<int64_t> FirstRows(int64_t m) {
  std::vector<int64_t> r(m);
  for (int64_t i = 0; i < m; ++i) r[i] = i;
  return r;
}

struct GemmRun {
  const DevBuf* w = nullptr;
  int64_t first_row = 0, n = 0;  // the view: weight rows [first_row, first_row + n)
  const DevBuf* x = nullptr;     // [>= m][x_stride] of x_type
  int64_t x_stride = 0, out_stride = 0;
  const float* bias = nullptr;  // device, [n]
  int64_t m = 0;
  DType x_type = DType::kF16, out_type = DType::kF32;
};

MatmulParams ParamsOf(const QuantMatrix& q, const GemmRun& g, void* out) {
  MatmulParams p;
  p.x = g.x->data();
  p.x_stride = g.x_stride;
  p.w = WeightView{q.type, q.n, q.k, q.row_bytes, g.w->data()}.Rows(g.first_row, g.n);
  p.bias = g.bias;
  p.out = out;
  p.out_stride = g.out_stride;
  p.m = g.m;
  p.x_type = g.x_type;
  p.out_type = g.out_type;
  return p;
}

// Runs gemm_quant_cuda (k split over nsplit CTAs; 0: its own choice); out[c][r] (c < m, r < n)
// widened to F32. Checks the guard bytes and that every output (poisoned with NaN) was written.
std::vector<float> RunGemm(const QuantMatrix& q, const GemmRun& g, int nsplit = 0) {
  const int64_t os = g.out_stride ? g.out_stride : g.n;
  const size_t out_elems = (g.m - 1) * os + g.n;
  DevBuf out(out_elems * DTypeSize(g.out_type));
  const MatmulParams p = ParamsOf(q, g, out.data());
  EXPECT_TRUE(cuda::GemmQuantApplies(p));
  const Status st = cuda::gemm_quant_cuda_split(p, nsplit, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
  bool guards = false;
  const std::vector<uint8_t> ob = out.Download(&guards);
  EXPECT_TRUE(guards) << "write past the output";
  std::vector<float> got(g.m * g.n);
  int unwritten = 0;
  for (int64_t c = 0; c < g.m; ++c) {
    for (int64_t r = 0; r < g.n; ++r) {
      got[c * g.n + r] = ValueAt(ob, c * os + r, g.out_type);
      unwritten += std::isnan(got[c * g.n + r]) ? 1 : 0;
    }
  }
  EXPECT_EQ(unwritten, 0) << "outputs left as the NaN poison";
  return got;
}

// want[c][r] = ref[c][r] + bias[r] (bias may be empty) for c < m.
std::vector<float> WithBias(const std::vector<float>& ref, int64_t m, int64_t n,
                            const std::vector<float>& bias) {
  std::vector<float> v(ref.begin(), ref.begin() + m * n);
  if (!bias.empty()) {
    for (int64_t c = 0; c < m; ++c) {
      for (int64_t r = 0; r < n; ++r) v[c * n + r] += bias[r];
    }
  }
  return v;
}

class CudaQuantGemmTest : public ::testing::TestWithParam<GgmlType> {
 protected:
  void SetUp() override { FORGE_REQUIRE_GPU_OR_SKIP(); }
};

// k split over 1, 2, 4 and 8 CTAs (legacy: 9 units, some CTAs of 8 get none), with tiles of 64,
// 128 and 256 activation rows.
TEST_P(CudaQuantGemmTest, EverySplitMatchesReference) {
  const GgmlType t = GetParam();
  const QuantMatrix q = testing::RandomBlocks(t, 129, testing::IsKQuantType(t) ? 2048 : 2144, 121);
  SCOPED_TRACE(q.what);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const std::vector<float> bias = testing::RandomVector(q.n, 122);
  DevBuf bias_dev(bias.data(), bias.size() * 4);
  const int64_t max_m = 300;
  const std::vector<float> x = Activations(max_m, q.k, q.k, true, 123);
  for (DType xt : {DType::kF16, DType::kBF16}) {
    const std::vector<float> ref =
        Reference(RoundedWeights(q, xt), q.k, 0, q.n, x, q.k, FirstRows(max_m));
    const std::vector<uint8_t> xb = ToBytes(x, xt);
    DevBuf xd(xb.data(), xb.size());
    for (int64_t m : {17, 100, 300}) {
      for (int nsplit : {1, 2, 4, 8}) {
        SCOPED_TRACE("m=" + std::to_string(m) + " split " + std::to_string(nsplit) + " x " +
                     DTypeName(xt));
        GemmRun g;
        g.w = &w;
        g.n = q.n;
        g.x = &xd;
        g.bias = reinterpret_cast<const float*>(bias_dev.data());
        g.m = m;
        g.x_type = xt;
        const std::vector<float> got = RunGemm(q, g, nsplit);
        const std::vector<float> want = WithBias(ref, m, q.n, bias);
        EXPECT_NORMALIZED_NEAR(want.data(), got.data(), m * q.n, kHalfBound);
      }
    }
  }
}

// 4097 x 4096 (a last row block of one row) with 512 activation rows, k split as the heuristic
// says. The reference is checked on rows at the tile edges; every output must be written.
TEST_P(CudaQuantGemmTest, LargeMatrix) {
  const GgmlType t = GetParam();
  const QuantMatrix q = testing::RandomBlocks(t, 4097, 4096, 81);
  SCOPED_TRACE(q.what);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const int64_t m = 512;
  const std::vector<float> x = Activations(m, q.k, q.k, true, 82);
  const std::vector<uint8_t> xb = ToBytes(x, DType::kF16);
  DevBuf xd(xb.data(), xb.size());
  GemmRun g;
  g.w = &w;
  g.n = q.n;
  g.x = &xd;
  g.m = m;
  const std::vector<float> got = RunGemm(q, g);
  const std::vector<int64_t> rows = {0, 1, 127, 128, 255, 300, 510, 511};
  const std::vector<float> ref =
      Reference(RoundedWeights(q, DType::kF16), q.k, 0, q.n, x, q.k, rows);
  std::vector<float> sel(rows.size() * q.n);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(sel.data() + i * q.n, got.data() + rows[i] * q.n, q.n * 4);
  }
  EXPECT_NORMALIZED_NEAR(ref.data(), sel.data(), sel.size(), kHalfBound);
}

// One-hot activations (row i has a 1 at column i): out[i][r] = the weight W[r][i] rounded to the
// activation type, exactly, for every element (each decoded value lands where it belongs).
TEST_P(CudaQuantGemmTest, OneHotActivationsReproduceTheWeights) {
  const GgmlType t = GetParam();
  const QuantMatrix q = testing::RandomBlocks(t, 129, testing::IsKQuantType(t) ? 768 : 288, 91);
  SCOPED_TRACE(q.what);
  DevBuf w(q.bytes.data(), q.bytes.size());
  const int64_t m = q.k;
  std::vector<float> x(m * q.k, 0.0f);
  for (int64_t i = 0; i < m; ++i) x[i * q.k + i] = 1.0f;
  for (DType xt : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(xt));
    const std::vector<float> wr = RoundedWeights(q, xt);
    const std::vector<uint8_t> xb = ToBytes(x, xt);
    DevBuf xd(xb.data(), xb.size());
    GemmRun g;
    g.w = &w;
    g.n = q.n;
    g.x = &xd;
    g.m = m;
    g.x_type = xt;
    const std::vector<float> got = RunGemm(q, g);
    int bad = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t r = 0; r < q.n; ++r) {
        const float want = wr[r * q.k + i];
        if (got[i * q.n + r] != want && bad++ < 5) {
          ADD_FAILURE() << "weight row " << r << " element " << i << ": got " << got[i * q.n + r]
                        << ", want " << want;
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// Where the backend prefers the fused GEMM (Q4_0 at 17 and 64 rows; Q4_K from 9 rows takes the
// tensor-core quantized matmul first: cuda_quant_mma_test.cc), its Matmul on a quantized weight
// with F16 activations gives exactly what gemm_quant_cuda gives (the kernel is deterministic): the
// fused GEMM ran. Elsewhere (every format at 512 rows) it does not prefer it, and its dequantize +
// cuBLAS result is within the bound of the reference.
TEST_P(CudaQuantGemmTest, BackendMatmulUsesTheFusedGemmWherePreferred) {
  const GgmlType t = GetParam();
  auto backend = MakeCudaBackend();
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  Backend& be = **backend;
  const QuantMatrix q = testing::RandomBlocks(t, 129, 8192, 111);
  SCOPED_TRACE(q.what);
  DevBuf w(q.bytes.data(), q.bytes.size());
  std::vector<int64_t> rows = {512};
  if (t == GgmlType::kQ4_0) rows.insert(rows.begin(), {17, 64});
  for (int64_t m : rows) {
    SCOPED_TRACE("m=" + std::to_string(m));
    const std::vector<float> x = Activations(m, q.k, q.k, true, 112);
    const std::vector<uint8_t> xb = ToBytes(x, DType::kF16);
    DevBuf xd(xb.data(), xb.size());
    GemmRun g;
    g.w = &w;
    g.n = q.n;
    g.x = &xd;
    g.m = m;
    DevBuf out(m * q.n * 4);
    const MatmulParams p = ParamsOf(q, g, out.data());
    const bool preferred = m <= 64;
    ASSERT_EQ(cuda::MatmulVariantTakes("gemm_quant", p), preferred);
    const Status st = be.Matmul(p);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(be.Synchronize().ok());
    bool guards = false;
    const std::vector<uint8_t> ob = out.Download(&guards);
    EXPECT_TRUE(guards);
    std::vector<float> got(m * q.n);
    std::memcpy(got.data(), ob.data(), got.size() * 4);
    if (preferred) {
      const std::vector<float> direct = RunGemm(q, g);
      int differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += FloatBits(got[i]) != FloatBits(direct[i]);
      EXPECT_EQ(differ, 0) << "the backend's result is not the fused GEMM's";
    }
    const std::vector<float> ref =
        Reference(RoundedWeights(q, DType::kF16), q.k, 0, q.n, x, q.k, FirstRows(m));
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), m * q.n, kHalfBound);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, CudaQuantGemmTest,
                         ::testing::ValuesIn(testing::QuantFormats()), FormatName);

}  // namespace
}  // namespace forge
