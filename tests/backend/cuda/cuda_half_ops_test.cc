// The op harness in F16 and BF16 on the CUDA backend: inputs rounded to the dtype, the CPU _ref
// twin run on the same rounded values in F32/F64, the GPU output widened back and compared with
// the half-precision bound (1e-2, DESIGN.md). Outputs are poisoned and followed by guard
// elements that must survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

#include "backend/cuda/attention/attention_prefill_cuda.h"
#include "backend/cuda/cuda_backend.h"
#include "base/half.h"
#include "support/half_data.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::RandomVector;

constexpr int64_t kGuard = 16;
constexpr double kHalfBound = 1e-2;

using testing::FromBits;
using testing::Rounded;
using testing::ToBits;

// Device buffers of any dtype with guard elements after the data.
class Dev {
 public:
  explicit Dev(Backend& be) : be_(be) {}
  // Uploads v (rounded to t) followed by poisoned guard elements.
  void* Put(const std::vector<float>& v, DType t) {
    const size_t es = DTypeSize(t);
    std::vector<char> bytes((v.size() + kGuard) * es);
    for (size_t i = 0; i < v.size() + kGuard; ++i) {
      const float x = i < v.size() ? v[i] : std::nanf("");
      if (t == DType::kF32) {
        std::memcpy(bytes.data() + i * 4, &x, 4);
      } else {
        const uint16_t b = i < v.size() ? ToBits(x, t) : uint16_t{0x7fff};  // NaN in both
        std::memcpy(bytes.data() + i * 2, &b, 2);
      }
    }
    auto buf = be_.Alloc(bytes.size()).value();
    EXPECT_TRUE(be_.Upload(buf->data(), bytes.data(), bytes.size()).ok());
    void* p = buf->data();
    bufs_.push_back(std::move(buf));
    return p;
  }
  // A poisoned output of n elements.
  void* Out(int64_t n, DType t) { return Put(std::vector<float>(n, std::nanf("")), t); }
  template <typename T>
  T* PutInts(const std::vector<T>& v) {
    auto buf = be_.Alloc(v.size() * sizeof(T) + 4).value();
    EXPECT_TRUE(be_.Upload(buf->data(), v.data(), v.size() * sizeof(T)).ok());
    T* p = static_cast<T*>(buf->data());
    bufs_.push_back(std::move(buf));
    return p;
  }
  // Downloads n elements widened to F32; *guards_ok says whether the guards survived.
  std::vector<float> Get(const void* d, int64_t n, DType t, bool* guards_ok) {
    const size_t es = DTypeSize(t);
    std::vector<char> bytes((n + kGuard) * es);
    EXPECT_TRUE(be_.Synchronize().ok());
    EXPECT_TRUE(be_.Download(bytes.data(), d, bytes.size()).ok());
    std::vector<float> out(n);
    *guards_ok = true;
    for (int64_t i = 0; i < n + kGuard; ++i) {
      float x;
      if (t == DType::kF32) {
        std::memcpy(&x, bytes.data() + i * 4, 4);
      } else {
        uint16_t b;
        std::memcpy(&b, bytes.data() + i * 2, 2);
        x = FromBits(b, t);
      }
      if (i < n)
        out[i] = x;
      else if (!std::isnan(x))
        *guards_ok = false;
    }
    return out;
  }

 private:
  Backend& be_;
  std::vector<std::unique_ptr<BackendBuffer>> bufs_;
};

class CudaHalfOpsTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    FORGE_REQUIRE_GPU_OR_SKIP();
    auto b = MakeCudaBackend();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    be_ = std::move(b).value();
  }
  std::unique_ptr<Backend> be_;
};

WeightView F32View(const std::vector<float>& w, int64_t rows, int64_t cols) {
  return {GgmlType::kF32, rows, cols, cols * 4, reinterpret_cast<const uint8_t*>(w.data())};
}

