// The tensor-core prefill attention kernel against attention_ref on the same rounded inputs:
// head dims 64/80/96/128, GQA 1/4/8, F16 and BF16 caches, q in F32 or the cache's dtype, long
// prompts (1000 and 4099 tokens), chunked prefill over a long cached prefix (3000 + 777),
// batches of sequences of different lengths (decode tokens among them), scattered block tables
// of block sizes 1 to 256 (and one not a power of two), causal and not. Long sequences are
// checked on windows of rows (the reference is a double loop on the host): rows [a, b) of a
// chunk with `pre` cached keys are the chunk (pre + a keys cached, b - a new) of the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "backend/cuda/attention/attention_prefill_cuda.h"
#include "backend/cuda/cuda_backend.h"
#include "base/half.h"
#include "support/half_data.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

constexpr double kHalfBound = 1e-2;

using testing::FromBits;
using testing::Rounded;
using testing::ToBits;

struct Shape {
  int64_t H, KV, D;
};

struct Seq {
  int64_t pre, q;  // cached prefix, new tokens (the queries)
};

// One batch: host inputs rounded to the cache dtype (q to the dtype unless q_f32), block tables
// of shuffled block ids.
struct Batch {
  std::vector<Seq> seqs;
  Shape shape;
  DType t = DType::kBF16;
  bool q_f32 = true;
  bool causal = true;
  int64_t bs = 16, width = 1, num_blocks = 0, tokens = 0;
  std::vector<int32_t> cu, lens, tables;
  std::vector<float> kc, vc, q;
  int64_t n() const { return static_cast<int64_t>(seqs.size()); }
};

Batch MakeBatch(std::vector<Seq> seqs, Shape shape, DType t, bool q_f32, int64_t bs, uint64_t seed,
                bool causal = true) {
  Batch b;
  b.seqs = std::move(seqs);
  b.shape = shape;
  b.t = t;
  b.q_f32 = q_f32;
  b.causal = causal;
  b.bs = bs;
  int64_t blocks = 0;
  b.cu = {0};
  for (const Seq& s : b.seqs) {
    const int64_t nb = (s.pre + s.q + bs - 1) / bs;
    b.width = std::max(b.width, nb);
    blocks += nb;
    b.cu.push_back(static_cast<int32_t>(b.cu.back() + s.q));
    b.lens.push_back(static_cast<int32_t>(s.pre + s.q));
  }
  b.tokens = b.cu.back();
  b.num_blocks = blocks + 7;
  b.tables = testing::ShuffledBlockTables(b.lens, bs, b.width, b.num_blocks, seed);
  const int64_t cache_n = b.num_blocks * bs * shape.KV * shape.D;
  b.kc = Rounded(testing::RandomVector(cache_n, seed + 1), t);
  b.vc = Rounded(testing::RandomVector(cache_n, seed + 2), t);
  b.q = testing::RandomVector(b.tokens * shape.H * shape.D, seed + 3, 2.0f);
  if (!q_f32) b.q = Rounded(b.q, t);
  return b;
}

AttentionParams BaseParams(const Batch& b) {
  AttentionParams p;
  p.block_table_stride = b.width;
  p.n_seqs = b.n();
  p.n_tokens = b.tokens;
  p.n_heads = b.shape.H;
  p.n_kv_heads = b.shape.KV;
  p.head_dim = b.shape.D;
  p.block_size = b.bs;
  p.num_blocks = b.num_blocks;
  p.scale = 1.0f / std::sqrt(static_cast<float>(b.shape.D));
  p.causal = b.causal;
  return p;
}

// The reference of rows [a, b) of sequence s: [b - a, H, D].
std::vector<float> ReferenceRows(const Batch& bt, int64_t s, int64_t a, int64_t b) {
  const int64_t HD = bt.shape.H * bt.shape.D;
  std::vector<float> ref((b - a) * HD);
  AttentionParams p = BaseParams(bt);
  const int32_t cu[2] = {0, static_cast<int32_t>(b - a)};
  const int32_t len = static_cast<int32_t>(bt.causal ? bt.seqs[s].pre + b : bt.lens[s]);
  p.n_seqs = 1;
  p.n_tokens = b - a;
  p.q = bt.q.data() + (bt.cu[s] + a) * HD;
  p.k_cache = bt.kc.data();
  p.v_cache = bt.vc.data();
  p.out = ref.data();
  p.cu_seqlens_q = cu;
  p.seq_lens_k = &len;
  p.block_tables = bt.tables.data() + s * bt.width;
  EXPECT_TRUE(attention_ref(p).ok());
  return ref;
}

