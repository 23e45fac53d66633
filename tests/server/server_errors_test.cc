// End-to-end error answers of `forge serve`: OpenAI's error shape with the right HTTP status
// for malformed bodies, wrong types, unsupported fields, unknown models, context overflows,
// missing API keys and a full queue.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/server_process.h"

namespace forge::testing {
namespace {

using nlohmann::json;

// Checks the OpenAI error shape and returns its "param".
std::string ErrorParam(const HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << r.body;
  if (!j.is_object() || !j.contains("error")) return "";
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("param") && e.contains("code"));
  return e["param"].is_string() ? e["param"].get<std::string>() : "";
}

TEST(ServerErrorsTest, BadRequestsNameTheField) {
  ServerProcess server("--ctx-size 64");
  ASSERT_TRUE(server.ok());
  const std::string url = server.url("/v1/completions");
  HttpResult r = Http("POST", url, "{not json");
  EXPECT_EQ(r.status, 400);
  ErrorParam(r);

  r = Http("POST", url, R"({"prompt": "Hi", "temperature": "hot"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorParam(r), "temperature");

  r = Http("POST", url, R"({"prompt": "Hi", "max_tokens": 1.5})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorParam(r), "max_tokens");

  r = Http("POST", url, R"({"max_tokens": 4})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorParam(r), "prompt");

  for (const char* field : {"tools", "response_format", "functions"}) {
    r = Http("POST", server.url("/v1/chat/completions"),
             json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {field, "x"}}.dump());
    EXPECT_EQ(r.status, 400) << field;
    EXPECT_EQ(ErrorParam(r), field);
  }

  r = Http("POST", url, R"({"model": "gpt-4", "prompt": "Hi"})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(ErrorParam(r), "model");

  // Context 64: a prompt longer than it, and prompt + max_tokens beyond it.
  std::string long_prompt;
  for (int i = 0; i < 80; ++i) long_prompt += "Once upon a time ";
  r = Http("POST", url, json{{"prompt", long_prompt}}.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorParam(r), "prompt");
  r = Http("POST", url, R"({"prompt": "Once upon a time", "max_tokens": 63})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorParam(r), "max_tokens");
  r = Http("POST", url, R"({"prompt": "Once upon a time", "max_tokens": 8})");
  EXPECT_EQ(r.status, 200) << r.body;

  r = Http("POST", url, R"({"prompt": [1, 2, 99999999]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(ErrorParam(r), "prompt");

  EXPECT_EQ(Http("GET", server.url("/nowhere")).status, 404);
}

TEST(ServerErrorsTest, ApiKeyIsRequired) {
  ServerProcess server("--api-key sekret");
  ASSERT_TRUE(server.ok());
  const std::string body = R"({"prompt": "Hi", "max_tokens": 2})";
  HttpResult r = Http("POST", server.url("/v1/completions"), body);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "authentication_error");
  EXPECT_EQ(Http("POST", server.url("/v1/completions"), body, "-H 'Authorization: Bearer nope'")
                .status,
            401);
  EXPECT_EQ(Http("GET", server.url("/v1/models"), "", "-H 'Authorization: Bearer sekret'").status,
            200);
  EXPECT_EQ(Http("POST", server.url("/v1/completions"), body,
                 "-H 'Authorization: Bearer sekret'")
                .status,
            200);
  EXPECT_EQ(Http("GET", server.url("/health")).status, 200);  // open for probes
}

TEST(ServerErrorsTest, FullQueueAnswers429) {
  // One running sequence and one waiting request; the third is refused.
  ServerProcess server("--parallel 1 --max-queue 1 --debug-step-delay-ms 20");
  ASSERT_TRUE(server.ok());
  const std::string body =
      R"({"prompt": "Once upon a time", "max_tokens": 100, "ignore_eos": true})";
  const std::string bg = "curl -s -o /dev/null -H 'Content-Type: application/json' -d '" + body +
                         "' " + server.url("/v1/completions") + " &";
  ASSERT_EQ(std::system(bg.c_str()), 0);
  ASSERT_EQ(std::system(bg.c_str()), 0);
  bool queued = false;
  for (int i = 0; i < 500 && !queued; ++i) {
    HttpResult m = Http("GET", server.url("/metrics"));
    queued = MetricValue(m.body, "forge_num_requests_waiting") == 1 &&
             MetricValue(m.body, "forge_num_requests_running") == 1;
    if (!queued) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(queued);
  HttpResult r = Http("POST", server.url("/v1/completions"), body);
  EXPECT_EQ(r.status, 429);
  EXPECT_NE(r.headers.find("Retry-After"), std::string::npos) << r.headers;
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "rate_limit_error");
  EXPECT_EQ(server.Terminate(), 0);  // cancels the two in flight and exits cleanly
}

}  // namespace
}  // namespace forge::testing