TEST_P(CudaHalfOpsTest, Matmul) {
  const DType t = GetParam();
  for (int64_t m : {1, 3, 8, 9, 17, 64, 300}) {  // 1..8: the GEMV kernel; more: cuBLAS
    for (auto [n, k] : {std::pair<int64_t, int64_t>{5, 16}, {13, 64}, {1000, 96}, {256, 4096}}) {
      for (DType out_t : {t, DType::kF32}) {
        Dev dev(*be_);
        const std::vector<float> x = Rounded(RandomVector(m * k, m), t);
        const std::vector<float> w = Rounded(RandomVector(n * k, n), t);
        const std::vector<float> bias = RandomVector(n, 3);
        std::vector<float> ref(m * n);
        ASSERT_TRUE(
            matmul_ref({x.data(), 0, F32View(w, n, k), bias.data(), ref.data(), 0, m}).ok());
        // Weights stored in the activation dtype are used as stored; F32 ones are converted.
        std::vector<uint16_t> wbits(n * k);
        for (int64_t i = 0; i < n * k; ++i) wbits[i] = ToBits(w[i], t);
        WeightView stored{t == DType::kF16 ? GgmlType::kF16 : GgmlType::kBF16, n, k, k * 2,
                          reinterpret_cast<const uint8_t*>(wbits.data())};
        for (const WeightView& hw : {F32View(w, n, k), stored}) {
          auto dw = be_->PrepareWeight(hw, t);
          ASSERT_TRUE(dw.ok()) << dw.status().ToString();
          void* out = dev.Out(m * n, out_t);
          MatmulParams p{dev.Put(x, t), 0, *dw, static_cast<float*>(dev.Put(bias, DType::kF32)),
                         out,           0, m};
          p.x_type = t;
          p.out_type = out_t;
          ASSERT_TRUE(be_->Matmul(p).ok());
          bool guards;
          auto got = dev.Get(out, m * n, out_t, &guards);
          EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), m * n, kHalfBound)
              << m << "x" << n << "x" << k << " out " << DTypeName(out_t) << " from "
              << TypeName(hw.type);
          EXPECT_TRUE(guards);
        }
      }
    }
  }
}