// Where the device reads K and V from, when not from the batch's own caches: one pool that holds
// both (the batch's V equal to its K), and block tables of ids into it.
struct DevicePool {
  void* cache = nullptr;
  int64_t num_blocks = 0;
  std::vector<int32_t> tables;
};

// Runs the batch on the backend (asserting that the prefill kernel takes it) and compares the
// rows of each sequence (all of them, or windows at the start, the middle and the end of
// sequences longer than `full`) with the reference.
void ExpectMatchesReference(Backend& be, const Batch& b, const std::string& what,
                            int64_t full = 600, int64_t window = 128,
                            const DevicePool* pool = nullptr, int64_t n_single = 0) {
  std::vector<std::unique_ptr<BackendBuffer>> bufs;
  auto put = [&](const void* src, size_t bytes) {
    auto buf = be.Alloc(bytes).value();
    EXPECT_TRUE(be.Upload(buf->data(), src, bytes).ok());
    void* d = buf->data();
    bufs.push_back(std::move(buf));
    return d;
  };
  auto bits = [&](const std::vector<float>& v) {
    std::vector<uint16_t> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = ToBits(v[i], b.t);
    return r;
  };
  const auto kb = bits(b.kc), vb = bits(b.vc), qb = bits(b.q);
  AttentionParams p = BaseParams(b);
  p.k_cache = put(kb.data(), kb.size() * 2);
  p.v_cache = put(vb.data(), vb.size() * 2);
  p.q = b.q_f32 ? put(b.q.data(), b.q.size() * 4) : put(qb.data(), qb.size() * 2);
  p.q_type = b.q_f32 ? DType::kF32 : b.t;
  p.dtype = b.t;
  p.cu_seqlens_q = static_cast<const int32_t*>(put(b.cu.data(), b.cu.size() * 4));
  p.seq_lens_k = static_cast<const int32_t*>(put(b.lens.data(), b.lens.size() * 4));
  p.block_tables = static_cast<const int32_t*>(put(b.tables.data(), b.tables.size() * 4));
  if (pool != nullptr) {
    p.k_cache = p.v_cache = pool->cache;
    p.num_blocks = pool->num_blocks;
    p.block_tables = static_cast<const int32_t*>(put(pool->tables.data(), pool->tables.size() * 4));
  }
  const int64_t HD = b.shape.H * b.shape.D, guard = 64;
  std::vector<uint16_t> poison((b.tokens * HD + guard), 0x7fff);  // NaN in F16 and BF16
  p.out = put(poison.data(), poison.size() * 2);
  p.n_single = n_single;
  ASSERT_TRUE(cuda::AttentionPrefillApplies(p)) << what;
  const Status st = be.Attention(p);
  ASSERT_TRUE(st.ok()) << what << ": " << st.ToString();
  std::vector<uint16_t> got_bits(poison.size());
  ASSERT_TRUE(be.Synchronize().ok());
  ASSERT_TRUE(be.Download(got_bits.data(), p.out, got_bits.size() * 2).ok());
  for (int64_t i = b.tokens * HD; i < b.tokens * HD + guard; ++i) {
    ASSERT_EQ(got_bits[i], 0x7fff) << what << ": guard " << i;
  }
  for (int64_t s = 0; s < b.n(); ++s) {
    const int64_t q = b.seqs[s].q;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    if (q <= full) {
      ranges.push_back({0, q});
    } else {
      const int64_t mid = (q / 2) / 16 * 16 + 5;  // crosses a tile boundary off its start
      ranges = {{0, window}, {mid, mid + window}, {q - window, q}};
    }
    for (auto [a, e] : ranges) {
      if (a >= e) continue;
      const std::vector<float> ref = ReferenceRows(b, s, a, e);
      std::vector<float> got((e - a) * HD);
      for (int64_t i = 0; i < (e - a) * HD; ++i) {
        got[i] = FromBits(got_bits[(b.cu[s] + a) * HD + i], b.t);
      }
      EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), (e - a) * HD, kHalfBound)
          << what << " seq " << s << " rows [" << a << ", " << e << ")";
    }
  }
}

std::string Describe(const Batch& b) {
  return std::string(DTypeName(b.t)) + " H=" + std::to_string(b.shape.H) +
         " KV=" + std::to_string(b.shape.KV) + " D=" + std::to_string(b.shape.D) +
         " bs=" + std::to_string(b.bs) + " q " + (b.q_f32 ? "f32" : "half") +
         (b.causal ? "" : " non-causal");
}

class CudaPrefillAttentionTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    FORGE_REQUIRE_GPU_OR_SKIP();
    auto b = MakeCudaBackend();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    be_ = std::move(b).value();
  }
  std::unique_ptr<Backend> be_;
};

