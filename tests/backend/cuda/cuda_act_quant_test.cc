// The one-row DP4A GEMV's activation form written by the ops that produce its input
// (act_quant.cuh): add_rmsnorm_cuda, swiglu_cuda and attention_cuda with out_q write, for one F16
// row, exactly the bytes a host reimplementation of the form computes from the F16 row they wrote
// (two int8 terms per element, per 32-element block the scale / 254 and the F32 sum in the kernel's
// order); the GEMV given that form (MatmulParams::xq) gives what the GEMV computing it itself gives
// (the same products; the small-CTA form of Q4_K / Q5_K sums a row's chunks in another order, the
// warp-staged form of the others in the same: within 1e-6), in each of its formats at k = 4096 and
// 14336 (and 3328 but Q6_K, Q3_K and Q2_K, whose k must be a multiple of 2048 or 1024, from
// add_rmsnorm_cuda); decode attention writes it for its output row (in its own kernels or the
// separate act_quant_cuda); bad shapes are refused; and the backend offers the form exactly where
// the GEMV takes one activation row.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_test_buffers.h"
#include "backend/cuda/act_quant/act_quant_cuda.h"
#include "backend/cuda/matmul/gemv_quant_dp4a.h"
#include "backend/cuda/ops_cuda.h"
#include "backend/cuda/quant_test_data.h"
#include "base/half.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::DevBuf;

int64_t FormBytes(int64_t k) { return 2 * k + (k / 32) * 8; }

// act_quant.cuh's order of a term's bytes (k a multiple of 256): in each run of 8 super-blocks
// (fewer in the last), the 16-element piece i of quarter j of super-block s at 64 ns i + 16 (4 s +
// j), ns the run's super-blocks.
int64_t FormOffset(int64_t e, int64_t k) {
  const int64_t base = e / 2048 * 2048, ns = std::min<int64_t>(8, (k - base) / 256);
  const int64_t s = (e - base) / 256, j = (e - base) / 64 % 4, i = (e - base) / 16 % 4;
  return base + 64 * ns * i + 16 * (4 * s + j) + e % 16;
}

// The form of x (F16 bits, k elements) as act_quant.cuh defines it, computed on the host with the
// same IEEE F32 operations in the same order.
std::vector<uint8_t> HostForm(const std::vector<uint16_t>& xh) {
  const int64_t k = static_cast<int64_t>(xh.size());
  std::vector<uint8_t> out(FormBytes(k));
  for (int64_t b = 0; b < k / 32; ++b) {
    float f[32], unit_sum[4];
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) {
      f[i] = F16ToF32(xh[b * 32 + i]);
      amax = std::fmax(amax, std::fabs(f[i]));
    }
    for (int u = 0; u < 4; ++u) {
      float s = 0.0f;
      for (int i = 0; i < 8; ++i) s += f[8 * u + i];
      unit_sum[u] = s;
    }
    const float sum = (unit_sum[0] + unit_sum[1]) + (unit_sum[2] + unit_sum[3]);
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < 32; ++i) {
      const float t = f[i] * inv;
      const float q1 = std::rint(t);
      const float q2 = std::rint((t - q1) * 254.0f);
      const int64_t o = FormOffset(b * 32 + i, k);
      out[o] = static_cast<uint8_t>(static_cast<int8_t>(q1));
      out[k + o] = static_cast<uint8_t>(static_cast<int8_t>(q2));
    }
    const float pair[2] = {amax / (127.0f * 254.0f), sum};
    std::memcpy(out.data() + 2 * k + 8 * b, pair, 8);
  }
  return out;
}

std::vector<uint16_t> HalfRow(const std::vector<uint8_t>& bytes, int64_t k) {
  std::vector<uint16_t> h(k);
  std::memcpy(h.data(), bytes.data(), 2 * k);
  return h;
}

