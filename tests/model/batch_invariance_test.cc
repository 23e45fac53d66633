// Batch invariance on the CPU backend (DESIGN.md): a sequence's logits are bit-identical alone,
// in a ragged batch with other sequences (prefill chunks and decode tokens mixed), and when its
// prompt is split into prefill chunks; also under tensor parallelism over two CPU ranks. Also for
// Gemma's layer, whose sliding windows (8 keys here) move with the chunks.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "modelgen/model_maker.h"
#include "runtime/model_runner.h"
#include "sched/block_pool.h"
#include "support/dense_forward.h"
#include "support/test_env.h"

namespace forge {
namespace {

constexpr int kBlock = 16;

struct Runner {
  ModelRunner* model;
  KvCache* cache;
  BlockPool* pool;
};

std::vector<int32_t> RandomTokens(int n, uint64_t seed, int vocab) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % vocab);
  return t;
}

// Logits of every position of `tokens`, run as the given chunk sizes, alone.
std::vector<float> RunAlone(Runner r, const std::vector<int32_t>& tokens,
                            const std::vector<int>& chunks) {
  SequenceBlocks seq;
  std::vector<float> all, logits;
  int pos = 0;
  for (int n : chunks) {
    EXPECT_TRUE(seq.Reserve(*r.pool, pos + n, kBlock).ok());
    ForwardBatch b;
    b.block_size = kBlock;
    std::vector<int32_t> part(tokens.begin() + pos, tokens.begin() + pos + n);
    EXPECT_TRUE(b.AddSequence(part, pos, seq.blocks, ForwardBatch::Logits::kAll).ok());
    b.Finish();
    EXPECT_TRUE(r.model->Forward(b, *r.cache, &logits).ok());
    all.insert(all.end(), logits.begin(), logits.end());
    pos += n;
  }
  seq.Release(*r.pool);
  return all;
}

// ranks > 1: tensor parallelism over that many CPU backends (a host collective).
void CheckModel(const std::string& path, int ranks = 1) {
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<Backend*> rank_backends;
  for (int r = 0; r < ranks; ++r)
    rank_backends.push_back(backends.emplace_back(MakeCpuBackend()).get());
  std::unique_ptr<Collective> collective = ranks > 1 ? MakeHostCollective(ranks) : nullptr;
  auto model = ModelRunner::LoadParallel(path, rank_backends, collective.get());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const int64_t V = (*model)->config().n_vocab;
  auto cache = (*model)->CreateKvCache(256, kBlock);
  ASSERT_TRUE(cache.ok());
  BlockPool pool(256);
  Runner r{model->get(), cache->get(), &pool};

  const std::vector<int32_t> a = RandomTokens(37, 1, static_cast<int>(V));
  std::vector<float> alone = RunAlone(r, a, {37});
  // Chunked prefill: 16 + 5 + 1 + 15.
  std::vector<float> chunked = RunAlone(r, a, {16, 5, 1, 15});
  ASSERT_EQ(alone.size(), chunked.size());
  EXPECT_EQ(0, std::memcmp(alone.data(), chunked.data(), alone.size() * 4)) << "chunked prefill";
  // One token at a time (decode path).
  std::vector<int> ones(37, 1);
  std::vector<float> decoded = RunAlone(r, a, ones);
  EXPECT_EQ(0, std::memcmp(alone.data(), decoded.data(), alone.size() * 4)) << "token by token";

  // Ragged batches: `a` in 3 steps (20, 16, 1 tokens) beside other sequences of other lengths.
  const std::vector<int32_t> b_tok = RandomTokens(50, 2, static_cast<int>(V));
  const std::vector<int32_t> c_tok = RandomTokens(9, 3, static_cast<int>(V));
  SequenceBlocks sa, sb, sc;
  std::vector<float> got, logits;
  const int a_steps[3][2] = {{0, 20}, {20, 16}, {36, 1}};
  const int b_steps[3][2] = {{0, 33}, {33, 1}, {34, 16}};
  const int c_steps[3][2] = {{0, 1}, {1, 8}, {9, 0}};
  for (int step = 0; step < 3; ++step) {
    ForwardBatch batch;
    batch.block_size = kBlock;
    // Order varies per step: c, a, b / a, b, c / b, c, a.
    for (int slot = 0; slot < 3; ++slot) {
      int which = (slot + 2 * step + 2) % 3;
      if (which == 0) {
        auto [p, n] = std::pair{a_steps[step][0], a_steps[step][1]};
        ASSERT_TRUE(sa.Reserve(pool, p + n, kBlock).ok());
        std::vector<int32_t> part(a.begin() + p, a.begin() + p + n);
        ASSERT_TRUE(batch.AddSequence(part, p, sa.blocks, ForwardBatch::Logits::kAll).ok());
      } else if (which == 1) {
        auto [p, n] = std::pair{b_steps[step][0], b_steps[step][1]};
        ASSERT_TRUE(sb.Reserve(pool, p + n, kBlock).ok());
        std::vector<int32_t> part(b_tok.begin() + p, b_tok.begin() + p + n);
        ASSERT_TRUE(batch.AddSequence(part, p, sb.blocks, ForwardBatch::Logits::kLast).ok());
      } else {
        auto [p, n] = std::pair{c_steps[step][0], c_steps[step][1]};
        if (n == 0) continue;
        ASSERT_TRUE(sc.Reserve(pool, p + n, kBlock).ok());
        std::vector<int32_t> part(c_tok.begin() + p, c_tok.begin() + p + n);
        ASSERT_TRUE(batch.AddSequence(part, p, sc.blocks, ForwardBatch::Logits::kLast).ok());
      }
    }
    batch.Finish();
    ASSERT_TRUE((*model)->Forward(batch, **cache, &logits).ok());
    // Pick out a's rows: logits_indices are in output order; a's rows are its tokens.
    const int a_first = [&] {
      for (int s = 0; s < batch.n_seqs(); ++s) {
        if (batch.seq_lens_k[s] == a_steps[step][0] + a_steps[step][1] &&
            batch.cu_seqlens_q[s + 1] - batch.cu_seqlens_q[s] == a_steps[step][1] &&
            batch.token_ids[batch.cu_seqlens_q[s]] == a[a_steps[step][0]]) {
          return batch.cu_seqlens_q[s];
        }
      }
      return -1;
    }();
    ASSERT_GE(a_first, 0);
    for (size_t o = 0; o < batch.logits_indices.size(); ++o) {
      int idx = batch.logits_indices[o];
      if (idx >= a_first && idx < a_first + a_steps[step][1]) {
        got.insert(got.end(), logits.begin() + o * V, logits.begin() + (o + 1) * V);
      }
    }
  }
  ASSERT_EQ(got.size(), alone.size());
  EXPECT_EQ(0, std::memcmp(alone.data(), got.data(), alone.size() * 4)) << "ragged batch";
  sa.Release(pool);
  sb.Release(pool);
  sc.Release(pool);
  EXPECT_EQ(pool.num_used(), 0);
}