TEST_P(CudaHalfOpsTest, NormsRopeSwigluEmbeddingGather) {
  const DType t = GetParam();
  Dev dev(*be_);
  bool guards;
  // 5: the element-wise kernels; 64, 80, 4096: add_rmsnorm's 16-byte units; 16392: beyond them.
  for (int64_t dim : {5, 64, 80, 4096, 16392}) {
    const int64_t rows = 7;
    const std::vector<float> x = RandomVector(rows * dim, dim), w = RandomVector(dim, 1);
    const std::vector<float> xh = Rounded(x, t);
    const float* dw = static_cast<float*>(dev.Put(w, DType::kF32));
    // F32 residual in, dtype out; and dtype in place (q/k norm).
    std::vector<float> ref(rows * dim);
    ASSERT_TRUE(rmsnorm_ref({x.data(), w.data(), ref.data(), rows, dim, 1e-5f}).ok());
    void* out = dev.Out(rows * dim, t);
    ASSERT_TRUE(
        be_->RmsNorm({dev.Put(x, DType::kF32), dw, out, rows, dim, 1e-5f, DType::kF32, t}).ok());
    auto got = dev.Get(out, rows * dim, t, &guards);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), rows * dim, kHalfBound) << "rmsnorm " << dim;
    EXPECT_TRUE(guards);
    ASSERT_TRUE(rmsnorm_ref({xh.data(), w.data(), ref.data(), rows, dim, 1e-5f}).ok());
    void* inplace = dev.Put(xh, t);
    ASSERT_TRUE(be_->RmsNorm({inplace, dw, inplace, rows, dim, 1e-5f, t, t}).ok());
    got = dev.Get(inplace, rows * dim, t, &guards);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), rows * dim, kHalfBound) << "in place " << dim;

    // Residual add fused with the norm: the F32 residual exactly, the output within the bound;
    // the delta in the dtype and in F32 (as the model's matmuls write it), out in the dtype and
    // in F32.
    const std::vector<float> delta = Rounded(RandomVector(rows * dim, dim + 1), t);
    std::vector<float> res_ref = x, out_ref(rows * dim);
    ASSERT_TRUE(
        add_rmsnorm_ref({res_ref.data(), delta.data(), w.data(), out_ref.data(), rows, dim, 1e-5f})
            .ok());
    for (auto [dt, ot] : {std::pair{t, t}, {DType::kF32, t}, {DType::kF32, DType::kF32}}) {
      float* res = static_cast<float*>(dev.Put(x, DType::kF32));
      void* nout = dev.Out(rows * dim, ot);
      ASSERT_TRUE(
          be_->AddRmsNorm({res, dev.Put(delta, dt), dw, nout, rows, dim, 1e-5f, dt, ot}).ok());
      auto res_got = dev.Get(res, rows * dim, DType::kF32, &guards);
      EXPECT_NORMALIZED_NEAR(res_ref.data(), res_got.data(), rows * dim, 0) << "residual " << dim;
      got = dev.Get(nout, rows * dim, ot, &guards);
      EXPECT_NORMALIZED_NEAR(out_ref.data(), got.data(), rows * dim,
                             ot == DType::kF32 ? 1e-5 : kHalfBound)
          << "add_rmsnorm " << dim << " out " << DTypeName(ot);
      EXPECT_TRUE(guards);
    }
  }
  for (RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kNeox}) {
    for (int64_t hd : {8, 64, 80, 96, 128}) {
      const int64_t T = 13, H = 4;
      std::vector<float> x = Rounded(RandomVector(T * H * hd, hd), t);
      std::vector<int32_t> pos(T);
      for (int64_t i = 0; i < T; ++i) pos[i] = static_cast<int32_t>(i * 37 + 5);
      void* d = dev.Put(x, t);
      RopeParams p{x.data(), pos.data(), T, H, hd, 0, hd, 500000.0f, 1.0f, nullptr, style};
      ASSERT_TRUE(rope_ref(p).ok());
      p.x = d;
      p.positions = dev.PutInts(pos);
      p.dtype = t;
      ASSERT_TRUE(be_->Rope(p).ok());
      auto got = dev.Get(d, T * H * hd, t, &guards);
      EXPECT_NORMALIZED_NEAR(x.data(), got.data(), T * H * hd, kHalfBound) << "rope " << hd;
      EXPECT_TRUE(guards);
    }
  }
  // Rows of 300 take the element-wise kernel; rows of multiples of 8 the 16-byte one (296: a
  // partial block; 4104 at 130 tokens: several blocks a row); stride 2 dim: gate and up
  // interleaved by rows, as the stacked gate/up matmul writes them.
  for (auto [T, dim, stacked] : {std::tuple<int64_t, int64_t, bool>{9, 300, false},
                                 {9, 296, false},
                                 {130, 4104, true},
                                 {3, 64, true}}) {
    std::vector<float> g = Rounded(RandomVector(T * dim, 1), t);
    std::vector<float> u = Rounded(RandomVector(T * dim, 2), t);
    std::vector<float> ref(T * dim);
    ASSERT_TRUE(swiglu_ref({g.data(), u.data(), ref.data(), T, dim, 0, 0}).ok());
    const int64_t stride = stacked ? 2 * dim : 0;
    if (stacked) {  // row r: gate's row, then up's row
      std::vector<float> both(2 * T * dim);
      for (int64_t r = 0; r < T; ++r) {
        std::copy_n(g.begin() + r * dim, dim, both.begin() + 2 * r * dim);
        std::copy_n(u.begin() + r * dim, dim, both.begin() + (2 * r + 1) * dim);
      }
      g = both;
    }
    for (DType in_t : {t, DType::kF32}) {  // the model feeds it F32 gate/up products
      void* out = dev.Out(T * dim, t);
      const void* dg = dev.Put(g, in_t);
      const void* du =
          stacked ? static_cast<const char*>(dg) + dim * DTypeSize(in_t) : dev.Put(u, in_t);
      ASSERT_TRUE(be_->Swiglu({dg, du, out, T, dim, stride, stride, in_t, t}).ok());
      auto got = dev.Get(out, T * dim, t, &guards);
      EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), T * dim, kHalfBound)
          << "swiglu " << T << " x " << dim;
      EXPECT_TRUE(guards);
    }
  }
  {
    // The table is prepared in the dtype; rows come out exactly as the dtype holds them.
    const int64_t V = 50, dim = 33;
    const std::vector<float> table = RandomVector(V * dim, 4), th = Rounded(table, t);
    const std::vector<int32_t> ids = {3, 0, 49, 3, 17};
    std::vector<float> ref(5 * dim);
    ASSERT_TRUE(embedding_ref({F32View(th, V, dim), ids.data(), 5, ref.data()}).ok());
    auto dt = be_->PrepareWeight(F32View(table, V, dim), t);
    ASSERT_TRUE(dt.ok());
    float* out = static_cast<float*>(dev.Out(5 * dim, DType::kF32));
    ASSERT_TRUE(be_->Embedding({*dt, dev.PutInts(ids), 5, out}).ok());
    auto got = dev.Get(out, 5 * dim, DType::kF32, &guards);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), 5 * dim, 0) << "embedding";
    EXPECT_TRUE(guards);
    const std::vector<int32_t> rows = {4, 1};
    std::vector<float> gref(2 * dim);
    for (int r = 0; r < 2; ++r)
      std::copy_n(th.begin() + ids[rows[r]] * dim, dim, gref.begin() + r * dim);
    std::vector<float> src(5 * dim);
    for (int i = 0; i < 5; ++i) std::copy_n(th.begin() + ids[i] * dim, dim, src.begin() + i * dim);
    void* gout = dev.Out(2 * dim, t);
    ASSERT_TRUE(be_->GatherRows({dev.Put(src, t), dev.PutInts(rows), 2, dim, gout, t}).ok());
    got = dev.Get(gout, 2 * dim, t, &guards);
    EXPECT_NORMALIZED_NEAR(gref.data(), got.data(), 2 * dim, 0) << "gather";
    EXPECT_TRUE(guards);
  }
}

