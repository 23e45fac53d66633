// Sample: chooses the next token of each row of F32 logits [n_rows, n_vocab] where the logits
// are (the GPU for the CUDA backend), exactly as sampling/sampler.h defines the choice, and
// reports it with its log-probabilities in a few hundred bytes per row: what a step copies back
// instead of the logits.
//
// The host turns each request's SamplingParams and context into a SampleRow
// (engine/sample_rows.h): logit_bias, penalties and masks become per-token LogitEdits; the
// draw's uniform comes from SamplingUniform(seed, request, position). Per row, in this order:
//   1. edits: for each edit, l = logits[token] + bias (float); then in double d = l,
//      d = repetition == 1 ? d : (d > 0 ? d / repetition : d * repetition), d -= subtract,
//      l = float(d); l = -inf if mask. Then, for a row with an allowed set (allowed_row >= 0):
//      l = -inf for every token whose bit in the row's bitmask is clear (a grammar's mask). The
//      row's logits become these processed logits (in place).
//   2. max and argmax (ties to the lowest id) of the processed logits; a NaN or +inf logit is
//      error 1 (error_index: the lowest such index), every logit -inf is error 2.
//   3. greedy: token = argmax. Otherwise weights w = ExpNonPositive((l - max) * inv_t) (float,
//      sampling/sampling_kernels.h) and the kept set is {l >= threshold, w > 0} where threshold is
//      the largest of: top_k > 0: the top_k-th largest logit (with multiplicity, -inf counted);
//      top_p < 1: the largest logit v with sum(w of kept-by-top_k tokens with l >= v) >=
//      top_p * sum(w of kept-by-top_k tokens) (none such: no cut); min_p > 0: the smallest
//      float f with f >= double(max) + min_p_offset (-inf below -FLT_MAX). Then target = u *
//      sum(kept w) (double) and the token is the first kept one in ascending id order whose running
//      sum (double) exceeds target; none (rounding): the last kept token.
//   4. logprobs: log_z = max + log(sum over all tokens of e^(l - max), in double);
//      logprob = l[token] - log_z; the top_logprobs tokens of highest processed logit (ties:
//      lowest id first; -inf never listed), by decreasing logit, each l - log_z.
// Sums in double may be taken in any order: results equal the CPU's but where a draw or a top_p
// cut falls within double rounding of a boundary.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace forge {

// The most alternatives a row may report (OpenAI's limit, sampling/sampling_params.h).
inline constexpr int32_t kSampleMaxTop = 20;

struct LogitEdit {
  int32_t token = 0;
  int32_t mask = 0;   // nonzero: -inf after the rest
  float bias = 0.0f;  // logit_bias (0: none)
  int32_t pad = 0;
  double repetition = 1.0;  // repetition_penalty of a token in the penalty window (1: none)
  double subtract = 0.0;    // presence + frequency * count for generated tokens (0: none)
};

struct SampleRow {
  int32_t edit_begin = 0;  // this row's edits: edits[edit_begin, edit_end), distinct tokens
  int32_t edit_end = 0;
  int32_t greedy = 1;        // nonzero: argmax; the sampling fields below are then unused
  int32_t top_k = 0;         // 0: off; else in [1, n_vocab)
  double temperature = 1.0;  // >= kGreedyTemperature when sampling
  double top_p = 1.0;        // 1: off; else in (0, 1)
  double min_p = 0.0;        // 0: off; else in (0, 1]
  // Derived by the host (engine/sample_rows.h) so every backend uses the same values:
  double min_p_offset = 0.0;  // temperature * ln(min_p), in double
  float inv_t = 1.0f;         // float(1.0 / temperature)
  int32_t logprobs = 0;       // nonzero: logprob (and top_logprobs) in the output
  double u = 0.0;             // the draw's uniform in [0, 1)
  int32_t top_logprobs = 0;   // in [0, kSampleMaxTop]; needs logprobs
  // -1: every token allowed; else the row of SampleParams::allowed holding this row's bitmask.
  int32_t allowed_row = -1;
};

struct SampleOut {
  int32_t token = -1;
  int32_t error = 0;  // 0 ok; 1 NaN or +inf at error_index; 2 every logit -inf
  int32_t error_index = -1;
  int32_t n_top = 0;     // entries of top_* filled
  double logprob = 0.0;  // when the row asked for logprobs
  int32_t top_tokens[kSampleMaxTop] = {};
  double top_logprobs[kSampleMaxTop] = {};
};

struct SampleParams {
  float* logits = nullptr;  // [n_rows, row_stride] F32; each row's first n_vocab edited in place
  int64_t n_rows = 0;
  int64_t n_vocab = 0;
  int64_t row_stride = 0;            // 0: n_vocab
  const SampleRow* rows = nullptr;   // [n_rows]
  const LogitEdit* edits = nullptr;  // as the rows index them
  SampleOut* out = nullptr;          // [n_rows]
  // Bitmask rows of allowed_words uint32 each: bit (t % 32) of word t / 32 set when token t may
  // be chosen (bits past n_vocab unused); rows name theirs by SampleRow::allowed_row.
  const uint32_t* allowed = nullptr;
  int64_t allowed_words = 0;  // >= ceil(n_vocab / 32) when any row has an allowed set
  int64_t allowed_rows = 0;   // rows in allowed; a row naming one outside [0, allowed_rows) fails
};

// The reference: each row through the CPU Sampler's own steps (sampling/sampler.h).
Status sample_ref(const SampleParams& p);

}  // namespace forge
