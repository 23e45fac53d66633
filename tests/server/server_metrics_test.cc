// End-to-end /metrics of `forge serve`: promtool accepts it, counters move by exactly the
// requests and tokens sent, a client that disconnects mid-stream cancels its request and gives
// its KV blocks back, and the device busy counter grows with steps (its ratio a fraction).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/server_process.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

constexpr const char* kLength = "forge_requests_total{outcome=\"length\"}";
constexpr const char* kCancelled = "forge_requests_total{outcome=\"cancelled\"}";

TEST(ServerMetricsTest, PromtoolAcceptsAndCountersMoveExactly) {
  ServerProcess server("");
  ASSERT_TRUE(server.ok());
  const std::string before = Http("GET", server.url("/metrics")).body;
  int64_t prompt = 0, completion = 0;
  for (int i = 0; i < 3; ++i) {
    json req = {{"prompt", "Once upon a time " + std::to_string(i)},
                {"max_tokens", 5 + i},
                {"ignore_eos", true},
                {"temperature", 0}};
    HttpResult r = Http("POST", server.url("/v1/completions"), req.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    json j = json::parse(r.body);
    prompt += j["usage"]["prompt_tokens"].get<int64_t>();
    completion += j["usage"]["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(completion, 5 + 6 + 7);
  EXPECT_EQ(Http("POST", server.url("/v1/completions"), R"({"prompt": 5})").status, 400);
  HttpResult m = Http("GET", server.url("/metrics"));
  ASSERT_EQ(m.status, 200);
  const std::string& after = m.body;
  EXPECT_EQ(MetricValue(after, kLength) - MetricValue(before, kLength), 3);
  EXPECT_EQ(MetricValue(after, "forge_requests_total{outcome=\"rejected\"}") -
                MetricValue(before, "forge_requests_total{outcome=\"rejected\"}"),
            1);
  EXPECT_EQ(MetricValue(after, "forge_prompt_tokens_total") -
                MetricValue(before, "forge_prompt_tokens_total"),
            prompt);
  EXPECT_EQ(MetricValue(after, "forge_generation_tokens_total") -
                MetricValue(before, "forge_generation_tokens_total"),
            completion);
  EXPECT_EQ(MetricValue(after, "forge_e2e_request_latency_seconds_count") -
                MetricValue(before, "forge_e2e_request_latency_seconds_count"),
            3);
  EXPECT_EQ(MetricValue(after, "forge_time_to_first_token_seconds_count") -
                MetricValue(before, "forge_time_to_first_token_seconds_count"),
            3);
  // Every token after a sample's first is one inter-token gap.
  EXPECT_EQ(MetricValue(after, "forge_inter_token_latency_seconds_count") -
                MetricValue(before, "forge_inter_token_latency_seconds_count"),
            completion - 3);
  EXPECT_GT(MetricValue(after, "forge_prefix_cache_queries_total"), 0);
  EXPECT_EQ(MetricValue(after, "forge_kv_blocks_used"), 0);

  const std::string dir = TempDir();
  const std::string file = dir + "/metrics.txt";
  std::ofstream(file) << after;
  // promtool parses the whole text; its only remark may be the lint on the vLLM-named aliases
  // (names with ':', which the exposition format allows and replica routers scrape).
  const std::string report = dir + "/promtool.txt";
  const int rc =
      std::system(("promtool check metrics < " + file + " > " + report + " 2>&1").c_str());
  std::ifstream in(report);
  int remarks = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    ++remarks;
    EXPECT_EQ(line.rfind("vllm:", 0), 0u) << line;
    EXPECT_NE(line.find("should not contain ':'"), std::string::npos) << line;
  }
  EXPECT_TRUE(rc == 0 || remarks > 0) << after;
}

TEST(ServerMetricsTest, DisconnectMidStreamCancelsAndFreesBlocks) {
  ServerProcess server("--debug-step-delay-ms 20");
  ASSERT_TRUE(server.ok());
  const std::string before = Http("GET", server.url("/metrics")).body;
  ASSERT_EQ(MetricValue(before, "forge_kv_blocks_used"), 0);
  // 400 tokens at >= 20 ms a step take >= 8 s; curl hangs up after 0.6 s.
  json req = {
      {"prompt", "Once upon a time"}, {"max_tokens", 400}, {"ignore_eos", true}, {"stream", true}};
  HttpResult r = Http("POST", server.url("/v1/completions"), req.dump(), "-N --max-time 0.6");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("data: {"), std::string::npos);       // it was streaming
  EXPECT_EQ(r.body.find("data: [DONE]"), std::string::npos);  // and did not finish
  std::string after;
  bool released = false;
  for (int i = 0; i < 300 && !released; ++i) {
    after = Http("GET", server.url("/metrics")).body;
    released = MetricValue(after, kCancelled) - MetricValue(before, kCancelled) == 1 &&
               MetricValue(after, "forge_kv_blocks_used") == 0;
    if (!released) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(released) << after;
  EXPECT_EQ(MetricValue(after, "forge_num_requests_running"), 0);
  EXPECT_EQ(MetricValue(after, "forge_engine_requests_cancelled_total"), 1);
  // Far fewer than 400 tokens were generated: the request stopped when the client left.
  EXPECT_LT(MetricValue(after, "forge_generation_tokens_total"), 200);
}

TEST(ServerMetricsTest, DeviceBusyCounterGrowsWithStepsAndRatioIsAFraction) {
  ServerProcess server("");
  ASSERT_TRUE(server.ok());
  constexpr const char* kBusy = "forge_device_busy_seconds_total";
  constexpr const char* kRatio = "forge_device_busy_ratio";
  const std::string before = Http("GET", server.url("/metrics")).body;
  EXPECT_NE(before.find(std::string("# TYPE ") + kBusy + " counter\n"), std::string::npos);
  EXPECT_NE(before.find(std::string("# TYPE ") + kRatio + " gauge\n"), std::string::npos);
  EXPECT_EQ(MetricValue(before, kBusy), 0) << before;  // no step has run yet
  EXPECT_EQ(MetricValue(before, kRatio), 0) << before;

  // The engine publishes a step's stats after the step's last token went out: a scrape right
  // after the response may precede that publication, so each read polls (up to 5 s) for growth.
  auto scrape = [&] { return Http("GET", server.url("/metrics")).body; };
  double last = 0;
  for (int i = 0; i < 2; ++i) {
    json req = {{"prompt", "Once upon a time " + std::to_string(i)},
                {"max_tokens", 24},
                {"ignore_eos", true}};
    ASSERT_EQ(Http("POST", server.url("/v1/completions"), req.dump()).status, 200);
    std::string after = scrape();
    for (int tries = 0; tries < 100 && MetricValue(after, kBusy) <= last; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      after = scrape();
    }
    const double busy = MetricValue(after, kBusy), ratio = MetricValue(after, kRatio);
    EXPECT_GT(busy, last) << "request " << i << ": " << after;  // the steps were counted
    EXPECT_GT(ratio, 0) << after;
    EXPECT_LE(ratio, 1) << after;
    last = busy;
  }
  // Idle: once the last step's stats are out, no step runs and the counter stands still.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double settled = MetricValue(scrape(), kBusy);
  EXPECT_GE(settled, last);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(MetricValue(scrape(), kBusy), settled);
}

}  // namespace
}  // namespace forge::testing