TEST_P(CudaHalfOpsTest, KvWriteAndPagedAttention) {
  const DType t = GetParam();
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
                             {6, 3, 200, {{17, 2}, {0, 0}, {3, 1}}},
                             // The tensor-core prefill kernel: many query and key tiles,
                             // tiles that straddle sequences, empty and decode sequences.
                             {16, 4, 128, {{40, 300}}},
                             {8, 8, 64, {{0, 1}, {0, 63}, {3, 64}, {0, 65}, {20, 130}}},
                             {8, 1, 64, {{9, 1}, {0, 0}, {64, 63}, {0, 64}, {1, 65}, {0, 130}}},
                             {4, 4, 80, {{0, 130}, {16, 65}, {0, 64}, {30, 0}, {5, 63}, {0, 1}}},
                             {16, 2, 80, {{0, 1}, {0, 63}, {0, 64}, {63, 65}, {2, 130}}},
                             {8, 8, 96, {{0, 65}, {0, 1}, {7, 130}, {0, 63}, {0, 64}}},
                             {8, 1, 96, {{100, 130}, {0, 64}, {0, 65}, {1, 1}, {0, 63}}}};
  // More than 32 sequences (the prefill kernel finds its tile scanning 32 at a time): decodes
  // around two prefill chunks.
  Case many{8, 2, 64, {}};
  for (int s = 0; s < 40; ++s) many.seqs.push_back({s % 7 * 5, s == 17 ? 70 : s == 33 ? 2 : 1});
  cases.push_back(many);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    // New K/V and q in the dtype, or F32 (as the model passes them) in every other case.
    const DType src_t = ci % 2 == 0 ? t : DType::kF32;
    Dev dev(*be_);
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
        const int64_t pos = pre + i;
        slots.push_back(
            static_cast<int32_t>(tables[tables.size() - width + pos / bs] * bs + pos % bs));
      }
      next += 2 * nb + 1;
    }
    const int64_t num_blocks = next + 1, T = cu.back(), row = c.KV * c.D;
    const std::vector<float> kc = Rounded(RandomVector(num_blocks * bs * row, 1), t);
    const std::vector<float> vc = Rounded(RandomVector(num_blocks * bs * row, 2), t);
    const std::vector<float> knew = Rounded(RandomVector(T * row, 3), src_t);
    const std::vector<float> vnew = Rounded(RandomVector(T * row, 4), src_t);
    const std::vector<float> q = Rounded(RandomVector(T * c.H * c.D, 5), src_t);
    std::vector<float> hk = kc, hv = vc;
    ASSERT_TRUE(kv_write_ref({knew.data(), vnew.data(), 0, 0, slots.data(), T, c.KV, c.D,
                              num_blocks * bs, hk.data(), hv.data()})
                    .ok());
    hk = Rounded(hk, t);  // what the cache holds
    hv = Rounded(hv, t);
    void* dk = dev.Put(kc, t);
    void* dv = dev.Put(vc, t);
    const int32_t* dslots = dev.PutInts(slots);
    ASSERT_TRUE(be_->KvWrite({dev.Put(knew, src_t), dev.Put(vnew, src_t), 0, 0, dslots, T, c.KV,
                              c.D, num_blocks * bs, dk, dv, t, src_t})
                    .ok());
    bool guards;
    // K/V writes are exact (rounded once to the dtype).
    auto kgot = dev.Get(dk, num_blocks * bs * row, t, &guards);
    EXPECT_NORMALIZED_NEAR(hk.data(), kgot.data(), num_blocks * bs * row, 0) << "kv_write";
    EXPECT_TRUE(guards);
    std::vector<float> ref(T * c.H * c.D);
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
    void* out = dev.Out(T * c.H * c.D, t);
    p.q = dev.Put(q, src_t);
    p.q_type = src_t;
    p.k_cache = dk;
    p.v_cache = dv;
    p.out = out;
    p.cu_seqlens_q = dev.PutInts(cu);
    p.seq_lens_k = dev.PutInts(lens);
    p.block_tables = dev.PutInts(tables);
    p.dtype = t;
    ASSERT_TRUE(be_->Attention(p).ok());
    auto got = dev.Get(out, T * c.H * c.D, t, &guards);
    EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), T * c.H * c.D, kHalfBound)
        << "case " << ci << " head_dim " << c.D << " q " << DTypeName(src_t) << " kernel "
        << (cuda::AttentionPrefillApplies(p) ? "prefill" : "generic");
    EXPECT_TRUE(guards);
  }
}

