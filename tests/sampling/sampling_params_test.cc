// SamplingParams::Validate: defaults pass; each bad field is refused with a message naming it.
#include "sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace forge {
namespace {

std::string Error(const std::function<void(SamplingParams&)>& edit) {
  SamplingParams p;
  edit(p);
  Status s = p.Validate();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  return s.message();
}

TEST(SamplingParamsTest, DefaultsAreValid) {
  SamplingParams p;
  EXPECT_TRUE(p.Validate().ok());
  EXPECT_TRUE(p.ValidateForVocab(1).ok());
  EXPECT_FALSE(p.greedy());
  p.temperature = 0;
  EXPECT_TRUE(p.greedy());
  EXPECT_TRUE(p.Validate().ok());
}

TEST(SamplingParamsTest, EdgesThatAreValid) {
  SamplingParams p;
  p.top_k = -1;
  p.top_p = 1e-9;
  p.min_p = 1.0;
  p.repetition_penalty = 1e-3;
  p.presence_penalty = -2;
  p.frequency_penalty = 2;
  p.penalty_last_n = 0;
  p.logit_bias = {{0, -INFINITY}, {5, 100.f}};
  p.max_tokens = 1;
  p.min_tokens = 1;
  p.logprobs = true;
  p.top_logprobs = kMaxTopLogprobs;
  EXPECT_TRUE(p.Validate().ok()) << p.Validate().ToString();
}

TEST(SamplingParamsTest, MessagesNameTheField) {
  EXPECT_EQ(Error([](auto& p) { p.top_p = 1.5; }), "top_p=1.5: must be in (0, 1]");
  EXPECT_EQ(Error([](auto& p) { p.top_p = 0; }), "top_p=0: must be in (0, 1]");
  EXPECT_EQ(Error([](auto& p) { p.temperature = -0.5; }),
            "temperature=-0.5: must be finite and >= 0 (0 = greedy)");
  EXPECT_EQ(Error([](auto& p) { p.temperature = NAN; }),
            "temperature=nan: must be finite and >= 0 (0 = greedy)");
  EXPECT_EQ(Error([](auto& p) { p.temperature = INFINITY; }),
            "temperature=inf: must be finite and >= 0 (0 = greedy)");
  EXPECT_EQ(Error([](auto& p) { p.top_k = -2; }), "top_k=-2: must be > 0, or 0 / -1 for off");
  EXPECT_EQ(Error([](auto& p) { p.min_p = 1.1; }), "min_p=1.1: must be in [0, 1]");
  EXPECT_EQ(Error([](auto& p) { p.min_p = -0.1; }), "min_p=-0.1: must be in [0, 1]");
  EXPECT_EQ(Error([](auto& p) { p.repetition_penalty = 0; }),
            "repetition_penalty=0: must be finite and > 0 (1 = off)");
  EXPECT_EQ(Error([](auto& p) { p.presence_penalty = 2.5; }),
            "presence_penalty=2.5: must be in [-2, 2]");
  EXPECT_EQ(Error([](auto& p) { p.frequency_penalty = -3; }),
            "frequency_penalty=-3: must be in [-2, 2]");
  EXPECT_EQ(Error([](auto& p) { p.penalty_last_n = -5; }),
            "penalty_last_n=-5: must be >= 0, or -1 for the whole sequence");
  EXPECT_EQ(Error([](auto& p) { p.logit_bias[3] = INFINITY; }),
            "logit_bias[3]=inf: must be finite, or -inf to ban the token");
  EXPECT_EQ(Error([](auto& p) { p.logit_bias[3] = NAN; }),
            "logit_bias[3]=nan: must be finite, or -inf to ban the token");
  EXPECT_EQ(Error([](auto& p) { p.logit_bias[-1] = 1; }), "logit_bias: token id -1 is negative");
  EXPECT_EQ(Error([](auto& p) { p.max_tokens = 0; }),
            "max_tokens=0: must be >= 1, or -1 for no limit");
  EXPECT_EQ(Error([](auto& p) { p.min_tokens = -1; }), "min_tokens=-1: must be >= 0");
  EXPECT_EQ(Error([](auto& p) {
              p.max_tokens = 4;
              p.min_tokens = 5;
            }),
            "min_tokens=5: must be <= max_tokens=4");
  EXPECT_EQ(Error([](auto& p) { p.stop = {"ok", ""}; }), "stop[1]: empty stop string");
  EXPECT_EQ(Error([](auto& p) { p.stop_token_ids = {-3}; }), "stop_token_ids[0]=-3: is negative");
  EXPECT_EQ(Error([](auto& p) {
              p.logprobs = true;
              p.top_logprobs = 21;
            }),
            "top_logprobs=21: must be in [0, 20]");
  EXPECT_EQ(Error([](auto& p) { p.top_logprobs = 2; }), "top_logprobs=2: requires logprobs=true");
}

TEST(SamplingParamsTest, TokenIdsCheckedAgainstTheVocab) {
  SamplingParams p;
  p.logit_bias[99] = 1;
  EXPECT_TRUE(p.ValidateForVocab(100).ok());
  Status s = p.ValidateForVocab(99);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(), "logit_bias token=99: out of vocabulary (n_vocab=99)");
  p.logit_bias.clear();
  p.stop_token_ids = {1, 150};
  EXPECT_EQ(p.ValidateForVocab(100).message(),
            "stop_token_ids[1]=150: out of vocabulary (n_vocab=100)");
}

}  // namespace
}  // namespace forge
