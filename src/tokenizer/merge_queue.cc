// MergeQueue: the heap, the rank buckets with their occupancy bits, and the merge of the two.
#include "tokenizer/merge_queue.h"

#include <algorithm>
#include <bit>

#include "base/check.h"
#include "tokenizer/encode_work.h"

namespace forge {
namespace {

// (rank, left) order.
bool Before(const MergeCandidate& a, const MergeCandidate& b) {
  return a.rank != b.rank ? a.rank < b.rank : a.left < b.left;
}

// std heap order puts the largest first: "larger" here is later in (rank, left) order.
struct Later {
  bool operator()(const MergeCandidate& a, const MergeCandidate& b) const { return Before(b, a); }
};

uint64_t Log2Cost(size_t n) { return static_cast<uint64_t>(std::bit_width(n | 1)); }

}  // namespace

void MergeQueue::Reset(int32_t num_ranks, bool buckets) {
  CHECK_GE(num_ranks, 0);
  if (undrained_) {
    // Buckets a piece left behind (a caller that stopped popping early) are emptied here.
    for (size_t w = 0; w < (static_cast<size_t>(num_ranks_) + 63) / 64; ++w) {
      for (uint64_t word = bits_[w]; word != 0; word &= word - 1) {
        head_[w * 64 + static_cast<size_t>(std::countr_zero(word))] = -1;
      }
      bits_[w] = 0;
    }
  }
  undrained_ = false;
  buckets_ = buckets;
  num_ranks_ = num_ranks;
  cursor_ = -1;
  nodes_.clear();
  current_.clear();
  current_pos_ = 0;
  heap_.clear();
  if (buckets && head_.size() < static_cast<size_t>(num_ranks)) {
    head_.resize(static_cast<size_t>(num_ranks), -1);
    bits_.resize((static_cast<size_t>(num_ranks) + 63) / 64, 0);
  }
}

void MergeQueue::HeapPush(const MergeCandidate& c) {
  heap_.push_back(c);
  std::push_heap(heap_.begin(), heap_.end(), Later());
  AddEncodeWork(Log2Cost(heap_.size()));
}

MergeCandidate MergeQueue::HeapPop() {
  AddEncodeWork(Log2Cost(heap_.size()));
  std::pop_heap(heap_.begin(), heap_.end(), Later());
  const MergeCandidate c = heap_.back();
  heap_.pop_back();
  return c;
}

void MergeQueue::Push(const MergeCandidate& c) {
  DCHECK(c.rank >= 0 && c.rank < num_ranks_);
  if (!buckets_ || c.rank <= cursor_) {
    HeapPush(c);
    return;
  }
  AddEncodeWork(1);
  undrained_ = true;
  const size_t r = static_cast<size_t>(c.rank);
  nodes_.push_back(Node{c, head_[r]});
  head_[r] = static_cast<int32_t>(nodes_.size() - 1);
  bits_[r / 64] |= uint64_t{1} << (r % 64);
}

bool MergeQueue::NextBucket() {
  current_.clear();
  current_pos_ = 0;
  // The cursor only moves up, so the words scanned over a whole piece are at most num_ranks / 64.
  size_t r = static_cast<size_t>(cursor_ + 1);
  if (r >= static_cast<size_t>(num_ranks_)) return false;
  size_t w = r / 64;
  uint64_t word = bits_[w] & (~uint64_t{0} << (r % 64));
  AddEncodeWork(1);
  const size_t words = (static_cast<size_t>(num_ranks_) + 63) / 64;
  while (word == 0) {
    if (++w == words) {
      cursor_ = num_ranks_ - 1;
      return false;
    }
    word = bits_[w];
    AddEncodeWork(1);
  }
  r = w * 64 + static_cast<size_t>(std::countr_zero(word));
  bits_[w] &= ~(uint64_t{1} << (r % 64));
  cursor_ = static_cast<int32_t>(r);
  for (int32_t n = head_[r]; n >= 0; n = nodes_[n].next) current_.push_back(nodes_[n].c);
  head_[r] = -1;
  AddEncodeWork(current_.size());
  // The list holds the bucket newest first; pushes mostly come left to right, so reversed it is
  // usually in position order already. Sort it when not.
  std::reverse(current_.begin(), current_.end());
  if (!std::is_sorted(current_.begin(), current_.end(), Before)) {
    std::sort(current_.begin(), current_.end(), Before);
    AddEncodeWork(current_.size() * Log2Cost(current_.size()));
  }
  return true;
}

bool MergeQueue::Pop(MergeCandidate* c) {
  if (!buckets_) {
    if (heap_.empty()) return false;
    *c = HeapPop();
    return true;
  }
  if (current_pos_ == current_.size()) NextBucket();
  const bool have_bucket = current_pos_ < current_.size();
  if (!heap_.empty() && (!have_bucket || Before(heap_.front(), current_[current_pos_]))) {
    *c = HeapPop();
    return true;
  }
  if (!have_bucket) {
    undrained_ = false;  // every bucket was gathered: all bits are clear
    return false;
  }
  AddEncodeWork(1);
  *c = current_[current_pos_++];
  return true;
}

}  // namespace forge
