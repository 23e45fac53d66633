// SamplingParams: everything one request says about how its next tokens are chosen and when it
// stops (OpenAI / vLLM / llama.cpp vocabulary), with validation that names the bad field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace forge {

// The most top_logprobs alternatives one position may ask for (OpenAI's limit).
inline constexpr int32_t kMaxTopLogprobs = 20;
// Temperatures below this sample greedily (as vLLM does), so 1 / T stays finite in float.
inline constexpr double kGreedyTemperature = 1e-5;

// Per-request sampling settings. Defaults are "off": plain sampling at temperature 1.
// The order in which the Sampler applies them is documented in sampling/sampler.h.
struct SamplingParams {
  // 0 (anything below kGreedyTemperature) = greedy: argmax, ties to the lowest token id.
  // Otherwise p ~ exp(logit / temperature).
  double temperature = 1.0;
  // Keep the k highest logits (every token tied with the k-th value too). 0 or -1 = off.
  int32_t top_k = 0;
  // Keep the smallest set of most probable tokens whose probability reaches top_p. 1 = off.
  double top_p = 1.0;
  // Keep tokens whose probability is at least min_p times the most probable one's. 0 = off.
  double min_p = 0.0;

  // llama.cpp / HF style: for every token present in the penalty window (prompt + generated),
  // a positive logit is divided by it and a negative one multiplied. 1 = off; must be > 0.
  double repetition_penalty = 1.0;
  // OpenAI style, over generated tokens in the window: logit -= presence_penalty * (count > 0)
  // + frequency_penalty * count. 0 = off; each in [-2, 2].
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  // The penalty window: the last N tokens of prompt + generated. -1 = all; 0 = no penalties.
  int32_t penalty_last_n = -1;

  // Added to a token's logit before anything else. -inf bans the token; +inf and NaN are errors.
  std::map<int32_t, float> logit_bias;

  // Keys the random stream together with the request id and position (sampling/philox.h).
  // Unset: the engine picks one at admission, so a request is reproducible from its record.
  std::optional<uint64_t> seed;

  // The most tokens to generate; -1 = until the context is full.
  int32_t max_tokens = -1;
  // EOS and stop token ids are masked to -inf until this many tokens have been generated.
  int32_t min_tokens = 0;
  // The model's EOS tokens are always masked to -inf (generation runs to max_tokens or a stop).
  bool ignore_eos = false;
  // Generation ends when the text contains one of these (not included in the output).
  std::vector<std::string> stop;
  // Generation ends when one of these tokens is sampled (besides the model's EOS tokens).
  std::vector<int32_t> stop_token_ids;

  // Return the chosen token's log-probability, and the top_logprobs most likely alternatives.
  bool logprobs = false;
  int32_t top_logprobs = 0;  // in [0, kMaxTopLogprobs]; > 0 requires logprobs

  bool greedy() const { return temperature < kGreedyTemperature; }

  // Checks every field's range alone and against the others. The message names the field, its
  // value and the allowed range: "top_p=1.5: must be in (0, 1]".
  Status Validate() const;
  // Validate() plus token ids (logit_bias keys, stop_token_ids) within [0, n_vocab).
  Status ValidateForVocab(int32_t n_vocab) const;
};

}  // namespace forge
