// Split-KV decode attention (one query per sequence) against attention_ref on the same rounded
// inputs: GQA 1/2/4/7/8/16, head dims 64/80/96/128, F16 and BF16, q in F32 or the cache's dtype,
// contexts from 0 (graph padding: zeros) to 20000 keys over scattered blocks of several sizes;
// a batch equals its sequences run alone (within the bound: the splits depend on the batch) and
// gives the same bits on every call, a graph replay equals the eager call, and block ids whose
// element offsets pass 2^31.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "backend/cuda/attention/attention_decode_cuda.h"
#include "backend/cuda/cuda_backend.h"
#include "base/half.h"
#include "support/half_data.h"
#include "support/op_harness.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::Bits;
using testing::Floats;
using testing::Rounded;

struct Shape {
  int64_t H, KV, D;
};

// One decode batch: host inputs (rounded to the cache dtype), scattered block tables.
struct Batch {
  std::vector<int64_t> lens;
  Shape shape;
  int64_t bs = 16, width = 0, num_blocks = 0;
  DType t = DType::kBF16;
  bool q_f32 = true;
  std::vector<int32_t> tables;   // [n, width], -1 past each sequence's blocks
  std::vector<float> kc, vc, q;  // caches [num_blocks, bs, KV, D], q [n, H, D]
  int64_t n() const { return static_cast<int64_t>(lens.size()); }
};

Batch MakeBatch(std::vector<int64_t> lens, Shape shape, DType t, bool q_f32, int64_t bs,
                uint64_t seed) {
  Batch b;
  b.lens = std::move(lens);
  b.shape = shape;
  b.t = t;
  b.q_f32 = q_f32;
  b.bs = bs;
  int64_t blocks = 0;
  for (int64_t l : b.lens) {
    b.width = std::max(b.width, (l + bs - 1) / bs);
    blocks += (l + bs - 1) / bs;
  }
  b.width = std::max<int64_t>(b.width, 1);
  b.num_blocks = blocks + 5;
  b.tables = testing::ShuffledBlockTables(b.lens, bs, b.width, b.num_blocks, seed);
  const int64_t cache_n = b.num_blocks * bs * shape.KV * shape.D;
  b.kc = Rounded(testing::RandomVector(cache_n, seed + 1), t);
  b.vc = Rounded(testing::RandomVector(cache_n, seed + 2), t);
  b.q = testing::RandomVector(b.n() * shape.H * shape.D, seed + 3, 2.0f);
  if (!q_f32) b.q = Rounded(b.q, t);
  return b;
}

AttentionParams BaseParams(const Batch& b) {
  AttentionParams p;
  p.block_table_stride = b.width;
  p.n_seqs = b.n();
  p.n_tokens = b.n();
  p.n_heads = b.shape.H;
  p.n_kv_heads = b.shape.KV;
  p.head_dim = b.shape.D;
  p.block_size = b.bs;
  p.num_blocks = b.num_blocks;
  p.scale = 1.0f / std::sqrt(static_cast<float>(b.shape.D));
  return p;
}

// attention_ref one sequence at a time (a sequence of no keys is zeros).
std::vector<float> Reference(const Batch& b) {
  const int64_t HD = b.shape.H * b.shape.D;
  std::vector<float> ref(b.n() * HD, 0.0f);
  for (int64_t s = 0; s < b.n(); ++s) {
    if (b.lens[s] == 0) continue;
    AttentionParams p = BaseParams(b);
    const int32_t cu[2] = {0, 1};
    const int32_t len = static_cast<int32_t>(b.lens[s]);
    p.n_seqs = p.n_tokens = 1;
    p.q = b.q.data() + s * HD;
    p.k_cache = b.kc.data();
    p.v_cache = b.vc.data();
    p.out = ref.data() + s * HD;
    p.cu_seqlens_q = cu;
    p.seq_lens_k = &len;
    p.block_tables = b.tables.data() + s * b.width;
    EXPECT_TRUE(attention_ref(p).ok());
  }
  return ref;
}

