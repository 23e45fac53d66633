// The op harness on the CUDA backend: every op against its CPU _ref twin (F32 bound 1e-5 unless
// stated), with poisoned outputs and guard words, over the shapes DESIGN.md lists.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cuda/cuda_backend.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::GuardedBuffer;
using testing::RandomVector;

// Host vectors mirrored on the device.
class Dev {
 public:
  explicit Dev(Backend& be) : be_(be) {}
  template <typename T>
  T* Put(const std::vector<T>& v) {
    auto buf = be_.Alloc(v.size() * sizeof(T) + testing::kGuardFloats * 4).value();
    EXPECT_TRUE(be_.Upload(buf->data(), v.data(), v.size() * sizeof(T)).ok());
    T* p = static_cast<T*>(buf->data());
    bufs_.push_back(std::move(buf));
    return p;
  }
  // A device copy of a guarded (poisoned) host buffer, guards included.
  float* Put(GuardedBuffer& g) {
    auto buf = be_.Alloc((g.size() + testing::kGuardFloats) * 4).value();
    EXPECT_TRUE(be_.Upload(buf->data(), g.data(), (g.size() + testing::kGuardFloats) * 4).ok());
    float* p = buf->f32();
    bufs_.push_back(std::move(buf));
    return p;
  }
  void Get(GuardedBuffer& g, const float* d) {
    EXPECT_TRUE(be_.Synchronize().ok());
    EXPECT_TRUE(be_.Download(g.data(), d, (g.size() + testing::kGuardFloats) * 4).ok());
  }

 private:
  Backend& be_;
  std::vector<std::unique_ptr<BackendBuffer>> bufs_;
};

std::unique_ptr<Backend> Gpu() {
  auto b = MakeCudaBackend();
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? std::move(b).value() : nullptr;
}

TEST(CudaOpsTest, MatmulF32) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = Gpu();
  for (int64_t m : {1, 2, 3, 8, 17, 64, 512}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{5, 7}, {64, 256}, {13, 4096}, {1000, 96}}) {
      Dev dev(*be);
      std::vector<float> x = RandomVector(m * k, m), w = RandomVector(n * k, n),
                         bias = RandomVector(n, 3);
      WeightView hw{GgmlType::kF32, n, k, k * 4, reinterpret_cast<const uint8_t*>(w.data())};
      GuardedBuffer ref(m * n), got(m * n);
      ASSERT_TRUE(matmul_ref({x.data(), 0, hw, bias.data(), ref.data(), 0, m}).ok());
      WeightView dw = be->PrepareWeight(hw, DType::kF32).value();
      float* dout = dev.Put(got);
      ASSERT_TRUE(be->Matmul({dev.Put(x), 0, dw, dev.Put(bias), dout, 0, m}).ok());
      dev.Get(got, dout);
      EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), m * n, 1e-5) << m << "x" << n << "x" << k;
      EXPECT_TRUE(got.GuardsIntact());
    }
  }
}

TEST(CudaOpsTest, RmsNormRopeSwigluEmbeddingGather) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = Gpu();
  Dev dev(*be);
  for (int64_t dim : {5, 64, 80, 4096}) {
    const int64_t rows = 7;
    std::vector<float> x = RandomVector(rows * dim, dim), w = RandomVector(dim, 1);
    GuardedBuffer ref(rows * dim), got(rows * dim);
    ASSERT_TRUE(rmsnorm_ref({x.data(), w.data(), ref.data(), rows, dim, 1e-5f}).ok());
    float* d = dev.Put(got);
    ASSERT_TRUE(be->RmsNorm({dev.Put(x), dev.Put(w), d, rows, dim, 1e-5f}).ok());
    dev.Get(got, d);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), rows * dim, 1e-5) << "rmsnorm " << dim;
    EXPECT_TRUE(got.GuardsIntact());
  }
  for (RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kNeox}) {
    for (int64_t hd : {8, 64, 80, 96, 128}) {
      const int64_t T = 13, H = 4;
      std::vector<float> x = RandomVector(T * H * hd, hd);
      std::vector<int32_t> pos(T);
      for (int64_t t = 0; t < T; ++t) pos[t] = static_cast<int32_t>(t * 37 + 5);
      std::vector<float> factors(hd / 2);
      for (auto& f : factors) f = 1.0f + 0.25f * (&f - factors.data());
      GuardedBuffer ref(T * H * hd), got(T * H * hd);
      std::copy(x.begin(), x.end(), ref.data());
      std::copy(x.begin(), x.end(), got.data());
      RopeParams p{ref.data(), pos.data(), T, H, hd, 0, hd, 500000.0f, 0.5f, factors.data(), style};
      ASSERT_TRUE(rope_ref(p).ok());
      float* d = dev.Put(got);
      p.x = d;
      p.positions = dev.Put(pos);
      p.freq_factors = dev.Put(factors);
      ASSERT_TRUE(be->Rope(p).ok());
      dev.Get(got, d);
      EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), T * H * hd, 1e-5) << "rope " << hd;
    }
  }
  {
    const int64_t T = 9, dim = 300;
    std::vector<float> g = RandomVector(T * dim, 1), u = RandomVector(T * dim, 2);
    GuardedBuffer ref(T * dim), got(T * dim);
    ASSERT_TRUE(swiglu_ref({g.data(), u.data(), ref.data(), T, dim, 0, 0}).ok());
    float* d = dev.Put(got);
    ASSERT_TRUE(be->Swiglu({dev.Put(g), dev.Put(u), d, T, dim, 0, 0}).ok());
    dev.Get(got, d);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), T * dim, 1e-6) << "swiglu";
  }
  {
    const int64_t V = 50, dim = 33;
    std::vector<float> table = RandomVector(V * dim, 4);
    std::vector<int32_t> ids = {3, 0, 49, 3, 17};
    WeightView ht{GgmlType::kF32, V, dim, dim * 4, reinterpret_cast<const uint8_t*>(table.data())};
    GuardedBuffer ref(5 * dim), got(5 * dim);
    ASSERT_TRUE(embedding_ref({ht, ids.data(), 5, ref.data()}).ok());
    float* d = dev.Put(got);
    ASSERT_TRUE(
        be->Embedding({be->PrepareWeight(ht, DType::kF32).value(), dev.Put(ids), 5, d}).ok());
    dev.Get(got, d);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), 5 * dim, 0) << "embedding";
    GuardedBuffer gref(2 * dim), ggot(2 * dim);
    std::vector<int32_t> rows = {4, 1};
    for (int r = 0; r < 2; ++r) std::copy_n(ref.data() + rows[r] * dim, dim, gref.data() + r * dim);
    float* dg = dev.Put(ggot);
    ASSERT_TRUE(be->GatherRows({d, dev.Put(rows), 2, dim, dg}).ok());
    dev.Get(ggot, dg);
    EXPECT_NORMALIZED_NEAR(gref.data(), ggot.data(), 2 * dim, 0) << "gather";
    EXPECT_TRUE(ggot.GuardsIntact());
  }
}

