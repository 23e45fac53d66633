// UnicodeRegex: a PCRE2 pattern compiled for UTF-8 text with Unicode properties (UTF + UCP, JIT
// when available); subjects may hold invalid UTF-8, whose bytes never match a character class.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace forge {

class UnicodeRegex {
 public:
  static StatusOr<std::unique_ptr<UnicodeRegex>> Compile(std::string_view pattern);
  ~UnicodeRegex();
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  // Appends the [begin, end) byte offsets of the successive non-overlapping, non-empty matches in
  // subject (which is the whole subject: look-arounds and $ see its ends). Returns false when
  // PCRE2 stopped with an error (a resource limit); the matches found so far stay appended.
  bool FindAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>* matches) const;
  // True when the whole of subject matches.
  bool FullMatch(std::string_view subject) const;

  const std::string& pattern() const { return pattern_; }
  bool jit() const { return jit_; }

 private:
  UnicodeRegex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

}  // namespace forge
