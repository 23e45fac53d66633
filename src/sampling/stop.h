// When a request stops: stop and EOS tokens, max_tokens, and stop strings found in streamed text,
// with the trailing bytes that must be held back because they may begin a stop string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/sampling_params.h"

namespace forge {

enum class FinishReason {
  kNone,    // keep generating
  kStop,    // an EOS token, a stop token id or a stop string
  kLength,  // max_tokens reached
};

// The token-level check after the newest token was appended to `generated`.
// kStop when that token is one of `eos_ids` (unless ignore_eos) or of stop_token_ids, counted only
// past min_tokens (the Sampler masks them before); else kLength when max_tokens are generated.
// Stop strings are the StopStringMatcher's job. Requires: !generated.empty().
FinishReason CheckTokenStop(const SamplingParams& params, std::span<const int32_t> eos_ids,
                            std::span<const int32_t> generated);

// What a scan of the generated text found.
struct StopScan {
  bool stopped = false;
  int32_t stop_index = -1;  // which stop string matched (index into the list), when stopped
  // text[0, emit_end) is final and may be streamed. When stopped: where the stop string starts;
  // it and everything after it are dropped.
  size_t emit_end = 0;
  // Bytes after emit_end kept back because they are a proper prefix of some stop string
  // (text.size() - emit_end when not stopped; 0 when stopped).
  size_t held_back = 0;
};

// Finds stop strings in text that grows as tokens are decoded. Strings are compared as bytes, so a
// partial multibyte character at the end is held back like any other partial match. The match is
// the one that completes first reading the text left to right (the smallest end; at an equal end,
// the longest string), so where token boundaries fall never changes the result. emit_end never
// moves backwards between scans of a growing text. When generation ends without a stop string,
// the held-back bytes are emitted.
class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Scans `text`, all the text generated so far. `scanned` is text's length at the previous scan
  // (which did not stop), so only matches ending after it are looked for; 0 scans everything.
  // Requires: scanned <= text.size().
  StopScan Scan(std::string_view text, size_t scanned = 0) const;

  const std::vector<std::string>& stops() const { return stops_; }

 private:
  std::vector<std::string> stops_;
};

}  // namespace forge
