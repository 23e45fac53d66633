// BlockPool: allocate and free, reference counts, prefix-cache registration and revival by hash
// (tokens verified, not only the hash), eviction order, conservation of used + cached + free.
#include "sched/block_pool.h"

#include <gtest/gtest.h>

#include <numeric>

namespace forge {
namespace {

constexpr int32_t kBs = 4;

std::vector<int32_t> Seq(int32_t first, int32_t n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::span<const int32_t> Block(const std::vector<int32_t>& t, int k) {
  return std::span<const int32_t>(t).subspan(k * kBs, kBs);
}

void ExpectCounts(const BlockPool& p, int used, int cached, int free) {
  EXPECT_EQ(p.num_used(), used);
  EXPECT_EQ(p.num_cached(), cached);
  EXPECT_EQ(p.num_free(), free);
  p.CheckInvariants();
}

TEST(BlockPoolTest, AllocateAndFree) {
  BlockPool pool(8, kBs);
  ExpectCounts(pool, 0, 0, 8);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(3, &a).ok());
  ASSERT_EQ(a.size(), 3u);
  ExpectCounts(pool, 3, 0, 5);
  std::vector<int32_t> b;
  Status s = pool.Allocate(6, &b);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("6 blocks wanted, 5 of 8 available"), std::string::npos)
      << s.message();
  EXPECT_TRUE(b.empty());  // all or none
  ExpectCounts(pool, 3, 0, 5);
  ASSERT_TRUE(pool.Allocate(5, &b).ok());
  ExpectCounts(pool, 8, 0, 0);
  pool.ReleaseAll(a);
  pool.ReleaseAll(b);
  ExpectCounts(pool, 0, 0, 8);
  // The most recently freed block is reused first (ReleaseAll goes from last to first).
  std::vector<int32_t> c;
  ASSERT_TRUE(pool.Allocate(2, &c).ok());
  EXPECT_EQ(c, (std::vector<int32_t>{b[0], b[1]}));
}

TEST(BlockPoolTest, ReferenceCounts) {
  BlockPool pool(4, kBs);
  std::vector<int32_t> ids;
  ASSERT_TRUE(pool.Allocate(1, &ids).ok());
  const int32_t id = ids[0];
  EXPECT_EQ(pool.refcount(id), 1);
  pool.Acquire(id);
  pool.Acquire(id);
  EXPECT_EQ(pool.refcount(id), 3);
  pool.Release(id);
  pool.Release(id);
  ExpectCounts(pool, 1, 0, 3);
  pool.Release(id);
  ExpectCounts(pool, 0, 0, 4);
  EXPECT_DEATH(pool.Release(id), "double release of block");
  EXPECT_DEATH(pool.Acquire(id), "Acquire of free block");
}

TEST(BlockPoolTest, RegisteredBlocksAreCachedAndRevivedByHash) {
  BlockPool pool(8, kBs);
  const std::vector<int32_t> t = Seq(100, 10);  // 2 full blocks + 2 tokens
  std::vector<int32_t> ids;
  ASSERT_TRUE(pool.Allocate(3, &ids).ok());
  EXPECT_TRUE(pool.Register(ids[0], -1, Block(t, 0)));
  EXPECT_TRUE(pool.Register(ids[1], ids[0], Block(t, 1)));
  EXPECT_FALSE(pool.Register(ids[1], ids[0], Block(t, 1)));  // already registered
  EXPECT_TRUE(pool.FindPrefix(t, 8).size() == 2u);
  pool.ReleaseAll(ids);
  ExpectCounts(pool, 0, 2, 6);  // the partial third block is free, the full ones cached

  // Another sequence with the same first 8 tokens finds both blocks; a prefix of one block finds
  // one; max_blocks caps the match; a different second block stops the chain there.
  std::vector<int32_t> same = t;
  same.resize(9);
  EXPECT_EQ(pool.FindPrefix(same, 8), (std::vector<int32_t>{ids[0], ids[1]}));
  EXPECT_EQ(pool.FindPrefix(same, 1), (std::vector<int32_t>{ids[0]}));
  EXPECT_EQ(pool.FindPrefix(Seq(100, 7), 8), (std::vector<int32_t>{ids[0]}));
  std::vector<int32_t> other = t;
  other[5] = 7;
  EXPECT_EQ(pool.FindPrefix(other, 8), (std::vector<int32_t>{ids[0]}));
  // The second block's tokens alone (another first block) are not a hit: the hash is chained.
  EXPECT_TRUE(pool.FindPrefix(std::vector<int32_t>(t.begin() + 4, t.end()), 8).empty());

  for (int32_t id : pool.FindPrefix(same, 8)) pool.Acquire(id);
  ExpectCounts(pool, 2, 0, 6);
  EXPECT_EQ(pool.stats().revivals, 2);
  pool.Acquire(ids[0]);  // a second user of a live cached block
  EXPECT_EQ(pool.refcount(ids[0]), 2);
  pool.Release(ids[0]);
  pool.Release(ids[0]);
  pool.Release(ids[1]);
  ExpectCounts(pool, 0, 2, 6);
}

TEST(BlockPoolTest, ParentMustBeRegisteredAndDuplicatesStayPrivate) {
  BlockPool pool(8, kBs);
  const std::vector<int32_t> t = Seq(0, 8);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.Allocate(2, &a).ok());
  ASSERT_TRUE(pool.Allocate(2, &b).ok());
  EXPECT_FALSE(pool.Register(a[1], a[0], Block(t, 1)));  // parent unregistered
  EXPECT_TRUE(pool.Register(a[0], -1, Block(t, 0)));
  EXPECT_TRUE(pool.Register(a[1], a[0], Block(t, 1)));
  // b computed the same tokens: its copies are not registered and are freed, not cached.
  EXPECT_FALSE(pool.Register(b[0], -1, Block(t, 0)));
  EXPECT_FALSE(pool.Register(b[1], b[0], Block(t, 1)));
  pool.ReleaseAll(b);
  ExpectCounts(pool, 2, 0, 6);
  pool.ReleaseAll(a);
  ExpectCounts(pool, 0, 2, 6);
}

