// A bounded load test of `forge serve`: 250 concurrent clients (80 under the sanitizers) for 10 s
// (scripts/server_load_test.py) mixing streamed and whole completions and chat, some hanging up
// mid-stream. Every other request succeeds, the server stays up, and its counters show every
// request accounted for, every hang-up cancelled and every KV block given back.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "server/server_process.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

// Under the sanitizers the server answers some 5 requests a second on two cores, so the client
// count is cut there to keep each request's queueing wait well inside the request timeout. The
// timeout bounds a hang, not the throughput: a request that waits behind all the others still
// finishes inside it.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kClients = 80;
#else
constexpr int kClients = 250;
#endif
constexpr int kSeconds = 10;
constexpr int kRequestTimeoutSeconds = 120;

// The sum of forge_requests_total over the outcomes that end a submitted request.
double Finished(const std::string& metrics) {
  double sum = 0;
  for (const char* outcome : {"stop", "length", "cancelled", "error"}) {
    sum += MetricValue(metrics, std::string("forge_requests_total{outcome=\"") + outcome + "\"}");
  }
  return sum;
}

double Delta(const std::string& before, const std::string& after, const std::string& name) {
  return MetricValue(after, name) - MetricValue(before, name);
}

// Runs `cmd`, returning its exit status and what it wrote to stdout and stderr.
int RunCapture(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out->append(buf, k);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(ServerLoadTest, ConcurrentClientsWithHangUpsLeakNothing) {
  std::string version;
  ASSERT_EQ(RunCapture("python3 --version", &version), 0) << "this test needs python3: " << version;
  // The queue holds every client: no well-formed request is refused with 429.
  ServerProcess server("--parallel 16 --max-queue 1024");
  ASSERT_TRUE(server.ok());
  const std::string before = Http("GET", server.url("/metrics")).body;
  const double blocks_before = MetricValue(before, "forge_kv_blocks_used");
  ASSERT_GE(blocks_before, 0) << before;

  const std::string summary_file = TempDir() + "/load_summary.json";
  const std::string cmd = "python3 " FORGE_SOURCE_DIR "/scripts/server_load_test.py --port " +
                          std::to_string(server.port()) + " --clients " + std::to_string(kClients) +
                          " --seconds " + std::to_string(kSeconds) +
                          " --max-tokens 16 --chat 0.5 --stream 0.5 --disconnect 0.15"
                          " --hang-up-max-tokens 400 --seed 1 --request-timeout " +
                          std::to_string(kRequestTimeoutSeconds) + " --json " + summary_file;
  std::string report;
  const int rc = RunCapture(cmd, &report);
  std::printf("%s", report.c_str());
  EXPECT_EQ(rc, 0) << report;
  const json s = json::parse(ReadFile(summary_file), nullptr, false);
  ASSERT_TRUE(s.is_object()) << report;

  // The client's side: every request that did not hang up got 200 and a well-formed answer.
  EXPECT_EQ(s["failed"], 0) << s["failures"].dump(1);
  EXPECT_EQ(s["statuses"], json({{"200", s["requests"]}}));
  for (const char* kind : {"completion", "completion-stream", "chat", "chat-stream"}) {
    EXPECT_GT(s["kinds"].value(kind, 0), 0) << kind;
  }
  const int64_t requests = s["requests"], disconnects = s["disconnects"];
  EXPECT_GE(requests, kClients);  // every client sent at least one
  EXPECT_GT(s["completed"].get<int64_t>(), 0);
  EXPECT_GT(disconnects, 0);  // the hang-up path ran
  EXPECT_EQ(s["completed"].get<int64_t>() + disconnects, requests);

  // The server's side: alive, healthy, and back at rest once the cancellations are through.
  ASSERT_TRUE(server.alive()) << server.log();
  EXPECT_EQ(Http("GET", server.url("/health")).status, 200);
  std::string after;
  bool settled = false;
  for (int i = 0; i < 500 && !settled; ++i) {
    after = Http("GET", server.url("/metrics")).body;
    settled = MetricValue(after, "forge_num_requests_running") == 0 &&
              MetricValue(after, "forge_num_requests_waiting") == 0 &&
              MetricValue(after, "forge_kv_blocks_used") == blocks_before &&
              Finished(after) - Finished(before) == requests;
    if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(settled) << after;
  EXPECT_EQ(MetricValue(after, "forge_num_requests_running"), 0);
  EXPECT_EQ(MetricValue(after, "forge_num_requests_waiting"), 0);
  EXPECT_EQ(MetricValue(after, "forge_kv_blocks_used"), blocks_before);  // no leaked block
  // Each request ended exactly once; each hang-up was cancelled before it could finish.
  EXPECT_EQ(Finished(after) - Finished(before), requests);
  EXPECT_EQ(Delta(before, after, "forge_requests_total{outcome=\"error\"}"), 0);
  EXPECT_EQ(Delta(before, after, "forge_requests_total{outcome=\"rejected\"}"), 0);
  const double cancelled = Delta(before, after, "forge_requests_total{outcome=\"cancelled\"}");
  EXPECT_GE(cancelled, disconnects);
  EXPECT_GE(Delta(before, after, "forge_engine_requests_cancelled_total"), disconnects);

  std::printf(
      "load: %lld clients, %.1f s: %lld requests, %.1f req/s, %.0f tokens/s; TTFT p50/p90/p99 "
      "%.1f/%.1f/%.1f ms; e2e p50/p90/p99 %.1f/%.1f/%.1f ms; %lld hang-ups, %.0f cancelled; "
      "KV blocks used %.0f -> %.0f (capacity %.0f); summary %s\n",
      static_cast<long long>(kClients), s["wall_s"].get<double>(), static_cast<long long>(requests),
      s["req_per_s"].get<double>(), s["tokens_per_s"].get<double>(),
      s["ttft_ms"]["p50"].get<double>(), s["ttft_ms"]["p90"].get<double>(),
      s["ttft_ms"]["p99"].get<double>(), s["e2e_ms"]["p50"].get<double>(),
      s["e2e_ms"]["p90"].get<double>(), s["e2e_ms"]["p99"].get<double>(),
      static_cast<long long>(disconnects), cancelled, blocks_before,
      MetricValue(after, "forge_kv_blocks_used"), MetricValue(after, "forge_kv_blocks_capacity"),
      summary_file.c_str());
  RecordProperty("req_per_s", std::to_string(s["req_per_s"].get<double>()));
  RecordProperty("ttft_p99_ms", std::to_string(s["ttft_ms"]["p99"].get<double>()));
  RecordProperty("e2e_p99_ms", std::to_string(s["e2e_ms"]["p99"].get<double>()));
  EXPECT_EQ(server.Terminate(), 0);  // and it still shuts down gracefully
}

}  // namespace
}  // namespace forge::testing