TEST(CudaOpsTest, KvWriteAndPagedAttention) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = Gpu();
  const int64_t bs = 16;
  struct Case {
    int64_t H, KV, D;
    std::vector<std::pair<int, int>> seqs;  // (cached prefix, new tokens)
  };
  std::vector<Case> cases = {{8, 8, 64, {{0, 1}}},
                             {8, 2, 80, {{15, 1}, {0, 17}, {16, 16}}},
                             {32, 4, 128, {{100, 1}, {33, 1}, {0, 5}}},
                             {4, 4, 96, {{7, 13}, {0, 7}}},
                             {8, 1, 8, {{1000, 1}, {5, 300}}},
                             {4, 2, 256, {{40, 3}}},
                             {6, 3, 200, {{17, 2}, {0, 0}, {3, 1}}}};
  for (const Case& c : cases) {
    Dev dev(*be);
    std::vector<int32_t> cu = {0}, lens, tables, slots;
    int64_t width = 1, next = 0;
    for (auto [pre, q] : c.seqs) width = std::max<int64_t>(width, (pre + q + bs - 1) / bs);
    for (auto [pre, q] : c.seqs) {
      cu.push_back(cu.back() + q);
      lens.push_back(pre + q);
      const int64_t nb = (pre + q + bs - 1) / bs;
      for (int64_t b = 0; b < width; ++b) {
        tables.push_back(b < nb ? static_cast<int32_t>(next + 2 * (nb - 1 - b)) : -1);
      }
      for (int64_t i = 0; i < q; ++i) {
        int64_t pos = pre + i;
        slots.push_back(
            static_cast<int32_t>(tables[tables.size() - width + pos / bs] * bs + pos % bs));
      }
      next += 2 * nb + 1;
    }
    const int64_t num_blocks = next + 1, T = cu.back(), row = c.KV * c.D;
    std::vector<float> kc = RandomVector(num_blocks * bs * row, 1),
                       vc = RandomVector(num_blocks * bs * row, 2);
    std::vector<float> knew = RandomVector(T * row, 3), vnew = RandomVector(T * row, 4);
    std::vector<float> q = RandomVector(T * c.H * c.D, 5);
    // Reference: write on the host, attend on the host.
    std::vector<float> hk = kc, hv = vc;
    ASSERT_TRUE(kv_write_ref({knew.data(), vnew.data(), 0, 0, slots.data(), T, c.KV, c.D,
                              num_blocks * bs, hk.data(), hv.data()})
                    .ok());
    float* dk = dev.Put(kc);
    float* dv = dev.Put(vc);
    ASSERT_TRUE(be->KvWrite({dev.Put(knew), dev.Put(vnew), 0, 0, dev.Put(slots), T, c.KV, c.D,
                             num_blocks * bs, dk, dv})
                    .ok());
    GuardedBuffer ref(T * c.H * c.D), got(T * c.H * c.D);
    AttentionParams p;
    p.q = q.data();
    p.k_cache = hk.data();
    p.v_cache = hv.data();
    p.out = ref.data();
    p.cu_seqlens_q = cu.data();
    p.seq_lens_k = lens.data();
    p.block_tables = tables.data();
    p.block_table_stride = width;
    p.n_seqs = static_cast<int64_t>(lens.size());
    p.n_tokens = T;
    p.n_heads = c.H;
    p.n_kv_heads = c.KV;
    p.head_dim = c.D;
    p.block_size = bs;
    p.num_blocks = num_blocks;
    p.scale = 1.0f / std::sqrt(float(c.D));
    ASSERT_TRUE(attention_ref(p).ok());
    float* dout = dev.Put(got);
    p.q = dev.Put(q);
    p.k_cache = dk;
    p.v_cache = dv;
    p.out = dout;
    p.cu_seqlens_q = dev.Put(cu);
    p.seq_lens_k = dev.Put(lens);
    p.block_tables = dev.Put(tables);
    ASSERT_TRUE(be->Attention(p).ok());
    dev.Get(got, dout);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), T * c.H * c.D, 1e-5) << "head_dim " << c.D;
    EXPECT_TRUE(got.GuardsIntact());
  }
}

TEST(CudaOpsTest, UnsupportedHeadDimIsNamed) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = Gpu();
  AttentionParams p;
  p.head_dim = 320;
  p.n_heads = p.n_kv_heads = 1;
  Status st = be->Attention(p);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("head_dim=320"), std::string::npos);
}

}  // namespace
}  // namespace forge
