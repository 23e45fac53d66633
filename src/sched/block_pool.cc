// BlockPool (reference counts, free list, prefix-cache index and LRU of cached blocks) and
// SequenceBlocks.
#include "sched/block_pool.h"

#include <algorithm>
#include <string>

#include "base/check.h"

namespace forge {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

uint64_t BlockPool::ChainHash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t h = Mix(parent_hash ^ tokens.size());
  for (int32_t t : tokens)
    h = Mix(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(t)) + kRootHash));
  return h;
}

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size, HashFn hash)
    : block_size_(block_size),
      hash_fn_(hash),
      refcount_(num_blocks, 0),
      hash_(num_blocks, 0),
      uid_(num_blocks, 0),
      parent_uid_(num_blocks, 0),
      tokens_(static_cast<size_t>(num_blocks) * block_size, 0),
      lru_prev_(num_blocks, -1),
      lru_next_(num_blocks, -1) {
  CHECK(num_blocks >= 0 && block_size > 0) << num_blocks << " blocks of " << block_size;
  free_.reserve(num_blocks);
  for (int32_t i = num_blocks - 1; i >= 0; --i) free_.push_back(i);
}

Status BlockPool::Allocate(int32_t n, std::vector<int32_t>* out) {
  if (n > num_available()) {
    return ResourceExhaustedError(
        "KV cache: " + std::to_string(n) + " blocks wanted, " + std::to_string(num_available()) +
        " of " + std::to_string(num_blocks()) + " available (" + std::to_string(num_free()) +
        " free, " + std::to_string(num_cached()) + " cached)");
  }
  for (int32_t i = 0; i < n; ++i) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = lru_head_;
      CHECK(id >= 0) << "no cached block to evict";
      Unregister(id);  // moves it to the free list
      ++stats_.evictions;
      CHECK_EQ(free_.back(), id);
      free_.pop_back();
    }
    DCHECK_EQ(refcount_[id], 0);
    refcount_[id] = 1;
    ++num_used_;
    out->push_back(id);
  }
  stats_.allocated += n;
  return Status::Ok();
}

void BlockPool::Acquire(int32_t id) {
  CHECK(id >= 0 && id < num_blocks()) << "block id " << id;
  if (refcount_[id] == 0) {
    CHECK(registered(id)) << "Acquire of free block " << id;
    LruRemove(id);
    --num_cached_;
    ++num_used_;
    ++stats_.revivals;
  }
  ++refcount_[id];
}

void BlockPool::Release(int32_t id) {
  CHECK(id >= 0 && id < num_blocks()) << "block id " << id;
  CHECK(refcount_[id] > 0) << "double release of block " << id;
  if (--refcount_[id] > 0) return;
  --num_used_;
  if (registered(id)) {
    LruPushBack(id);
    ++num_cached_;
  } else {
    free_.push_back(id);
  }
}

void BlockPool::ReleaseAll(const std::vector<int32_t>& ids) {
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) Release(*it);
}

std::vector<int32_t> BlockPool::FindPrefix(std::span<const int32_t> tokens,
                                           int32_t max_blocks) const {
  std::vector<int32_t> out;
  uint64_t hash = kRootHash, parent_uid = 0;
  for (int32_t k = 0; k < max_blocks; ++k) {
    if (static_cast<size_t>(k + 1) * block_size_ > tokens.size()) break;
    std::span<const int32_t> block =
        tokens.subspan(static_cast<size_t>(k) * block_size_, block_size_);
    const uint64_t h = hash_fn_(hash, block);
    auto it = index_.find(h);
    if (it == index_.end()) break;
    const int32_t id = it->second;
    if (parent_uid_[id] != parent_uid ||
        !std::equal(block.begin(), block.end(), tokens_.begin() + int64_t{id} * block_size_)) {
      break;  // a collision or a stale chain: the hash alone is not trusted
    }
    out.push_back(id);
    hash = h;
    parent_uid = uid_[id];
  }
  return out;
}