// A synthetic Gemma file: windows of 8 keys (Gemma 2: layers 0 and 2 of 3; Gemma 3: all three),
// Gemma 2's soft-caps.
std::string MakeGemma(const std::string& arch) {
  ModelSpec spec = testing::SmallSpec(arch, 3);
  spec.sliding_window = 8;
  spec.attn_softcap = arch == "gemma2" ? 2.0f : 0.0f;
  spec.final_softcap = arch == "gemma2" ? 3.0f : 0.0f;
  const std::string path = testing::TempDir() + "/" + arch + ".gguf";
  auto made = MakeModel(spec, path);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return path;
}

TEST(BatchInvarianceTest, Gemma2) { CheckModel(MakeGemma("gemma2")); }

TEST(BatchInvarianceTest, Gemma3TensorParallel2) { CheckModel(MakeGemma("gemma3"), 2); }

// Qwen3-MoE: 8 experts of 48 features, 3 a token; the rows routed to an expert change with the
// batch, its outputs may not.
TEST(BatchInvarianceTest, Qwen3MoeTensorParallel2) {
  ModelSpec spec = testing::SmallSpec("qwen3moe", 2);
  spec.n_expert = 8;
  spec.n_expert_used = 3;
  spec.n_ff_exp = 64;
  const std::string path = testing::TempDir() + "/qwen3moe.gguf";
  ASSERT_TRUE(MakeModel(spec, path).ok());
  CheckModel(path);
  CheckModel(path, 2);
}

TEST(BatchInvarianceTest, Stories260K) {
  CheckModel(testing::TestDataPath("models/stories260K.gguf"));
}

TEST(BatchInvarianceTest, Stories260KQ8) {
  CheckModel(testing::TestDataPath("models/stories260K-q8_0.gguf"));
}

TEST(BatchInvarianceTest, Stories260KTensorParallel2) {
  CheckModel(testing::TestDataPath("models/stories260K.gguf"), 2);
}

TEST(BatchInvarianceTest, Stories260KQ8TensorParallel2) {
  CheckModel(testing::TestDataPath("models/stories260K-q8_0.gguf"), 2);
}

}  // namespace
}  // namespace forge
