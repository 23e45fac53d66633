// BusyWindow: a ring of 100 ms buckets of busy seconds.
#include "engine/busy_window.h"

#include <algorithm>

namespace forge {

int64_t BusyWindow::BucketOf(Clock::time_point t) const {
  return t <= start_ ? 0 : static_cast<int64_t>((t - start_) / kBucket);
}

void BusyWindow::Add(Clock::time_point now, double busy_seconds) {
  const int64_t index = BucketOf(now);
  Bucket& b = ring_[index % kBuckets];
  if (b.index != index) b = {index, 0.0};
  b.seconds += busy_seconds;
}

double BusyWindow::Ratio(Clock::time_point now) const {
  const int64_t current = BucketOf(now);
  const int64_t first = std::max<int64_t>(current - kBuckets + 1, 0);
  double busy = 0;
  for (const Bucket& b : ring_) {
    if (b.index >= first && b.index <= current) busy += b.seconds;
  }
  const double span = std::chrono::duration<double>(now - (start_ + first * kBucket)).count();
  if (span <= 0) return 0.0;
  return std::clamp(busy / span, 0.0, 1.0);
}

}  // namespace forge
