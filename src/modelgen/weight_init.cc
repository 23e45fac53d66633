// Counter-based random rows (SplitMix64), near-Gaussian values from sums of uniforms, and the
// peaked-output construction.
#include "modelgen/weight_init.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace forge {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t HashName(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ull;
  return h;
}

// Inverse of a modulo m (a coprime with m), by the extended Euclidean algorithm.
uint64_t InverseMod(uint64_t a, uint64_t m) {
  int64_t t = 0, new_t = 1;
  int64_t r = static_cast<int64_t>(m), new_r = static_cast<int64_t>(a % m);
  while (new_r != 0) {
    const int64_t q = r / new_r;
    t -= q * new_t, std::swap(t, new_t);
    r -= q * new_r, std::swap(r, new_r);
  }
  return static_cast<uint64_t>(t < 0 ? t + static_cast<int64_t>(m) : t);
}

uint64_t MulMod(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) % m);
}

}  // namespace

WeightInit::WeightInit(const ModelSpec& spec) : spec_(spec) {
  // The map permutes [first_, n_vocab); first_ > 0 (a word vocabulary) leaves the ids below out.
  if (spec.successor_first > 0 && spec.successor_first < spec.n_vocab) {
    first_ = spec.successor_first;
  }
  const uint64_t v = static_cast<uint64_t>(spec.n_vocab - first_);
  if (v > 1) {
    mul_ = Mix(spec.seed ^ 0x5bd1e995ull) % v;
    if (mul_ < 2) mul_ = 2 % v;
    while (std::gcd(mul_, v) != 1) mul_ = (mul_ + 1) % v;
    add_ = Mix(spec.seed + 17) % v;
    if (first_ > 0) {
      // Words: one cycle through all of them (Hull-Dobell: add coprime with v, mul - 1 a multiple
      // of every prime factor of v, and of 4 when 4 divides v), so greedy text never repeats a
      // word before every word has come.
      uint64_t rad = 1, rest = v;
      for (uint64_t p = 2; p * p <= rest; ++p) {
        if (rest % p) continue;
        rad *= p;
        while (rest % p == 0) rest /= p;
      }
      if (rest > 1) rad *= rest;
      if (v % 4 == 0 && rad % 4 != 0) rad *= 2;
      mul_ = (1 + rad * (Mix(spec.seed ^ 0x5bd1e995ull) % std::max<uint64_t>(1, v / rad))) % v;
      if (add_ == 0) add_ = 1;
      while (std::gcd(add_, v) != 1) add_ = (add_ + 1) % v;
    }
    inv_mul_ = InverseMod(mul_, v);
  }
}

int64_t WeightInit::Alias(int64_t token) const {
  if (token >= first_) return token;
  return first_ + token % (spec_.n_vocab - first_);
}

int64_t WeightInit::Successor(int64_t token) const {
  if (spec_.tied_embeddings) return token;
  const uint64_t v = static_cast<uint64_t>(spec_.n_vocab - first_);
  const uint64_t t = static_cast<uint64_t>(Alias(token) - first_);
  return first_ + static_cast<int64_t>((MulMod(mul_, t, v) + add_) % v);
}

int64_t WeightInit::Predecessor(int64_t token) const {
  if (spec_.tied_embeddings) return token;
  if (token < first_) return -1;
  const uint64_t v = static_cast<uint64_t>(spec_.n_vocab - first_);
  const uint64_t t = static_cast<uint64_t>(token - first_);
  return first_ + static_cast<int64_t>(MulMod(inv_mul_, (t + v - add_) % v, v));
}

uint64_t WeightInit::RowKey(const char* name, int64_t row) const {
  return Mix(Mix(spec_.seed ^ HashName(name)) + static_cast<uint64_t>(row) * kGolden);
}

// z = (sum of four uniform 16-bit integers - mean) / sd: mean 0, variance 1, |z| < 3.47.
void WeightInit::FillNormal(uint64_t key, int64_t n, float scale, float offset, float* out) const {
  constexpr float kInvSd = 1.0f / 37837.23f;
  uint64_t state = key;
  for (int64_t i = 0; i < n; ++i) {
    state += kGolden;
    const uint64_t r = Mix(state);
    const int64_t sum =
        static_cast<int64_t>(r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
    out[i] = offset + scale * (static_cast<float>(sum - 131070) * kInvSd);
  }
}

void WeightInit::FillRow(const TensorPlan& t, int64_t row, float* out) const {
  const int64_t n = t.dims[0];
  const uint64_t key = RowKey(t.name.c_str(), row);
  const float fan_in = 1.0f / std::sqrt(static_cast<float>(n));
  const bool peaked = spec_.peak > 0;
  switch (t.role) {
    case TensorRole::kNorm:
      FillNormal(key, n, 0.1f, 1.0f, out);
      return;
    case TensorRole::kBias:
      FillNormal(key, n, 0.5f, 0.0f, out);
      return;
    case TensorRole::kPositions:
      FillNormal(key, n, 0.5f, 0.0f, out);
      return;
    case TensorRole::kTokenEmbd:
      // Ids below first_ share the embedding of the word they alias (so they lead to words too).
      FillNormal(peaked && row < first_ ? RowKey(t.name.c_str(), Alias(row)) : key, n,
                 peaked ? 1.0f : fan_in, 0.0f, out);
      return;
    case TensorRole::kOutput: {
      FillNormal(key, n, fan_in, 0.0f, out);
      if (!peaked || Predecessor(row) < 0) return;
      thread_local std::vector<float> embd;
      embd.resize(n);
      FillNormal(RowKey("token_embd.weight", Predecessor(row)), n, 1.0f, 0.0f, embd.data());
      const float a = spec_.peak / static_cast<float>(n);
      for (int64_t i = 0; i < n; ++i) out[i] += a * embd[i];
      return;
    }
    case TensorRole::kAttnOut:
    case TensorRole::kFfnDown: {
      const float residual =
          peaked ? 1.0f / std::sqrt(2.0f * static_cast<float>(spec_.n_layer)) : 1.0f;
      FillNormal(key, n, fan_in * residual, 0.0f, out);
      return;
    }
    default:
      FillNormal(key, n, fan_in, 0.0f, out);
      return;
  }
}

}  // namespace forge