// out = W x through the DP4A GEMV, with xq (the form) or without; the F32 outputs.
std::vector<float> Gemv(const testing::QuantMatrix& q, const DevBuf& w, const DevBuf& x,
                        const uint8_t* xq) {
  DevBuf out(q.n * 4);
  MatmulParams p;
  p.x = x.data();
  p.w = {q.type, q.n, q.k, q.row_bytes, w.data()};
  p.out = out.data();
  p.m = 1;
  p.x_type = DType::kF16;
  p.out_type = DType::kF32;
  p.xq = xq;
  EXPECT_TRUE(cuda::GemvQuantDp4aApplies(p));
  const Status st = cuda::gemv_quant_dp4a_cuda(p, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
  bool guards = false;
  const std::vector<uint8_t> b = out.Download(&guards);
  EXPECT_TRUE(guards);
  std::vector<float> v(q.n);
  std::memcpy(v.data(), b.data(), q.n * 4);
  return v;
}

// The GEMV with the form against the GEMV without: the same products, summed in an order that
// may differ; finite.
void ExpectSameGemv(const std::vector<float>& with, const std::vector<float>& without) {
  ASSERT_EQ(with.size(), without.size());
  for (float v : with) ASSERT_TRUE(std::isfinite(v));
  EXPECT_NORMALIZED_NEAR(without.data(), with.data(), with.size(), 1e-6);
}

// The form an op wrote (out_q) beside its F16 row (xb, as downloaded from out) is the host's form
// of that row, and the GEMV of Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1
// weights takes it.
void ExpectTheFormAndTheGemvTakesIt(const std::vector<uint8_t>& xb, const DevBuf& out,
                                    const DevBuf& out_q, int64_t k, uint64_t seed) {
  bool guards = false;
  const std::vector<uint8_t> form = out_q.Download(&guards);
  ASSERT_TRUE(guards) << "write past the form";
  const std::vector<uint8_t> want = HostForm(HalfRow(xb, k));
  ASSERT_EQ(std::memcmp(form.data(), want.data(), want.size()), 0);
  for (GgmlType t :
       {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ2_K, GgmlType::kQ3_K,
        GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1}) {
    if (t == GgmlType::kQ5_K && k >= 8192) continue;  // outside the DP4A GEMV
    if ((t == GgmlType::kQ6_K || t == GgmlType::kQ3_K) && k % 2048 != 0) continue;
    if (t == GgmlType::kQ2_K && k % 1024 != 0) continue;
    // 100 rows: under 2 MB, the staged kernel; 3001 (7 MB at k = 4096): every format the
    // warp-staged form; 7001: Q4_K from 16 MB (k = 4096, 14336) the small-CTA form, the others
    // the warp-staged one (the last CTA part full in both).
    for (int64_t n : {100, 3001, 7001}) {
      const testing::QuantMatrix q = testing::RandomBlocks(t, n, k, seed);
      DevBuf w(q.bytes.data(), q.bytes.size());
      SCOPED_TRACE(std::string(TypeName(t)) + " x " + std::to_string(n));
      ExpectSameGemv(Gemv(q, w, out, out_q.data()), Gemv(q, w, out, nullptr));
    }
  }
}

TEST(CudaActQuantTest, AddRmsNormWritesTheFormAndTheGemvTakesIt) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  // 3328: 13 super-blocks, a run of 8 and a run of 5 in the form's order.
  for (int64_t k : {4096, 14336, 3328}) {
    SCOPED_TRACE(k);
    const std::vector<float> res = testing::RandomVector(k, 11),
                             delta = testing::RandomVector(k, 12);
    std::vector<float> weight = testing::RandomVector(k, 13);
    weight[5] = 40.0f;  // an outlier sets its block's scale
    DevBuf dres(res.data(), k * 4), ddelta(delta.data(), k * 4), dw(weight.data(), k * 4);
    DevBuf out(k * 2), out_q(FormBytes(k));
    AddRmsNormParams p{reinterpret_cast<float*>(dres.data()),
                       ddelta.data(),
                       reinterpret_cast<const float*>(dw.data()),
                       out.data(),
                       1,
                       k,
                       1e-5f,
                       DType::kF32,
                       DType::kF16};
    p.out_q = out_q.data();
    ASSERT_TRUE(cuda::add_rmsnorm_cuda(p, nullptr).ok());
    bool guards = false;
    const std::vector<uint8_t> xb = out.Download(&guards);
    ASSERT_NO_FATAL_FAILURE(ExpectTheFormAndTheGemvTakesIt(xb, out, out_q, k, 14));
  }
}

