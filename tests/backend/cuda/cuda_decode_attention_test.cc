// The decode attention kernel (one query per sequence, one block per (sequence, KV head)) against
// attention_ref on the same rounded inputs: GQA 1/2/4/8, head dims 64/80/96/128, contexts from 1
// to 700 keys over scattered blocks, q in F32 (as the model passes it) or the cache's dtype.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cuda/attention/attention_decode_cuda.h"
#include "backend/cuda/cuda_backend.h"
#include "base/half.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

std::vector<float> Rounded(std::vector<float> v, DType t) {
  for (float& x : v) x = t == DType::kF16 ? F16ToF32(F32ToF16(x)) : BF16ToF32(F32ToBF16(x));
  return v;
}

std::vector<uint16_t> Bits(const std::vector<float>& v, DType t) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = t == DType::kF16 ? F32ToF16(v[i]) : F32ToBF16(v[i]);
  return b;
}

class CudaDecodeAttentionTest : public ::testing::TestWithParam<DType> {};

TEST_P(CudaDecodeAttentionTest, MatchesReference) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = MakeCudaBackend();
  ASSERT_TRUE(be.ok());
  const DType t = GetParam();
  const int64_t bs = 16;
  for (auto [H, KV, D] : {std::tuple<int64_t, int64_t, int64_t>{8, 8, 64},
                          {8, 4, 80},
                          {32, 8, 128},
                          {16, 2, 96},
                          {8, 1, 128}}) {
    for (bool q_f32 : {true, false}) {
      const std::vector<int64_t> lens = {1, 15, 16, 17, 100, 700, 33};
      const int64_t S = static_cast<int64_t>(lens.size());
      int64_t width = 0, blocks = 0;
      for (int64_t l : lens) width = std::max(width, (l + bs - 1) / bs);
      for (int64_t l : lens) blocks += (l + bs - 1) / bs;
      const int64_t num_blocks = blocks + 3;
      std::vector<int32_t> cu(S + 1), seq_lens(S), tables(S * width, -1);
      int64_t next = num_blocks - 1;  // blocks handed out from the top down: scattered
      for (int64_t s = 0; s < S; ++s) {
        cu[s + 1] = static_cast<int32_t>(s + 1);
        seq_lens[s] = static_cast<int32_t>(lens[s]);
        for (int64_t b = 0; b < (lens[s] + bs - 1) / bs; ++b)
          tables[s * width + b] = static_cast<int32_t>(next--);
      }
      const int64_t cache_n = num_blocks * bs * KV * D;
      const std::vector<float> kc = Rounded(testing::RandomVector(cache_n, 1), t);
      const std::vector<float> vc = Rounded(testing::RandomVector(cache_n, 2), t);
      std::vector<float> q = testing::RandomVector(S * H * D, 3, 2.0f);
      if (!q_f32) q = Rounded(q, t);
      AttentionParams p;
      p.q = q.data();
      p.k_cache = kc.data();
      p.v_cache = vc.data();
      std::vector<float> ref(S * H * D);
      p.out = ref.data();
      p.cu_seqlens_q = cu.data();
      p.seq_lens_k = seq_lens.data();
      p.block_tables = tables.data();
      p.block_table_stride = width;
      p.n_seqs = S;
      p.n_tokens = S;
      p.n_heads = H;
      p.n_kv_heads = KV;
      p.head_dim = D;
      p.block_size = bs;
      p.num_blocks = num_blocks;
      p.scale = 1.0f / std::sqrt(static_cast<float>(D));
      ASSERT_TRUE(attention_ref(p).ok());
      // Device copies.
      std::vector<std::unique_ptr<BackendBuffer>> bufs;
      auto put = [&](const void* src, size_t bytes) {
        auto b = (*be)->Alloc(bytes).value();
        EXPECT_TRUE((*be)->Upload(b->data(), src, bytes).ok());
        void* d = b->data();
        bufs.push_back(std::move(b));
        return d;
      };
      const auto kb = Bits(kc, t), vb = Bits(vc, t);
      const auto qb = Bits(q, t);
      p.k_cache = put(kb.data(), kb.size() * 2);
      p.v_cache = put(vb.data(), vb.size() * 2);
      p.q = q_f32 ? put(q.data(), q.size() * 4) : put(qb.data(), qb.size() * 2);
      p.q_type = q_f32 ? DType::kF32 : t;
      p.dtype = t;
      std::vector<uint16_t> poison(S * H * D, 0x7fff);
      p.out = put(poison.data(), poison.size() * 2);
      p.cu_seqlens_q = static_cast<int32_t*>(put(cu.data(), cu.size() * 4));
      p.seq_lens_k = static_cast<int32_t*>(put(seq_lens.data(), seq_lens.size() * 4));
      p.block_tables = static_cast<int32_t*>(put(tables.data(), tables.size() * 4));
      ASSERT_TRUE(cuda::AttentionDecodeApplies(p));
      ASSERT_TRUE((*be)->Attention(p).ok());
      std::vector<uint16_t> got_bits(S * H * D);
      ASSERT_TRUE((*be)->Download(got_bits.data(), p.out, got_bits.size() * 2).ok());
      std::vector<float> got(got_bits.size());
      for (size_t i = 0; i < got.size(); ++i) {
        got[i] = t == DType::kF16 ? F16ToF32(got_bits[i]) : BF16ToF32(got_bits[i]);
      }
      EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), S * H * D, 1e-2)
          << "H=" << H << " KV=" << KV << " D=" << D << " q " << (q_f32 ? "f32" : "half");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaDecodeAttentionTest,
                         ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace forge
