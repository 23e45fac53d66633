// FillMask timings (printed, never asserted: tests do not judge speed) on a real 102,400-token
// vocabulary (deepseek-llm) and on 128,256- and ~185,000-token ones made of real tokens (the
// deepseek-llm vocabulary followed by the other test vocabularies' distinct pieces; the test data
// has no llama-3 vocabulary), at typical JSON states: cold (a new grammar, nothing memoized),
// warm (transitions memoized, masks cache bypassed) and cached (the state's mask kept), and the
// average over the steps of random generations.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"
#include "json_schema_suite.h"

namespace forge {
namespace {

using Clock = std::chrono::steady_clock;

double Micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// deepseek-llm's pieces (and end ids), then distinct pieces of the other vocabularies, up to n.
std::vector<std::string> UnionPieces(size_t n, std::vector<TokenId>* end_ids) {
  const Tokenizer* base = testing::LoadVocab("vocab/ggml-vocab-deepseek-llm.gguf");
  std::vector<std::string> pieces;
  std::set<std::string> seen;
  for (TokenId id = 0; id < base->vocab().size(); ++id) {
    pieces.push_back(base->TokenToPiece(id, false));
    seen.insert(pieces.back());
  }
  end_ids->assign(base->vocab().eog.begin(), base->vocab().eog.end());
  for (const char* file : {"vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-falcon.gguf",
                           "vocab/ggml-vocab-starcoder.gguf", "vocab/ggml-vocab-baichuan.gguf",
                           "vocab/ggml-vocab-llama-spm.gguf",
                           "vocab/ggml-vocab-deepseek-coder.gguf", "vocab/ggml-vocab-refact.gguf",
                           "vocab/ggml-vocab-gpt-neox.gguf", "vocab/ggml-vocab-mpt.gguf",
                           "vocab/ggml-vocab-phi-3.gguf", "vocab/ggml-vocab-bert-bge.gguf"}) {
    const Tokenizer* t = testing::LoadVocab(file);
    for (TokenId id = 0; id < t->vocab().size() && pieces.size() < n; ++id) {
      std::string p = t->TokenToPiece(id, false);
      if (!p.empty() && seen.insert(p).second) pieces.push_back(std::move(p));
    }
  }
  return pieces;
}

struct StateCase {
  const char* name;
  const char* text;
};

void TimeStates(const std::string& label, const std::vector<std::string>& pieces,
                const std::vector<TokenId>& end_ids) {
  const auto build_start = Clock::now();
  auto vocab = TokenVocabView::Create(pieces, end_ids);
  const double build_us = Micros(build_start, Clock::now());
  auto vocab2 = TokenVocabView::Create(pieces, end_ids);  // same tokens, separate masks cache
  std::printf(
      "[ timing   ] %s: %d tokens, %zu trie nodes, %zu subtree byte sets; view built in "
      "%.1f ms (once per vocabulary)\n",
      label.c_str(), vocab->size(), vocab->num_trie_nodes(), vocab->below_sets().size(),
      build_us / 1000);
  const std::vector<StateCase> cases = {
      {"start of document", ""},
      {"start of object", "{"},
      {"inside a key", "{\"na"},
      {"after a key", "{\"name\""},
      {"before a value", "{\"name\": "},
      {"inside a string", "{\"name\": \"Jo"},
      {"inside a number", "{\"name\": \"Jo\", \"age\": 4"},
      {"after a value", "{\"name\": \"Jo\", \"age\": 42"},
      {"nested array", "{\"name\": \"Jo\", \"tags\": [\"a\", "},
  };
  const char* schema =
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
          "tags":{"type":"array","items":{"type":"string"}}},"required":["name"]})";
  std::vector<uint32_t> mask(vocab->mask_words());
  for (const char* grammar_kind : {"json_object", "schema"}) {
    std::printf("[ timing   ]   %-12s %-18s %9s %9s %9s %8s\n", grammar_kind, "state", "cold us",
                "warm us", "cached us", "allowed");
    for (const StateCase& c : cases) {
      // A new grammar per state: its automaton starts empty.
      auto g = std::string(grammar_kind) == "schema"
                   ? GrammarFromJsonSchema(schema)
                   : GrammarFromJsonSchema(R"({"type":"json_object"})");
      ASSERT_TRUE(g.ok());
      GrammarMatcher m(*g);
      ASSERT_TRUE(m.Accept(c.text)) << c.text;
      auto t0 = Clock::now();
      m.FillMask(*vocab, mask.data());
      auto t1 = Clock::now();
      m.FillMask(*vocab2, mask.data());
      auto t2 = Clock::now();
      m.FillMask(*vocab2, mask.data());
      auto t3 = Clock::now();
      std::printf("[ timing   ]   %-12s %-18s %9.1f %9.1f %9.1f %8d\n", "", c.name, Micros(t0, t1),
                  Micros(t1, t2), Micros(t2, t3), testing::PopCount(mask));
    }
  }
  // Per generated token, over random generations: with a new grammar for each generation (a
  // request whose schema was never seen), and with one grammar for all (a server that keeps
  // compiled grammars: the automaton and masks of earlier requests are reused).
  const testing::WalkMasks& walk = testing::WalkMasksOf(*vocab);
  for (const char* grammar_kind : {"json_object", "schema"}) {
    for (bool reuse : {false, true}) {
      std::mt19937 rng(3);
      double total = 0, worst = 0;
      int steps = 0;
      std::shared_ptr<const Grammar> shared;
      for (int run = 0; run < 8; ++run) {
        if (!reuse || shared == nullptr) {
          auto g = std::string(grammar_kind) == "schema"
                       ? GrammarFromJsonSchema(schema)
                       : GrammarFromJsonSchema(R"({"type":"json_object"})");
          ASSERT_TRUE(g.ok());
          shared = *g;
        }
        GrammarMatcher m(shared);
        for (int step = 0; step < 400; ++step) {
          auto a = Clock::now();
          m.FillMask(*vocab, mask.data());
          const double us = Micros(a, Clock::now());
          total += us;
          worst = std::max(worst, us);
          ++steps;
          int allowed = 0;
          bool can_end = false;
          for (size_t i = 0; i < mask.size(); ++i) {
            can_end = can_end || (mask[i] & walk.end[i]) != 0;
            allowed += __builtin_popcount(mask[i] & ~walk.end[i]);
          }
          if (allowed == 0 || (can_end && rng() % 2 == 0)) break;
          const bool close = step > 150 && rng() % 2 == 0;
          int closing = 0;
          for (size_t i = 0; close && i < mask.size(); ++i) {
            closing += __builtin_popcount(mask[i] & ~walk.end[i] & walk.closing[i]);
          }
          const TokenId id = closing > 0
                                 ? testing::PickBit(mask, &walk.closing, walk.end, closing, &rng)
                                 : testing::PickBit(mask, nullptr, walk.end, allowed, &rng);
          ASSERT_TRUE(m.AcceptToken(*vocab, id));
        }
      }
      std::printf(
          "[ timing   ]   %-12s per token, %-28s %5d steps: mean %7.1f us, worst %8.1f "
          "us\n",
          grammar_kind, reuse ? "one grammar for 8 generations" : "a new grammar each time", steps,
          total / steps, worst);
    }
  }
}

