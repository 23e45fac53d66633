// The Sampler's O(n_vocab) loops over one row of logits, written so the compiler vectorizes them
// (branch-free, integer compares; an AVX2 build beside the baseline one, picked at run time) with
// a fixed summation order, so results are the same on every machine.
#pragma once

#include <bit>
#include <cstdint>

namespace forge::sampling {

// An int32 with the same order as the float (-inf < finite < +inf, -0 == +0); non-NaN only.
[[gnu::always_inline]] inline int32_t OrderKey(float v) {
  const int32_t b = std::bit_cast<int32_t>(v + 0.0f);  // -0 + 0 = +0
  return b ^ ((b >> 31) & 0x7FFFFFFF);
}

// The float whose OrderKey is k (+0 for zero).
[[gnu::always_inline]] inline float FromOrderKey(int32_t k) {
  return std::bit_cast<float>(k ^ ((k >> 31) & 0x7FFFFFFF));
}

// e^x for x <= 0 (x may be -inf), in float: Cephes' expf polynomial, within 2 ulp; 0 below -86
// (e^-86 < 1e-37). Written with integer selects so loops over it vectorize.
[[gnu::always_inline]] inline float ExpNonPositive(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  const int32_t kLow = std::bit_cast<int32_t>(-86.0f);
  // All ones when x < -86: negative floats are negative ints, ordered backwards.
  const int32_t tiny = -static_cast<int32_t>((bits > kLow) & (bits < 0));
  const float xc = std::bit_cast<float>((bits & ~tiny) | (kLow & tiny));
  const float t = xc * 1.44269504088896341f + 12582912.0f;  // round(x / ln 2) in the low bits
  const float n = t - 12582912.0f;
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;  // x - n ln 2 in two steps
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t e = std::bit_cast<int32_t>(t) - 0x4B400000;  // n as an integer
  return y * std::bit_cast<float>(((e + 127) << 23) & ~tiny);
}

// e^x for x <= 0 (x may be -inf), in double: degree-13 Taylor polynomial on |r| <= ln2 / 2,
// within 2 ulp; 0 below -708.
[[gnu::always_inline]] inline double ExpNonPositive(double x) {
  const int64_t bits = std::bit_cast<int64_t>(x);
  const int64_t kLow = std::bit_cast<int64_t>(-708.0);
  const int64_t tiny = -static_cast<int64_t>((bits > kLow) & (bits < 0));
  const double xc = std::bit_cast<double>((bits & ~tiny) | (kLow & tiny));
  const double t = xc * 1.4426950408889634 + 6755399441055744.0;
  const double n = t - 6755399441055744.0;
  const double r = (xc - n * 0x1.62e42fee00000p-1) - n * 0x1.a39ef35793c76p-33;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int64_t e = std::bit_cast<int64_t>(t) - std::bit_cast<int64_t>(6755399441055744.0);
  return p * std::bit_cast<double>(((e + 1023) << 52) & ~tiny);
}

// The smallest and largest OrderKey over x[0, n).
void KeyRange(const float* x, int32_t n, int32_t* min_key, int32_t* max_key);

// keys[b] = the largest OrderKey of x[b * kKeyBlock, (b + 1) * kKeyBlock), for every block.
inline constexpr int32_t kKeyBlock = 64;
void BlockMaxKeys(const float* x, int32_t n, int32_t* keys);

// w[i] = e^((x[i] - max) * inv_t) in float; returns their sum in double. Requires: x[i] <= max.
double ExpWeights(const float* x, int32_t n, float max, float inv_t, float* w);

// As ExpWeights, and bucket[i] = min(floor((max - x[i]) * inv_t * buckets_per_nat), last).
double ExpWeightsBucketed(const float* x, int32_t n, float max, float inv_t,
                          int32_t buckets_per_nat, int32_t last, float* w, uint16_t* bucket);

// sum of e^(x[i] - max) in double, each term in double.
double ExpSumDouble(const float* x, int32_t n, double max);

// sums[b] = the sum in double of w[i] over block b (kSumBlock tokens) where x[i] >= threshold,
// in SumDouble's order within the block.
inline constexpr int32_t kSumBlock = 1024;
void MaskedBlockSums(const float* x, const float* w, int32_t n, float threshold, double* sums);

// Writes the indices i with bucket[i] == value to out (ascending); returns how many.
int32_t IndicesOf(const uint16_t* bucket, int32_t n, uint16_t value, int32_t* out);

// sum of w[0, n) in double, in a fixed order (8 interleaved partial sums, then added in order).
double SumDouble(const float* w, int32_t n);

}  // namespace forge::sampling
