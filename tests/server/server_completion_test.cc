// End-to-end completions over HTTP against a real `forge serve` on loopback: greedy text equals
// `forge run`'s, streamed text equals whole text, chat, logprobs, usage (also on every chunk),
// models, tokenize.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "server/server_process.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

class ServerCompletionTest : public ServerFixture {
 protected:
  ServerCompletionTest() : ServerFixture("--parallel 4") {}
};

TEST_F(ServerCompletionTest, GreedyCompletionEqualsForgeRun) {
  const std::string expected = ForgeRunGreedy("Once upon a time", 24);
  ASSERT_FALSE(expected.empty());
  json req = {{"model", "stories260K"},
              {"prompt", "Once upon a time"},
              {"max_tokens", 24},
              {"temperature", 0}};
  HttpResult r = Http("POST", server_.url("/v1/completions"), req.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"].get<std::string>(), expected);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 24);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 24);

  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  r = Http("POST", server_.url("/v1/completions"), req.dump(), "-N");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("text/event-stream"), std::string::npos);
  std::vector<std::string> events = SseEvents(r.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text, finish;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    json c = json::parse(events[i]);
    text += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, expected);
  EXPECT_EQ(finish, "length");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
}

// stream_options.continuous_usage_stats (with include_usage): a chunk for every generated token,
// each with the usage so far, and the same text as without it.
TEST_F(ServerCompletionTest, ContinuousUsageStatsCountEveryToken) {
  for (bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    json req = {{"max_tokens", 20}, {"temperature", 0}, {"ignore_eos", true}, {"stream", true}};
    if (chat) {
      req["messages"] = {{{"role", "user"}, {"content", "Tell me a story"}}};
    } else {
      req["prompt"] = "Once upon a time";
    }
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    auto text_of = [chat](const json& chunk) {
      const json& c = chunk["choices"][0];
      return chat ? c["delta"].value("content", "") : c["text"].get<std::string>();
    };
    req["stream_options"] = {{"include_usage", true}};
    std::string plain;
    for (const std::string& e : SseEvents(Http("POST", server_.url(path), req.dump(), "-N").body)) {
      if (e == "[DONE]") continue;
      json c = json::parse(e);
      EXPECT_TRUE(c["usage"].is_null() || c["choices"].empty()) << e;  // only the last has usage
      if (!c["choices"].empty()) plain += text_of(c);
    }

    req["stream_options"]["continuous_usage_stats"] = true;
    HttpResult r = Http("POST", server_.url(path), req.dump(), "-N");
    ASSERT_EQ(r.status, 200) << r.body;
    std::vector<std::string> events = SseEvents(r.body);
    ASSERT_EQ(events.size(), 20u + 2u) << r.body;  // one per token, the usage chunk, [DONE]
    std::string text;
    for (int i = 0; i < 20; ++i) {
      json c = json::parse(events[i]);
      ASSERT_EQ(c["choices"].size(), 1u) << events[i];
      EXPECT_EQ(c["usage"]["completion_tokens"], i + 1) << events[i];
      EXPECT_EQ(c["usage"]["total_tokens"], c["usage"]["prompt_tokens"].get<int>() + i + 1);
      EXPECT_EQ(c["choices"][0]["finish_reason"], i == 19 ? json("length") : json(nullptr));
      text += text_of(c);
    }
    EXPECT_EQ(text, plain);
    EXPECT_EQ(json::parse(events[20])["usage"]["completion_tokens"], 20);
    EXPECT_EQ(events[21], "[DONE]");

    // Without include_usage it changes nothing (as in vLLM).
    req["stream_options"] = {{"continuous_usage_stats", true}};
    for (const std::string& e : SseEvents(Http("POST", server_.url(path), req.dump(), "-N").body)) {
      if (e != "[DONE]") {
        EXPECT_FALSE(json::parse(e).contains("usage")) << e;
      }
    }
  }
}