// Device copies of a batch's inputs; Run() returns the output's bits.
class DeviceBatch {
 public:
  DeviceBatch(Backend& be, const Batch& b) : be_(be) {
    const auto kb = Bits(b.kc, b.t), vb = Bits(b.vc, b.t), qb = Bits(b.q, b.t);
    p_ = BaseParams(b);
    p_.k_cache = Put(kb.data(), kb.size() * 2);
    p_.v_cache = Put(vb.data(), vb.size() * 2);
    p_.q = b.q_f32 ? Put(b.q.data(), b.q.size() * 4) : Put(qb.data(), qb.size() * 2);
    p_.q_type = b.q_f32 ? DType::kF32 : b.t;
    p_.dtype = b.t;
    std::vector<int32_t> cu(b.n() + 1), lens(b.n());
    std::iota(cu.begin(), cu.end(), 0);
    for (int64_t s = 0; s < b.n(); ++s) lens[s] = static_cast<int32_t>(b.lens[s]);
    p_.cu_seqlens_q = static_cast<const int32_t*>(Put(cu.data(), cu.size() * 4));
    p_.seq_lens_k = static_cast<const int32_t*>(Put(lens.data(), lens.size() * 4));
    p_.block_tables = static_cast<const int32_t*>(Put(b.tables.data(), b.tables.size() * 4));
    out_bytes_ = static_cast<size_t>(b.n() * b.shape.H * b.shape.D * 2);
    p_.out = Put(nullptr, out_bytes_);
  }
  const AttentionParams& params() const { return p_; }
  // Poisons the output (NaN bits), runs the backend's attention, downloads the output.
  std::vector<uint16_t> Run() {
    Poison();
    EXPECT_TRUE(be_.Attention(p_).ok());
    return Download();
  }
  void Poison() {
    std::vector<uint16_t> poison(out_bytes_ / 2, 0x7fff);
    EXPECT_TRUE(be_.Upload(p_.out, poison.data(), out_bytes_).ok());
  }
  std::vector<uint16_t> Download() {
    std::vector<uint16_t> got(out_bytes_ / 2);
    EXPECT_TRUE(be_.Download(got.data(), p_.out, out_bytes_).ok());
    return got;
  }

 private:
  void* Put(const void* src, size_t bytes) {
    auto buf = be_.Alloc(bytes).value();
    if (src != nullptr) {
      EXPECT_TRUE(be_.Upload(buf->data(), src, bytes).ok());
    }
    void* d = buf->data();
    bufs_.push_back(std::move(buf));
    return d;
  }
  Backend& be_;
  AttentionParams p_;
  size_t out_bytes_ = 0;
  std::vector<std::unique_ptr<BackendBuffer>> bufs_;
};

// Runs b on the backend and compares with the reference; sequences of no keys must be 0.
void ExpectMatchesReference(Backend& be, const Batch& b, const std::string& what) {
  DeviceBatch d(be, b);
  ASSERT_TRUE(cuda::AttentionDecodeApplies(d.params())) << what;
  const std::vector<float> got = Floats(d.Run(), b.t);
  const std::vector<float> ref = Reference(b);
  EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), static_cast<int64_t>(ref.size()), 1e-2) << what;
  const int64_t HD = b.shape.H * b.shape.D;
  for (int64_t s = 0; s < b.n(); ++s) {
    if (b.lens[s] != 0) continue;
    for (int64_t i = 0; i < HD; ++i) ASSERT_EQ(got[s * HD + i], 0.0f) << what << " seq " << s;
  }
}

std::string Describe(const Batch& b) {
  return std::string(DTypeName(b.t)) + " H=" + std::to_string(b.shape.H) +
         " KV=" + std::to_string(b.shape.KV) + " D=" + std::to_string(b.shape.D) +
         " bs=" + std::to_string(b.bs) + " q " + (b.q_f32 ? "f32" : "half");
}

class CudaDecodeAttentionTest : public ::testing::TestWithParam<DType> {};

TEST_P(CudaDecodeAttentionTest, MatchesReference) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = MakeCudaBackend();
  ASSERT_TRUE(be.ok());
  const std::vector<Shape> shapes = {{8, 8, 64},  {8, 4, 80},   {32, 8, 128}, {16, 2, 96},
                                     {8, 1, 128}, {28, 4, 128}, {16, 1, 64}};
  uint64_t seed = 10;
  for (const Shape& shape : shapes) {
    for (bool q_f32 : {true}) {  // the tuned kernels take q in F32 (the model's)
      const Batch b =
          MakeBatch({1, 15, 16, 17, 100, 700, 33}, shape, GetParam(), q_f32, 16, ++seed);
      ExpectMatchesReference(**be, b, Describe(b));
    }
  }
}

