// The lazily built DFA over parse-stack sets: hash-consed stack nodes, interned states, closure
// (expanding rule references until every stack's top is a terminal) and memoized transitions.
#include "grammar/stack_set_dfa.h"

#include <algorithm>
#include <cstring>

#include "grammar/utf8_position.h"

namespace forge {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t NodeKey(int32_t pos, int32_t parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
}

uint64_t HashTops(const std::vector<int32_t>& tops) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ tops.size();
  for (int32_t t : tops) h = Mix(h ^ static_cast<uint32_t>(t));
  return h;
}

}  // namespace

StackSetDfa::StackSetDfa(const Grammar* grammar, bool memoize, const DfaLimits& limits)
    : grammar_(grammar),
      elements_(grammar_->elements().data()),
      byte_class_(grammar_->byte_classes()),
      num_classes_(static_cast<size_t>(grammar_->num_byte_classes())),
      memoize_(memoize),
      limits_(limits) {
  class_first_.assign(num_classes_, 0);
  class_bytes_.assign(num_classes_, ByteSet());
  for (int b = 255; b >= 0; --b) {
    class_first_[byte_class_[b]] = static_cast<uint8_t>(b);
    class_bytes_[byte_class_[b]].Add(static_cast<uint8_t>(b));
  }
  nodes_.push_back({-1, kRootParent});  // kAcceptNode
  node_table_.assign(1024, -1);
  state_table_.assign(1024, -1);
  state_begin_.push_back(0);
  tops_.clear();
  InternState(tops_);  // kDeadState: no stacks
  std::fill(trans_.begin(), trans_.end(), kDeadState);
}

int32_t StackSetDfa::InternNode(int32_t pos, int32_t parent) {
  const uint64_t key = NodeKey(pos, parent);
  size_t mask = node_table_.size() - 1;
  size_t i = Mix(key) & mask;
  while (node_table_[i] >= 0) {
    const Node& n = nodes_[static_cast<size_t>(node_table_[i])];
    if (n.pos == pos && n.parent == parent) return node_table_[i];
    i = (i + 1) & mask;
  }
  const int32_t id = static_cast<int32_t>(nodes_.size());
  nodes_.push_back({pos, parent});
  node_table_[i] = id;
  if (nodes_.size() * 2 > node_table_.size()) {
    std::vector<int32_t> table(node_table_.size() * 2, -1);
    mask = table.size() - 1;
    for (size_t n = 1; n < nodes_.size(); ++n) {
      size_t j = Mix(NodeKey(nodes_[n].pos, nodes_[n].parent)) & mask;
      while (table[j] >= 0) j = (j + 1) & mask;
      table[j] = static_cast<int32_t>(n);
    }
    node_table_.swap(table);
  }
  return id;
}

StackStateId StackSetDfa::InternState(const std::vector<int32_t>& tops) {
  const uint64_t h = HashTops(tops);
  size_t mask = state_table_.size() - 1;
  size_t i = h & mask;
  while (state_table_[i] >= 0) {
    const int32_t s = state_table_[i];
    if (state_hash_[s] == h) {
      const uint32_t b = state_begin_[s], e = state_begin_[s + 1];
      if (e - b == tops.size() && std::equal(tops.begin(), tops.end(), members_.begin() + b)) {
        return s;
      }
    }
    i = (i + 1) & mask;
  }
  const StackStateId id = static_cast<StackStateId>(state_hash_.size());
  members_.insert(members_.end(), tops.begin(), tops.end());
  state_begin_.push_back(static_cast<uint32_t>(members_.size()));
  state_hash_.push_back(h);
  trans_.resize(trans_.size() + num_classes_, -1);
  self_loops_.emplace_back();
  char_loops_.emplace_back();
  loops_known_.push_back(0);
  state_table_[i] = id;
  if (state_hash_.size() * 2 > state_table_.size()) {
    std::vector<int32_t> table(state_table_.size() * 2, -1);
    mask = table.size() - 1;
    for (size_t s = 0; s < state_hash_.size(); ++s) {
      size_t j = state_hash_[s] & mask;
      while (table[j] >= 0) j = (j + 1) & mask;
      table[j] = static_cast<int32_t>(s);
    }
    state_table_.swap(table);
  }
  return id;
}

