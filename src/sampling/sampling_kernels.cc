// Vectorizable loops of the Sampler, each built twice (baseline x86-64 and AVX2, picked once at
// run time). Sums use 8 interleaved double accumulators added in a fixed order, and there is no
// FMA contraction under -std=c++20, so both builds give bit-identical results.
#include "sampling/sampling_kernels.h"

#include <algorithm>
#include <cstdint>

namespace forge::sampling {
namespace {

constexpr int32_t kLanes = 8;
constexpr int32_t kChunk = 512;  // ExpSumDouble's terms are staged through a buffer this long

[[gnu::always_inline]] inline double Fold(const double* acc) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// acc[j] += w[8i + j], then the tail into acc[0], acc[1], ...
template <typename T>
[[gnu::always_inline]] inline void Accumulate(const T* w, int32_t n, double* acc) {
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int32_t j = 0; j < kLanes; ++j) acc[j] += w[i + j];
  }
  for (int32_t j = 0; i < n; ++i, ++j) acc[j] += w[i];
}

[[gnu::always_inline]] inline void KeyRangeImpl(const float* x, int32_t n, int32_t* min_key,
                                                int32_t* max_key) {
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t k = OrderKey(x[i]);
    lo = k < lo ? k : lo;
    hi = k > hi ? k : hi;
  }
  *min_key = lo;
  *max_key = hi;
}

[[gnu::always_inline]] inline void BlockMaxKeysImpl(const float* x, int32_t n, int32_t* keys) {
  int32_t b = 0;
  for (; (b + 1) * kKeyBlock <= n; ++b) {
    int32_t hi = INT32_MIN;
    for (int32_t i = 0; i < kKeyBlock; ++i) {
      const int32_t k = OrderKey(x[b * kKeyBlock + i]);
      hi = k > hi ? k : hi;
    }
    keys[b] = hi;
  }
  if (b * kKeyBlock < n) {
    int32_t hi = INT32_MIN;
    for (int32_t i = b * kKeyBlock; i < n; ++i) hi = std::max(hi, OrderKey(x[i]));
    keys[b] = hi;
  }
}

[[gnu::always_inline]] inline double ExpWeightsImpl(const float* __restrict x, int32_t n, float max,
                                                    float inv_t, float* __restrict w) {
  for (int32_t i = 0; i < n; ++i) w[i] = ExpNonPositive((x[i] - max) * inv_t);
  double acc[kLanes] = {};
  Accumulate(w, n, acc);
  return Fold(acc);
}

[[gnu::always_inline]] inline double ExpWeightsBucketedImpl(const float* __restrict x, int32_t n,
                                                            float max, float inv_t,
                                                            int32_t buckets_per_nat, int32_t last,
                                                            float* __restrict w,
                                                            uint16_t* __restrict bucket) {
  const float scale = inv_t * static_cast<float>(buckets_per_nat);
  const int32_t last_bits = std::bit_cast<int32_t>(static_cast<float>(last));
  for (int32_t i = 0; i < n; ++i) {
    w[i] = ExpNonPositive((x[i] - max) * inv_t);
    // (max - x) * scale >= 0, possibly +inf: clamp its bits (ordered like the value) to `last`.
    const int32_t b = std::bit_cast<int32_t>((max - x[i]) * scale);
    bucket[i] = static_cast<uint16_t>(std::bit_cast<float>(b < last_bits ? b : last_bits));
  }
  double acc[kLanes] = {};
  Accumulate(w, n, acc);
  return Fold(acc);
}

[[gnu::always_inline]] inline double ExpSumDoubleImpl(const float* x, int32_t n, double max) {
  double acc[kLanes] = {};
  double terms[kChunk];
  for (int32_t begin = 0; begin < n; begin += kChunk) {
    const int32_t len = std::min(kChunk, n - begin);
    for (int32_t i = 0; i < len; ++i) terms[i] = ExpNonPositive(double{x[begin + i]} - max);
    Accumulate(terms, len, acc);  // kChunk is a multiple of kLanes: lanes stay aligned
  }
  return Fold(acc);
}