// Long contexts take many splits (and the merge); short ones and empty ones one.
TEST_P(CudaDecodeAttentionTest, LongContextsAndMixedBatches) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = MakeCudaBackend();
  ASSERT_TRUE(be.ok());
  const std::vector<int64_t> lens = {1, 4096, 20000, 0, 513, 31, 1024, 2049};
  {
    DeviceBatch d(**be, MakeBatch(lens, {32, 8, 128}, GetParam(), true, 16, 99));
    ASSERT_GT(cuda::AttentionDecodeSplits(d.params(), lens, 2), 8);
    ASSERT_GT(cuda::AttentionDecodeSplits(d.params(), lens, 1), 1);
    ASSERT_EQ(cuda::AttentionDecodeSplits(d.params(), lens, 5), 1);
    ASSERT_EQ(cuda::AttentionDecodeSplits(d.params(), lens, 3), 1);
  }
  // The fewest keys a split: 128 per sequence of the batch, at most 1024. A lone 2,048-key
  // sequence takes 16 splits of 128 keys (the GPU has room for its 8 KV heads x 16 items); in a
  // batch of 8 such sequences each takes 2 of 1,024.
  for (int64_t n : {1, 8}) {
    const std::vector<int64_t> same(static_cast<size_t>(n), 2048);
    DeviceBatch d(**be, MakeBatch(same, {32, 8, 128}, GetParam(), true, 16, 98));
    EXPECT_EQ(cuda::AttentionDecodeSplits(d.params(), same, 0), n == 1 ? 16 : 2) << n;
  }
  uint64_t seed = 100;
  // Up to 8 query heads per KV head merge in the kernel, more in the merge kernel (32 / 2).
  for (const Shape& shape :
       std::vector<Shape>{{32, 8, 128}, {8, 1, 64}, {16, 16, 128}, {32, 2, 128}}) {
    const Batch b = MakeBatch(lens, shape, GetParam(), true, 16, ++seed);
    ExpectMatchesReference(**be, b, Describe(b) + " long");
  }
  // Other block sizes: keys straddle blocks and splits in other places.
  for (int64_t bs : {1, 8, 32, 256}) {
    const Batch b = MakeBatch({3, 600, 3001, 17}, {16, 4, 96}, GetParam(), true, bs, ++seed);
    ExpectMatchesReference(**be, b, Describe(b));
  }
  // One sequence alone over many splits (the 1 x long case of the benchmark).
  const Batch one = MakeBatch({32768}, {32, 8, 128}, GetParam(), true, 16, ++seed);
  ExpectMatchesReference(**be, one, Describe(one) + " 1 x 32768");
}

// A sequence's output in a batch is within the bound of the sequence run alone (where it may take
// other splits: they depend on the batch), and a batch gives the same bits on every call (the
// splits are merged in order, whichever block finishes last; the merge counters are reset).
TEST_P(CudaDecodeAttentionTest, BatchedMatchesPerSequenceAndRepeats) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = MakeCudaBackend();
  ASSERT_TRUE(be.ok());
  const std::vector<int64_t> lens = {5000, 1, 700, 0, 16, 12000, 513, 77, 2048};
  const Shape shape{32, 8, 128};
  const Batch b = MakeBatch(lens, shape, GetParam(), true, 16, 7);
  DeviceBatch d(**be, b);
  const std::vector<uint16_t> all = d.Run();
  for (int r = 0; r < 4; ++r) ASSERT_EQ(d.Run(), all) << "call " << r + 2;
  const int64_t HD = shape.H * shape.D;
  const std::vector<float> all_f = Floats(all, b.t);
  for (int64_t s = 0; s < b.n(); ++s) {
    Batch one = b;
    one.lens = {b.lens[s]};
    one.width = std::max<int64_t>(1, (b.lens[s] + b.bs - 1) / b.bs);
    one.tables.assign(b.tables.begin() + s * b.width, b.tables.begin() + s * b.width + one.width);
    one.q.assign(b.q.begin() + s * HD, b.q.begin() + (s + 1) * HD);
    DeviceBatch d1(**be, one);
    const std::vector<float> alone = Floats(d1.Run(), b.t);
    ASSERT_EQ(alone.size(), static_cast<size_t>(HD));
    if (b.lens[s] == 0) {
      for (int64_t i = 0; i < HD; ++i) ASSERT_EQ(all_f[s * HD + i], 0.0f) << "sequence " << s;
      continue;
    }
    EXPECT_NORMALIZED_NEAR(alone.data(), all_f.data() + s * HD, HD, 1e-2)
        << "sequence " << s << " (" << b.lens[s] << " keys)";
  }
}

