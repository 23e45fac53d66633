// scripts/load_gen.py against a real `forge serve` (CPU, stories260K): a short sweep of streaming
// clients on completions and a chat row finish every request with exactly max_tokens tokens,
// unique prompts never hit the prefix cache, and the busy fraction is a fraction; a run whose
// requests the server refuses reports the failures and exits 1.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "server/server_process.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

struct LoadGenRun {
  int rc = -1;
  std::string output;  // stdout and stderr
  json result;         // the --json file (discarded when unreadable)
};

// Runs load_gen.py against `server` with `args`.
LoadGenRun LoadGen(const ServerProcess& server, const std::string& args) {
  LoadGenRun run;
  const std::string file = TempDir() + "/load_gen.json";
  std::remove(file.c_str());
  const std::string cmd = "python3 " FORGE_SOURCE_DIR "/scripts/load_gen.py --port " +
                          std::to_string(server.port()) + " --json " + file + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return run;
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) run.output.append(buf, k);
  const int st = pclose(p);
  run.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  run.result = json::parse(ReadFile(file), nullptr, false);
  return run;
}

// The checks every healthy row passes. unique: the prompts share no prefix (completions; a chat
// template's text comes before the unique part and may fill a KV block).
void ExpectHealthyRow(const json& row, int max_tokens, int prompt_tokens, bool unique = true) {
  SCOPED_TRACE(row.dump(1));
  EXPECT_EQ(row["requests_failed"], 0);
  EXPECT_TRUE(row["failures"].empty());
  EXPECT_GT(row["requests_completed"].get<int64_t>(), 0);
  EXPECT_EQ(row["completion_tokens_per_request"], json::array({max_tokens}));
  EXPECT_GT(row["output_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(row["requests_per_s"].get<double>(), 0);
  const double prompt = row["mean_prompt_tokens"].get<double>();
  EXPECT_GT(prompt, 0.7 * prompt_tokens);
  EXPECT_LT(prompt, 1.3 * prompt_tokens);
  EXPECT_GT(row["ttft_ms"]["p50"].get<double>(), 0);
  EXPECT_GE(row["ttft_ms"]["p99"].get<double>(), row["ttft_ms"]["p50"].get<double>());
  EXPECT_GT(row["itl_ms"]["p50"].get<double>(), 0);
  EXPECT_GE(row["itl_ms"]["p99"].get<double>(), row["itl_ms"]["p50"].get<double>());
  EXPECT_GE(row["e2e_ms"]["p50"].get<double>(), row["ttft_ms"]["p50"].get<double>());
  // Unique prompts: every prompt token was looked up, none was found.
  EXPECT_GT(row["prefix_cache_queries"].get<double>(), 0);
  if (unique) {
    EXPECT_LT(row["prefix_cache_hit_rate"].get<double>(), 0.01);
  }
  const double busy = row["device_busy_fraction"].get<double>();
  EXPECT_GT(busy, 0);
  // Over the engine's own clock at the counter's updates (forge_engine_stats_time_seconds), not
  // the scrapes' wall time, which a long step straddles (1.26 was seen that way under ASan).
  EXPECT_LE(busy, 1.0 + 1e-3);
}

TEST(LoadGenTest, SweepAndChatRowsAreCleanAndFailuresAreReported) {
  ASSERT_EQ(std::system("python3 --version > /dev/null 2>&1"), 0) << "this test needs python3";
  ServerProcess server("--parallel 4 --max-queue 16");
  ASSERT_TRUE(server.ok());

  constexpr int kMaxTokens = 12, kPromptTokens = 48;
  const std::string common = " --prompt-tokens " + std::to_string(kPromptTokens) +
                             " --max-tokens " + std::to_string(kMaxTokens);
  LoadGenRun sweep = LoadGen(server, "--sweep 1,3 --warmup 0.4 --duration 1.5" + common);
  std::printf("%s", sweep.output.c_str());
  EXPECT_EQ(sweep.rc, 0) << sweep.output;
  ASSERT_TRUE(sweep.result.is_object()) << sweep.output;
  EXPECT_EQ(sweep.result["endpoint"], "completions");
  EXPECT_EQ(sweep.result["model"], "stories260K");
  ASSERT_EQ(sweep.result["rows"].size(), 2u);
  EXPECT_EQ(sweep.result["rows"][0]["clients"], 1);
  EXPECT_EQ(sweep.result["rows"][1]["clients"], 3);
  for (const json& row : sweep.result["rows"]) ExpectHealthyRow(row, kMaxTokens, kPromptTokens);
  EXPECT_NE(sweep.output.find("| clients |"), std::string::npos);  // the table

  // stories260K has no chat template: the server's ChatML, spelled out in this small
  // vocabulary, is ~40 tokens of every prompt.
  LoadGenRun chat =
      LoadGen(server,
              "--endpoint chat --clients 2 --warmup 0.3 --duration 1 --prompt-tokens 120 "
              "--max-tokens " +
                  std::to_string(kMaxTokens));
  EXPECT_EQ(chat.rc, 0) << chat.output;
  ASSERT_TRUE(chat.result.is_object()) << chat.output;
  EXPECT_EQ(chat.result["calibration"]["method"], "probe requests");
  ExpectHealthyRow(chat.result["rows"][0], kMaxTokens, 120, /*unique=*/false);

  // Every request constrained by a schema of its client's own: each still runs to max_tokens.
  for (const char* strings : {"bounded", "free"}) {
    LoadGenRun json_rows = LoadGen(server, std::string("--clients 2 --warmup 0.3 --duration 1") +
                                               common + " --json-schema " + strings);
    EXPECT_EQ(json_rows.rc, 0) << json_rows.output;
    ASSERT_TRUE(json_rows.result.is_object()) << json_rows.output;
    EXPECT_EQ(json_rows.result["json_schema"], strings);
    ExpectHealthyRow(json_rows.result["rows"][0], kMaxTokens, kPromptTokens);
  }

  // Prompt + max_tokens beyond the context: every request is refused, and that is a failure.
  LoadGenRun refused = LoadGen(server,
                               "--clients 2 --warmup 0.2 --duration 0.5 --prompt-tokens 48 "
                               "--max-tokens 100000");
  EXPECT_EQ(refused.rc, 1) << refused.output;
  ASSERT_TRUE(refused.result.is_object()) << refused.output;
  const json& row = refused.result["rows"][0];
  EXPECT_GT(row["requests_failed"].get<int64_t>(), 0);
  EXPECT_EQ(row["requests_completed"], 0);
  EXPECT_GT(row["failures"].value("HTTP 400", 0), 0) << row.dump(1);

  ASSERT_TRUE(server.alive()) << server.log();
  EXPECT_EQ(server.Terminate(), 0);
}

}  // namespace
}  // namespace forge::testing
