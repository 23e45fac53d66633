// Sampler: logit processing (bias, penalties, masks), truncation (top-k, top-p, min-p) as a logit
// threshold, the keyed draw and log-probabilities over the full vocabulary.
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "base/check.h"
#include "sampling/philox.h"
#include "sampling/sampling_kernels.h"

namespace forge {
namespace {

using sampling::OrderKey;

constexpr float kInf = std::numeric_limits<float>::infinity();

// top_p buckets tokens by x = (max - logit) / T, i.e. p / p_max = e^-x: 32 buckets per nat over
// 64 nats; tokens less likely than e^-64 of the top one share the last bucket.
constexpr int32_t kBucketsPerNat = 32;
constexpr int32_t kNumBuckets = 2048;

Status CheckLength(std::span<const float> logits, int32_t n_vocab) {
  if (logits.size() != static_cast<size_t>(n_vocab)) {
    return InvalidArgumentError("logits: " + std::to_string(logits.size()) +
                                " values, expected n_vocab=" + std::to_string(n_vocab));
  }
  return Status::Ok();
}

// The smallest float f with f >= v: float logits l pass `l >= f` exactly when l >= v.
float FloatAtLeast(double v) {
  if (v < -std::numeric_limits<float>::max()) return -kInf;
  float f = static_cast<float>(v);
  if (double{f} < v) f = std::nextafter(f, kInf);
  return f;
}

// min_p keeps p >= min_p * p_max, i.e. logit >= max + T * ln(min_p).
float MinPThreshold(float max, double temperature, double min_p) {
  return FloatAtLeast(double{max} + temperature * std::log(min_p));
}

constexpr auto kByLogitThenId = [](const auto& x, const auto& y) {
  return x.logit != y.logit ? x.logit > y.logit : x.token < y.token;
};

// top_p refines a crowded boundary bucket into this many sub-buckets before sorting.
constexpr int32_t kSubBuckets = 256;
constexpr size_t kRefineAbove = 128;

}  // namespace

Status CheckTokenIds(const char* what, std::span<const int32_t> ids, size_t begin,
                     int32_t n_vocab) {
  for (size_t i = begin; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n_vocab) {
      return OutOfRangeError(std::string(what) + "[" + std::to_string(i) +
                             "]=" + std::to_string(ids[i]) +
                             ": out of vocabulary (n_vocab=" + std::to_string(n_vocab) + ")");
    }
  }
  return Status::Ok();
}

StatusOr<PenaltyWindow> PenaltyWindowOf(const SamplingParams& params, const SampleContext& context,
                                        int32_t n_vocab) {
  PenaltyWindow w;
  w.active = (params.repetition_penalty != 1.0 || params.presence_penalty != 0.0 ||
              params.frequency_penalty != 0.0) &&
             params.penalty_last_n != 0;
  w.prompt_begin = context.prompt.size();
  w.generated_begin = context.generated.size();
  if (!w.active) return w;
  const size_t n_prompt = context.prompt.size();
  const size_t total = n_prompt + context.generated.size();
  const size_t last_n = static_cast<size_t>(params.penalty_last_n);
  const size_t start = (params.penalty_last_n < 0 || last_n >= total) ? 0 : total - last_n;
  w.prompt_begin = std::min(start, n_prompt);
  w.generated_begin = start > n_prompt ? start - n_prompt : 0;
  RETURN_IF_ERROR(CheckTokenIds("prompt", context.prompt, w.prompt_begin, n_vocab));
  RETURN_IF_ERROR(CheckTokenIds("generated", context.generated, w.generated_begin, n_vocab));
  return w;
}

Sampler::Sampler(int32_t n_vocab)
    : n_vocab_(n_vocab),
      logits_(n_vocab),
      counts_(n_vocab, 0),
      seen_(n_vocab, 0),
      weights_(n_vocab),
      buckets_(n_vocab),
      mass_(2 * kNumBuckets),
      block_sums_((n_vocab + sampling::kSumBlock - 1) / sampling::kSumBlock),
      block_keys_((n_vocab + sampling::kKeyBlock - 1) / sampling::kKeyBlock),
      indices_(n_vocab) {
  CHECK_GT(n_vocab, 0);
}