[[gnu::always_inline]] inline void MaskedBlockSumsImpl(const float* x, const float* w, int32_t n,
                                                       float threshold, double* sums) {
  const int32_t key = OrderKey(threshold);
  float masked[kSumBlock];
  for (int32_t begin = 0, b = 0; begin < n; begin += kSumBlock, ++b) {
    const int32_t len = std::min(kSumBlock, n - begin);
    for (int32_t i = 0; i < len; ++i) {
      const int32_t keep = -static_cast<int32_t>(OrderKey(x[begin + i]) >= key);
      masked[i] = std::bit_cast<float>(std::bit_cast<int32_t>(w[begin + i]) & keep);
    }
    double acc[kLanes] = {};
    Accumulate(masked, len, acc);
    sums[b] = Fold(acc);
  }
}

[[gnu::always_inline]] inline int32_t IndicesOfImpl(const uint16_t* bucket, int32_t n,
                                                    uint16_t value, int32_t* out) {
  constexpr int32_t kBlock = 64;
  int32_t count = 0;
  for (int32_t begin = 0; begin < n; begin += kBlock) {
    const int32_t end = std::min(n, begin + kBlock);
    int32_t hits = 0;
    for (int32_t i = begin; i < end; ++i) hits += bucket[i] == value;
    if (hits == 0) continue;
    for (int32_t i = begin; i < end; ++i) {
      if (bucket[i] == value) out[count++] = i;
    }
  }
  return count;
}

[[gnu::always_inline]] inline double SumDoubleImpl(const float* w, int32_t n) {
  double acc[kLanes] = {};
  Accumulate(w, n, acc);
  return Fold(acc);
}

bool HaveAvx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
#else
  return false;
#endif
}

}  // namespace

// Each kernel: a baseline and an AVX2 instantiation of its Impl, and a dispatcher.
#if defined(__x86_64__) && defined(__GNUC__)
#define FORGE_SAMPLING_KERNEL(ret, name, params, args)                              \
  namespace {                                                                       \
  ret name##Base params { return name##Impl args; }                                 \
  __attribute__((target("avx2"))) ret name##Avx2 params { return name##Impl args; } \
  }                                                                                 \
  ret name params { return HaveAvx2() ? name##Avx2 args : name##Base args; }
#else
#define FORGE_SAMPLING_KERNEL(ret, name, params, args) \
  ret name params { return name##Impl args; }
#endif

FORGE_SAMPLING_KERNEL(void, KeyRange,
                      (const float* x, int32_t n, int32_t* min_key, int32_t* max_key),
                      (x, n, min_key, max_key))
FORGE_SAMPLING_KERNEL(void, BlockMaxKeys, (const float* x, int32_t n, int32_t* keys), (x, n, keys))
FORGE_SAMPLING_KERNEL(double, ExpWeights,
                      (const float* x, int32_t n, float max, float inv_t, float* w),
                      (x, n, max, inv_t, w))
FORGE_SAMPLING_KERNEL(double, ExpWeightsBucketed,
                      (const float* x, int32_t n, float max, float inv_t, int32_t buckets_per_nat,
                       int32_t last, float* w, uint16_t* bucket),
                      (x, n, max, inv_t, buckets_per_nat, last, w, bucket))
FORGE_SAMPLING_KERNEL(double, ExpSumDouble, (const float* x, int32_t n, double max), (x, n, max))
FORGE_SAMPLING_KERNEL(void, MaskedBlockSums,
                      (const float* x, const float* w, int32_t n, float threshold, double* sums),
                      (x, w, n, threshold, sums))
FORGE_SAMPLING_KERNEL(int32_t, IndicesOf,
                      (const uint16_t* bucket, int32_t n, uint16_t value, int32_t* out),
                      (bucket, n, value, out))
FORGE_SAMPLING_KERNEL(double, SumDouble, (const float* w, int32_t n), (w, n))

}  // namespace forge::sampling
