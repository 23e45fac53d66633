// Sampler: chooses one request's next token from its row of F32 logits [n_vocab] on the CPU, in a
// fixed, documented order, with a draw keyed by (seed, request, position) (sampling/philox.h).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "base/status.h"
#include "sampling/sampling_params.h"

namespace forge {

// What the Sampler needs to know about the request besides its params.
struct SampleContext {
  uint64_t request_id = 0;
  std::span<const int32_t> prompt = {};     // the prompt's token ids
  std::span<const int32_t> generated = {};  // the tokens generated so far
  std::span<const int32_t> eos_ids = {};    // the model's end-of-generation tokens (EOS, EOT)
  // A grammar's allowed set: bit (t % 32) of word t / 32 set when token t may be chosen (at
  // least ceil(n_vocab / 32) words); empty: every token.
  std::span<const uint32_t> allowed = {};
  // The allowed set holds end-of-generation tokens only (the grammar is complete and can go no
  // further): min_tokens and ignore_eos then mask nothing, so generation ends where it must.
  bool only_end_allowed = false;

  // The sequence position of the token being chosen: the RNG counter (sampling/philox.h).
  uint64_t position() const { return prompt.size() + generated.size(); }
};

// The penalty window of a request (SamplingParams::penalty_last_n): the last N tokens of prompt +
// generated, as prompt[prompt_begin, end) and generated[generated_begin, end). Not active when no
// penalty is set or N is 0.
struct PenaltyWindow {
  bool active = false;
  size_t prompt_begin = 0;
  size_t generated_begin = 0;
};

// The window, its ids checked against the vocabulary (an error names the first bad one).
StatusOr<PenaltyWindow> PenaltyWindowOf(const SamplingParams& params, const SampleContext& context,
                                        int32_t n_vocab);

// Every id of ids[begin, end) within [0, n_vocab): "what[i]=id: out of vocabulary (n_vocab=N)".
Status CheckTokenIds(const char* what, std::span<const int32_t> ids, size_t begin, int32_t n_vocab);

struct TokenLogprob {
  int32_t token = -1;
  double logprob = 0.0;  // natural log
};

struct SampleResult {
  int32_t token = -1;
  // Only when params.logprobs (else NaN): log p(token) under the reported distribution, below.
  double logprob = std::numeric_limits<double>::quiet_NaN();
  // Only when params.logprobs: the top_logprobs most likely tokens, by decreasing logprob (ties:
  // lowest id first); tokens of probability zero (-inf logits) are never listed.
  std::vector<TokenLogprob> top_logprobs;
};

// The order, each step on the logits left by the one before:
//   1. logit_bias: logit += bias.
//   2. penalties over the window (the last penalty_last_n tokens of prompt + generated):
//      repetition_penalty on every token present in it (positive logit / r, negative * r), then
//      logit -= presence * (count > 0) + frequency * count, counting generated tokens only.
//   3. masks to -inf: eos_ids and stop_token_ids while generated.size() < min_tokens; eos_ids
//      always when ignore_eos (neither when context.only_end_allowed); then every token outside
//      context.allowed when it is given.
//   -> the "processed logits". Log-probabilities are reported for softmax(processed logits) over
//      the whole vocabulary at temperature 1 (the model's distribution after bias, penalties and
//      masks, before temperature and truncation), each term and the sum in double.
//   4. greedy (temperature < kGreedyTemperature): the argmax of the processed logits, ties to the
//      lowest id. Otherwise p ~ exp((logit - max) / T), and truncation keeps, in this order:
//      top_k: the k highest logits and every token tied with the k-th;
//      top_p: the smallest set of highest-probability tokens (after top_k, renormalized) whose
//             probability reaches top_p, plus every token tied with the last one taken;
//      min_p: the tokens with p >= min_p * p_max, i.e. logit >= max + T * ln(min_p) (in double).
//      Each keeps all tokens at or above a logit threshold, so ties never depend on token ids.
//   5. draw: u = SamplingUniform(seed, request_id, position) in [0, 1); walk the kept tokens in
//      ascending id order and take the first whose cumulative probability exceeds u.
// Weights exp((logit - max) / T) are float (within 2 ulp; 0 below e^-86), summed in double in a
// fixed order, so the result is a pure function of (logits, params, context) on every machine.
// Cost: a few vectorized O(n_vocab) passes. top_k selects with a heap; top_p without top_k buckets
// the probability mass (32 buckets per nat) and sorts only the boundary bucket, so a large vocab
// is never fully sorted. Not thread-safe (it owns scratch buffers): one Sampler per thread.
class Sampler {
 public:
  explicit Sampler(int32_t n_vocab);