Status Sampler::ProcessLogits(const SamplingParams& params, const SampleContext& context,
                              std::span<float> logits) {
  RETURN_IF_ERROR(params.ValidateForVocab(n_vocab_));
  RETURN_IF_ERROR(CheckLength(logits, n_vocab_));
  RETURN_IF_ERROR(CheckTokenIds("eos_ids", context.eos_ids, 0, n_vocab_));

  // 1. Logit bias.
  for (const auto& [token, bias] : params.logit_bias) logits[token] += bias;

  // 2. Penalties over the window: the last penalty_last_n tokens of prompt + generated.
  ASSIGN_OR_RETURN(const PenaltyWindow window, PenaltyWindowOf(params, context, n_vocab_));
  if (window.active) {
    const size_t n_prompt = context.prompt.size();
    const size_t prompt_begin = window.prompt_begin;
    const size_t generated_begin = window.generated_begin;
    auto mark = [this](int32_t token) {
      if (!seen_[token]) {
        seen_[token] = 1;
        touched_.push_back(token);
      }
    };
    for (size_t i = prompt_begin; i < n_prompt; ++i) mark(context.prompt[i]);
    for (size_t i = generated_begin; i < context.generated.size(); ++i) {
      mark(context.generated[i]);
      ++counts_[context.generated[i]];
    }
    const double rep = params.repetition_penalty;
    for (int32_t token : touched_) {
      double l = logits[token];
      if (rep != 1.0) l = l > 0.0 ? l / rep : l * rep;
      if (const int32_t count = counts_[token]; count > 0) {
        l -= params.presence_penalty + params.frequency_penalty * count;
      }
      logits[token] = static_cast<float>(l);
      counts_[token] = 0;
      seen_[token] = 0;
    }
    touched_.clear();
  }

  // 3. Masks.
  const bool before_min = context.generated.size() < static_cast<size_t>(params.min_tokens) &&
                          !context.only_end_allowed;
  if (before_min || (params.ignore_eos && !context.only_end_allowed)) {
    for (int32_t token : context.eos_ids) logits[token] = -kInf;
  }
  if (before_min) {
    for (int32_t token : params.stop_token_ids) logits[token] = -kInf;
  }
  if (!context.allowed.empty()) {
    if (context.allowed.size() * 32 < static_cast<size_t>(n_vocab_)) {
      return InvalidArgumentError("allowed set of " + std::to_string(context.allowed.size()) +
                                  " words for " + std::to_string(n_vocab_) + " tokens");
    }
    for (int32_t t = 0; t < n_vocab_; ++t) {
      if (((context.allowed[t >> 5] >> (t & 31)) & 1u) == 0) logits[t] = -kInf;
    }
  }
  return Status::Ok();
}

Status Sampler::FindMax() {
  int32_t min_key, max_key;
  sampling::KeyRange(logits_.data(), n_vocab_, &min_key, &max_key);
  if (max_key >= OrderKey(kInf) || min_key < OrderKey(-kInf)) {  // +inf or a NaN somewhere
    for (int32_t i = 0; i < n_vocab_; ++i) {
      const float v = logits_[i];
      if (!(v < kInf)) {
        return InvalidArgumentError("logits[" + std::to_string(i) + "]=" + std::to_string(v) +
                                    ": must be finite or -inf");
      }
    }
  }
  if (max_key == OrderKey(-kInf)) {
    return FailedPreconditionError(
        "every logit is -inf after logit_bias, penalties and masks: no token can be sampled");
  }
  max_logit_ = sampling::FromOrderKey(max_key);
  int32_t argmax = 0;
  while (logits_[argmax] != max_logit_) ++argmax;
  argmax_ = argmax;
  return Status::Ok();
}

