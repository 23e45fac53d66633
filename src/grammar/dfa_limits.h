// DfaLimits: the bounds on a grammar matcher's automaton (its memory and its work per step).
#pragma once

#include <cstddef>

namespace forge {

// Past a soft bound a matcher moves to a fresh automaton between steps (keeping only the states
// it still needs); past a hard bound it does so in the middle of a FillMask walk.
// Worst cases per automaton at the hard bounds: transitions 32768 states x 256 byte classes x
// 4 bytes (32 MB; JSON grammars have 40-100 classes), stack nodes 2^20 x ~24 bytes, state members
// 2^23 x 4 bytes.
struct DfaLimits {
  int soft_states = 1 << 13;
  int soft_nodes = 1 << 18;
  int soft_members = 1 << 21;  // stack tops of all states together
  int hard_states = 1 << 15;
  int hard_nodes = 1 << 20;
  int hard_members = 1 << 23;
  int max_stacks_per_state = 1 << 12;  // an input with more live parses than this is refused
  int max_closure_steps = 1 << 16;     // ... and so is a step that expands more than this
  size_t mask_cache_bytes = 8u << 20;  // FillMask results kept per automaton
};

}  // namespace forge