  int32_t n_vocab() const { return n_vocab_; }

  // The whole pipeline. Errors: invalid params, logits of the wrong length, NaN or +inf logits,
  // token ids outside the vocabulary, or every token masked.
  StatusOr<SampleResult> Sample(const SamplingParams& params, const SampleContext& context,
                                std::span<const float> logits);

  // Steps 1-3 in place: `logits` [n_vocab] become the processed logits.
  Status ProcessLogits(const SamplingParams& params, const SampleContext& context,
                       std::span<float> logits);

  // Steps 4-5 (and log-probabilities) on logits already processed, with the draw's uniform u
  // given: what a backend's Sample op computes (backend/cpu/sample/sample.h). Errors as Sample's.
  StatusOr<SampleResult> SampleProcessed(const SamplingParams& params, double u,
                                         std::span<const float> processed);

  // Step 4's kept set for processed logits, in ascending id order (for greedy: the argmax).
  StatusOr<std::vector<int32_t>> KeptTokens(const SamplingParams& params,
                                            std::span<const float> processed);

 private:
  struct Weighted {
    int32_t token;
    float logit;
    float weight;  // exp((logit - max) / T)
  };

  // Max of logits_ (ties: lowest id); an error for NaN, +inf or all -inf.
  Status FindMax();
  // Computes the kept set of logits_ (step 4): into survivors_ (sparse) or weights_ (dense).
  void Truncate(const SamplingParams& params);
  void TruncateSparse(const SamplingParams& params);
  void TruncateDense(const SamplingParams& params);
  // The kth largest value of logits_ (with multiplicity). Requires: 0 < k < n_vocab.
  float KthLargest(int32_t k);
  // The top_p threshold over the whole vocabulary from weights_ and buckets_.
  float TopPThreshold(double top_p);
  int32_t Draw(double u);
  void FillLogprobs(const SamplingParams& params, SampleResult& result);
  // Steps 4-5 and log-probabilities on logits_ (processed).
  StatusOr<SampleResult> Choose(const SamplingParams& params, double u);

  int32_t n_vocab_;
  std::vector<float> logits_;  // [n_vocab] processed logits of the current call

  // Penalty window bookkeeping, all zero between calls.
  std::vector<int32_t> counts_;  // [n_vocab] occurrences among generated tokens in the window
  std::vector<uint8_t> seen_;    // [n_vocab] 1 when present anywhere in the window
  std::vector<int32_t> touched_;

  // Step 4 state of the current call.
  float max_logit_ = 0.0f;
  int32_t argmax_ = -1;
  bool sparse_ = false;              // survivors_ holds the kept set, else weights_ does
  std::vector<Weighted> survivors_;  // sparse: the kept tokens, ascending id
  std::vector<float> weights_;       // [n_vocab] dense: exp((logit - max) / T)
  std::vector<uint16_t> buckets_;    // [n_vocab] dense top_p: probability bucket of each token
  std::vector<double> mass_;         // dense top_p: probability mass per bucket (2 copies)
  std::vector<double> block_sums_;   // dense draw: weight per block of tokens
  std::vector<int32_t> block_keys_;  // sparse: max OrderKey per block of logits
  float inv_t_ = 1.0f;               // dense: 1 / T as the weights used it
  std::vector<int32_t> indices_;     // [n_vocab] dense top_p: tokens of the boundary bucket
  double weight_sum_ = 0.0;          // dense: sum of weights_ before truncation
  float threshold_ = 0.0f;           // dense: kept = finite logits >= threshold_
  std::vector<float> heap_;          // KthLargest scratch
};

}  // namespace forge