float Sampler::KthLargest(int32_t k) {
  CHECK(k > 0 && k < n_vocab_);
  if (k <= n_vocab_ / 16) {
    // A min-heap of the k largest so far; blocks whose max cannot enter it are skipped whole.
    heap_.assign(logits_.begin(), logits_.begin() + k);
    std::make_heap(heap_.begin(), heap_.end(), std::greater<float>());
    const int32_t n_blocks = static_cast<int32_t>(block_keys_.size());
    for (int32_t blk = k / sampling::kKeyBlock; blk < n_blocks; ++blk) {
      if (block_keys_[blk] <= OrderKey(heap_.front())) continue;
      const int32_t begin = std::max(k, blk * sampling::kKeyBlock);
      const int32_t end = std::min(n_vocab_, (blk + 1) * sampling::kKeyBlock);
      for (int32_t i = begin; i < end; ++i) {
        if (logits_[i] > heap_.front()) {
          std::pop_heap(heap_.begin(), heap_.end(), std::greater<float>());
          heap_.back() = logits_[i];
          std::push_heap(heap_.begin(), heap_.end(), std::greater<float>());
        }
      }
    }
    return heap_.front();
  }
  heap_.assign(logits_.begin(), logits_.end());
  std::nth_element(heap_.begin(), heap_.begin() + (k - 1), heap_.end(), std::greater<float>());
  return heap_[k - 1];
}

void Sampler::Truncate(const SamplingParams& params) {
  if (params.top_k > 0 && params.top_k < n_vocab_) {
    TruncateSparse(params);
  } else {
    TruncateDense(params);
  }
}

void Sampler::TruncateSparse(const SamplingParams& params) {
  // The top_k candidates (with ties) sorted by logit; top_p and min_p cut that list.
  sparse_ = true;
  sampling::BlockMaxKeys(logits_.data(), n_vocab_, block_keys_.data());
  const float kth = KthLargest(params.top_k);
  const float inv_t = static_cast<float>(1.0 / params.temperature);
  survivors_.clear();
  const int32_t kth_key = OrderKey(kth);
  for (int32_t blk = 0; blk < static_cast<int32_t>(block_keys_.size()); ++blk) {
    if (block_keys_[blk] < kth_key) continue;
    const int32_t end = std::min(n_vocab_, (blk + 1) * sampling::kKeyBlock);
    for (int32_t i = blk * sampling::kKeyBlock; i < end; ++i) {
      if (logits_[i] >= kth && logits_[i] > -kInf) survivors_.push_back({i, logits_[i], 0.0f});
    }
  }
  std::sort(survivors_.begin(), survivors_.end(), kByLogitThenId);
  double sum = 0.0;
  for (Weighted& s : survivors_) {
    s.weight = sampling::ExpNonPositive((s.logit - max_logit_) * inv_t);
    sum += s.weight;
  }
  float threshold = kth;
  if (params.top_p < 1.0) {
    const double target = params.top_p * sum;
    double cum = 0.0;
    for (const Weighted& s : survivors_) {
      cum += s.weight;
      if (cum >= target) {
        threshold = std::max(threshold, s.logit);
        break;
      }
    }
  }
  if (params.min_p > 0.0) {
    threshold = std::max(threshold, MinPThreshold(max_logit_, params.temperature, params.min_p));
  }
  auto cut = std::find_if(survivors_.begin(), survivors_.end(),
                          [threshold](const Weighted& s) { return s.logit < threshold; });
  survivors_.erase(cut, survivors_.end());
  std::sort(survivors_.begin(), survivors_.end(),
            [](const Weighted& x, const Weighted& y) { return x.token < y.token; });
}

void Sampler::TruncateDense(const SamplingParams& params) {
  // Weights over the whole vocabulary; the kept set is a logit threshold.
  sparse_ = false;
  const float inv_t = static_cast<float>(1.0 / params.temperature);
  inv_t_ = inv_t;
  if (params.top_p < 1.0) {
    weight_sum_ =
        sampling::ExpWeightsBucketed(logits_.data(), n_vocab_, max_logit_, inv_t, kBucketsPerNat,
                                     kNumBuckets - 1, weights_.data(), buckets_.data());
  } else {
    weight_sum_ =
        sampling::ExpWeights(logits_.data(), n_vocab_, max_logit_, inv_t, weights_.data());
  }
  threshold_ = -kInf;
  if (params.top_p < 1.0) threshold_ = TopPThreshold(params.top_p);
  if (params.min_p > 0.0) {
    threshold_ = std::max(threshold_, MinPThreshold(max_logit_, params.temperature, params.min_p));
  }
}

