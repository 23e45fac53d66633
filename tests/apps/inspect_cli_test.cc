// `forge inspect` run as users run it: the built binary on the real model, on a tensor's values
// (checked against the reader and llama.cpp's dequantized oracle), and on bad and missing files
// (non-zero exit and a one-line reason on stderr).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf_file.h"
#include "gguf/gguf_split.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace forge {
namespace {

using testing::CliResult;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class InspectCliTest : public testing::CliTest {
 protected:
  // A copy of a real file with `edit` applied to its bytes.
  std::string Corrupted(const std::string& name, const std::string& src,
                        void (*edit)(std::string&)) {
    std::string bytes = Slurp(src);
    edit(bytes);
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  static void ExpectOneLineError(const CliResult& r, const std::string& want) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.out.empty()) << r.out;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_EQ(r.err.rfind("forge inspect: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  }
};

TEST_F(InspectCliTest, DescribesTheRealModel) {
  std::string model = testing::TestDataPath("models/stories260K.gguf");
  CliResult r = Forge("inspect '" + model + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* want :
       {"architecture", "llama", "vocab size", "512", "tokenizer", "SentencePiece", "chat template",
        "embedding length", "64", "tensor table:", "tensors: 48", "token_embd.weight",
        "blk.4.ffn_down.weight", "[64, 512]", "[172, 64]", "F32"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing \"" << want << "\" in:\n" << r.out;
  }
  // The vocab size line says 512, not just anywhere.
  size_t at = r.out.find("vocab size");
  ASSERT_NE(at, std::string::npos);
  std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find("512"), std::string::npos) << line;
}

TEST_F(InspectCliTest, TensorValuesEqualTheReader) {
  std::string model = testing::TestDataPath("models/stories260K.gguf");
  CliResult r = Forge("inspect '" + model + "' --tensor token_embd.weight --values 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "token_embd.weight F32 [64, 512]");
  std::vector<float> printed;
  float v;
  while (in >> v) printed.push_back(v);
  auto f = GgufFile::Open(model);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufTensorInfo* t = (*f)->FindTensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  std::vector<float> stored(8);
  std::memcpy(stored.data(), t->data, 8 * sizeof(float));
  EXPECT_EQ(printed, stored);  // %.9g round-trips a float exactly
}

// Q8_0 values as llama.cpp's gguf-py dequantizes them (shared/testdata/quant).
TEST_F(InspectCliTest, Q8ValuesEqualTheOracle) {
  std::string model = testing::TestDataPath("quant/quant-oracle-q8_0.gguf");
  auto oracle = nlohmann::json::parse(
      Slurp(testing::TestDataPath("quant/quant-oracle.expected.json")), nullptr, false);
  ASSERT_TRUE(oracle.is_object());
  const auto& want = oracle["files"]["quant-oracle-q8_0.gguf"]["tensors"]["blk.0.attn_q.weight"];
  ASSERT_EQ(want["type"], "Q8_0");
  CliResult r = Forge("inspect '" + model + "' --tensor blk.0.attn_q.weight --values 64");
  if (r.err.find("UNIMPLEMENTED: dequantization of Q8_0") != std::string::npos) {
    GTEST_SKIP() << "this build's quant module cannot dequantize Q8_0 yet: " << r.err;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out.substr(r.out.find('\n') + 1));
  std::vector<float> printed;
  float v;
  while (in >> v) printed.push_back(v);
  ASSERT_EQ(printed.size(), 64u);
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(printed[i], want["first64"][i].get<float>()) << "value " << i;
  }
}

TEST_F(InspectCliTest, SplitModelOpensAsOne) {
  auto model = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(model.ok());
  auto paths = WriteGgufSplits(**model, dir_ + "/st", {.n_splits = 3});
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  CliResult r = Forge("inspect '" + (*paths)[0] + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("split files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensors: 48"), std::string::npos) << r.out;
  ExpectOneLineError(Forge("inspect '" + (*paths)[1] + "'"), "open the first split instead");
}

TEST_F(InspectCliTest, CorruptFilesFailWithOneLine) {
  std::string src = testing::TestDataPath("models/stories260K.gguf");
  std::string truncated =
      Corrupted("truncated.gguf", src, [](std::string& b) { b.resize(b.size() - 100); });
  ExpectOneLineError(Forge("inspect '" + truncated + "'"), "DATA_LOSS");
  ExpectOneLineError(Forge("inspect '" + truncated + "'"), "truncated");
  ExpectOneLineError(Forge("inspect '" + truncated + "'"), truncated);

  std::string magic = Corrupted("magic.gguf", src, [](std::string& b) { b[0] = 'X'; });
  ExpectOneLineError(Forge("inspect '" + magic + "'"), "not a GGUF file");

  // token_embd.weight's type set to IQ2_XXS (id 16).
  std::string iq = Corrupted("iq.gguf", src, [](std::string& b) {
    std::string name = "token_embd.weight";
    size_t at = b.find(name + std::string("\x02\0\0\0", 4));
    ASSERT_NE(at, std::string::npos);
    b[at + name.size() + 4 + 16] = 16;
  });
  ExpectOneLineError(Forge("inspect '" + iq + "'"), "IQ2_XXS");

  std::string empty = Corrupted("empty.gguf", src, [](std::string& b) { b.clear(); });
  ExpectOneLineError(Forge("inspect '" + empty + "'"), "truncated");
}

TEST_F(InspectCliTest, MissingFileAndTensorFail) {
  ExpectOneLineError(Forge("inspect '" + dir_ + "/no-such-model.gguf'"), "No such file");
  ExpectOneLineError(Forge("inspect '" + dir_ + "'"), "not a regular file");
  std::string model = testing::TestDataPath("models/stories260K.gguf");
  ExpectOneLineError(Forge("inspect '" + model + "' --tensor no.such.tensor --values 4"),
                     "no tensor named 'no.such.tensor'");
}

}  // namespace
}  // namespace forge
