// The official `openai` npm client's embeddings.create against `forge serve` of a small embedding
// model, the 4.x line ("openai") and the latest ("openai-latest"), each skipped unless installed
// (as server_openai_client_test.cc finds them): a string, a list, the client's own base64
// decoding, encoding_format "base64" and "float", dimensions, and errors. Every vector is checked
// against the server's float answer fetched without the client.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "server/embedding_model.h"
#include "server/server_process.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

std::string NodeModules() {
  if (const char* env = std::getenv("FORGE_OPENAI_NODE_MODULES")) return env;
  // ForgeBinary() is <build>/apps/forge/forge.
  return (std::filesystem::path(ForgeBinary()).parent_path().parent_path().parent_path() / "node" /
          "node_modules")
      .string();
}

std::vector<float> Floats(const json& j) {
  std::vector<float> out;
  for (const json& x : j) out.push_back(static_cast<float>(x.get<double>()));
  return out;
}

// Equal as float32 values, bit for bit.
void ExpectSame(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << what << " " << i;
  }
}

class ServerOpenAiEmbeddingsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ServerOpenAiEmbeddingsTest, OfficialClientEmbeds) {
  const std::string modules = NodeModules();
  if (!std::filesystem::exists(modules + "/" + GetParam()) ||
      std::system("node --version >/dev/null 2>&1")) {
    GTEST_SKIP() << "no node or no " << GetParam() << " package in " << modules;
  }
  const std::string path = MakeEmbeddingModel(TempDir(), "embedder", kMeanPooling);
  ServerProcess server("--api-key k9", ServerProcess::Wait::kHealthy, "cpu", path);
  ASSERT_TRUE(server.ok());
  const std::string cmd = "NODE_PATH=" + modules +
                          " node " FORGE_SOURCE_DIR "/tests/server/openai_embeddings.js " +
                          std::to_string(server.port()) + " k9 " + GetParam() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  ASSERT_EQ(pclose(p), 0) << out;
  const json j = json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;

  // The server's own float answer, without the client.
  const HttpResult r = Http("POST", server.url("/v1/embeddings"),
                            json{{"input", {"Once upon a time", "The cat sat on the mat"}}}.dump(),
                            "-H 'Authorization: Bearer k9'");
  ASSERT_EQ(r.status, 200) << r.body;
  const json direct = json::parse(r.body);
  const std::vector<float> first = Floats(direct["data"][0]["embedding"]);
  const std::vector<float> second = Floats(direct["data"][1]["embedding"]);
  ASSERT_EQ(first.size(), 64u);

  EXPECT_EQ(j["model"], "embedder");
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["indexes"], json::array({0, 1}));
  ExpectSame(Floats(j["plain"]), first, "client-decoded base64");
  ASSERT_EQ(j["floats"].size(), 2u);
  ExpectSame(Floats(j["floats"][0]), first, "float 0");
  ExpectSame(Floats(j["floats"][1]), second, "float 1");
  EXPECT_TRUE(j["base64_strings"].get<bool>());
  ASSERT_EQ(j["base64"].size(), 2u);
  ExpectSame(Floats(j["base64"][0]), first, "base64 0");
  ExpectSame(Floats(j["base64"][1]), second, "base64 1");
  // dimensions: the first 8 of the full vector, re-normalized.
  std::vector<float> want(second.begin(), second.begin() + 8);
  double norm = 0;
  for (float x : want) norm += double(x) * x;
  for (float& x : want) x = static_cast<float>(x / std::sqrt(norm));
  for (const char* key : {"short", "short_default"}) {
    const std::vector<float> got = Floats(j[key]);
    ASSERT_EQ(got.size(), 8u) << key;
    for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << key << " " << i;
  }
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int64_t>(), 2);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"]);
  EXPECT_EQ(j["rejected"]["status"], 400) << j["rejected"];
  EXPECT_EQ(j["rejected"]["param"], "input[1]") << j["rejected"];
  EXPECT_EQ(j["completion"]["status"], 400) << j["completion"];
  EXPECT_EQ(j["completion"]["param"], "model") << j["completion"];
}

INSTANTIATE_TEST_SUITE_P(Packages, ServerOpenAiEmbeddingsTest,
                         ::testing::Values("openai", "openai-latest"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "openai" ? std::string("v4")
                                                         : std::string("latest");
                         });

}  // namespace
}  // namespace forge::testing