TEST_F(ServerCompletionTest, TokenIdPromptIsUsedVerbatim) {
  HttpResult tok = Http("POST", server_.url("/tokenize"),
                        R"({"content": "Once upon a time", "add_special": true})");
  ASSERT_EQ(tok.status, 200) << tok.body;
  json ids = json::parse(tok.body)["tokens"];
  ASSERT_GT(ids.size(), 1u);
  json by_text = {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}};
  json by_ids = {{"prompt", ids}, {"max_tokens", 12}, {"temperature", 0}};
  HttpResult a = Http("POST", server_.url("/v1/completions"), by_text.dump());
  HttpResult b = Http("POST", server_.url("/v1/completions"), by_ids.dump());
  ASSERT_EQ(a.status, 200);
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(json::parse(a.body)["choices"][0]["text"], json::parse(b.body)["choices"][0]["text"]);
  EXPECT_EQ(json::parse(b.body)["usage"]["prompt_tokens"], ids.size());

  HttpResult d = Http("POST", server_.url("/detokenize"), json{{"tokens", ids}}.dump());
  ASSERT_EQ(d.status, 200);
  EXPECT_NE(json::parse(d.body)["content"].get<std::string>().find("Once upon a time"),
            std::string::npos);
}

TEST_F(ServerCompletionTest, ChatStreamEqualsWhole) {
  json req = {{"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
              {"max_completion_tokens", 16},
              {"temperature", 0}};
  HttpResult r = Http("POST", server_.url("/v1/chat/completions"), req.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  const std::string whole = j["choices"][0]["message"]["content"];
  EXPECT_FALSE(whole.empty());

  req["stream"] = true;
  r = Http("POST", server_.url("/v1/chat/completions"), req.dump(), "-N");
  ASSERT_EQ(r.status, 200);
  std::vector<std::string> events = SseEvents(r.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (i == 0) {
      EXPECT_EQ(c["choices"][0]["delta"]["role"], "assistant");
    }
    text += c["choices"][0]["delta"].value("content", "");
  }
  EXPECT_EQ(text, whole);
}

TEST_F(ServerCompletionTest, StopNLogprobsAndSeed) {
  const std::string full = ForgeRunGreedy("Once upon a time", 24);
  const size_t cut = full.find("Lily");
  ASSERT_NE(cut, std::string::npos) << full;
  json req = {{"prompt", "Once upon a time"},
              {"max_tokens", 24},
              {"temperature", 0},
              {"stop", {"Lily"}},
              {"logprobs", 2}};
  HttpResult r = Http("POST", server_.url("/v1/completions"), req.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json c = json::parse(r.body)["choices"][0];
  EXPECT_EQ(c["text"].get<std::string>(), full.substr(0, cut));
  EXPECT_EQ(c["finish_reason"], "stop");
  ASSERT_TRUE(c["logprobs"].is_object());
  EXPECT_FALSE(c["logprobs"]["token_logprobs"].empty());
  EXPECT_LE(c["logprobs"]["top_logprobs"][0].size(), 2u);

  json sampled = {{"prompt", "Once upon a time"},
                  {"max_tokens", 16},
                  {"temperature", 1.0},
                  {"seed", 42},
                  {"n", 2}};
  HttpResult s1 = Http("POST", server_.url("/v1/completions"), sampled.dump());
  HttpResult s2 = Http("POST", server_.url("/v1/completions"), sampled.dump());
  ASSERT_EQ(s1.status, 200) << s1.body;
  EXPECT_EQ(json::parse(s1.body)["choices"].size(), 2u);
  EXPECT_EQ(json::parse(s1.body)["choices"], json::parse(s2.body)["choices"]);
}

TEST_F(ServerCompletionTest, ModelsAndHealth) {
  HttpResult m = Http("GET", server_.url("/v1/models"));
  ASSERT_EQ(m.status, 200);
  json j = json::parse(m.body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "stories260K");
  EXPECT_EQ(Http("GET", server_.url("/health")).status, 200);
  EXPECT_EQ(server_.Terminate(), 0);  // graceful shutdown on SIGTERM
}

}  // namespace
}  // namespace forge::testing
