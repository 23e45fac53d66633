// Helpers for the grammar tests (header-only: only *_test.cc files are built): real vocabularies
// as TokenVocabViews, the Python oracle (grammar_oracle.py), and a random walk that generates
// text from a matcher by picking allowed tokens.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocab.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

namespace forge::testing {

// TokenVocabView of a test-data vocab, built once.
inline std::shared_ptr<const TokenVocabView> GrammarTestVocab(const std::string& relative) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<const TokenVocabView>>();
  const Tokenizer* tok = LoadVocab(relative);
  if (tok == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*cache)[relative];
  if (slot == nullptr) slot = TokenVocabView::FromTokenizer(*tok);
  return slot;
}

inline std::string GrammarPython() {
  return FileExists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// Runs tests/grammar/grammar_oracle.py on job; fails the test (and returns null) when python3
// with python3-regex and python3-jsonschema is missing.
inline nlohmann::json RunGrammarOracle(const nlohmann::json& job) {
  const std::string dir = TempDir();
  static int counter = 0;
  const std::string tag = std::to_string(++counter);
  const std::string in = dir + "/oracle_job" + tag + ".json";
  const std::string out = dir + "/oracle_out" + tag + ".json";
  std::ofstream(in) << job.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  const std::string cmd =
      GrammarPython() + " " FORGE_SOURCE_DIR "/tests/grammar/grammar_oracle.py " + in + " " + out;
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << cmd << " failed: python3 with Debian's python3-regex and python3-jsonschema "
                  << "is needed (apt install python3-regex python3-jsonschema)";
    return nullptr;
  }
  nlohmann::json result;
  std::ifstream(out) >> result;
  return result;
}

inline int PopCount(const std::vector<uint32_t>& mask) {
  int n = 0;
  for (uint32_t w : mask) n += __builtin_popcount(w);
  return n;
}

inline bool Bit(const std::vector<uint32_t>& mask, TokenId id) {
  return (mask[static_cast<size_t>(id) >> 5] >> (id & 31)) & 1;
}

// What a random walk produced.
struct Walk {
  std::string text;
  std::vector<TokenId> tokens;
  bool ended = false;  // an end token was picked
  int dead_ends = 0;   // steps where nothing was allowed
};

// Per vocabulary (built once): bitmasks of its end tokens and of tokens with a closing character.
struct WalkMasks {
  std::vector<uint32_t> end, closing;
};
inline const WalkMasks& WalkMasksOf(const TokenVocabView& vocab) {
  static std::mutex mu;
  static auto* cache = new std::map<uint64_t, WalkMasks>();
  std::lock_guard<std::mutex> lock(mu);
  WalkMasks& m = (*cache)[vocab.id()];
  if (m.end.empty()) {
    m.end.assign(vocab.mask_words(), 0);
    m.closing.assign(vocab.mask_words(), 0);
    for (TokenId id = 0; id < vocab.size(); ++id) {
      if (vocab.IsEnd(id)) m.end[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
      if (vocab.piece(id).find_first_of("\"}]") != std::string::npos) {
        m.closing[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
      }
    }
  }
  return m;
}

// A uniformly random set bit of mask & keep & ~drop (with n such bits, n > 0).
inline TokenId PickBit(const std::vector<uint32_t>& mask, const std::vector<uint32_t>* keep,
                       const std::vector<uint32_t>& drop, int n, std::mt19937* rng) {
  int k = static_cast<int>((*rng)() % static_cast<uint32_t>(n));
  for (size_t w = 0; w < mask.size(); ++w) {
    uint32_t bits = mask[w] & ~drop[w] & (keep ? (*keep)[w] : ~0u);
    const int c = __builtin_popcount(bits);
    if (k >= c) {
      k -= c;
      continue;
    }
    for (; k > 0; --k) bits &= bits - 1;
    return static_cast<TokenId>(w * 32 + static_cast<size_t>(__builtin_ctz(bits)));
  }
  return kNoToken;
}

// Generates text by picking random allowed tokens (FillMask) until an end token is picked. An end
// token, when allowed, is taken with probability p_end; past budget steps the walk always ends
// when it can and half of the time picks a token with a closing character ("}]).
// on_step(matcher, mask, tokens picked so far) is called before each pick.
template <typename OnStep>
Walk RandomWalk(GrammarMatcher* m, const TokenVocabView& vocab, std::mt19937* rng, int budget,
                int max_steps, double p_end, OnStep on_step) {
  Walk w;
  const WalkMasks& masks = WalkMasksOf(vocab);
  std::vector<uint32_t> mask(vocab.mask_words());
  for (int step = 0; step < max_steps; ++step) {
    m->FillMask(vocab, mask.data());
    on_step(*m, mask, w.tokens);
    int allowed = 0, closing = 0;
    bool can_end = false;
    for (size_t i = 0; i < mask.size(); ++i) {
      can_end = can_end || (mask[i] & masks.end[i]) != 0;
      allowed += __builtin_popcount(mask[i] & ~masks.end[i]);
      closing += __builtin_popcount(mask[i] & ~masks.end[i] & masks.closing[i]);
    }
    const bool past_budget = step >= budget;
    if (can_end && (allowed == 0 || past_budget ||
                    std::uniform_real_distribution<double>(0, 1)(*rng) < p_end)) {
      EXPECT_TRUE(m->AcceptToken(vocab, vocab.end_ids()[0]));
      w.ended = true;
      return w;
    }
    if (allowed == 0) {
      ++w.dead_ends;
      return w;
    }
    // Past the budget, closing tokens half of the time (a string may need other characters
    // before it can close, as one with a pattern does).
    const bool prefer_closing = past_budget && closing > 0 && (*rng)() % 2 == 0;
    const TokenId id = prefer_closing ? PickBit(mask, &masks.closing, masks.end, closing, rng)
                                      : PickBit(mask, nullptr, masks.end, allowed, rng);
    EXPECT_TRUE(m->AcceptToken(vocab, id))
        << "FillMask allowed token " << id << " '" << vocab.piece(id) << "' but Accept refused it";
    w.text += vocab.piece(id);
    w.tokens.push_back(id);
  }
  return w;
}

}  // namespace forge::testing
