// End-to-end GET /status and /status/stream of `forge serve`: the status counters equal /metrics'
// (values and deltas over the same interval), each latency percentile falls in the /metrics
// histogram bucket that holds its rank, the stream pushes a snapshot every second with the
// requests in flight, and with --api-key the status needs the key while the web page does not.
// Also POST /apply-template, and the embedded page files byte for byte against src/server/web/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "server/routes.h"
#include "server/server_process.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

// Every counter of the status under its /metrics name (requests by outcome as labels).
std::map<std::string, double> StatusCounters(const json& status) {
  std::map<std::string, double> out;
  for (const auto& [name, value] : status["counters"].items()) {
    if (value.is_object()) {
      for (const auto& [label, v] : value.items()) {
        out[name + "{outcome=\"" + label + "\"}"] = v.get<double>();
      }
    } else {
      out[name] = value.get<double>();
    }
  }
  return out;
}

// The cumulative buckets of a /metrics histogram: (upper bound, count), +Inf last.
std::vector<std::pair<double, int64_t>> Buckets(const std::string& metrics,
                                                const std::string& name) {
  std::vector<std::pair<double, int64_t>> out;
  std::istringstream in(metrics);
  const std::string prefix = name + "_bucket{le=\"";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t end = line.find('"', prefix.size());
    const std::string le = line.substr(prefix.size(), end - prefix.size());
    const double bound = le == "+Inf" ? INFINITY : std::stod(le);
    out.emplace_back(bound, std::stoll(line.substr(line.rfind(' ') + 1)));
  }
  return out;
}

// The counters that stand still while the server is idle (the busy ratio decays meanwhile).
std::vector<double> IdleKey(const std::string& metrics) {
  std::vector<double> key;
  for (const char* name :
       {"forge_engine_steps_total", "forge_engine_generation_tokens_total",
        "forge_e2e_request_latency_seconds_count", "forge_num_requests_running",
        "forge_num_requests_waiting", "forge_requests_total{outcome=\"rejected\"}"}) {
    key.push_back(MetricValue(metrics, name));
  }
  return key;
}

// Waits until the engine is idle and its counters stand still (the last step's stats are out).
void WaitIdle(const ServerProcess& server) {
  std::vector<double> last;
  for (int i = 0; i < 200; ++i) {
    const std::string m = Http("GET", server.url("/metrics")).body;
    const std::vector<double> key = IdleKey(m);
    if (key[3] == 0 && key[4] == 0 && key == last) return;
    last = key;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "the server did not become idle";
}

TEST(ServerStatusTest, CountersEqualMetricsAndPercentilesFallInTheirBuckets) {
  ServerProcess server("");
  ASSERT_TRUE(server.ok());
  WaitIdle(server);
  const std::string m1 = Http("GET", server.url("/metrics")).body;
  const HttpResult r1 = Http("GET", server.url("/status"));
  ASSERT_EQ(r1.status, 200) << r1.body;
  const auto s1 = StatusCounters(json::parse(r1.body));

  // Load: plain and streamed completions and chats, and a refused request.
  for (int i = 0; i < 4; ++i) {
    json req = {{"max_tokens", 6 + 3 * i}, {"ignore_eos", true}, {"temperature", 0}};
    if (i % 2) {
      req["messages"] = {{{"role", "user"}, {"content", "Tell a story " + std::to_string(i)}}};
    } else {
      req["prompt"] = "Once upon a time " + std::to_string(i);
    }
    req["stream"] = i >= 2;
    const HttpResult r =
        Http("POST", server.url(i % 2 ? "/v1/chat/completions" : "/v1/completions"), req.dump());
    ASSERT_EQ(r.status, 200) << r.body;
  }
  ASSERT_EQ(Http("POST", server.url("/v1/completions"), R"({"prompt": 5})").status, 400);
  WaitIdle(server);

  const std::string m2 = Http("GET", server.url("/metrics")).body;
  const HttpResult r2 = Http("GET", server.url("/status"));
  ASSERT_EQ(r2.status, 200);
  const std::string m3 = Http("GET", server.url("/metrics")).body;
  const json status = json::parse(r2.body);
  const auto s2 = StatusCounters(status);
  ASSERT_GE(s2.size(), 17u);
  for (const auto& [name, value] : s2) {  // nothing moved in between
    ASSERT_EQ(MetricValue(m3, name), MetricValue(m2, name)) << name;
  }
  for (const auto& [name, value] : s2) {
    const double before = MetricValue(m1, name), after = MetricValue(m2, name);
    ASSERT_GE(after, 0) << name << " is not in /metrics";
    EXPECT_EQ(value, after) << name;
    EXPECT_EQ(value - s1.at(name), after - before) << name << " over the interval";
  }
  EXPECT_GT(s2.at("forge_engine_generation_tokens_total"), 0);
  EXPECT_EQ(s2.at("forge_requests_total{outcome=\"rejected\"}") -
                s1.at("forge_requests_total{outcome=\"rejected\"}"),
            1);
  // The gauges too.
  const json& now = status["now"];
  EXPECT_EQ(now["running"].get<double>(), MetricValue(m2, "forge_num_requests_running"));
  EXPECT_EQ(now["waiting"].get<double>(), MetricValue(m2, "forge_num_requests_waiting"));
  EXPECT_EQ(now["preempted"].get<double>(), MetricValue(m2, "forge_num_requests_preempted"));
  EXPECT_EQ(now["kv_blocks"]["used"].get<double>(), MetricValue(m2, "forge_kv_blocks_used"));
  EXPECT_EQ(now["kv_blocks"]["cached"].get<double>(), MetricValue(m2, "forge_kv_blocks_cached"));
  EXPECT_EQ(now["kv_blocks"]["free"].get<double>(), MetricValue(m2, "forge_kv_blocks_free"));
  EXPECT_EQ(now["kv_blocks"]["total"].get<double>(), MetricValue(m2, "forge_kv_blocks_capacity"));
  EXPECT_TRUE(status["in_flight"].empty());

  // Every observation is within the last minute: each percentile is the value of rank
  // ceil(q * count), which lies in the first bucket whose cumulative count reaches that rank.
  const std::pair<const char*, const char*> latencies[] = {
      {"ttft_seconds", "forge_time_to_first_token_seconds"},
      {"itl_seconds", "forge_inter_token_latency_seconds"}};
  for (const auto& [key, metric] : latencies) {
    const json& w = now[key];
    const auto buckets = Buckets(m2, metric);
    ASSERT_FALSE(buckets.empty()) << metric;
    const int64_t count = buckets.back().second;
    ASSERT_GT(count, 0) << metric;
    ASSERT_EQ(w["count"].get<int64_t>(), count) << key;
    for (const auto& [q, name] : {std::pair{0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}}) {
      const double value = w[name].get<double>();
      const int64_t rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(count)));
      size_t i = 0;
      while (buckets[i].second < rank) ++i;
      const double lower = i == 0 ? -INFINITY : buckets[i - 1].first;
      EXPECT_GT(value, lower) << key << " " << name << " rank " << rank;
      EXPECT_LE(value, buckets[i].first) << key << " " << name << " rank " << rank;
    }
  }
}

