// GrammarCache: an LRU map from GBNF text to its compiled Grammar.
#include "grammar/grammar_cache.h"

namespace forge {

StatusOr<std::shared_ptr<const Grammar>> GrammarCache::Get(std::string_view gbnf) {
  const std::string key(gbnf);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      ++hits_;
      return it->second.grammar;
    }
    ++misses_;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, Grammar::FromGbnf(gbnf, options_.limits));
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second.grammar;
  if (key.size() > options_.max_source_bytes || options_.max_entries == 0) return grammar;
  while (!lru_.empty() && (entries_.size() >= options_.max_entries ||
                           source_bytes_ + key.size() > options_.max_source_bytes)) {
    source_bytes_ -= lru_.back().size();
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_[key] = Entry{grammar, lru_.begin()};
  source_bytes_ += key.size();
  return grammar;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

int64_t GrammarCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

int64_t GrammarCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace forge
