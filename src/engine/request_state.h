// Engine::Request: the engine's record of one request while it runs: its prompt and parameters,
// where its events go, and each sample's sequence, generated tokens, text and timings.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "engine/engine.h"

namespace forge {

struct Engine::Request {
  RequestId id = 0;
  uint64_t arrival = 0;  // FCFS order, given at admission
  std::vector<int32_t> prompt;
  SamplingParams params;  // seed always set
  int32_t n = 1;
  int32_t max_new = 0;  // tokens each sample may generate
  std::function<void(RequestEvent)> on_event;
  std::shared_ptr<const Grammar> grammar;  // null: unconstrained
  std::shared_ptr<const TokenVocabView> grammar_vocab;  // with a grammar: the tokenizer's view
  std::shared_ptr<RequestEvents> events;  // when no on_event
  Clock::time_point submitted, scheduled;
  bool was_scheduled = false;
  bool forked = false;  // n == 1, or the prompt's sequence has forked into n
  bool embed = false;   // encoded, not continued (EngineRequest::embed)

  struct Sample {
    uint64_t seq = 0;  // its sequence (0 until forked off the first sample's)
    std::vector<int32_t> generated;
    std::unique_ptr<TextOutput> text;  // null without a tokenizer
    std::optional<GrammarMatcher> matcher;  // where the sample stands in the request's grammar
    bool done = false;
    Clock::time_point first_token, last_token;
    double itl_sum = 0, itl_max = 0;
    int64_t itl_count = 0;
  };
  std::vector<Sample> samples;  // [n]
  int32_t num_done = 0;
};

}  // namespace forge