TEST(FillMaskTiming, SchemaCompilation) {
  // JSON schema -> GBNF -> compiled grammar, for each schema of the suite.
  double total = 0, worst = 0;
  const char* worst_name = "";
  for (const testing::SuiteSchema& s : testing::JsonSchemaSuite()) {
    const auto a = Clock::now();
    auto g = GrammarFromJsonSchema(s.schema);
    const double us = Micros(a, Clock::now());
    ASSERT_TRUE(g.ok()) << s.name;
    total += us;
    if (us > worst) {
      worst = us;
      worst_name = s.name;
    }
  }
  std::printf("[ timing   ] schema to grammar: %zu schemas, mean %.1f us, worst %.1f us (%s)\n",
              testing::JsonSchemaSuite().size(), total / testing::JsonSchemaSuite().size(), worst,
              worst_name);
}

TEST(FillMaskTiming, RealVocabularies) {
  const Tokenizer* deepseek = testing::LoadVocab("vocab/ggml-vocab-deepseek-llm.gguf");
  ASSERT_NE(deepseek, nullptr);
  std::vector<TokenId> end_ids;
  const std::vector<std::string> real = UnionPieces(deepseek->vocab().size(), &end_ids);
  TimeStates("deepseek-llm", real, end_ids);
  const std::vector<std::string> u128 = UnionPieces(128256, &end_ids);
  TimeStates("deepseek-llm + other vocabs' tokens", u128, end_ids);
  // Every distinct piece of the test vocabularies (about 185k: the size class of 200k vocabs).
  const std::vector<std::string> all = UnionPieces(1000000, &end_ids);
  TimeStates("deepseek-llm + other vocabs' tokens", all, end_ids);
}

}  // namespace
}  // namespace forge