// The launch records into a CUDA graph (the workspace is the backend's: nothing is allocated)
// and a replay equals the eager call; without a workspace (one split per sequence) the result
// is within the bound of the split one.
TEST_P(CudaDecodeAttentionTest, GraphReplayAndNoWorkspace) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = MakeCudaBackend();
  ASSERT_TRUE(be.ok());
  const Batch b = MakeBatch({9000, 0, 300, 4500}, {32, 8, 128}, GetParam(), true, 16, 21);
  DeviceBatch d(**be, b);
  const std::vector<uint16_t> eager = d.Run();
  d.Poison();
  ASSERT_TRUE((*be)->Synchronize().ok());
  ASSERT_TRUE((*be)->BeginCapture().ok());
  const Status st = (*be)->Attention(d.params());
  auto graph = (*be)->EndCapture();
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  for (int r = 0; r < 2; ++r) {
    d.Poison();
    ASSERT_TRUE((*graph)->Replay().ok());
    EXPECT_EQ(d.Download(), eager) << "replay " << r;
  }
  d.Poison();
  ASSERT_TRUE((*be)->Synchronize().ok());
  ASSERT_TRUE(cuda::attention_decode_cuda(d.params(), nullptr, 0, nullptr).ok());
  const std::vector<float> unsplit = Floats(d.Download(), b.t);
  const std::vector<float> split = Floats(eager, b.t);
  EXPECT_NORMALIZED_NEAR(split.data(), unsplit.data(), static_cast<int64_t>(split.size()), 1e-2);
}

// Block ids whose element offsets (id * block_size * n_kv_heads * head_dim) pass 2^31: a pool of
// 2^20 + 64 blocks of 2048 elements (4.3 GB, K and V share it), sequences over its last blocks
// and its first ones. Skipped where the device lacks the memory.
TEST_P(CudaDecodeAttentionTest, OffsetsPast2To31) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  auto be = MakeCudaBackend();
  ASSERT_TRUE(be.ok());
  const DType t = GetParam();
  const Shape shape{8, 1, 128};
  const int64_t bs = 16, block_elems = bs * shape.KV * shape.D;
  const int64_t num_blocks = (int64_t{1} << 31) / block_elems + 64;
  const size_t pool_bytes = static_cast<size_t>(num_blocks * block_elems * 2);
  int64_t free_bytes = 0, total_bytes = 0;
  (*be)->MemoryInfo(&free_bytes, &total_bytes);
  if (free_bytes < static_cast<int64_t>(pool_bytes) + (int64_t{1} << 30)) {
    GTEST_SKIP() << "needs " << (pool_bytes >> 20) << " MiB of device memory, "
                 << (free_bytes >> 20) << " free";
  }
  // The compact batch (its own small pool) is the reference; on the device its block i lives at
  // id map[i] of the big pool: the first 4 at the bottom, the rest at the top.
  Batch b = MakeBatch({1500, 37, 600, 1}, shape, t, true, bs, 33);
  std::vector<int64_t> map(b.num_blocks);
  for (int64_t i = 0; i < b.num_blocks; ++i) map[i] = i < 4 ? i : num_blocks - b.num_blocks + i;
  ASSERT_GT(map.back() * block_elems, int64_t{1} << 31);
  auto pool = (*be)->Alloc(pool_bytes);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  const auto kb = Bits(b.kc, t);
  for (int64_t i = 0; i < b.num_blocks; ++i) {
    ASSERT_TRUE((*be)
                    ->Upload(static_cast<uint16_t*>((*pool)->data()) + map[i] * block_elems,
                             kb.data() + i * block_elems, block_elems * 2)
                    .ok());
  }
  b.vc = b.kc;  // K and V share the device pool
  const std::vector<float> ref = Reference(b);
  Batch big = b;
  for (int32_t& id : big.tables) {
    if (id >= 0) id = static_cast<int32_t>(map[id]);
  }
  DeviceBatch d(**be, big);  // uploads its own small caches; p points at the pool instead
  AttentionParams p = d.params();
  p.k_cache = p.v_cache = (*pool)->data();
  p.num_blocks = num_blocks;
  d.Poison();
  ASSERT_TRUE((*be)->Attention(p).ok());
  const std::vector<float> got = Floats(d.Download(), t);
  EXPECT_NORMALIZED_NEAR(ref.data(), got.data(), static_cast<int64_t>(ref.size()), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaDecodeAttentionTest,
                         ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace forge
