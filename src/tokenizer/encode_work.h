// EncodeWork: per-thread counts of what encoding did: elementary steps (merge-queue operations
// weighted by their cost, array scans, special-token trie steps) and the long-piece windows
// (merge_chain.h), so tests can check that encoding stays linear in the text without timing it.
// Counting is a plain thread-local add.
#pragma once

#include <cstdint>

namespace forge {

struct EncodeWork {
  uint64_t steps = 0;
  uint64_t windows = 0;           // windows merged (their tokens kept)
  uint64_t window_fallbacks = 0;  // long pieces merged whole after a window edge failed its proof
};

namespace encode_work {
inline thread_local EncodeWork counts;
}  // namespace encode_work

// This thread's counts so far (tests take the difference around a call).
inline const EncodeWork& ThisThreadEncodeWork() { return encode_work::counts; }
inline void AddEncodeWork(uint64_t steps) { encode_work::counts.steps += steps; }

}  // namespace forge
