// Philox4x32-10 (Salmon et al., SC'11; Random123): the counter-based generator behind sampling.
// The random numbers for position p of request r are a pure function of (seed, r, p), so
// batching, preemption, recomputation and call order never change a seeded result.
#pragma once

#include <array>
#include <cstdint>

namespace forge {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32-10 block: 10 rounds over `counter` with `key`. Matches Random123's known-answer
// vectors. Cheap and stateless, so a CUDA sampler can compute the same words per thread.
PhiloxCounter Philox4x32(PhiloxCounter counter, PhiloxKey key);

// The 128 random bits of (seed, request_id, position):
//   key     = {seed low 32 bits, seed high 32 bits}
//   counter = {position low, position high, request_id low, request_id high}
// `position` is the sequence position of the token being chosen (prompt length + tokens generated
// before it). Forks of one request (n > 1, beams) must use distinct request ids.
PhiloxCounter SamplingBits(uint64_t seed, uint64_t request_id, uint64_t position);

// The uniform double in [0, 1) that draws the token at (seed, request_id, position): the top 53
// bits of words 0 (high half) and 1 (low half) of SamplingBits, times 2^-53. Words 2 and 3 are
// reserved for future per-position draws (e.g. speculative-decoding acceptance).
double SamplingUniform(uint64_t seed, uint64_t request_id, uint64_t position);

}  // namespace forge
