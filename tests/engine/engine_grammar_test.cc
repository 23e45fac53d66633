// Constrained decoding through the engine on the CPU backend (engine_grammar_check.h).
#include "engine_grammar_check.h"

#include "engine_test_util.h"

namespace forge {
namespace {

TEST(EngineGrammarTest, ConstrainedSamplesFollowTheirGrammars) {
  testing::Stories& st = testing::Stories260K();
  testing::ExpectConstrainedGeneration(*st.model, *st.tokenizer, /*batch_invariant=*/true);
}

TEST(EngineGrammarTest, GrammarWithoutTokenizerIsRefused) {
  testing::Stories& st = testing::Stories260K();
  auto engine = Engine::Create(*st.model, nullptr, testing::TestOptions());
  ASSERT_TRUE(engine.ok());
  EngineRequest r = testing::Greedy({1, 2, 3}, 4);
  auto g = Grammar::FromGbnf("root ::= \"a\"");
  ASSERT_TRUE(g.ok());
  r.grammar = *g;
  auto h = (*engine)->Submit(std::move(r));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("tokenizer"), std::string::npos) << h.status().ToString();
}

}  // namespace
}  // namespace forge
