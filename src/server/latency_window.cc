// LatencyWindow: a time-ordered queue of observations trimmed to the span; quantiles by selection.
#include "server/latency_window.h"

#include <algorithm>
#include <cmath>

namespace forge::server {

LatencyWindow::LatencyWindow(std::chrono::milliseconds span, size_t capacity)
    : span_(span), capacity_(std::max<size_t>(capacity, 1)) {}

void LatencyWindow::Observe(double seconds, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back({now, seconds});
  while (entries_.size() > capacity_) entries_.pop_front();
  Trim(now);
}

void LatencyWindow::Trim(Clock::time_point now) const {
  while (!entries_.empty() && now - entries_.front().at > span_) entries_.pop_front();
}

LatencyWindow::Summary LatencyWindow::Read(const std::vector<double>& qs,
                                           Clock::time_point now) const {
  std::vector<double> values;
  Summary s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Trim(now);
    values.reserve(entries_.size());
    for (const Entry& e : entries_) values.push_back(e.value);
    const auto oldest = entries_.empty() ? now : entries_.front().at;
    s.span_seconds = std::chrono::duration<double>(now - oldest).count();
  }
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  for (double q : qs) {
    const double clamped = std::clamp(q, 0.0, 1.0);
    int64_t rank = static_cast<int64_t>(std::ceil(clamped * static_cast<double>(s.count)));
    rank = std::clamp<int64_t>(rank, 1, s.count);
    auto nth = values.begin() + (rank - 1);
    std::nth_element(values.begin(), nth, values.end());
    s.quantiles.push_back(*nth);
  }
  return s;
}

}  // namespace forge::server
