// What clients of OpenAI's API send, against a real `forge serve` (CPU, stories260K): fields sent
// as null, unknown fields (ignored and counted), features refused by name, text parts, a list of
// prompts, echo, cached prompt tokens, context overflow's code, GET /v1/models/{id}, served model
// names, --chat-template, CORS, and the metric names replica routers scrape.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "server/server_process.h"

namespace forge::testing {
namespace {

using nlohmann::json;

json Post(ServerProcess& s, const std::string& path, const json& body, int want = 200) {
  HttpResult r = Http("POST", s.url(path), body.dump());
  EXPECT_EQ(r.status, want) << path << " " << body.dump() << ": " << r.body;
  return json::parse(r.body, nullptr, false);
}

size_t TokenCount(ServerProcess& s, const std::string& text) {
  json t = Post(s, "/tokenize", {{"content", text}, {"add_special", true}});
  return t["tokens"].size();
}

class ServerCompatTest : public ServerFixture {
 protected:
  ServerCompatTest() : ServerFixture("--parallel 8 --served-model-name stories other-name") {}
};

TEST_F(ServerCompatTest, NullFieldsAreAbsentAndUnknownOnesIgnored) {
  const std::string expected = ForgeRunGreedy("Once upon a time", 6);
  json body = {{"prompt", "Once upon a time"},
               {"max_tokens", 6},
               {"temperature", 0},
               {"model", nullptr},
               {"stop", nullptr},
               {"top_p", nullptr},
               {"logit_bias", nullptr},
               {"seed", nullptr},
               {"user", nullptr},
               {"a_field_forge_does_not_know", {{"x", 1}}},
               {"another", true}};
  json r = Post(server_, "/v1/completions", body);
  EXPECT_EQ(r["choices"][0]["text"], expected);
  HttpResult m = Http("GET", server_.url("/metrics"));
  EXPECT_EQ(MetricValue(m.body, "forge_request_ignored_fields_total"), 2) << m.body;
  // Known features Forge does not offer are refused by name.
  for (const char* f : {"functions", "function_call", "audio"}) {
    json b = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {f, json::array({1})}};
    json e = Post(server_, "/v1/chat/completions", b, 400);
    EXPECT_EQ(e["error"]["param"], f);
  }
  json text_format = {{"prompt", "Once upon a time"},
                      {"max_tokens", 6},
                      {"temperature", 0},
                      {"response_format", {{"type", "text"}}}};
  EXPECT_EQ(Post(server_, "/v1/completions", text_format)["choices"][0]["text"], expected);
}

TEST_F(ServerCompatTest, TextPartsAreJoinedByNewlines) {
  json parts = {
      {"messages",
       {{{"role", "user"},
         {"content", {{{"type", "text"}, {"text", "one"}}, {{"type", "text"}, {"text", "two"}}}}}}},
      {"max_tokens", 1}};
  json joined = {{"messages", {{{"role", "user"}, {"content", "one\ntwo"}}}}, {"max_tokens", 1}};
  json glued = {{"messages", {{{"role", "user"}, {"content", "onetwo"}}}}, {"max_tokens", 1}};
  const int a = Post(server_, "/v1/chat/completions", parts)["usage"]["prompt_tokens"];
  const int b = Post(server_, "/v1/chat/completions", joined)["usage"]["prompt_tokens"];
  const int c = Post(server_, "/v1/chat/completions", glued)["usage"]["prompt_tokens"];
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);  // the case can fail
}

TEST_F(ServerCompatTest, ListOfPromptsAndEcho) {
  const std::string p0 = "Once upon a time", p1 = "The little dog";
  const std::string g0 = ForgeRunGreedy(p0, 5), g1 = ForgeRunGreedy(p1, 5);
  json r = Post(server_, "/v1/completions",
                {{"prompt", {p0, p1}}, {"n", 2}, {"max_tokens", 5}, {"temperature", 0}});
  ASSERT_EQ(r["choices"].size(), 4u) << r.dump();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["text"], i < 2 ? g0 : g1) << i;
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"].get<size_t>(),
            TokenCount(server_, p0) + TokenCount(server_, p1));
  EXPECT_EQ(r["usage"]["completion_tokens"], 20);

  json e = Post(server_, "/v1/completions",
                {{"prompt", p0}, {"echo", true}, {"max_tokens", 5}, {"temperature", 0}});
  EXPECT_EQ(e["choices"][0]["text"], p0 + g0);
  // Streamed: the first text is the prompt's.
  HttpResult s = Http(
      "POST", server_.url("/v1/completions"),
      json{{"prompt", p0}, {"echo", true}, {"max_tokens", 5}, {"temperature", 0}, {"stream", true}}
          .dump(),
      "-N");
  std::string text;
  for (json c : SseChunks(s.body)) text += c["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, p0 + g0);
}

