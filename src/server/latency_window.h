// LatencyWindow: the latencies observed over the last minute (each with its time), for the
// status endpoint's percentiles. The same observations go to the /metrics histograms, so a
// percentile here always falls in the histogram bucket that holds its rank. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace forge::server {

class LatencyWindow {
 public:
  using Clock = std::chrono::steady_clock;
  // Keeps what was observed within `span` of the newest reading, at most `capacity` values
  // (past it the oldest go first: the window is then shorter than `span`).
  explicit LatencyWindow(std::chrono::milliseconds span = std::chrono::seconds(60),
                         size_t capacity = size_t{1} << 18);
  void Observe(double seconds, Clock::time_point now = Clock::now());

  struct Summary {
    int64_t count = 0;              // observations in the window
    double span_seconds = 0;        // from the oldest kept to `now` (at most the span)
    std::vector<double> quantiles;  // one per asked quantile; empty when count == 0
  };
  // Nearest-rank quantiles q in (0, 1]: the ceil(q * count)-th smallest value of the window.
  Summary Read(const std::vector<double>& qs, Clock::time_point now = Clock::now()) const;

 private:
  struct Entry {
    Clock::time_point at;
    double value;
  };
  void Trim(Clock::time_point now) const;  // under mu_

  const std::chrono::milliseconds span_;
  const size_t capacity_;
  mutable std::mutex mu_;
  mutable std::deque<Entry> entries_;  // oldest first
};

}  // namespace forge::server
