// Philox4x32-10 rounds and the (seed, request, position) -> uniform mapping used by the Sampler.
#include "sampling/philox.h"

namespace forge {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline PhiloxCounter Round(const PhiloxCounter& c, const PhiloxKey& k) {
  const uint64_t p0 = uint64_t{kMul0} * c[0];
  const uint64_t p1 = uint64_t{kMul1} * c[2];
  const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
  const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

}  // namespace

PhiloxCounter Philox4x32(PhiloxCounter counter, PhiloxKey key) {
  counter = Round(counter, key);
  for (int r = 1; r < 10; ++r) {
    key[0] += kWeyl0;
    key[1] += kWeyl1;
    counter = Round(counter, key);
  }
  return counter;
}

PhiloxCounter SamplingBits(uint64_t seed, uint64_t request_id, uint64_t position) {
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const PhiloxCounter counter = {
      static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32),
      static_cast<uint32_t>(request_id), static_cast<uint32_t>(request_id >> 32)};
  return Philox4x32(counter, key);
}

double SamplingUniform(uint64_t seed, uint64_t request_id, uint64_t position) {
  const PhiloxCounter bits = SamplingBits(seed, request_id, position);
  const uint64_t word = (uint64_t{bits[0]} << 32) | bits[1];
  return static_cast<double>(word >> 11) * 0x1.0p-53;
}

}  // namespace forge
