// GrammarCache: compiled grammars by their GBNF text, so requests that send the same schema or
// grammar share one Grammar (and with it the automaton and masks its matchers have memoized).
// Holds the most recently used ones up to a count and a total of source bytes. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"
#include "grammar/grammar.h"

namespace forge {

struct GrammarCacheOptions {
  size_t max_entries = 256;
  size_t max_source_bytes = size_t{64} << 20;  // total GBNF text held
  GrammarLimits limits;                        // for compiling
};

class GrammarCache {
 public:
  explicit GrammarCache(GrammarCacheOptions options = {}) : options_(options) {}

  // The grammar of gbnf, compiled on a miss (outside the lock: concurrent misses of one text may
  // both compile; one result is kept). Errors: Grammar::FromGbnf's (not cached).
  StatusOr<std::shared_ptr<const Grammar>> Get(std::string_view gbnf);

  size_t size() const;
  int64_t hits() const;
  int64_t misses() const;

 private:
  struct Entry {
    std::shared_ptr<const Grammar> grammar;
    std::list<std::string>::iterator lru;  // its key in lru_ (most recent first)
  };

  GrammarCacheOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;
  size_t source_bytes_ = 0;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

}  // namespace forge