TEST(CudaActQuantTest, SwigluWritesTheFormAndTheGemvTakesIt) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  for (int64_t k : {4096, 14336}) {
    SCOPED_TRACE(k);
    // gate | up stacked in one row of 2k F32, as the model's gate_up product.
    const std::vector<float> ff = testing::RandomVector(2 * k, 21, 3.0f);
    DevBuf dff(ff.data(), 2 * k * 4);
    DevBuf out(k * 2), out_q(FormBytes(k));
    SwigluParams p{dff.data(), dff.data() + k * 4, out.data(), 1, k, 2 * k,
                   2 * k,      DType::kF32,        DType::kF16};
    p.out_q = out_q.data();
    ASSERT_TRUE(cuda::swiglu_cuda(p, nullptr).ok());
    bool guards = false;
    const std::vector<uint8_t> xb = out.Download(&guards);
    ASSERT_TRUE(guards);
    // The F16 row is the plain kernel's, and the form is the host's from it.
    DevBuf plain(k * 2);
    SwigluParams pp = p;
    pp.out = plain.data();
    pp.out_q = nullptr;
    ASSERT_TRUE(cuda::swiglu_cuda(pp, nullptr).ok());
    const std::vector<uint8_t> pb = plain.Download(&guards);
    ASSERT_EQ(std::memcmp(xb.data(), pb.data(), k * 2), 0);
    ASSERT_NO_FATAL_FAILURE(ExpectTheFormAndTheGemvTakesIt(xb, out, out_q, k, 24));
  }
}

// Decode attention with out_q (one query row) writes beside its F16 output (the same bits as
// without out_q) the host's form of that row, and the GEMV takes it: 300 keys (one split) and
// 1500 or 2500 (several, merged in the main kernel), 4 query heads per KV head of 128 and 64
// (formed by the decode kernels), 16 (merged and formed by the merge kernel) and 80 (by the
// separate kernel after them). The workspace starts zeroed (attention_decode_cuda's counters).
TEST(CudaActQuantTest, DecodeAttentionWritesTheFormAndTheGemvTakesIt) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  struct Case {
    int64_t H, KV, D, len;
  };
  for (const Case c : {Case{32, 8, 128, 300}, Case{32, 8, 128, 2500}, Case{32, 8, 64, 1500},
                       Case{32, 2, 128, 2500}, Case{128, 16, 80, 700}}) {
    SCOPED_TRACE(::testing::Message()
                 << c.H << "/" << c.KV << " heads of " << c.D << ", " << c.len << " keys");
    const int64_t bs = 16, blocks = (c.len + bs - 1) / bs, k = c.H * c.D;
    std::vector<int32_t> table(blocks);
    for (int64_t i = 0; i < blocks; ++i) table[i] = static_cast<int32_t>(blocks - 1 - i);
    const int64_t cache_n = blocks * bs * c.KV * c.D;
    const std::vector<uint8_t> kc = testing::ToBytes(testing::RandomVector(cache_n, 31),
                                                     DType::kF16),
                               vc = testing::ToBytes(testing::RandomVector(cache_n, 32),
                                                     DType::kF16);
    const std::vector<float> q = testing::RandomVector(k, 33, 2.0f);
    const int32_t cu[2] = {0, 1}, len = static_cast<int32_t>(c.len);
    DevBuf dk(kc.data(), kc.size()), dv(vc.data(), vc.size()), dq(q.data(), k * 4), dcu(cu, 8),
        dlen(&len, 4), dtable(table.data(), blocks * 4), ws(size_t{1} << 20);
    ASSERT_EQ(cudaMemset(ws.data(), 0, size_t{1} << 20), cudaSuccess);
    DevBuf out(k * 2), out_q(FormBytes(k)), plain(k * 2);
    AttentionParams p;
    p.q = dq.data();
    p.k_cache = dk.data();
    p.v_cache = dv.data();
    p.cu_seqlens_q = reinterpret_cast<const int32_t*>(dcu.data());
    p.seq_lens_k = reinterpret_cast<const int32_t*>(dlen.data());
    p.block_tables = reinterpret_cast<const int32_t*>(dtable.data());
    p.block_table_stride = blocks;
    p.n_seqs = p.n_tokens = 1;
    p.n_heads = c.H;
    p.n_kv_heads = c.KV;
    p.head_dim = c.D;
    p.block_size = bs;
    p.num_blocks = blocks;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.D));
    p.dtype = DType::kF16;
    p.q_type = DType::kF32;
    p.out = plain.data();
    ASSERT_TRUE(cuda::attention_cuda(p, nullptr, ws.data(), size_t{1} << 20).ok());
    p.out = out.data();
    p.out_q = out_q.data();
    const Status st = cuda::attention_cuda(p, nullptr, ws.data(), size_t{1} << 20);
    ASSERT_TRUE(st.ok()) << st.ToString();
    bool guards = false;
    const std::vector<uint8_t> xb = out.Download(&guards);
    ASSERT_TRUE(guards);
    const std::vector<uint8_t> pb = plain.Download(&guards);
    ASSERT_EQ(std::memcmp(xb.data(), pb.data(), k * 2), 0);
    ASSERT_NO_FATAL_FAILURE(ExpectTheFormAndTheGemvTakesIt(xb, out, out_q, k, 34));
  }
}