bool StackSetDfa::Visit(uint64_t key) {
  if (visit_count_ * 2 >= visit_keys_.size()) {
    // Grow (rehashing the keys of this closure) before the table is half full.
    std::vector<uint64_t> old_keys;
    for (size_t i = 0; i < visit_keys_.size(); ++i) {
      if (visit_stamp_[i] == stamp_) old_keys.push_back(visit_keys_[i]);
    }
    const size_t size = std::max<size_t>(256, visit_keys_.size() * 2);
    visit_keys_.assign(size, 0);
    visit_stamp_.assign(size, 0);
    stamp_ = 1;
    for (uint64_t k : old_keys) {
      size_t j = Mix(k) & (size - 1);
      while (visit_stamp_[j] == stamp_) j = (j + 1) & (size - 1);
      visit_keys_[j] = k;
      visit_stamp_[j] = stamp_;
    }
  }
  const size_t mask = visit_keys_.size() - 1;
  size_t i = Mix(key) & mask;
  while (visit_stamp_[i] == stamp_) {
    if (visit_keys_[i] == key) return false;
    i = (i + 1) & mask;
  }
  visit_keys_[i] = key;
  visit_stamp_[i] = stamp_;
  ++visit_count_;
  return true;
}

void StackSetDfa::Closure() {
  tops_.clear();
  visit_count_ = 0;
  if (++stamp_ == 0) {  // the stamp wrapped: forget every old mark
    std::fill(visit_stamp_.begin(), visit_stamp_.end(), 0);
    stamp_ = 1;
  }
  int steps = 0;
  while (!work_.empty()) {
    const Item item = work_.back();
    work_.pop_back();
    if (!Visit(NodeKey(item.pos, item.parent))) continue;
    if (++steps > limits_.max_closure_steps) {
      ++overflow_count_;
      work_.clear();
      tops_.clear();
      return;
    }
    const GrammarElement e = elements_[item.pos];
    switch (e.kind) {
      case GrammarElement::Kind::kEnd:
        if (item.parent == kRootParent) {
          tops_.push_back(kAcceptNode);
        } else {
          const Node p = nodes_[static_cast<size_t>(item.parent)];
          work_.push_back({p.pos, p.parent});
        }
        break;
      case GrammarElement::Kind::kBytes:
        tops_.push_back(InternNode(item.pos, item.parent));
        break;
      case GrammarElement::Kind::kRule: {
        // When the reference ends its alternative, returning from the rule returns from this
        // one too: no node for it (tail calls keep right recursion from growing the stack).
        const int32_t cont = elements_[item.pos + 1].kind == GrammarElement::Kind::kEnd
                                 ? item.parent
                                 : InternNode(item.pos + 1, item.parent);
        for (int32_t alt : grammar_->alternatives(e.value)) work_.push_back({alt, cont});
        break;
      }
    }
  }
  std::sort(tops_.begin(), tops_.end());
  tops_.erase(std::unique(tops_.begin(), tops_.end()), tops_.end());
  if (static_cast<int>(tops_.size()) > limits_.max_stacks_per_state) {
    ++overflow_count_;
    tops_.clear();
  }
}

StackStateId StackSetDfa::Initial() {
  if (initial_ >= 0) return initial_;
  work_.clear();
  for (int32_t alt : grammar_->alternatives(grammar_->root())) work_.push_back({alt, kRootParent});
  Closure();
  initial_ = InternState(tops_);
  return initial_;
}