// The fused op on the model's layout: q, k, v rows of one [T, q | k | v] F32 buffer, a cache in
// the dtype; against rope_kv_write_ref on the host (q exact to F32 rounding, the cache exact).
TEST_P(CudaHalfOpsTest, RopeKvWriteMatchesTheSeparateOps) {
  const DType t = GetParam();
  for (RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kNeox}) {
    // 130 tokens: a block takes all of a token's heads (from 128 tokens), not 4 of them.
    for (auto [H, KV, D, T] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{8, 2, 64, 21},
                               {4, 4, 80, 21},
                               {32, 8, 128, 21},
                               {4, 1, 8, 21},
                               {32, 8, 128, 130},
                               {4, 4, 80, 130}}) {
      Dev dev(*be_);
      // Distinct slots ((7 i) mod num_slots) for every token.
      const int64_t row = (H + 2 * KV) * D, num_slots = T > 64 ? 256 : 64;
      const std::vector<float> qkv = RandomVector(T * row, D);
      std::vector<int32_t> pos(T), slots(T);
      for (int64_t i = 0; i < T; ++i) {
        pos[i] = static_cast<int32_t>(i * 1013 + 7);
        slots[i] = i == 5 ? -1 : static_cast<int32_t>((i * 7) % num_slots);
      }
      std::vector<float> factors(D / 2);
      for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.1f * i;
      const std::vector<float> kc0 = Rounded(RandomVector(num_slots * KV * D, 1), t);
      const std::vector<float> vc0 = Rounded(RandomVector(num_slots * KV * D, 2), t);
      auto params = [&](void* base, void* kc, void* vc, const int32_t* p, const int32_t* sl,
                        const float* ff, DType cache_t) {
        RopeKvWriteParams r;
        float* q = static_cast<float*>(base);
        r.q = {q, p, T, H, D, row, D, 500000.0f, 1.0f, ff, style};
        r.k = r.q;
        r.k.x = q + H * D;
        r.k.n_heads = KV;
        r.kv = {q + H * D, q + (H + KV) * D, row, row, sl,      T,          KV,
                D,         num_slots,        kc,  vc,  cache_t, DType::kF32};
        return r;
      };
      std::vector<float> hq = qkv, hk = kc0, hv = vc0;
      ASSERT_TRUE(rope_kv_write_ref(params(hq.data(), hk.data(), hv.data(), pos.data(),
                                           slots.data(), factors.data(), DType::kF32))
                      .ok());
      void* dq = dev.Put(qkv, DType::kF32);
      void* dk = dev.Put(kc0, t);
      void* dv = dev.Put(vc0, t);
      ASSERT_TRUE(be_->RopeKvWrite(params(dq, dk, dv, dev.PutInts(pos), dev.PutInts(slots),
                                          static_cast<float*>(dev.Put(factors, DType::kF32)), t))
                      .ok());
      bool guards;
      auto gq = dev.Get(dq, T * row, DType::kF32, &guards);
      EXPECT_NORMALIZED_NEAR(hq.data(), gq.data(), T * row, 1e-5) << "q and k rotated";
      EXPECT_TRUE(guards);
      hk = Rounded(hk, t);
      hv = Rounded(hv, t);
      auto gk = dev.Get(dk, num_slots * KV * D, t, &guards);
      auto gv = dev.Get(dv, num_slots * KV * D, t, &guards);
      // The rotated k differs from the host's by F32 rounding, which can flip one half rounding.
      EXPECT_NORMALIZED_NEAR(hk.data(), gk.data(), num_slots * KV * D, 1e-2) << "K cache";
      EXPECT_NORMALIZED_NEAR(hv.data(), gv.data(), num_slots * KV * D, 0) << "V cache";
      EXPECT_TRUE(guards);
    }
  }
  // q and k that disagree on the rotation are refused.
  RopeKvWriteParams bad;
  bad.q.rope_dims = bad.k.rope_dims = 64;
  bad.q.head_dim = 64;
  bad.k.head_dim = 64;
  bad.k.theta = 1.0f;
  EXPECT_EQ(be_->RopeKvWrite(bad).code(), StatusCode::kInvalidArgument);
}

TEST_P(CudaHalfOpsTest, MismatchedMatmulTypesAreErrors) {
  const DType t = GetParam();
  std::vector<float> w(64 * 16, 0.5f);
  auto dw = be_->PrepareWeight(F32View(w, 64, 16), t);
  ASSERT_TRUE(dw.ok());
  MatmulParams p{nullptr, 0, *dw, nullptr, nullptr, 0, 1};
  p.x_type = DType::kF32;  // F32 activations against half weights
  Status st = be_->Matmul(p);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaHalfOpsTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace forge