// Head dims and GQA ratios over a mixed batch: query tiles that end inside a warp's rows,
// sequences of 1 query (decode) and of none, prefixes that are not tile multiples.
TEST_P(CudaPrefillAttentionTest, HeadDimsAndGqa) {
  const std::vector<Shape> shapes = {{8, 8, 64},  {8, 2, 80},  {16, 2, 96}, {32, 4, 128},
                                     {8, 1, 128}, {4, 4, 128}, {8, 1, 64},  {12, 3, 96}};
  const std::vector<Seq> seqs = {{0, 130}, {0, 1}, {37, 200}, {0, 64}, {5, 129},
                                 {30, 0},  {9, 1}, {0, 17},   {63, 65}};
  uint64_t seed = 1;
  for (const Shape& shape : shapes) {
    for (bool q_f32 : {true}) {  // the tuned kernels take q in F32 (the model's)
      const Batch b = MakeBatch(seqs, shape, GetParam(), q_f32, 16, ++seed);
      ExpectMatchesReference(*be_, b, Describe(b));
    }
  }
}

// Decode steps leading a batch of prefill chunks (AttentionParams::n_single): the backend runs
// them through the decode kernel and the chunks after them through the prefill kernel, whose
// sequence arrays then start past the decode ones. Long and short contexts, a sequence of no
// queries among the chunks, GQA 1 / 4 / 8; n_single 0 and all-but-one as edges.
TEST_P(CudaPrefillAttentionTest, LeadingDecodeStepsRunApart) {
  const std::vector<Seq> seqs = {{600, 1}, {37, 1},   {1000, 1}, {0, 1},   {15, 1},
                                 {0, 130}, {37, 200}, {30, 0},   {5, 129}, {63, 65}};
  uint64_t seed = 300;
  for (const Shape& shape :
       std::vector<Shape>{{32, 8, 128}, {8, 8, 64}, {8, 1, 128}, {16, 2, 96}}) {
    for (int64_t n_single : {5, 0, 1}) {
      const Batch b = MakeBatch(seqs, shape, GetParam(), true, 16, ++seed);
      ExpectMatchesReference(*be_, b, Describe(b) + " n_single " + std::to_string(n_single), 600,
                             128, nullptr, n_single);
    }
  }
  // Only the last sequence has more than one query.
  const Batch b =
      MakeBatch({{100, 1}, {7, 1}, {0, 1}, {20, 33}}, {32, 8, 128}, GetParam(), true, 16, 400);
  ExpectMatchesReference(*be_, b, Describe(b) + " three leading", 600, 128, nullptr, 3);
}

// Long prompts alone and together (many key tiles, the diagonal tiles far from the start).
TEST_P(CudaPrefillAttentionTest, LongPrompts) {
  uint64_t seed = 100;
  for (const Shape& shape : std::vector<Shape>{{8, 1, 128}, {4, 4, 64}, {8, 2, 80}}) {
    const Batch b = MakeBatch({{0, 1000}}, shape, GetParam(), true, 16, ++seed);
    ExpectMatchesReference(*be_, b, Describe(b) + " 1000");
  }
  const Batch b = MakeBatch({{0, 4099}}, {8, 1, 128}, GetParam(), true, 16, ++seed);
  ExpectMatchesReference(*be_, b, Describe(b) + " 4099");
  const Batch two =
      MakeBatch({{0, 1000}, {0, 1}, {0, 2049}}, {8, 2, 96}, GetParam(), true, 32, ++seed);
  ExpectMatchesReference(*be_, two, Describe(two) + " 1000 + 1 + 2049");
}

// Chunked prefill: the new queries start at seq_len_k - q_len and see the cached prefix.
TEST_P(CudaPrefillAttentionTest, ChunkedPrefillOverALongPrefix) {
  uint64_t seed = 200;
  for (int64_t bs : {16, 32}) {
    for (const Shape& shape : std::vector<Shape>{{8, 2, 128}, {4, 1, 96}}) {
      const Batch b = MakeBatch({{3000, 777}}, shape, GetParam(), true, bs, ++seed);
      ExpectMatchesReference(*be_, b, Describe(b) + " 3000 + 777", 600, 96);
    }
  }
  const Batch mixed = MakeBatch({{3000, 777}, {1, 300}, {500, 1}, {64, 64}, {2000, 129}},
                                {8, 8, 64}, GetParam(), true, 16, ++seed);
  ExpectMatchesReference(*be_, mixed, Describe(mixed) + " mixed chunks", 600, 96);
}

// Block sizes: keys of one 64-key tile spread over many blocks (1, 8, 16) or a tile within one
// block (256); 24 is not a power of two.
TEST_P(CudaPrefillAttentionTest, BlockSizes) {
  uint64_t seed = 300;
  for (int64_t bs : {1, 8, 16, 32, 256, 24}) {
    const Batch b = MakeBatch({{3, 300}, {0, 129}, {64, 65}, {100, 1}}, {16, 4, 96}, GetParam(),
                              true, bs, ++seed);
    ExpectMatchesReference(*be_, b, Describe(b));
  }
}