TEST(CudaActQuantTest, RefusesShapesWithoutTheForm) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  DevBuf a(4 * 4096 * 4), b(4 * 4096 * 4), o(4 * 4096 * 4), q(FormBytes(4096));
  AddRmsNormParams n{reinterpret_cast<float*>(a.data()),
                     b.data(),
                     reinterpret_cast<const float*>(b.data()),
                     o.data(),
                     2,
                     4096,
                     1e-5f,
                     DType::kF32,
                     DType::kF16};
  n.out_q = q.data();
  EXPECT_EQ(cuda::add_rmsnorm_cuda(n, nullptr).code(), StatusCode::kInvalidArgument);  // 2 rows
  n.n_rows = 1;
  n.dim = 4000;
  EXPECT_EQ(cuda::add_rmsnorm_cuda(n, nullptr).code(), StatusCode::kInvalidArgument);
  n.dim = 4096;
  n.out_type = DType::kBF16;
  EXPECT_EQ(cuda::add_rmsnorm_cuda(n, nullptr).code(), StatusCode::kInvalidArgument);
  SwigluParams s{a.data(), b.data(), o.data(), 2, 4096, 0, 0, DType::kF32, DType::kF16};
  s.out_q = q.data();
  EXPECT_EQ(cuda::swiglu_cuda(s, nullptr).code(), StatusCode::kInvalidArgument);
  s.n_tokens = 1;
  s.dim = 4000;
  EXPECT_EQ(cuda::swiglu_cuda(s, nullptr).code(), StatusCode::kInvalidArgument);
  AttentionParams at;  // 2 query rows
  at.n_seqs = at.n_tokens = 2;
  at.n_heads = at.n_kv_heads = 32;
  at.head_dim = 128;
  at.dtype = DType::kF16;
  at.out = o.data();
  at.out_q = q.data();
  EXPECT_EQ(cuda::attention_cuda(at, nullptr).code(), StatusCode::kInvalidArgument);
  at.n_seqs = at.n_tokens = 1;
  at.dtype = DType::kBF16;
  EXPECT_EQ(cuda::attention_cuda(at, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda::act_quant_cuda(o.data(), 4000, q.data(), nullptr).code(),
            StatusCode::kInvalidArgument);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudaActQuantTest, BackendOffersTheFormWhereTheGemvTakesOneRow) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto gpu = MakeCudaBackend();
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  const Backend& be = **gpu;
  const WeightView q4k{GgmlType::kQ4_K, 1024, 4096, 16 * 144, nullptr};
  EXPECT_EQ(be.QuantizedActivationBytes(q4k, 1, DType::kF16, DType::kF32), FormBytes(4096));
  EXPECT_EQ(be.QuantizedActivationBytes(q4k, 2, DType::kF16, DType::kF32), 0);
  EXPECT_EQ(be.QuantizedActivationBytes(q4k, 1, DType::kBF16, DType::kF32), 0);
  const WeightView f16{GgmlType::kF16, 1024, 4096, 4096 * 2, nullptr};
  EXPECT_EQ(be.QuantizedActivationBytes(f16, 1, DType::kF16, DType::kF32), 0);
  auto cpu = MakeCpuBackend();
  EXPECT_EQ(cpu->QuantizedActivationBytes(q4k, 1, DType::kF16, DType::kF32), 0);
}

}  // namespace
}  // namespace forge