StackStateId StackSetDfa::Step(StackStateId s, uint8_t byte) {
  work_.clear();
  for (uint32_t i = state_begin_[s]; i < state_begin_[s + 1]; ++i) {
    const int32_t id = members_[i];
    if (id == kAcceptNode) continue;
    const Node n = nodes_[static_cast<size_t>(id)];
    if (grammar_->terminal(elements_[n.pos].value).Has(byte)) {
      work_.push_back({n.pos + 1, n.parent});
    }
  }
  StackStateId next = kDeadState;
  if (!work_.empty()) {
    Closure();
    next = InternState(tops_);
  }
  if (memoize_) trans_[static_cast<size_t>(s) * num_classes_ + byte_class_[byte]] = next;
  return next;
}

ByteSet StackSetDfa::SelfLoops(StackStateId s) {
  if (loops_known_[s] & 1) return self_loops_[s];
  ByteSet loops;
  for (size_t c = 0; c < num_classes_; ++c) {
    if (Next(s, class_first_[c]) == s) loops.AddAll(class_bytes_[c]);
  }
  if (memoize_) {
    self_loops_[s] = loops;
    loops_known_[s] |= 1;
  }
  return loops;
}

StackStateId StackSetDfa::CommonEnd(StackStateId t, const uint8_t (*ranges)[2], int n) {
  if (n == 0) return t;
  // Bytes of one class behave alike: one byte per class met in the range is enough.
  uint64_t seen[4] = {0, 0, 0, 0};
  StackStateId common = -1;
  for (int b = ranges[0][0]; b <= ranges[0][1]; ++b) {
    const uint8_t c = byte_class_[b];
    if ((seen[c >> 6] >> (c & 63)) & 1) continue;
    seen[c >> 6] |= uint64_t{1} << (c & 63);
    const StackStateId next = Next(t, static_cast<uint8_t>(b));
    if (next == kDeadState) return kDeadState;
    const StackStateId end = CommonEnd(next, ranges + 1, n - 1);
    if (end == kDeadState || (common >= 0 && end != common)) return kDeadState;
    common = end;
  }
  return common < 0 ? kDeadState : common;
}

StackStateId StackSetDfa::Completion(StackStateId s, uint8_t code) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(s)) << 8) | code;
  if (memoize_) {
    auto it = completions_.find(key);
    if (it != completions_.end()) return it->second;
  }
  uint8_t ranges[3][2];
  utf8_position::ContinuationRanges(code, ranges);
  const StackStateId end = CommonEnd(s, ranges, utf8_position::Pending(code));
  if (memoize_) completions_[key] = end;
  return end;
}

ByteSet StackSetDfa::CharacterLoops(StackStateId s) {
  if (loops_known_[s] & 2) return char_loops_[s];
  ByteSet loops;
  const ByteSet self = SelfLoops(s);
  for (int b = 0; b < 0x80; ++b) {
    if (self.Has(static_cast<uint8_t>(b))) loops.Add(static_cast<uint8_t>(b));
  }
  loops.AddRange(0x80, 0xBF);
  // The continuation ranges of each lead byte (RFC 3629: no overlongs, surrogates or values
  // past U+10FFFF).
  for (int lead = 0xC2; lead <= 0xF4; ++lead) {
    uint8_t ranges[3][2] = {{0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}};
    const int n = lead < 0xE0 ? 1 : lead < 0xF0 ? 2 : 3;
    if (lead == 0xE0) ranges[0][0] = 0xA0;
    if (lead == 0xED) ranges[0][1] = 0x9F;
    if (lead == 0xF0) ranges[0][0] = 0x90;
    if (lead == 0xF4) ranges[0][1] = 0x8F;
    const StackStateId t = Next(s, static_cast<uint8_t>(lead));
    if (t != kDeadState && CommonEnd(t, ranges, n) == s) loops.Add(static_cast<uint8_t>(lead));
  }
  if (memoize_) {
    char_loops_[s] = loops;
    loops_known_[s] |= 2;
  }
  return loops;
}

