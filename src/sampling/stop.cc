// Token-level stop checks and the streaming stop-string matcher (earliest end, then longest).
#include "sampling/stop.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace forge {

FinishReason CheckTokenStop(const SamplingParams& params, std::span<const int32_t> eos_ids,
                            std::span<const int32_t> generated) {
  CHECK(!generated.empty()) << "CheckTokenStop needs the token just generated";
  const int32_t token = generated.back();
  const auto n = static_cast<int64_t>(generated.size());
  if (n > params.min_tokens) {
    auto has = [token](std::span<const int32_t> ids) {
      return std::find(ids.begin(), ids.end(), token) != ids.end();
    };
    if (!params.ignore_eos && has(eos_ids)) return FinishReason::kStop;
    if (has(params.stop_token_ids)) return FinishReason::kStop;
  }
  if (params.max_tokens >= 0 && n >= params.max_tokens) return FinishReason::kLength;
  return FinishReason::kNone;
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) CHECK(!s.empty()) << "empty stop string";
}

StopScan StopStringMatcher::Scan(std::string_view text, size_t scanned) const {
  CHECK_LE(scanned, text.size());
  StopScan scan;
  // Matches, by increasing end position: the first end where any stop string completes wins.
  for (size_t end = scanned + 1; end <= text.size(); ++end) {
    size_t best_len = 0;
    for (size_t i = 0; i < stops_.size(); ++i) {
      const std::string& s = stops_[i];
      if (s.size() > end || s.size() <= best_len) continue;
      if (text.compare(end - s.size(), s.size(), s) == 0) {
        best_len = s.size();
        scan.stop_index = static_cast<int32_t>(i);
      }
    }
    if (best_len > 0) {
      scan.stopped = true;
      scan.emit_end = end - best_len;
      return scan;
    }
  }
  // No match: hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    const size_t longest = std::min(s.size() - 1, text.size());
    for (size_t k = longest; k > hold; --k) {
      if (text.compare(text.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  scan.emit_end = text.size() - hold;
  scan.held_back = hold;
  return scan;
}

}  // namespace forge