float Sampler::TopPThreshold(double top_p) {
  // Two interleaved histograms keep consecutive adds to one bucket from waiting on each other.
  std::fill(mass_.begin(), mass_.end(), 0.0);
  double* mass0 = mass_.data();
  double* mass1 = mass_.data() + kNumBuckets;
  int32_t i = 0;
  for (; i + 2 <= n_vocab_; i += 2) {
    mass0[buckets_[i]] += weights_[i];
    mass1[buckets_[i + 1]] += weights_[i + 1];
  }
  if (i < n_vocab_) mass0[buckets_[i]] += weights_[i];
  const double target = top_p * weight_sum_;
  double cum = 0.0;
  int32_t b = 0;
  for (; b < kNumBuckets; ++b) {
    const double m = mass0[b] + mass1[b];
    if (cum + m >= target) break;
    cum += m;
  }
  if (b == kNumBuckets) return -kInf;  // rounding left the target unreached: keep everything

  // The boundary bucket's tokens.
  const int32_t n_in_bucket =
      sampling::IndicesOf(buckets_.data(), n_vocab_, static_cast<uint16_t>(b), indices_.data());
  survivors_.clear();
  for (int32_t j = 0; j < n_in_bucket; ++j) {
    const int32_t t = indices_[j];
    survivors_.push_back({t, logits_[t], weights_[t]});
  }
  if (survivors_.size() > kRefineAbove) {
    // Crowded: split the bucket finely by the same monotone coordinate and keep only the
    // sub-bucket where the target falls (ties share a sub-bucket).
    const float scale = inv_t_ * static_cast<float>(kBucketsPerNat);
    auto sub_of = [&](float logit) {
      // In [0, kSubBuckets) but for the last bucket, which also holds farther (and -inf) logits.
      const float y = ((max_logit_ - logit) * scale - static_cast<float>(b)) * kSubBuckets;
      return static_cast<int32_t>(std::clamp(y, 0.0f, static_cast<float>(kSubBuckets - 1)));
    };
    double sub_mass[kSubBuckets] = {};
    for (const Weighted& s : survivors_) sub_mass[sub_of(s.logit)] += s.weight;
    int32_t sub = 0;
    for (; sub < kSubBuckets - 1; ++sub) {
      if (cum + sub_mass[sub] >= target) break;
      cum += sub_mass[sub];
    }
    std::erase_if(survivors_, [&](const Weighted& s) { return sub_of(s.logit) != sub; });
  }
  // Only what is left of the boundary is sorted.
  std::sort(survivors_.begin(), survivors_.end(), kByLogitThenId);
  for (const Weighted& s : survivors_) {
    cum += s.weight;
    if (cum >= target) return s.logit;
  }
  return survivors_.back().logit;
}

int32_t Sampler::Draw(double u) {
  if (sparse_) {
    double sum = 0.0;
    for (const Weighted& s : survivors_) sum += s.weight;
    const double target = u * sum;
    double cum = 0.0;
    for (const Weighted& s : survivors_) {
      cum += s.weight;
      if (cum > target) return s.token;
    }
    for (auto s = survivors_.rbegin(); s != survivors_.rend(); ++s) {
      if (s->weight > 0.0f) return s->token;  // u * sum rounded up to sum
    }
    return argmax_;
  }
  // Dense: sums of the kept weights per block, then a walk through the block where u falls.
  const float threshold = threshold_;
  auto kept = [&](int32_t i) { return weights_[i] > 0.0f && logits_[i] >= threshold; };
  const int32_t n_blocks = static_cast<int32_t>(block_sums_.size());
  sampling::MaskedBlockSums(logits_.data(), weights_.data(), n_vocab_, threshold,
                            block_sums_.data());
  double sum = 0.0;
  for (int32_t b = 0; b < n_blocks; ++b) sum += block_sums_[b];
  const double target = u * sum;
  double cum = 0.0;
  for (int32_t b = 0; b < n_blocks; ++b) {
    if (cum + block_sums_[b] <= target) {
      cum += block_sums_[b];
      continue;
    }
    const int32_t begin = b * sampling::kSumBlock;
    const int32_t end = std::min(begin + sampling::kSumBlock, n_vocab_);
    int32_t last = -1;
    for (int32_t i = begin; i < end; ++i) {
      if (kept(i)) {
        cum += weights_[i];
        last = i;
        if (cum > target) return i;
      }
    }
    if (last >= 0) return last;  // the walk's rounding differs from the block sum's
  }
  for (int32_t i = n_vocab_ - 1; i >= 0; --i) {  // u * sum rounded up to sum
    if (kept(i)) return i;
  }
  return argmax_;
}

