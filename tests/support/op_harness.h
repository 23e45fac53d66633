// The cross-backend op harness (DESIGN.md): buffers with guard words after the data and poison in
// it, and the normalized error max|got - ref| / max|ref| that every op case is judged by. NaN or
// Inf never passes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace forge::testing {

inline constexpr int kGuardFloats = 16;
inline constexpr uint32_t kGuardBits = 0x7fc0dead;  // a NaN pattern no op writes

// A host float buffer of n values followed by guard words; data() is poisoned with NaN.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(int64_t n) : n_(n), v_(n + kGuardFloats) { Poison(); }
  float* data() { return v_.data(); }
  const float* data() const { return v_.data(); }
  int64_t size() const { return n_; }
  void Poison() {
    for (auto& x : v_) std::memcpy(&x, &kGuardBits, 4);
  }
  bool GuardsIntact() const {
    for (int i = 0; i < kGuardFloats; ++i) {
      uint32_t b;
      std::memcpy(&b, &v_[n_ + i], 4);
      if (b != kGuardBits) return false;
    }
    return true;
  }
  std::vector<float> values() const { return {v_.begin(), v_.begin() + n_}; }

 private:
  int64_t n_;
  std::vector<float> v_;
};

struct ErrorReport {
  double normalized = 0;  // max |got - ref| / max |ref|
  bool finite = true;     // no NaN/Inf in got (or ref)
  int64_t worst = -1;
  std::string ToString() const {
    return "normalized error " + std::to_string(normalized) + (finite ? "" : " (non-finite)") +
           " at " + std::to_string(worst);
  }
};

inline ErrorReport CompareNormalized(const float* ref, const float* got, int64_t n) {
  ErrorReport r;
  double max_ref = 0, max_diff = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref[i])) {
      r.finite = false;
      r.worst = i;
      r.normalized = INFINITY;
      return r;
    }
    max_ref = std::max(max_ref, std::fabs(double(ref[i])));
    double d = std::fabs(double(got[i]) - ref[i]);
    if (d > max_diff) {
      max_diff = d;
      r.worst = i;
    }
  }
  r.normalized = max_ref > 0 ? max_diff / max_ref : max_diff;
  return r;
}

inline ::testing::AssertionResult NormalizedWithin(const float* ref, const float* got, int64_t n,
                                                   double bound) {
  ErrorReport r = CompareNormalized(ref, got, n);
  if (r.finite && r.normalized <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.ToString() << " > " << bound;
}

// EXPECTs got within bound of ref (normalized), all finite; streams more context with <<.
#define EXPECT_NORMALIZED_NEAR(ref, got, n, bound) \
  EXPECT_TRUE(::forge::testing::NormalizedWithin((ref), (got), (n), (bound)))

inline std::vector<float> RandomVector(int64_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace forge::testing
