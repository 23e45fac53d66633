// `forge serve` while the model loads: the listener is up at once, GET /health and the API answer
// 503 with OpenAI's error shape, then /health turns 200 and completions work. A signal during
// loading ends the server cleanly.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/server_process.h"

namespace forge::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Checks a 503 "the model is loading" answer in OpenAI's error shape.
void ExpectLoading(const HttpResult& r) {
  EXPECT_EQ(r.status, 503) << r.body;
  json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string()) << r.body;
  EXPECT_NE(e.value("message", "").find("loading"), std::string::npos) << r.body;
  EXPECT_TRUE(e["type"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
}

TEST(ServerLoadingTest, HealthAnswers503UntilTheModelIsLoaded) {
  // 3 s in the loading state: ample for the requests below even on a busy machine.
  constexpr int kDelayMs = 3000;
  const Clock::time_point start = Clock::now();
  ServerProcess server("--debug-load-delay-ms " + std::to_string(kDelayMs),
                       ServerProcess::Wait::kListening);
  ASSERT_TRUE(server.ok());

  HttpResult health = Http("GET", server.url("/health"));
  ExpectLoading(health);
  EXPECT_EQ(json::parse(health.body, nullptr, false).value("status", ""), "loading");
  const json completion = {{"prompt", "Once upon a time"}, {"max_tokens", 4}};
  ExpectLoading(Http("POST", server.url("/v1/completions"), completion.dump()));
  ExpectLoading(Http("POST", server.url("/v1/chat/completions"),
                     json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}.dump()));
  ExpectLoading(Http("GET", server.url("/v1/models")));
  // /metrics answers while loading (the server's counters, no engine gauges yet).
  HttpResult metrics = Http("GET", server.url("/metrics"));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(MetricValue(metrics.body, "forge_kv_blocks_used"), -1) << metrics.body;
  // The answers above came during the delay (otherwise they prove nothing).
  ASSERT_LT(Clock::now() - start, std::chrono::milliseconds(kDelayMs))
      << "the machine is too slow for this test's delay";

  ASSERT_TRUE(server.WaitHealthy());
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(kDelayMs));
  HttpResult r = Http("POST", server.url("/v1/completions"), completion.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 4);
  EXPECT_GE(MetricValue(Http("GET", server.url("/metrics")).body, "forge_kv_blocks_used"), 0);
  EXPECT_EQ(server.Terminate(), 0);
}

TEST(ServerLoadingTest, ReadinessWaitCoversTheLoad) {
  // The default wait of ServerProcess returns only once the model is served.
  ServerProcess server("--debug-load-delay-ms 500");
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(Http("GET", server.url("/health")).status, 200);
  EXPECT_EQ(Http("GET", server.url("/v1/models")).status, 200);
}

TEST(ServerLoadingTest, SignalWhileLoadingExitsCleanly) {
  ServerProcess server("--debug-load-delay-ms 20000", ServerProcess::Wait::kListening);
  ASSERT_TRUE(server.ok());
  ExpectLoading(Http("GET", server.url("/health")));
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(server.Terminate(), 0) << server.log();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));  // it did not wait out the delay
}

}  // namespace
}  // namespace forge::testing