void Sampler::FillLogprobs(const SamplingParams& params, SampleResult& result) {
  // log Z = max + log(sum e^(logit - max)), each term and the sum in double.
  const double max = max_logit_;
  const double log_z = max + std::log(sampling::ExpSumDouble(logits_.data(), n_vocab_, max));
  result.logprob = double{logits_[result.token]} - log_z;

  // The top N by logit, ties to the lowest id: a small sorted list, one pass in id order.
  const size_t n = static_cast<size_t>(params.top_logprobs);
  if (n == 0) return;
  std::vector<std::pair<float, int32_t>> best;
  best.reserve(n + 1);
  for (int32_t i = 0; i < n_vocab_; ++i) {
    const float v = logits_[i];
    if (v == -kInf || (best.size() == n && !(v > best.back().first))) continue;
    auto at = std::find_if(best.begin(), best.end(), [v](const auto& e) { return e.first < v; });
    best.insert(at, {v, i});
    if (best.size() > n) best.pop_back();
  }
  for (const auto& [v, token] : best) result.top_logprobs.push_back({token, double{v} - log_z});
}

StatusOr<SampleResult> Sampler::Choose(const SamplingParams& params, double u) {
  RETURN_IF_ERROR(FindMax());
  SampleResult result;
  if (params.greedy()) {
    result.token = argmax_;
  } else {
    Truncate(params);
    result.token = Draw(u);
  }
  if (params.logprobs) FillLogprobs(params, result);
  return result;
}

StatusOr<SampleResult> Sampler::Sample(const SamplingParams& params, const SampleContext& context,
                                       std::span<const float> logits) {
  RETURN_IF_ERROR(CheckLength(logits, n_vocab_));
  std::copy(logits.begin(), logits.end(), logits_.begin());
  RETURN_IF_ERROR(ProcessLogits(params, context, logits_));
  const double u = params.greedy() ? 0.0
                                   : SamplingUniform(params.seed.value_or(0), context.request_id,
                                                     context.position());
  return Choose(params, u);
}

StatusOr<SampleResult> Sampler::SampleProcessed(const SamplingParams& params, double u,
                                                std::span<const float> processed) {
  RETURN_IF_ERROR(params.Validate());
  RETURN_IF_ERROR(CheckLength(processed, n_vocab_));
  std::copy(processed.begin(), processed.end(), logits_.begin());
  return Choose(params, u);
}

StatusOr<std::vector<int32_t>> Sampler::KeptTokens(const SamplingParams& params,
                                                   std::span<const float> processed) {
  RETURN_IF_ERROR(params.Validate());
  RETURN_IF_ERROR(CheckLength(processed, n_vocab_));
  std::copy(processed.begin(), processed.end(), logits_.begin());
  RETURN_IF_ERROR(FindMax());
  if (params.greedy()) return std::vector<int32_t>{argmax_};
  Truncate(params);
  std::vector<int32_t> kept;
  if (sparse_) {
    for (const Weighted& s : survivors_) kept.push_back(s.token);
  } else {
    for (int32_t i = 0; i < n_vocab_; ++i) {
      if (logits_[i] >= threshold_ && logits_[i] > -kInf) kept.push_back(i);
    }
  }
  return kept;
}

}  // namespace forge
