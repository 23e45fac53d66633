// FillMask against brute force: at states sampled along random walks over real vocabularies, the
// mask equals "copy the matcher, Accept the token's piece" for every token, end tokens are
// allowed exactly when the text can end, and the reference mode (no memoized transitions, no
// subtree shortcut, no masks cache) agrees; small automaton bounds (forcing rebases) and threads
// sharing one automaton change nothing.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"
#include "json_schema_suite.h"

namespace forge {
namespace {

// The mask by brute force: each token tried on a copy of m.
std::vector<uint32_t> BruteForceMask(const GrammarMatcher& m, const TokenVocabView& vocab) {
  std::vector<uint32_t> mask(vocab.mask_words(), 0);
  for (TokenId id = 0; id < vocab.size(); ++id) {
    GrammarMatcher probe = m;
    bool allowed;
    if (vocab.IsEnd(id)) {
      allowed = m.CanEnd();
      EXPECT_EQ(probe.AcceptToken(vocab, id), allowed);
    } else {
      allowed = !vocab.piece(id).empty() && probe.Accept(vocab.piece(id));
    }
    if (allowed) mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
  }
  return mask;
}

std::string FirstDifference(const std::vector<uint32_t>& got, const std::vector<uint32_t>& want,
                            const TokenVocabView& vocab) {
  for (TokenId id = 0; id < vocab.size(); ++id) {
    if (testing::Bit(got, id) != testing::Bit(want, id)) {
      return "token " + std::to_string(id) + " '" + std::string(vocab.piece(id)) + "': FillMask " +
             (testing::Bit(got, id) ? "allows" : "refuses") + " it";
    }
  }
  return "";
}

TEST(FillMaskTest, EqualsBruteForceOnRealVocabularies) {
  const auto& suite = testing::JsonSchemaSuite();
  std::mt19937 rng(77);
  int states = 0, end_allowed = 0;
  int64_t cached = 0, whole = 0;
  for (const char* file :
       {"vocab/ggml-vocab-deepseek-llm.gguf", "vocab/ggml-vocab-llama-spm.gguf"}) {
    auto vocab = testing::GrammarTestVocab(file);
    ASSERT_NE(vocab, nullptr);
    for (const testing::SuiteSchema& schema : suite) {
      auto g = GrammarFromJsonSchema(schema.schema);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      GrammarMatcher m(*g);
      int step = 0;
      testing::RandomWalk(&m, *vocab, &rng, 60, 200, 0.3,
                          [&](const GrammarMatcher& at, const std::vector<uint32_t>& mask,
                              const std::vector<TokenId>&) {
                            if (step++ % 9 != 0 && !at.CanEnd()) return;
                            const std::vector<uint32_t> want = BruteForceMask(at, *vocab);
                            ASSERT_EQ(mask, want) << schema.name << " " << file << " "
                                                  << FirstDifference(mask, want, *vocab);
                            ++states;
                            end_allowed += at.CanEnd() ? 1 : 0;
                          });
      cached += m.fill_mask_stats().cached;
      whole += m.fill_mask_stats().subtrees_whole;
    }
  }
  std::printf("[ checked  ] %d states against brute force (%d of them could end)\n", states,
              end_allowed);
  EXPECT_GT(states, 100);
  EXPECT_GT(end_allowed, 5);
  // The masks cache and the subtree shortcut were both exercised.
  EXPECT_GT(cached, 100);
  EXPECT_GT(whole, 1000);
}

TEST(FillMaskTest, EqualsBruteForceOnUnicodeClasses) {
  // Classes that take some multi-byte characters and not others make FillMask's subtree
  // shortcut decide inside characters; the vocabulary has many CJK and byte tokens.
  auto vocab = testing::GrammarTestVocab("vocab/ggml-vocab-deepseek-llm.gguf");
  ASSERT_NE(vocab, nullptr);
  const std::vector<std::string> grammars = {
      "root ::= [\u4e00-\u4e8f]* \"!\"\n",
      "root ::= [^\u4e2d\u00e9\U0001F600]{0,30} \"!\"\n",
      "root ::= ([\u00e0-\u00ff] | [\U0001F600-\U0001F64F] | [a-z ])+ \".\"\n",
      "root ::= (\"\u4e2d\u6587\" | [\u3040-\u30ff]+ | [0-9]+)* \"?\"\n",
      "root ::= [^\\x00-\\x7F]* [\\x00-\\x7F]\n",
      "root ::= (. .)* \"|\"\n",
      // Characters of one lead byte that lead to different states.
      "root ::= ([\u4e00-\u4e3f] \"x\" | [\u4e40-\u9fff] \"y\" | [^\u4e00-\u9fff])* \"!\"\n",
  };
  std::mt19937 rng(808);
  int states = 0;
  FillMaskStats total;
  for (const std::string& text : grammars) {
    auto g = Grammar::FromGbnf(text);
    ASSERT_TRUE(g.ok()) << text << g.status().ToString();
    for (int run = 0; run < 3; ++run) {
      GrammarMatcher m(*g);
      int step = 0;
      testing::RandomWalk(&m, *vocab, &rng, 25, 40, 0.2,
                          [&](const GrammarMatcher& at, const std::vector<uint32_t>& mask,
                              const std::vector<TokenId>&) {
                            if (step++ % 4 != 0) return;
                            const std::vector<uint32_t> want = BruteForceMask(at, *vocab);
                            ASSERT_EQ(mask, want) << text << FirstDifference(mask, want, *vocab);
                            ++states;
                          });
      total.subtrees_whole += m.fill_mask_stats().subtrees_whole;
      total.nodes_visited += m.fill_mask_stats().nodes_visited;
    }
  }
  std::printf(
      "[ checked  ] %d states of Unicode-class grammars against brute force (%lld "
      "subtrees taken whole, %lld nodes visited)\n",
      states, static_cast<long long>(total.subtrees_whole),
      static_cast<long long>(total.nodes_visited));
  EXPECT_GT(states, 40);
  EXPECT_GT(total.subtrees_whole, 1000);  // the shortcut ran
}

TEST(FillMaskTest, EqualsBruteForceWhereCharactersOfOneLeadByteDiverge) {
  // Characters with lead byte E4 lead to two different states, each looping on CJK characters
  // (one on fewer): the subtree shortcut must not treat them as one. A vocabulary of every
  // one-, two- and three-character piece of a few CJK characters at the edges of the classes.
  auto g = Grammar::FromGbnf(
      "root ::= [\\u4000-\\u4fbf] [\\u4000-\\u4fff]* \">\" | [\\u4fc0-\\u4fff] "
      "[\\u4000-\\u9fff]* \"]\"\n");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const std::vector<std::string> chars = {"\u4000", "\u4e00", "\u4fbf", "\u4fc0",
                                          "\u4fff", "\u9f8d", "\u5000"};
  std::vector<std::string> pieces = {"", ">", "]", "a"};
  for (const std::string& a : chars) {
    pieces.push_back(a);
    for (const std::string& b : chars) {
      pieces.push_back(a + b);
      for (const std::string& c : chars) pieces.push_back(a + b + c);
    }
  }
  auto vocab = TokenVocabView::Create(pieces, {0});
  std::mt19937 rng(4);
  int states = 0;
  for (int run = 0; run < 30; ++run) {
    GrammarMatcher m(*g);
    testing::RandomWalk(&m, *vocab, &rng, 6, 10, 0.3,
                        [&](const GrammarMatcher& at, const std::vector<uint32_t>& mask,
                            const std::vector<TokenId>&) {
                          const std::vector<uint32_t> want = BruteForceMask(at, *vocab);
                          ASSERT_EQ(mask, want) << FirstDifference(mask, want, *vocab);
                          ++states;
                        });
  }
  EXPECT_GT(states, 30);
}

TEST(FillMaskTest, ReferenceModeAgrees) {
  // The reference matcher memoizes nothing, takes no subtree shortcut, caches no mask and has an
  // automaton of its own; it replays the tokens the fast one picked.
  auto vocab = testing::GrammarTestVocab("vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(vocab, nullptr);
  GrammarMatcherOptions reference;
  reference.memoize = false;
  std::mt19937 rng(5);
  int states = 0, brute = 0;
  const auto& suite = testing::JsonSchemaSuite();
  for (size_t s = 0; s < suite.size(); ++s) {
    auto g = GrammarFromJsonSchema(suite[s].schema);
    ASSERT_TRUE(g.ok());
    GrammarMatcher fast(*g);
    GrammarMatcher slow(*g, reference);
    size_t replayed = 0;
    std::vector<uint32_t> slow_mask(vocab->mask_words());
    int step = 0;
    testing::RandomWalk(&fast, *vocab, &rng, 40, 120, 0.3,
                        [&](const GrammarMatcher&, const std::vector<uint32_t>& mask,
                            const std::vector<TokenId>& tokens) {
                          // Bring the reference to the same text, token by token.
                          for (; replayed < tokens.size(); ++replayed) {
                            ASSERT_TRUE(slow.AcceptToken(*vocab, tokens[replayed]));
                          }
                          if (step++ % 7 != 0) return;
                          slow.FillMask(*vocab, slow_mask.data());
                          ASSERT_EQ(mask, slow_mask)
                              << suite[s].name << " " << FirstDifference(mask, slow_mask, *vocab);
                          ++states;
                          if (s % 4 == 0 && step == 8) {
                            ASSERT_EQ(BruteForceMask(slow, *vocab), slow_mask) << suite[s].name;
                            ++brute;
                          }
                        });
  }
  EXPECT_GT(states, 0);
  std::printf("[ checked  ] reference mode: %d states, %d by brute force\n", states, brute);
}

uint64_t Hash(const std::vector<uint32_t>& mask) {
  uint64_t h = 1469598103934665603ULL;
  for (uint32_t w : mask) h = (h ^ w) * 1099511628211ULL;
  return h;
}

TEST(FillMaskTest, RebasesUnderSmallBoundsChangeNothing) {
  auto vocab = testing::GrammarTestVocab("vocab/ggml-vocab-deepseek-llm.gguf");
  ASSERT_NE(vocab, nullptr);
  // Soft bounds (rebases between steps), and hard ones low enough that walks of the vocabulary
  // trie rebase in their middle too.
  GrammarMatcherOptions small;
  small.limits.soft_states = 60;
  small.limits.soft_nodes = 600;
  small.limits.hard_states = 1500;
  small.limits.hard_nodes = 15000;
  GrammarMatcherOptions tiny = small;
  tiny.limits.hard_states = 300;
  tiny.limits.hard_nodes = 3000;
  GrammarMatcherOptions own;  // the reference: default bounds, an automaton of its own
  own.share_automaton = false;
  std::mt19937 rng(31);
  int rebases = 0, states = 0;
  int64_t walk_rebases = 0;
  for (const char* name : {"json-object", "recursive-tree", "zod-recursive-json", "patterns",
                           "formats", "array-of-objects"}) {
    const testing::SuiteSchema* schema = nullptr;
    for (const auto& s : testing::JsonSchemaSuite()) {
      if (std::string(s.name) == name) schema = &s;
    }
    ASSERT_NE(schema, nullptr);
    auto g = GrammarFromJsonSchema(schema->schema);
    ASSERT_TRUE(g.ok());
    for (int run = 0; run < 3; ++run) {
      GrammarMatcher m(*g, run == 2 ? tiny : small);
      GrammarMatcher ref(*g, own);
      size_t replayed = 0;
      std::vector<uint32_t> ref_mask(vocab->mask_words());
      testing::Walk w = testing::RandomWalk(
          &m, *vocab, &rng, 80, 200, 0.3,
          [&](const GrammarMatcher&, const std::vector<uint32_t>& mask,
              const std::vector<TokenId>& tokens) {
            for (; replayed < tokens.size(); ++replayed) {
              ASSERT_TRUE(ref.AcceptToken(*vocab, tokens[replayed]));
            }
            ref.FillMask(*vocab, ref_mask.data());
            ASSERT_EQ(mask, ref_mask) << name << " " << FirstDifference(mask, ref_mask, *vocab);
            ++states;
          });
      for (; replayed < w.tokens.size(); ++replayed) {
        ASSERT_TRUE(ref.AcceptToken(*vocab, w.tokens[replayed]));
      }
      if (w.ended) {
        ASSERT_TRUE(ref.AcceptToken(*vocab, vocab->end_ids()[0]));
      }
      // Rollback reaches states kept across the rebases.
      const int back = std::min<int>(static_cast<int>(w.tokens.size()), 32);
      ASSERT_TRUE(m.Rollback(back));
      ASSERT_TRUE(ref.Rollback(back));
      std::vector<uint32_t> a(vocab->mask_words()), b(vocab->mask_words());
      m.FillMask(*vocab, a.data());
      ref.FillMask(*vocab, b.data());
      EXPECT_EQ(a, b) << name << " after Rollback(" << back << ")";
      rebases += m.rebases();
      walk_rebases += m.fill_mask_stats().rebases;
      EXPECT_EQ(ref.rebases(), 0);
    }
  }
  std::printf("[ checked  ] %d states under small bounds, %d rebases (%lld in trie walks)\n",
              states, rebases, static_cast<long long>(walk_rebases));
  EXPECT_GT(rebases, 10);  // the mechanism ran, between steps and inside walks
  EXPECT_GT(walk_rebases, 10);
}

TEST(FillMaskTest, ThreadsSharingOneAutomatonGetTheSameMasks) {
  auto vocab = testing::GrammarTestVocab("vocab/ggml-vocab-deepseek-llm.gguf");
  ASSERT_NE(vocab, nullptr);
  auto g = GrammarFromJsonSchema(R"({"type":"json_object"})");
  ASSERT_TRUE(g.ok());
  constexpr int kThreads = 4;
  std::vector<std::vector<TokenId>> tokens(kThreads);
  std::vector<std::vector<uint64_t>> hashes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      GrammarMatcher m(*g);  // all four share the grammar's automaton
      testing::Walk w =
          testing::RandomWalk(&m, *vocab, &rng, 100, 150, 0.2,
                              [&](const GrammarMatcher&, const std::vector<uint32_t>& mask,
                                  const auto&) { hashes[t].push_back(Hash(mask)); });
      tokens[t] = w.tokens;
    });
  }
  for (std::thread& th : threads) th.join();
  GrammarMatcherOptions own;
  own.share_automaton = false;
  int compared = 0;
  for (int t = 0; t < kThreads; ++t) {
    GrammarMatcher ref(*g, own);
    std::vector<uint32_t> mask(vocab->mask_words());
    for (size_t i = 0; i < hashes[t].size(); ++i) {
      ref.FillMask(*vocab, mask.data());
      ASSERT_EQ(Hash(mask), hashes[t][i]) << "thread " << t << " step " << i;
      ++compared;
      if (i < tokens[t].size()) {
        ASSERT_TRUE(ref.AcceptToken(*vocab, tokens[t][i]));
      }
    }
  }
  EXPECT_GT(compared, kThreads * 20);
}

TEST(FillMaskTest, TooManyParsesAreRefusedWithAStatus) {
  // 30 optional "a"s: after k a's there are up to 31 live stacks; the bound is 8.
  std::string text = "root ::= ";
  for (int i = 0; i < 30; ++i) text += "\"a\"? ";
  text += "\"b\"\n";
  auto g = Grammar::FromGbnf(text);
  ASSERT_TRUE(g.ok());
  GrammarMatcherOptions options;
  options.share_automaton = false;
  options.limits.max_stacks_per_state = 8;
  GrammarMatcher m(*g, options);
  EXPECT_FALSE(m.status().ok());  // the first state already has 31 stacks
  GrammarMatcher roomy(*g);
  EXPECT_TRUE(roomy.Accept("aaab"));
  EXPECT_TRUE(roomy.CanEnd());
  EXPECT_TRUE(roomy.status().ok());
  options.limits.max_stacks_per_state = 40;
  options.limits.max_closure_steps = 20;  // expansion work bound instead
  GrammarMatcher busy(*g, options);
  EXPECT_FALSE(busy.Accept("a"));
  EXPECT_NE(busy.status().message().find("refused"), std::string::npos) << busy.status().ToString();
}

}  // namespace
}  // namespace forge
