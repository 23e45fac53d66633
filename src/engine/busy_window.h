// BusyWindow: the fraction of recent wall time a device was busy, from the busy seconds an
// engine adds as its steps finish, kept in 100 ms buckets over the last 10 s.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace forge {

class BusyWindow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kBuckets = 100;
  static constexpr Clock::duration kBucket = std::chrono::milliseconds(100);

  // Wall time is counted from `start` (the engine's creation).
  explicit BusyWindow(Clock::time_point start) : start_(start) {}

  // Busy seconds that finished at `now` (not before the previous call's).
  void Add(Clock::time_point now, double busy_seconds);
  // Busy seconds added during the last kBuckets * kBucket of wall time (since `start` when that
  // is shorter) over that span, clamped to [0, 1]; 0 before any wall time has passed.
  double Ratio(Clock::time_point now) const;

 private:
  int64_t BucketOf(Clock::time_point t) const;

  struct Bucket {
    int64_t index = -1;  // which bucket of wall time since start_ the slot holds
    double seconds = 0;
  };
  Clock::time_point start_;
  std::array<Bucket, kBuckets> ring_{};
};

}  // namespace forge
