// SampleRows: SamplingParams + context -> SampleRow and LogitEdits, in the Sampler's order.
#include "engine/sample_rows.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "sampling/philox.h"

namespace forge {

Status SampleRows::Append(const SamplingParams& params, const SampleContext& context,
                          int32_t n_vocab) {
  RETURN_IF_ERROR(params.ValidateForVocab(n_vocab));
  RETURN_IF_ERROR(CheckTokenIds("eos_ids", context.eos_ids, 0, n_vocab));
  const int64_t words = (static_cast<int64_t>(n_vocab) + 31) / 32;
  if (!context.allowed.empty() && static_cast<int64_t>(context.allowed.size()) < words) {
    return InvalidArgumentError("allowed set of " + std::to_string(context.allowed.size()) +
                                " words for " + std::to_string(n_vocab) + " tokens");
  }
  ASSIGN_OR_RETURN(const PenaltyWindow window, PenaltyWindowOf(params, context, n_vocab));

  const int32_t edit_begin = static_cast<int32_t>(edits.size());
  std::unordered_map<int32_t, size_t> index;  // token -> its edit
  auto edit = [&](int32_t token) -> LogitEdit& {
    auto [it, added] = index.try_emplace(token, edits.size());
    if (added) {
      LogitEdit e;
      e.token = token;
      edits.push_back(e);
    }
    return edits[it->second];
  };
  for (const auto& [token, bias] : params.logit_bias) edit(token).bias = bias;
  if (window.active) {
    std::unordered_map<int32_t, int32_t> counts;  // among generated tokens in the window
    for (size_t i = window.prompt_begin; i < context.prompt.size(); ++i) {
      edit(context.prompt[i]).repetition = params.repetition_penalty;
    }
    for (size_t i = window.generated_begin; i < context.generated.size(); ++i) {
      edit(context.generated[i]).repetition = params.repetition_penalty;
      ++counts[context.generated[i]];
    }
    for (const auto& [token, count] : counts) {
      edit(token).subtract = params.presence_penalty + params.frequency_penalty * count;
    }
  }
  const bool before_min = context.generated.size() < static_cast<size_t>(params.min_tokens) &&
                          !context.only_end_allowed;
  if (before_min || (params.ignore_eos && !context.only_end_allowed)) {
    for (int32_t token : context.eos_ids) edit(token).mask = 1;
  }
  if (before_min) {
    for (int32_t token : params.stop_token_ids) edit(token).mask = 1;
  }

  SampleRow row;
  row.edit_begin = edit_begin;
  row.edit_end = static_cast<int32_t>(edits.size());
  row.greedy = params.greedy() ? 1 : 0;
  if (!params.greedy()) {
    row.top_k = params.top_k > 0 && params.top_k < n_vocab ? params.top_k : 0;
    row.temperature = params.temperature;
    row.top_p = params.top_p;
    row.min_p = params.min_p;
    row.min_p_offset = params.min_p > 0.0 ? params.temperature * std::log(params.min_p) : 0.0;
    row.inv_t = static_cast<float>(1.0 / params.temperature);
    row.u = SamplingUniform(params.seed.value_or(0), context.request_id, context.position());
  }
  row.logprobs = params.logprobs ? 1 : 0;
  row.top_logprobs = params.logprobs ? params.top_logprobs : 0;
  if (!context.allowed.empty()) {
    if (allowed.empty()) allowed_words = words;
    row.allowed_row = static_cast<int32_t>(allowed_rows());
    allowed.insert(allowed.end(), context.allowed.begin(), context.allowed.begin() + words);
  }
  rows.push_back(row);
  return Status::Ok();
}

void SampleRows::AppendIdle() {
  SampleRow row;
  row.edit_begin = row.edit_end = static_cast<int32_t>(edits.size());
  rows.push_back(row);
}

StatusOr<SampleResult> ToSampleResult(const SampleOut& out, const SamplingParams& params) {
  if (out.error == 1) {
    return InvalidArgumentError("logits[" + std::to_string(out.error_index) +
                                "] is NaN or +inf: must be finite or -inf");
  }
  if (out.error != 0) {
    return FailedPreconditionError(
        "every logit is -inf after logit_bias, penalties and masks: no token can be sampled");
  }
  SampleResult result;
  result.token = out.token;
  if (params.logprobs) {
    result.logprob = out.logprob;
    const int32_t n = std::clamp(out.n_top, 0, kSampleMaxTop);
    for (int32_t k = 0; k < n; ++k) {
      result.top_logprobs.push_back({out.top_tokens[k], out.top_logprobs[k]});
    }
  }
  return result;
}

}  // namespace forge