TEST(ServerStatusTest, StreamPushesEverySecondWithTheRequestsInFlight) {
  ServerProcess server("--debug-step-delay-ms 25");
  ASSERT_TRUE(server.ok());
  // The first status call measures the device's floors once. On the CPU that takes the engine's
  // threads, so steps wait for it (seconds under the sanitizers): it happens here, before the
  // load, so that the rates below see the engine's steps.
  ASSERT_EQ(Http("GET", server.url("/status")).status, 200);
  // One request of 250 steps (>= 6 s) runs while the stream is read for 3.5 s.
  std::thread load([&] {
    json req = {{"prompt", "Once upon a time"}, {"max_tokens", 250}, {"ignore_eos", true}};
    EXPECT_EQ(Http("POST", server.url("/v1/completions"), req.dump()).status, 200);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const HttpResult r = Http("GET", server.url("/status/stream"), "", "-N --max-time 3.5");
  load.join();
  EXPECT_NE(r.headers.find("text/event-stream"), std::string::npos) << r.headers;
  const std::vector<json> events = SseChunks(r.body);
  // The first at once, then one a second.
  ASSERT_GE(events.size(), 3u) << r.body.substr(0, 2000);
  EXPECT_TRUE(events[0].contains("history"));
  int64_t last_generated = -1;
  bool moved = false;
  for (const json& e : events) {
    ASSERT_EQ(e["in_flight_total"].get<int64_t>(), 1) << e.dump();
    const json& row = e["in_flight"][0];
    EXPECT_GT(row["prompt_tokens"].get<int64_t>(), 0);
    const std::string state = row["state"];
    EXPECT_TRUE(state == "decoding" || state == "prefill" || state == "waiting") << state;
    const int64_t generated = row["generated_tokens"];
    EXPECT_GE(generated, last_generated);
    moved |= last_generated >= 0 && generated > last_generated;
    last_generated = generated;
    EXPECT_GE(row["age_seconds"].get<double>(), 0);
  }
  EXPECT_TRUE(moved) << "tokens so far did not grow across events";
  // The output rate moves while the load runs (some event after the first shows it; the events'
  // ticks may bunch up on a loaded machine, so not necessarily the last).
  std::string rates;
  double best_rate = 0;
  for (size_t i = 1; i < events.size(); ++i) {
    rates += events[i]["now"].dump() + "\n";
    best_rate = std::max(best_rate, events[i]["now"]["output_tokens_per_second"].get<double>());
  }
  EXPECT_GT(best_rate, 0) << rates;
  EXPECT_EQ(events.back()["now"]["running"].get<int64_t>(), 1);
}

TEST(ServerStatusTest, ApiKeyGuardsStatusButNotThePage) {
  ServerProcess server("--api-key sekrit");
  ASSERT_TRUE(server.ok());
  const std::string key = "-H 'Authorization: Bearer sekrit'";
  EXPECT_EQ(Http("GET", server.url("/status")).status, 401);
  EXPECT_EQ(Http("GET", server.url("/status/stream"), "", "--max-time 2").status, 401);
  EXPECT_EQ(Http("GET", server.url("/status"), "", key).status, 200);
  EXPECT_EQ(Http("POST", server.url("/apply-template"), R"({"messages": []})").status, 401);
  const HttpResult page = Http("GET", server.url("/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("text/html"), std::string::npos);
  EXPECT_NE(page.headers.find("Content-Security-Policy: default-src 'none'; script-src 'self'"),
            std::string::npos)
      << page.headers;
  EXPECT_EQ(Http("GET", server.url("/web/app.js")).status, 200);
  EXPECT_EQ(Http("GET", server.url("/web/missing.js")).status, 404);
  EXPECT_EQ(Http("POST", server.url("/"), "{}").status, 405);
}

TEST(ServerStatusTest, ApplyTemplateRendersTheChatPrompt) {
  ServerProcess server("");
  ASSERT_TRUE(server.ok());
  json req = {{"messages",
               {{{"role", "system"}, {"content", "Be brief."}},
                {{"role", "user"}, {"content", "Hi <b>there</b>"}}}}};
  const HttpResult r = Http("POST", server.url("/apply-template"), req.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  // stories260K has no template: the server serves it with ChatML (the reference, by hand).
  EXPECT_EQ(j["prompt"],
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi "
            "<b>there</b><|im_end|>\n<|im_start|>assistant\n");
  // The same prompt as a chat completion counts the same tokens.
  req["max_tokens"] = 1;
  const HttpResult c = Http("POST", server.url("/v1/chat/completions"), req.dump());
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(j["tokens"], json::parse(c.body)["usage"]["prompt_tokens"]);
  EXPECT_EQ(Http("POST", server.url("/apply-template"), R"({"messages": 3})").status, 400);
}

TEST(ServerStatusTest, EmbeddedPageIsTheSourceFilesAndSmall) {
  ServerProcess server("");
  ASSERT_TRUE(server.ok());
  const std::filesystem::path dir = std::filesystem::path(FORGE_SOURCE_DIR) / "src/server/web";
  int64_t script_and_style = 0;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const HttpResult r = Http("GET", server.url("/web/" + name));
    EXPECT_EQ(r.status, 200) << name;
    EXPECT_EQ(r.body, ReadFile(entry.path().string())) << name;
    const std::string ext = entry.path().extension().string();
    if (ext == ".js" || ext == ".css") script_and_style += static_cast<int64_t>(r.body.size());
    ++files;
  }
  EXPECT_GE(files, 3);
  EXPECT_EQ(Http("GET", server.url("/")).body, ReadFile((dir / "index.html").string()));
  EXPECT_GT(script_and_style, 0);
  EXPECT_LT(script_and_style, 200 * 1024) << "the page's JavaScript and CSS";
  std::printf("[ web page ] %d files, JavaScript + CSS %lld bytes\n", files,
              static_cast<long long>(script_and_style));
}

TEST(ServerRoutesTest, StatusAndWebRoutes) {
  using server::MatchRoute;
  using server::RouteId;
  EXPECT_EQ(MatchRoute("GET", "/").id, RouteId::kWebPage);
  EXPECT_EQ(MatchRoute("GET", "/status").id, RouteId::kStatus);
  EXPECT_EQ(MatchRoute("GET", "/status/stream").id, RouteId::kStatusStream);
  EXPECT_EQ(MatchRoute("POST", "/apply-template").id, RouteId::kApplyTemplate);
  const auto web = MatchRoute("GET", "/web/app.js");
  EXPECT_EQ(web.id, RouteId::kWebAsset);
  EXPECT_EQ(web.asset, "app.js");
  EXPECT_TRUE(MatchRoute("GET", "/web/").error.has_value());  // no file named
  EXPECT_EQ(MatchRoute("POST", "/status").error->http_status, 405);
}

}  // namespace
}  // namespace forge::testing