TEST_F(ServerCompatTest, CachedTokensAndContextOverflowCode) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "Once upon a time there was a dog. ";
  json body = {{"prompt", prompt}, {"max_tokens", 2}, {"temperature", 0}};
  json first = Post(server_, "/v1/completions", body);
  json second = Post(server_, "/v1/completions", body);
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  const int prompt_tokens = second["usage"]["prompt_tokens"];
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, prompt_tokens);
  HttpResult m = Http("GET", server_.url("/metrics"));
  // The prefix cache's hit counter saw the same tokens.
  EXPECT_GE(MetricValue(m.body, "forge_prefix_cache_hits_total"), cached);

  std::string huge;
  for (int i = 0; i < 600; ++i) huge += "Once upon a time there was a dog. ";
  json e = Post(server_, "/v1/completions", {{"prompt", huge}}, 400);
  EXPECT_EQ(e["error"]["code"], "context_length_exceeded");
  json e2 = Post(server_, "/v1/completions", {{"prompt", "a"}, {"max_tokens", 100000}}, 400);
  EXPECT_EQ(e2["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(e2["error"]["param"], "max_tokens");
}

TEST_F(ServerCompatTest, ModelsAndNames) {
  json list = json::parse(Http("GET", server_.url("/v1/models")).body);
  ASSERT_EQ(list["data"].size(), 2u);
  EXPECT_EQ(list["data"][0]["id"], "stories");
  EXPECT_EQ(list["data"][1]["id"], "other-name");
  HttpResult one = Http("GET", server_.url("/v1/models/other-name"));
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(json::parse(one.body)["id"], "other-name");
  HttpResult none = Http("GET", server_.url("/v1/models/gpt-4o"));
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(json::parse(none.body)["error"]["code"], "model_not_found");
  json r = Post(server_, "/v1/completions",
                {{"model", "other-name"}, {"prompt", "Once"}, {"max_tokens", 1}});
  EXPECT_EQ(r["model"], "other-name");
  json bad = Post(server_, "/v1/completions", {{"model", "gpt-4o"}, {"prompt", "Once"}}, 404);
  EXPECT_EQ(bad["error"]["code"], "model_not_found");
  HttpResult route = Http("GET", server_.url("/v1/nothing"));
  EXPECT_EQ(route.status, 404);
  EXPECT_NE(json::parse(route.body)["error"]["code"], "model_not_found");
}

TEST_F(ServerCompatTest, RouterMetrics) {
  HttpResult m = Http("GET", server_.url("/metrics"));
  EXPECT_EQ(MetricValue(m.body, "vllm:num_requests_waiting"),
            MetricValue(m.body, "forge_num_requests_waiting"));
  EXPECT_EQ(MetricValue(m.body, "vllm:num_requests_running"),
            MetricValue(m.body, "forge_num_requests_running"));
  const double used = MetricValue(m.body, "forge_kv_blocks_used");
  const double cap = MetricValue(m.body, "forge_kv_blocks_capacity");
  ASSERT_GT(cap, 0);
  EXPECT_DOUBLE_EQ(MetricValue(m.body, "vllm:gpu_cache_usage_perc"), used / cap);
  EXPECT_NE(m.body.find("# TYPE vllm:num_requests_waiting gauge"), std::string::npos);
}

TEST(ServerOptionsTest, ChatTemplateFileAndCors) {
  const std::string file = ::testing::TempDir() + "/forge-template.jinja";
  std::ofstream(file) << "{% for m in messages %}{{ m['content'] }}{% endfor %}";
  ServerProcess server("--chat-template " + file +
                       " --cors-origins http://app.example --api-key k");
  ASSERT_TRUE(server.ok());
  const std::string auth = "-H 'Authorization: Bearer k' ";
  HttpResult r = Http(
      "POST", server.url("/v1/chat/completions"),
      json{{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"max_tokens", 1}}
          .dump(),
      auth);
  ASSERT_EQ(r.status, 200) << r.body;
  HttpResult t = Http("POST", server.url("/tokenize"),
                      json{{"content", "Once upon a time"}, {"add_special", true}}.dump(), auth);
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"].get<size_t>(),
            json::parse(t.body)["tokens"].size());
  // A preflight needs no key and names the origin.
  HttpResult pre = Http("OPTIONS", server.url("/v1/chat/completions"), "",
                        "-H 'Origin: http://app.example' "
                        "-H 'Access-Control-Request-Method: POST' "
                        "-H 'Access-Control-Request-Headers: authorization, content-type'");
  EXPECT_EQ(pre.status, 204) << pre.headers;
  EXPECT_NE(pre.headers.find("Access-Control-Allow-Origin: http://app.example"), std::string::npos)
      << pre.headers;
  EXPECT_NE(pre.headers.find("Access-Control-Allow-Headers: authorization, content-type"),
            std::string::npos);
  HttpResult get =
      Http("GET", server.url("/v1/models"), "", auth + "-H 'Origin: http://app.example'");
  EXPECT_NE(get.headers.find("Access-Control-Allow-Origin: http://app.example"), std::string::npos);
  HttpResult other =
      Http("GET", server.url("/v1/models"), "", auth + "-H 'Origin: http://evil.example'");
  EXPECT_EQ(other.headers.find("Access-Control-Allow-Origin"), std::string::npos);
  HttpResult nokey = Http("GET", server.url("/v1/models"), "", "-H 'Origin: http://app.example'");
  EXPECT_EQ(nokey.status, 401);
  EXPECT_NE(nokey.headers.find("Access-Control-Allow-Origin"), std::string::npos);  // readable
}

}  // namespace
}  // namespace forge::testing

