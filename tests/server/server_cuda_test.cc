// `forge serve --device cuda` end to end (GPU machine only): with F32 activations its greedy
// completions, whole and streamed, four at once, equal `forge run --device cpu`'s text; with the
// default half activations completions succeed; afterwards no KV block is in use.
#include <gtest/gtest.h>

#include <cstdio>
#include <future>
#include <nlohmann/json.hpp>

#include "server/server_process.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

std::string Complete(const ServerProcess& s, const std::string& prompt, int n, bool stream) {
  json req = {{"model", "stories260K"},
              {"prompt", prompt},
              {"max_tokens", n},
              {"temperature", 0},
              {"stream", stream}};
  HttpResult r = Http("POST", s.url("/v1/completions"), req.dump(), stream ? "-N" : "");
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return "";
  if (!stream) return json::parse(r.body)["choices"][0]["text"].get<std::string>();
  std::string text;
  for (json c : SseChunks(r.body)) text += c["choices"][0]["text"].get<std::string>();
  return text;
}

TEST(ServerCudaTest, GreedyOverHttpOnTheGpuEqualsTheCpu) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily wanted to",
                                            "One day, a bird"};
  std::vector<std::string> want;
  for (const std::string& p : prompts) want.push_back(ForgeRunGreedy(p, 20));
  ServerProcess server("--parallel 4 --dtype f32", ServerProcess::Wait::kHealthy, "cuda");
  ASSERT_TRUE(server.ok()) << server.log();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(Complete(server, prompts[i], 20, false), want[i]) << prompts[i];
    EXPECT_EQ(Complete(server, prompts[i], 20, true), want[i]) << prompts[i] << " (streamed)";
  }
  std::vector<std::future<std::string>> all;
  for (const std::string& p : prompts) {
    all.push_back(
        std::async(std::launch::async, [&server, p] { return Complete(server, p, 20, true); }));
  }
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].get(), want[i]) << "concurrent " << i;
  const HttpResult m = Http("GET", server.url("/metrics"));
  EXPECT_EQ(MetricValue(m.body, "forge_kv_blocks_used"), 0) << m.body;
}

TEST(ServerCudaTest, HalfActivationsServe) {
  FORGE_REQUIRE_GPU_OR_SKIP();
  ServerProcess server("--parallel 4", ServerProcess::Wait::kHealthy, "cuda");
  ASSERT_TRUE(server.ok()) << server.log();
  for (bool stream : {false, true}) {
    EXPECT_FALSE(Complete(server, "Once upon a time", 16, stream).empty());
  }
}

}  // namespace
}  // namespace forge::testing
