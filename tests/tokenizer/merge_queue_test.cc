// MergeQueue: both paths (heap, rank buckets) pop in (rank, position) order, checked against a
// std::multiset, with pushes interleaved with pops, including pushes ranked at or below the rank
// being popped (the buckets' overflow heap) and buckets that are refilled.
#include "tokenizer/merge_queue.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>

#include "tokenizer/encode_work.h"

namespace forge {
namespace {

using Key = std::pair<int32_t, int32_t>;  // (rank, left)

// Pops everything after pushing `initial`; after each pop, with probability 1/2, pushes up to
// two candidates whose ranks are drawn around the popped one (monotone: only above it).
void CheckOrder(bool buckets, bool monotone, uint32_t seed) {
  std::mt19937 rng(seed);
  const int32_t num_ranks = 1 + static_cast<int32_t>(rng() % 3000);
  MergeQueue q;
  q.Reset(num_ranks, buckets);
  std::multiset<Key> reference;
  auto push = [&](int32_t rank, int32_t left) {
    q.Push(MergeCandidate{rank, left, left + 1, 0, 0});
    reference.insert({rank, left});
  };
  const int n = 1 + static_cast<int>(rng() % 2000);
  for (int i = 0; i < n; ++i) push(static_cast<int32_t>(rng() % num_ranks), i);
  MergeCandidate c;
  int pops = 0;
  while (q.Pop(&c)) {
    ASSERT_FALSE(reference.empty());
    const Key want = *reference.begin();
    ASSERT_EQ(Key(c.rank, c.left), want) << "seed " << seed << " pop " << pops;
    reference.erase(reference.begin());
    ++pops;
    for (int k = 0; k < 2 && rng() % 2 == 0; ++k) {
      const int32_t low = monotone ? std::min(c.rank + 1, num_ranks - 1) : 0;
      if (monotone && c.rank + 1 >= num_ranks) break;
      const int32_t rank = low + static_cast<int32_t>(rng() % (num_ranks - low));
      push(rank, static_cast<int32_t>(rng() % (n + 1)));
    }
  }
  EXPECT_TRUE(reference.empty()) << "seed " << seed;
  EXPECT_GE(pops, n);
}

TEST(MergeQueueTest, HeapAndBucketsPopInRankThenPositionOrder) {
  for (uint32_t seed = 0; seed < 40; ++seed) {
    for (bool buckets : {false, true}) {
      for (bool monotone : {true, false}) CheckOrder(buckets, monotone, seed);
    }
  }
}

TEST(MergeQueueTest, ResetAfterAnUndrainedPieceStartsEmpty) {
  MergeQueue q;
  q.Reset(100, true);
  for (int32_t i = 0; i < 50; ++i) q.Push(MergeCandidate{99 - i, i, i + 1, 0, 0});
  MergeCandidate c;
  ASSERT_TRUE(q.Pop(&c));
  EXPECT_EQ(c.rank, 50);
  q.Reset(100, true);  // 49 candidates left behind
  EXPECT_FALSE(q.Pop(&c));
  q.Push(MergeCandidate{7, 3, 4, 0, 0});
  ASSERT_TRUE(q.Pop(&c));
  EXPECT_EQ(c.rank, 7);
  EXPECT_FALSE(q.Pop(&c));
}

// The bucket path costs O(1) steps a candidate; the heap path log2(size) (what the counter says).
TEST(MergeQueueTest, BucketStepsDoNotGrowWithSize) {
  auto steps_per_candidate = [](bool buckets, int n) {
    MergeQueue q;
    q.Reset(1000, buckets);
    const uint64_t before = ThisThreadEncodeWork().steps;
    for (int32_t i = 0; i < n; ++i) {
      q.Push(MergeCandidate{static_cast<int32_t>((int64_t{i} * 7919) % 1000), i, i + 1, 0, 0});
    }
    MergeCandidate c;
    while (q.Pop(&c)) {
    }
    return static_cast<double>(ThisThreadEncodeWork().steps - before) / n;
  };
  EXPECT_LT(steps_per_candidate(true, 1 << 20), 4.0);
  EXPECT_LT(steps_per_candidate(true, 1 << 20), 1.2 * steps_per_candidate(true, 1 << 14));
  EXPECT_GT(steps_per_candidate(false, 1 << 20), 30.0);
}

}  // namespace
}  // namespace forge
