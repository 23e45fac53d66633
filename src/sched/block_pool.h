// BlockPool: the KV cache's fixed-size blocks as ids with reference counts and automatic prefix
// caching: a full block is registered under a hash chained over every token up to and including
// it; released registered blocks stay cached (revivable) until evicted, least recently used first.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace forge {

// Every block is in exactly one state: used (refcount > 0), cached (refcount 0, registered:
// findable by hash, evictable) or free (refcount 0, unregistered). used + cached + free is
// num_blocks() at all times (CheckInvariants).
class BlockPool {
 public:
  // The hash of the chain's start (the "parent" of a sequence's first block).
  static constexpr uint64_t kRootHash = 0x9e3779b97f4a7c15ull;

  // The chained hash of a full block: over the parent block's hash and the block's tokens.
  static uint64_t ChainHash(uint64_t parent_hash, std::span<const int32_t> tokens);
  using HashFn = uint64_t (*)(uint64_t parent_hash, std::span<const int32_t> tokens);

  // Requires: num_blocks >= 0, block_size > 0. `hash` is replaceable so tests can force
  // collisions.
  BlockPool(int32_t num_blocks, int32_t block_size = 16, HashFn hash = &ChainHash);

  int32_t num_blocks() const { return static_cast<int32_t>(refcount_.size()); }
  int32_t block_size() const { return block_size_; }
  int32_t num_used() const { return num_used_; }
  int32_t num_cached() const { return num_cached_; }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  // Blocks an Allocate can hand out now: free ones, then cached ones (evicted).
  int32_t num_available() const { return num_free() + num_cached(); }
  int32_t refcount(int32_t id) const { return refcount_[id]; }
  bool registered(int32_t id) const { return uid_[id] != 0; }

  // n blocks with refcount 1, all or none: free blocks first (most recently freed first), then
  // cached blocks evicted least recently released first. ResourceExhausted when fewer than n
  // are available.
  Status Allocate(int32_t n, std::vector<int32_t>* out);
  // One more reference. Requires: refcount > 0, or a cached block (revived: leaves the LRU).
  void Acquire(int32_t id);
  // Drops one reference. At zero a registered block becomes cached (the most recently used),
  // any other block free. Requires: refcount > 0.
  void Release(int32_t id);
  // Releases from the last block to the first, so a sequence's tail is evicted before its head.
  void ReleaseAll(const std::vector<int32_t>& ids);

  // Prefix caching. The registered blocks holding tokens[0, k * block_size) for the largest
  // k <= max_blocks, each block's tokens and parent verified (not only the hash). Changes nothing:
  // take the blocks with Acquire.
  std::vector<int32_t> FindPrefix(std::span<const int32_t> tokens, int32_t max_blocks) const;
  // Registers the full block `id` (in use) as holding `tokens` (block_size of them) after block
  // `parent` (-1: the sequence's first block). False, and nothing changes, when the parent is not
  // registered, `id` already is, or an identical block already is. A different block under the same
  // hash (a stale chain or a collision) loses its registration to this one. Requires: refcount(id)
  // > 0; tokens.size() == block_size.
  bool Register(int32_t id, int32_t parent, std::span<const int32_t> tokens);

  struct Stats {
    int64_t allocated = 0;   // blocks handed out by Allocate
    int64_t evictions = 0;   // cached blocks evicted by Allocate
    int64_t revivals = 0;    // cached blocks taken back by Acquire
    int64_t registered = 0;  // successful Register calls
  };
  const Stats& stats() const { return stats_; }

  // CHECK-fails unless the states, counts, free list, LRU list and hash index agree.
  void CheckInvariants() const;

 private:
  void Unregister(int32_t id);
  void LruPushBack(int32_t id);
  void LruRemove(int32_t id);

  int32_t block_size_;
  HashFn hash_fn_;
  std::vector<int32_t> refcount_;  // [num_blocks]
  std::vector<int32_t> free_;      // a stack: the most recently freed block is reused first
  int32_t num_used_ = 0;
  int32_t num_cached_ = 0;

  // Registration, per block: uid_ != 0 when registered (unique, never reused; 0 = none).
  std::vector<uint64_t> hash_;        // [num_blocks] chained hash
  std::vector<uint64_t> uid_;         // [num_blocks]
  std::vector<uint64_t> parent_uid_;  // [num_blocks] the parent block's uid (0: first block)
  std::vector<int32_t> tokens_;       // [num_blocks, block_size] tokens of registered blocks
  std::unordered_map<uint64_t, int32_t> index_;  // hash -> registered block
  uint64_t next_uid_ = 1;

  // Cached blocks in release order: lru_head_ is evicted first. -1 ends the list.
  std::vector<int32_t> lru_prev_, lru_next_;  // [num_blocks]
  int32_t lru_head_ = -1, lru_tail_ = -1;

  Stats stats_;
};

// The blocks of one sequence and how many tokens they hold (for callers that manage blocks by
// hand, like the model tests; the Scheduler keeps its own tables).
struct SequenceBlocks {
  std::vector<int32_t> blocks;
  int32_t n_tokens = 0;
  // Allocates blocks from the pool until `total_tokens` fit.
  Status Reserve(BlockPool& pool, int32_t total_tokens, int32_t block_size);
  void Release(BlockPool& pool);
};

}  // namespace forge
