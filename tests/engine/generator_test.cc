// Generator on stories260K: text prompt -> expected greedy continuation (tokens and text), stop
// strings, max_tokens, seeded sampling reproducibility, over-long prompts refused.
#include "engine/generator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "grammar/grammar_matcher.h"
#include "support/test_env.h"

namespace forge {
namespace {

struct Loaded {
  std::unique_ptr<Backend> backend = MakeCpuBackend();
  std::unique_ptr<ModelRunner> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

std::unique_ptr<Loaded> Load(const std::string& file) {
  auto l = std::make_unique<Loaded>();
  auto m = ModelRunner::Load(testing::TestDataPath("models/" + file), l->backend.get());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  l->model = std::move(m).value();
  auto t = Tokenizer::FromGguf(l->model->file());
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  l->tokenizer = std::move(t).value();
  return l;
}

nlohmann::json Case(const std::string& file, const std::string& id) {
  std::ifstream in(testing::TestDataPath("models/stories260K.expected.json"));
  auto j = nlohmann::json::parse(in);
  for (auto& c : j["models"][file]["cases"]) {
    if (c["id"] == id) return c;
  }
  return {};
}

std::vector<int32_t> Ids(const nlohmann::json& v) {
  return (v.is_string() ? nlohmann::json::parse(v.get<std::string>()) : v).get<std::vector<int32_t>>();
}

TEST(GeneratorTest, GreedyMatchesExpectedText) {
  for (std::string file : {"stories260K.gguf", "stories260K-q8_0.gguf"}) {
    auto l = Load(file);
    nlohmann::json c = Case(file, "once_upon_a_time_64");
    std::vector<int32_t> want = Ids(c["ids_after_bos"]);
    GenerateRequest req;
    req.prompt = l->tokenizer->Encode("Once upon a time", true, false);
    ASSERT_EQ(req.prompt, Ids(c["prompt_ids"]));
    req.params.temperature = 0;
    req.params.max_tokens = static_cast<int32_t>(want.size()) - 4;
    Generator gen(*l->model, *l->tokenizer);
    std::string streamed;
    auto r = gen.Generate(req, [&](std::string_view t) {
      streamed += t;
      return true;
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->tokens, std::vector<int32_t>(want.begin() + 4, want.end())) << file;
    std::string text = c["text"];
    EXPECT_EQ("Once upon a time" + r->text, text) << file;
    EXPECT_EQ(streamed, r->text);
    EXPECT_EQ(r->finish, FinishReason::kLength);
  }
}

TEST(GeneratorTest, StopStringCutsAndIsNotEmitted) {
  auto l = Load("stories260K.gguf");
  GenerateRequest req;
  req.prompt = l->tokenizer->Encode("Once upon a time", true, false);
  req.params.temperature = 0;
  req.params.max_tokens = 60;
  req.params.stop = {"Lily."};
  Generator gen(*l->model, *l->tokenizer);
  std::string streamed;
  auto r = gen.Generate(req, [&](std::string_view t) {
    streamed += t;
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, ", there was a little girl named ");
  EXPECT_EQ(streamed, r->text);
  EXPECT_EQ(r->finish, FinishReason::kStop);
}

TEST(GeneratorTest, SeededSamplingReproduces) {
  auto l = Load("stories260K.gguf");
  GenerateRequest req;
  req.prompt = l->tokenizer->Encode("Zoo", true, false);
  req.params.temperature = 1.0;
  req.params.top_p = 0.95;
  req.params.seed = 42;
  req.params.max_tokens = 40;
  Generator gen(*l->model, *l->tokenizer);
  auto a = gen.Generate(req), b = gen.Generate(req);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->tokens, b->tokens);
  req.params.seed = 43;
  auto c = gen.Generate(req);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->tokens, c->tokens);
}

// The single-stream path constrains like the engine: the same request through both gives the
// same tokens (the engine's replay against brute-force masks is in engine_grammar_check.h), and
// the text is a sentence of the grammar.
TEST(GeneratorTest, GrammarConstrainsLikeTheEngine) {
  auto l = Load("stories260K.gguf");
  auto grammar = Grammar::FromGbnf(R"(root ::= "The " ("cat" | "dog" | "bird") " is " [a-z]+ ".")");
  ASSERT_TRUE(grammar.ok()) << grammar.status().ToString();
  GenerateRequest req;
  req.prompt = l->tokenizer->Encode("Zoo", true, false);
  req.params.temperature = 1.0;
  req.params.seed = 9;
  req.params.max_tokens = 40;
  req.grammar = *grammar;
  Generator gen(*l->model, *l->tokenizer);
  auto a = gen.Generate(req);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EngineOptions o;
  o.ctx_size = 512;
  o.num_kv_blocks = 64;
  auto engine = Engine::Create(*l->model, l->tokenizer.get(), o);
  ASSERT_TRUE(engine.ok());
  EngineRequest er;
  er.prompt_ids = req.prompt;
  er.params = req.params;
  er.grammar = *grammar;
  auto h = (*engine)->Submit(er);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE((*engine)->RunUntilIdle().ok());
  std::vector<int32_t> tokens;
  for (RequestEvent ev; h->events->Next(&ev);) {
    tokens.insert(tokens.end(), ev.tokens.begin(), ev.tokens.end());
    if (ev.finished) {
      EXPECT_TRUE(ev.status.ok()) << ev.status.ToString();
    }
  }
  EXPECT_EQ(a->tokens, tokens);
  EXPECT_EQ(a->finish, FinishReason::kStop) << a->text;
  GrammarMatcher m(*grammar);
  EXPECT_TRUE(m.Accept(a->text) && m.CanEnd()) << a->text;
}

TEST(GeneratorTest, PromptLongerThanContextIsRefused) {
  auto l = Load("stories260K.gguf");
  GeneratorOptions opt;
  opt.ctx_size = 8;
  Generator gen(*l->model, *l->tokenizer, opt);
  GenerateRequest req;
  req.prompt = std::vector<int32_t>(8, 300);
  auto r = gen.Generate(req);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("does not fit in the context of 8"), std::string::npos);
  req.prompt = std::vector<int32_t>(7, 300);
  req.params.temperature = 0;
  auto ok = gen.Generate(req);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->tokens.size(), 1u);  // the context's last slot
  EXPECT_EQ(ok->finish, FinishReason::kLength);
}

}  // namespace
}  // namespace forge
