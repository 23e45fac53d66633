// MergeQueue: the candidate merges of one piece, taken lowest rank first and leftmost among equal
// ranks: the order BPE (merge rank) and SentencePiece (score, as a rank) merge in. Short pieces use
// a binary heap; long ones a bucket per rank, O(1) per candidate instead of O(log n) cache misses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace forge {

struct MergeCandidate {
  int32_t rank;        // lower merges first
  int32_t left;        // symbol index of the left side; leftmost first among equal ranks
  int32_t right;       // symbol index of the right side when pushed
  uint32_t right_end;  // byte end of the right symbol when pushed (stale once it grew)
  int32_t value;       // the caller's: the merged symbol or token id
};

class MergeQueue {
 public:
  // Starts a piece whose ranks lie in [0, num_ranks). buckets: take the bucket path (for long
  // pieces; both paths give the same order).
  void Reset(int32_t num_ranks, bool buckets);
  void Push(const MergeCandidate& c);
  // The first candidate in (rank, left) order, removed; false when none is left.
  bool Pop(MergeCandidate* c);

 private:
  struct Node {
    MergeCandidate c;
    int32_t next;  // the next node of the same bucket, -1 at the end
  };
  bool NextBucket();  // gathers the first non-empty bucket above cursor_ into current_
  void HeapPush(const MergeCandidate& c);
  MergeCandidate HeapPop();

  bool buckets_ = false;
  bool undrained_ = false;  // some bucket may still be non-empty (Reset empties it)
  int32_t num_ranks_ = 0;
  // Bucket path: ranks above cursor_ wait in buckets; the cursor's bucket is sorted by position
  // into current_ when reached. A candidate ranked at or below the cursor (a merge that makes a
  // pair ranked before itself: rare vocabularies) goes to the heap, which every path shares.
  int32_t cursor_ = -1;
  std::vector<int32_t> head_;   // [num_ranks] first node of each bucket, -1 when empty
  std::vector<uint64_t> bits_;  // [ceil(num_ranks / 64)] bit r: bucket r is not empty
  std::vector<Node> nodes_;
  std::vector<MergeCandidate> current_;
  size_t current_pos_ = 0;
  std::vector<MergeCandidate> heap_;
};

}  // namespace forge