// Without the causal mask every query sees all keys of its sequence.
TEST_P(CudaPrefillAttentionTest, NonCausal) {
  uint64_t seed = 400;
  for (const Shape& shape : std::vector<Shape>{{8, 2, 128}, {4, 4, 80}}) {
    const Batch b = MakeBatch({{0, 200}, {50, 70}, {0, 1}, {7, 129}}, shape, GetParam(), true, 16,
                              ++seed, /*causal=*/false);
    ExpectMatchesReference(*be_, b, Describe(b));
  }
}

// Block ids whose element offsets (id * block_size * n_kv_heads * head_dim) pass 2^31: a pool of
// 2^20 + 64 blocks of 2048 elements (4.3 GB, K and V share it), sequences over its last blocks
// and its first ones, on both kernels (head dims 128 and 96). Skipped where the device lacks the
// memory.
TEST_P(CudaPrefillAttentionTest, OffsetsPast2To31) {
  const DType t = GetParam();
  for (const Shape& shape : std::vector<Shape>{{8, 1, 128}, {16, 2, 96}}) {
    const int64_t bs = 16, block_elems = bs * shape.KV * shape.D;
    const int64_t num_blocks = ((int64_t{1} << 31) + block_elems - 1) / block_elems + 64;
    const size_t pool_bytes = static_cast<size_t>(num_blocks * block_elems * 2);
    int64_t free_bytes = 0, total_bytes = 0;
    be_->MemoryInfo(&free_bytes, &total_bytes);
    if (free_bytes < static_cast<int64_t>(pool_bytes) + (int64_t{1} << 30)) {
      GTEST_SKIP() << "needs " << (pool_bytes >> 20) << " MiB of device memory, "
                   << (free_bytes >> 20) << " free";
    }
    // The compact batch is the reference; on the device its block i lives at id map[i] of the
    // pool: the first 4 at the bottom, the rest at the top.
    Batch b = MakeBatch({{0, 300}, {1200, 77}, {5, 1}}, shape, t, true, bs, 500 + shape.D);
    b.vc = b.kc;
    std::vector<int64_t> map(b.num_blocks);
    for (int64_t i = 0; i < b.num_blocks; ++i) map[i] = i < 4 ? i : num_blocks - b.num_blocks + i;
    ASSERT_GT(map.back() * block_elems, int64_t{1} << 31);
    auto pool = be_->Alloc(pool_bytes);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    std::vector<uint16_t> kb(b.kc.size());
    for (size_t i = 0; i < kb.size(); ++i) kb[i] = ToBits(b.kc[i], t);
    for (int64_t i = 0; i < b.num_blocks; ++i) {
      ASSERT_TRUE(be_->Upload(static_cast<uint16_t*>((*pool)->data()) + map[i] * block_elems,
                              kb.data() + i * block_elems, block_elems * 2)
                      .ok());
    }
    DevicePool dp{(*pool)->data(), num_blocks, b.tables};
    for (int32_t& id : dp.tables) {
      if (id >= 0) id = static_cast<int32_t>(map[id]);
    }
    ExpectMatchesReference(*be_, b, Describe(b) + " past 2^31", 600, 128, &dp);
  }
}

// The dispatch: head dims 64 and 128 run the wgmma kernel, 80 and 96 the mma.sync one; a decode
// batch (one query per sequence) is neither's.
TEST(CudaPrefillAttentionDispatchTest, HeadDimsPickTheKernel) {
  AttentionParams p;
  p.dtype = DType::kBF16;
  p.n_seqs = 2;
  p.n_tokens = 40;
  p.n_heads = 8;
  p.n_kv_heads = 2;
  p.block_size = 16;
  for (int64_t d : {64, 80, 96, 128}) {
    p.head_dim = d;
    EXPECT_TRUE(cuda::AttentionPrefillApplies(p)) << d;
    EXPECT_EQ(cuda::AttentionPrefillWgmmaApplies(p), d == 64 || d == 128) << d;
  }
  p.head_dim = 256;
  EXPECT_FALSE(cuda::AttentionPrefillApplies(p));
  EXPECT_FALSE(cuda::AttentionPrefillWgmmaApplies(p));
  p.head_dim = 128;
  p.n_tokens = p.n_seqs;
  EXPECT_FALSE(cuda::AttentionPrefillWgmmaApplies(p));
  EXPECT_FALSE(cuda::attention_prefill_wgmma_cuda(p, nullptr).ok());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaPrefillAttentionTest,
                         ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace forge
