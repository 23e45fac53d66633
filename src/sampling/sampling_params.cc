// SamplingParams validation: each check names the field, the value found and the allowed range.
#include "sampling/sampling_params.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace forge {
namespace {

// The shortest spelling that reads back as the same value: "1.5", "0.1", "-inf".
std::string Num(double v) {
  char buf[48];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, v);
    if (std::isnan(v) || std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

Status Bad(const char* field, double value, const char* rule) {
  return InvalidArgumentError(std::string(field) + "=" + Num(value) + ": " + rule);
}

}  // namespace

Status SamplingParams::Validate() const {
  if (!(temperature >= 0.0) || std::isinf(temperature)) {
    return Bad("temperature", temperature, "must be finite and >= 0 (0 = greedy)");
  }
  if (top_k < -1) return Bad("top_k", top_k, "must be > 0, or 0 / -1 for off");
  if (!(top_p > 0.0 && top_p <= 1.0)) return Bad("top_p", top_p, "must be in (0, 1]");
  if (!(min_p >= 0.0 && min_p <= 1.0)) return Bad("min_p", min_p, "must be in [0, 1]");
  if (!(repetition_penalty > 0.0) || std::isinf(repetition_penalty)) {
    return Bad("repetition_penalty", repetition_penalty, "must be finite and > 0 (1 = off)");
  }
  if (!(presence_penalty >= -2.0 && presence_penalty <= 2.0)) {
    return Bad("presence_penalty", presence_penalty, "must be in [-2, 2]");
  }
  if (!(frequency_penalty >= -2.0 && frequency_penalty <= 2.0)) {
    return Bad("frequency_penalty", frequency_penalty, "must be in [-2, 2]");
  }
  if (penalty_last_n < -1) {
    return Bad("penalty_last_n", penalty_last_n, "must be >= 0, or -1 for the whole sequence");
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) {
      return InvalidArgumentError("logit_bias: token id " + std::to_string(token) + " is negative");
    }
    if (std::isnan(bias) || bias == INFINITY) {
      return InvalidArgumentError("logit_bias[" + std::to_string(token) + "]=" + Num(bias) +
                                  ": must be finite, or -inf to ban the token");
    }
  }
  if (max_tokens == 0 || max_tokens < -1) {
    return Bad("max_tokens", max_tokens, "must be >= 1, or -1 for no limit");
  }
  if (min_tokens < 0) return Bad("min_tokens", min_tokens, "must be >= 0");
  if (max_tokens != -1 && min_tokens > max_tokens) {
    return InvalidArgumentError("min_tokens=" + std::to_string(min_tokens) +
                                ": must be <= max_tokens=" + std::to_string(max_tokens));
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) {
      return InvalidArgumentError("stop[" + std::to_string(i) + "]: empty stop string");
    }
  }
  for (size_t i = 0; i < stop_token_ids.size(); ++i) {
    if (stop_token_ids[i] < 0) {
      return InvalidArgumentError("stop_token_ids[" + std::to_string(i) +
                                  "]=" + std::to_string(stop_token_ids[i]) + ": is negative");
    }
  }
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return InvalidArgumentError("top_logprobs=" + std::to_string(top_logprobs) +
                                ": must be in [0, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  if (top_logprobs > 0 && !logprobs) {
    return InvalidArgumentError("top_logprobs=" + std::to_string(top_logprobs) +
                                ": requires logprobs=true");
  }
  return Status::Ok();
}

Status SamplingParams::ValidateForVocab(int32_t n_vocab) const {
  RETURN_IF_ERROR(Validate());
  auto out_of_vocab = [n_vocab](const std::string& what, int32_t token) {
    return OutOfRangeError(what + "=" + std::to_string(token) +
                           ": out of vocabulary (n_vocab=" + std::to_string(n_vocab) + ")");
  };
  for (const auto& [token, bias] : logit_bias) {
    if (token >= n_vocab) return out_of_vocab("logit_bias token", token);
  }
  for (size_t i = 0; i < stop_token_ids.size(); ++i) {
    if (stop_token_ids[i] >= n_vocab) {
      return out_of_vocab("stop_token_ids[" + std::to_string(i) + "]", stop_token_ids[i]);
    }
  }
  return Status::Ok();
}

}  // namespace forge