namespace forge::testing {
namespace {

// A template whose generation prompt opens a "<think>" block unless enable_thinking is false:
// stories260K never closes it, so with thinking on its whole answer is reasoning_content, and
// with chat_template_kwargs {"enable_thinking": false} (the block written closed) it is content.
TEST(ServerReasoningTest, ThinkBlocksAreReasoningContent) {
  const std::string file = ::testing::TempDir() + "/forge-think.jinja";
  std::ofstream(file) << "{% for m in messages %}{{ m['content'] }}{% endfor %}"
                         "{% if enable_thinking is defined and not enable_thinking %}"
                         "<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}";
  ServerProcess server("--chat-template " + file);
  ASSERT_TRUE(server.ok());
  const std::string greedy_on = ForgeRunGreedy("Once upon a time<think>\n", 8);
  json body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
               {"max_tokens", 8},
               {"temperature", 0}};
  json on = json::parse(Http("POST", server.url("/v1/chat/completions"), body.dump()).body);
  EXPECT_EQ(on["choices"][0]["message"]["reasoning_content"], greedy_on) << on.dump();
  EXPECT_EQ(on["choices"][0]["message"]["content"], "");
  // Streamed: the deltas carry reasoning_content, never content text.
  json sbody = body;
  sbody["stream"] = true;
  HttpResult s = Http("POST", server.url("/v1/chat/completions"), sbody.dump(), "-N");
  std::string reasoning, content;
  for (json chunk : SseChunks(s.body)) {
    const json d = chunk["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, greedy_on);
  EXPECT_EQ(content, "");

  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  const std::string greedy_off = ForgeRunGreedy("Once upon a time<think>\n\n</think>\n\n", 8);
  json off = json::parse(Http("POST", server.url("/v1/chat/completions"), body.dump()).body);
  EXPECT_FALSE(off["choices"][0]["message"].contains("reasoning_content")) << off.dump();
  EXPECT_EQ(off["choices"][0]["message"]["content"], greedy_off);
  // The kwarg reached the template: the prompt is longer by the closed block.
  EXPECT_GT(off["usage"]["prompt_tokens"].get<int>(), on["usage"]["prompt_tokens"].get<int>());
}

}  // namespace
}  // namespace forge::testing
