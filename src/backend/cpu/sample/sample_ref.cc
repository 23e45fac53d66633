// sample_ref: each row's edits, then the CPU Sampler's own truncation, draw and log-probabilities
// on the processed row (sampling/sampler.h), one row at a time.
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "backend/cpu/sample/sample.h"
#include "sampling/sampler.h"

namespace forge {
namespace {

float ApplyEdit(float logit, const LogitEdit& e) {
  float l = logit + e.bias;
  double d = l;
  if (e.repetition != 1.0) d = d > 0.0 ? d / e.repetition : d * e.repetition;
  d -= e.subtract;
  l = static_cast<float>(d);
  return e.mask ? -std::numeric_limits<float>::infinity() : l;
}

}  // namespace

Status sample_ref(const SampleParams& p) {
  const int64_t stride = p.row_stride > 0 ? p.row_stride : p.n_vocab;
  if (p.n_rows == 0) return Status::Ok();
  if (p.n_vocab <= 0 || stride < p.n_vocab) {
    return InvalidArgumentError("sample: n_vocab " + std::to_string(p.n_vocab) + ", row stride " +
                                std::to_string(stride));
  }
  if (p.allowed_rows > 0 && (p.allowed == nullptr || p.allowed_words * 32 < p.n_vocab)) {
    return InvalidArgumentError("sample: allowed bitmask rows of " +
                                std::to_string(p.allowed_words) + " words for n_vocab " +
                                std::to_string(p.n_vocab));
  }
  // One Sampler per thread and vocabulary size: it owns O(n_vocab) scratch.
  thread_local std::unique_ptr<Sampler> sampler;
  if (!sampler || sampler->n_vocab() != p.n_vocab) {
    sampler = std::make_unique<Sampler>(static_cast<int32_t>(p.n_vocab));
  }
  for (int64_t i = 0; i < p.n_rows; ++i) {
    const SampleRow& row = p.rows[i];
    SampleOut& out = p.out[i];
    out = SampleOut{};
    std::span<float> logits(p.logits + i * stride, static_cast<size_t>(p.n_vocab));
    for (int32_t e = row.edit_begin; e < row.edit_end; ++e) {
      const LogitEdit& edit = p.edits[e];
      if (edit.token < 0 || edit.token >= p.n_vocab) {
        return OutOfRangeError("sample row " + std::to_string(i) + ": edit of token " +
                               std::to_string(edit.token) + " outside the vocabulary");
      }
      logits[edit.token] = ApplyEdit(logits[edit.token], edit);
    }
    if (row.allowed_row >= 0) {
      if (row.allowed_row >= p.allowed_rows) {
        return OutOfRangeError("sample row " + std::to_string(i) + ": allowed row " +
                               std::to_string(row.allowed_row) + " of " +
                               std::to_string(p.allowed_rows));
      }
      const uint32_t* bits = p.allowed + row.allowed_row * p.allowed_words;
      for (int64_t t = 0; t < p.n_vocab; ++t) {
        if (((bits[t >> 5] >> (t & 31)) & 1u) == 0) {
          logits[t] = -std::numeric_limits<float>::infinity();
        }
      }
    }
    bool any_finite = false;
    for (int64_t t = 0; t < p.n_vocab; ++t) {
      const float v = logits[t];
      if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
        out.error = 1;
        out.error_index = static_cast<int32_t>(t);
        break;
      }
      any_finite |= v != -std::numeric_limits<float>::infinity();
    }
    if (out.error == 0 && !any_finite) out.error = 2;
    if (out.error != 0) continue;
    SamplingParams params;
    params.temperature = row.greedy ? 0.0 : row.temperature;
    params.top_k = row.top_k;
    params.top_p = row.top_p;
    params.min_p = row.min_p;
    params.logprobs = row.logprobs != 0;
    params.top_logprobs = row.logprobs ? row.top_logprobs : 0;
    auto result = sampler->SampleProcessed(params, row.u, logits);
    if (!result.ok()) return result.status().WithContext("sample row " + std::to_string(i));
    out.token = result->token;
    if (row.logprobs) {
      out.logprob = result->logprob;
      out.n_top = static_cast<int32_t>(result->top_logprobs.size());
      for (int32_t k = 0; k < out.n_top; ++k) {
        out.top_tokens[k] = result->top_logprobs[k].token;
        out.top_logprobs[k] = result->top_logprobs[k].logprob;
      }
    }
  }
  return Status::Ok();
}

}  // namespace forge