uint64_t CollidingHash(uint64_t, std::span<const int32_t>) { return 42; }

TEST(BlockPoolTest, TokensAreVerifiedOnAHashCollision) {
  BlockPool pool(4, kBs, &CollidingHash);
  const std::vector<int32_t> x = Seq(0, 4), y = Seq(10, 4);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(pool.Allocate(1, &a).ok());
  ASSERT_TRUE(pool.Register(a[0], -1, x));
  pool.Release(a[0]);
  EXPECT_EQ(pool.FindPrefix(x, 1), a);
  EXPECT_TRUE(pool.FindPrefix(y, 1).empty()) << "same hash, other tokens: not a hit";
  // A block with other content under the same hash takes the index entry over.
  ASSERT_TRUE(pool.Allocate(1, &b).ok());
  ASSERT_NE(b[0], a[0]);  // a free block is used before a cached one is evicted
  EXPECT_TRUE(pool.Register(b[0], -1, y));
  EXPECT_FALSE(pool.registered(a[0]));
  ExpectCounts(pool, 1, 0, 3);
  EXPECT_TRUE(pool.FindPrefix(x, 1).empty());
  EXPECT_EQ(pool.FindPrefix(y, 1), b);
  pool.Release(b[0]);
  ExpectCounts(pool, 0, 1, 3);
}

TEST(BlockPoolTest, EvictsLeastRecentlyReleasedAfterFreeBlocks) {
  BlockPool pool(6, kBs);
  std::vector<int32_t> ids;
  ASSERT_TRUE(pool.Allocate(6, &ids).ok());
  // Four one-block chains with distinct tokens; two unregistered blocks.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pool.Register(ids[i], -1, Seq(10 * i, kBs)));
  for (int i : {2, 0, 3, 1, 4, 5}) pool.Release(ids[i]);
  ExpectCounts(pool, 0, 4, 2);
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(2, &got).ok());  // the free ones first
  EXPECT_EQ(got, (std::vector<int32_t>{ids[5], ids[4]}));
  ExpectCounts(pool, 2, 4, 0);
  got.clear();
  ASSERT_TRUE(pool.Allocate(3, &got).ok());  // then cached, least recently released first
  EXPECT_EQ(got, (std::vector<int32_t>{ids[2], ids[0], ids[3]}));
  EXPECT_EQ(pool.stats().evictions, 3);
  ExpectCounts(pool, 5, 1, 0);
  EXPECT_TRUE(pool.FindPrefix(Seq(20, kBs), 1).empty());   // evicted
  EXPECT_EQ(pool.FindPrefix(Seq(10, kBs), 1).size(), 1u);  // still cached
  // Reviving a block moves it out of the LRU; releasing it again makes it the newest.
  pool.Acquire(ids[1]);
  ExpectCounts(pool, 6, 0, 0);
}

TEST(BlockPoolTest, SequenceTailIsEvictedBeforeItsHead) {
  BlockPool pool(3, kBs);
  const std::vector<int32_t> t = Seq(0, 12);
  std::vector<int32_t> ids;
  ASSERT_TRUE(pool.Allocate(3, &ids).ok());
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(pool.Register(ids[k], k ? ids[k - 1] : -1, Block(t, k)));
  pool.ReleaseAll(ids);
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(1, &got).ok());
  EXPECT_EQ(got[0], ids[2]);
  EXPECT_EQ(pool.FindPrefix(t, 3), (std::vector<int32_t>{ids[0], ids[1]}));
}

TEST(BlockPoolTest, StaleChildIsReplacedWhenTheChainIsRebuilt) {
  BlockPool pool(3, kBs);
  const std::vector<int32_t> t = Seq(0, 8);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(2, &a).ok());
  ASSERT_TRUE(pool.Register(a[0], -1, Block(t, 0)));
  ASSERT_TRUE(pool.Register(a[1], a[0], Block(t, 1)));
  // Release the head last-used-first so it is evicted before its child.
  pool.Release(a[0]);
  pool.Release(a[1]);
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.Allocate(2, &b).ok());  // the free block, then evicts a[0]
  EXPECT_EQ(b[1], a[0]);
  EXPECT_TRUE(pool.FindPrefix(t, 2).empty());
  ASSERT_TRUE(pool.Register(b[0], -1, Block(t, 0)));
  // The same second block again: the cached one hangs off an evicted parent, so it is replaced.
  ASSERT_TRUE(pool.Register(b[1], b[0], Block(t, 1)));
  EXPECT_FALSE(pool.registered(a[1]));
  EXPECT_EQ(pool.FindPrefix(t, 2), b);
  pool.ReleaseAll(b);
  ExpectCounts(pool, 0, 2, 1);
}

}  // namespace
}  // namespace forge
