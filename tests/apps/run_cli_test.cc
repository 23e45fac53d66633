// `forge run` as users run it: the expected greedy text of stories260K on stdout, and every
// load or prompt error as a clear one-line message with a non-zero exit.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::RunForge;

class RunCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir();
    model_ = testing::TestDataPath("models/stories260K.gguf");
  }
  // stories260K rewritten with a change to its metadata or tensors.
  std::string Variant(const std::string& name, const std::string& key, GgufValue value,
                      const std::string& drop_tensor = "") {
    auto src = GgufFile::Open(model_);
    EXPECT_TRUE(src.ok());
    GgufWriter w;
    for (const auto& [k, v] : (*src)->metadata()) w.Set(k, v);
    if (!key.empty()) w.Set(key, value);
    for (const auto& t : (*src)->tensors()) {
      if (t.name == drop_tensor) continue;
      std::vector<int64_t> dims = t.dims;
      if (name == "shape" && t.name == "blk.0.attn_v.weight") std::swap(dims[0], dims[1]);
      EXPECT_TRUE(w.AddTensor(t.name, t.type, dims, {t.data, t.data + t.n_bytes}).ok());
    }
    std::string path = dir_ + "/" + name + ".gguf";
    EXPECT_TRUE(w.WriteFile(path).ok());
    return path;
  }
  // The expected text of 64 llama2.c steps from "Once upon a time": the 4 prompt tokens after
  // BOS, then 60 generated.
  static std::string ExpectedGreedyText() {
    std::ifstream in(testing::TestDataPath("models/stories260K.expected.json"));
    auto cases = nlohmann::json::parse(in)["models"]["stories260K.gguf"]["cases"];
    std::string want;
    for (const auto& c : cases) {
      if (c["id"] == "once_upon_a_time_64") want = c["text"];
    }
    return want;
  }
  std::string dir_, model_;
};

TEST_F(RunCliTest, GreedyTextOnStdout) {
  const std::string want = ExpectedGreedyText();
  ASSERT_EQ(want.rfind("Once upon a time", 0), 0u);
  auto r =
      RunForge("run -m '" + model_ + "' -p 'Once upon a time' -n 60 --temp 0 --device cpu", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, want.substr(16) + "\n");
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

// --tensor-parallel on host backends: the same expected greedy text over 2 and 4 ranks.
TEST_F(RunCliTest, TensorParallelGivesTheExpectedText) {
  const std::string want = ExpectedGreedyText();
  for (int n : {2, 4}) {
    auto r = RunForge("run -m '" + model_ + "' -p 'Once upon a time' -n 60 --temp 0 --device cpu " +
                          "--tensor-parallel " + std::to_string(n),
                      dir_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, want.substr(16) + "\n") << n << " ranks";
  }
}

TEST_F(RunCliTest, ChatAnswersEachLineThroughATemplate) {
  // stories260K has no chat template: ChatML is used and said so; two turns, two replies.
  auto r = RunForge("chat -m '" + model_ + "' -n 6 --temp 0 --device cpu", dir_, "Hello\nAgain\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("using ChatML"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_GT(r.out.size(), 2u);
}

// --grammar / --json-schema (and their file forms): the text is a sentence of the grammar, for one
// prompt and for a prompts file through the engine; a bad grammar or schema is a one-line error.
TEST_F(RunCliTest, GrammarAndSchemaConstrainTheText) {
  auto r = RunForge("run -m '" + model_ + "' -p 'Once upon a time' -n 30 --temp 1 --seed 3 " +
                        "--device cpu --grammar 'root ::= (\"yes\" | \"no\") \" \" [0-9]{2}'",
                    dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GE(r.out.size(), 6u) << r.out;
  const std::string text = r.out.substr(0, r.out.size() - 1);  // the newline forge run adds
  EXPECT_TRUE(text.size() == 5 || text.size() == 6) << text;
  EXPECT_TRUE(text.rfind("yes ", 0) == 0 || text.rfind("no ", 0) == 0) << text;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(text[text.size() - 1])) &&
              std::isdigit(static_cast<unsigned char>(text[text.size() - 2])))
      << text;

  std::ofstream(dir_ + "/schema.json")
      << R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})";
  std::ofstream(dir_ + "/prompts.txt") << "Once upon a time\nThe little dog\n";
  r = RunForge("run -m '" + model_ + "' --prompts-file '" + dir_ + "/prompts.txt' -n 100 " +
                   "--temp 1 --seed 4 --device cpu --json-schema-file '" + dir_ + "/schema.json'",
               dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* prompt : {"[0] Once upon a time", "[1] The little dog"}) {
    const size_t at = r.out.find(prompt);
    ASSERT_NE(at, std::string::npos) << r.out;
    const size_t begin = at + std::string(prompt).size();
    const std::string reply = r.out.substr(begin, r.out.find('\n', begin) - begin);
    const nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
    ASSERT_TRUE(j.is_object()) << reply;
    EXPECT_TRUE(j["n"].is_number_integer()) << reply;
  }

  const std::string bad_schema = R"('{"type":"string","contentEncoding":1}')";
  for (const std::string& flag :
       {std::string("--grammar 'root ::= ('"), "--json-schema " + bad_schema}) {
    r = RunForge("run -m '" + model_ + "' -p 'Hi' -n 4 --device cpu " + flag, dir_);
    EXPECT_NE(r.exit_code, 0) << flag;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(RunCliTest, ErrorsAreOneLineAndNonZero) {
  struct Case {
    std::string model, extra, expect;
  } cases[] = {
      {dir_ + "/missing.gguf", "", "NOT_FOUND"},
      {Variant("arch", "general.architecture", GgufValue::String("rwkv42")), "",
       "unknown architecture 'rwkv42'"},
      {Variant("moe", "llama.expert_count", GgufValue::U32(8)), "", "llama.expert_used_count"},
      {Variant("missing", "", GgufValue(), "blk.3.ffn_gate.weight"), "",
       "tensor 'blk.3.ffn_gate.weight' is missing"},
      {Variant("shape", "", GgufValue()), "",
       "blk.0.attn_v.weight: shape [32, 64], expected [64, 32]"},
      {model_, "-c 8", "does not fit in the context of 8"},
      {model_, "--tensor-parallel 3", "8 attention heads do not divide by 3"},
      {model_, "--gpu-memory-limit 1GiB", "--gpu-memory-limit applies to GPU devices"},
      {model_, "--gpu-memory-limit 12parsecs", "expected a size such as 24GiB"},
  };
  for (const Case& c : cases) {
    auto r = RunForge("run -m '" + c.model + "' -p 'Once upon a time, in a land far away' " +
                          c.extra + " -n 4 --temp 0 --device cpu",
                      dir_);
    EXPECT_NE(r.exit_code, 0) << c.expect;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << "stderr: " << r.err;
    EXPECT_TRUE(r.out.empty() || r.out == "\n") << r.out;
    // One line of error (a trailing newline at most, after an optional newline).
    std::string e = r.err;
    while (!e.empty() && e.front() == '\n') e.erase(e.begin());
    EXPECT_LE(std::count(e.begin(), e.end(), '\n'), 1) << e;
  }
}

}  // namespace
}  // namespace forge