StackSetDfa::ExportedState StackSetDfa::Export(StackStateId s) const {
  ExportedState out;
  for (uint32_t i = state_begin_[s]; i < state_begin_[s + 1]; ++i) {
    std::vector<int32_t>& chain = out.stacks.emplace_back();
    for (int32_t id = members_[i]; id > kAcceptNode; id = nodes_[static_cast<size_t>(id)].parent) {
      chain.push_back(nodes_[static_cast<size_t>(id)].pos);
    }
  }
  return out;
}

StackStateId StackSetDfa::Import(const ExportedState& state) {
  std::vector<int32_t> tops;
  for (const std::vector<int32_t>& chain : state.stacks) {
    int32_t node = kAcceptNode;
    if (!chain.empty()) {
      node = kRootParent;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) node = InternNode(*it, node);
    }
    tops.push_back(node);
  }
  std::sort(tops.begin(), tops.end());
  tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
  return InternState(tops);
}

bool StackSetDfa::OverSoftLimits() const {
  return num_states() > limits_.soft_states || num_nodes() > limits_.soft_nodes ||
         members_.size() > static_cast<size_t>(limits_.soft_members);
}

bool StackSetDfa::OverHardLimits() const {
  return num_states() > limits_.hard_states || num_nodes() > limits_.hard_nodes ||
         members_.size() > static_cast<size_t>(limits_.hard_members);
}

const uint32_t* StackSetDfa::FindMask(uint64_t vocab_id, StackStateId s) const {
  if (!memoize_ || vocab_id != mask_vocab_) return nullptr;
  auto it = mask_slot_.find(s);
  return it == mask_slot_.end() ? nullptr : masks_[it->second].data();
}

void StackSetDfa::StoreMask(uint64_t vocab_id, StackStateId s, const uint32_t* mask, size_t words) {
  if (!memoize_) return;
  if (vocab_id != mask_vocab_) {
    mask_slot_.clear();
    masks_.clear();
    mask_owner_.clear();
    mask_next_ = 0;
    mask_vocab_ = vocab_id;
  }
  const size_t capacity = std::max<size_t>(4, limits_.mask_cache_bytes / (words * 4 + 1));
  size_t slot;
  if (masks_.size() < capacity) {
    slot = masks_.size();
    masks_.emplace_back();
    mask_owner_.push_back(s);
  } else {
    slot = mask_next_;
    mask_next_ = (mask_next_ + 1) % capacity;
    mask_slot_.erase(mask_owner_[slot]);
    mask_owner_[slot] = s;
  }
  masks_[slot].assign(mask, mask + words);
  mask_slot_[s] = slot;
}

std::string StackSetDfa::Describe(StackStateId s) const {
  // The rule of each element position (found by scanning alternatives once).
  std::vector<int32_t> rule_of(grammar_->elements().size(), -1);
  for (int32_t r = 0; r < grammar_->num_rules(); ++r) {
    for (int32_t start : grammar_->alternatives(r)) {
      for (int32_t p = start;; ++p) {
        rule_of[static_cast<size_t>(p)] = r;
        if (elements_[p].kind == GrammarElement::Kind::kEnd) break;
      }
    }
  }
  std::string out;
  for (uint32_t i = state_begin_[s]; i < state_begin_[s + 1]; ++i) {
    int32_t id = members_[i];
    out += "[";
    if (id == kAcceptNode) out += "<end>";
    for (bool first = true; id > kAcceptNode; id = nodes_[static_cast<size_t>(id)].parent) {
      const int32_t pos = nodes_[static_cast<size_t>(id)].pos;
      if (!first) out += " ";
      first = false;
      out += grammar_->rule_name(rule_of[static_cast<size_t>(pos)]) + "@" + std::to_string(pos);
    }
    out += "]";
  }
  return out;
}

}  // namespace forge