bool BlockPool::Register(int32_t id, int32_t parent, std::span<const int32_t> tokens) {
  CHECK(id >= 0 && id < num_blocks() && refcount_[id] > 0) << "Register of unused block " << id;
  CHECK_EQ(static_cast<int32_t>(tokens.size()), block_size_);
  if (registered(id)) return false;
  uint64_t parent_hash = kRootHash, parent_uid = 0;
  if (parent >= 0) {
    CHECK(parent < num_blocks()) << "parent block id " << parent;
    if (!registered(parent)) return false;
    parent_hash = hash_[parent];
    parent_uid = uid_[parent];
  }
  const uint64_t h = hash_fn_(parent_hash, tokens);
  auto it = index_.find(h);
  if (it != index_.end()) {
    const int32_t other = it->second;
    if (parent_uid_[other] == parent_uid &&
        std::equal(tokens.begin(), tokens.end(), tokens_.begin() + int64_t{other} * block_size_)) {
      return false;  // the same content is cached already; this copy stays private
    }
    Unregister(other);
  }
  hash_[id] = h;
  uid_[id] = next_uid_++;
  parent_uid_[id] = parent_uid;
  std::copy(tokens.begin(), tokens.end(), tokens_.begin() + int64_t{id} * block_size_);
  index_[h] = id;
  ++stats_.registered;
  return true;
}

void BlockPool::Unregister(int32_t id) {
  auto it = index_.find(hash_[id]);
  CHECK(it != index_.end() && it->second == id) << "block " << id << " not in the hash index";
  index_.erase(it);
  uid_[id] = 0;
  parent_uid_[id] = 0;
  hash_[id] = 0;
  if (refcount_[id] == 0) {  // cached -> free
    LruRemove(id);
    --num_cached_;
    free_.push_back(id);
  }
}

void BlockPool::LruPushBack(int32_t id) {
  lru_prev_[id] = lru_tail_;
  lru_next_[id] = -1;
  if (lru_tail_ >= 0) {
    lru_next_[lru_tail_] = id;
  } else {
    lru_head_ = id;
  }
  lru_tail_ = id;
}

void BlockPool::LruRemove(int32_t id) {
  const int32_t p = lru_prev_[id], n = lru_next_[id];
  if (p >= 0) {
    lru_next_[p] = n;
  } else {
    CHECK_EQ(lru_head_, id);
    lru_head_ = n;
  }
  if (n >= 0) {
    lru_prev_[n] = p;
  } else {
    CHECK_EQ(lru_tail_, id);
    lru_tail_ = p;
  }
  lru_prev_[id] = lru_next_[id] = -1;
}

void BlockPool::CheckInvariants() const {
  const int32_t n = num_blocks();
  int32_t used = 0, registered_count = 0;
  for (int32_t id = 0; id < n; ++id) {
    CHECK(refcount_[id] >= 0) << "block " << id << " refcount " << refcount_[id];
    if (refcount_[id] > 0) ++used;
    if (registered(id)) {
      ++registered_count;
      auto it = index_.find(hash_[id]);
      CHECK(it != index_.end() && it->second == id) << "registered block " << id << " unindexed";
    }
  }
  CHECK_EQ(used, num_used_);
  CHECK_EQ(registered_count, static_cast<int32_t>(index_.size()));
  std::vector<uint8_t> seen(n, 0);
  for (int32_t id : free_) {
    CHECK(id >= 0 && id < n && !seen[id]) << "free list holds block " << id << " twice";
    seen[id] = 1;
    CHECK(refcount_[id] == 0 && !registered(id)) << "free block " << id << " in use or cached";
  }
  int32_t cached = 0;
  for (int32_t id = lru_head_, prev = -1; id >= 0; prev = id, id = lru_next_[id]) {
    CHECK(id < n && !seen[id]) << "LRU list holds block " << id << " twice";
    seen[id] = 1;
    CHECK_EQ(lru_prev_[id], prev);
    CHECK(refcount_[id] == 0 && registered(id))
        << "cached block " << id << " in use or unregistered";
    ++cached;
  }
  CHECK_EQ(cached, num_cached_);
  CHECK_EQ(num_used_ + num_cached_ + num_free(), n) << "blocks not conserved";
}

Status SequenceBlocks::Reserve(BlockPool& pool, int32_t total_tokens, int32_t block_size) {
  int32_t need = (total_tokens + block_size - 1) / block_size;
  int32_t have = static_cast<int32_t>(blocks.size());
  if (need > have) RETURN_IF_ERROR(pool.Allocate(need - have, &blocks));
  return Status::Ok();
}

void SequenceBlocks::Release(BlockPool& pool) {
  pool.ReleaseAll(blocks);
  blocks.clear();
  n_tokens = 0;
}

}  // namespace forge
