// `forge embed` as users run it: one JSON array per input line (a file, stdin or -p), each the
// dense reference forward's pooled vector (tests/server/embedding_model.h), --dimensions as the
// cut and re-normalized full vector; and every error (a model that does not embed, an empty or
// too long line, dimensions past the width) a clear message with a non-zero exit.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf_file.h"
#include "server/embedding_model.h"
#include "support/cli_runner.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace forge::testing {
namespace {

using nlohmann::json;

// Each stdout line parsed as a JSON array of floats.
std::vector<std::vector<float>> Lines(const std::string& out) {
  std::vector<std::vector<float>> vectors;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_array()) << line;
    if (!j.is_array()) continue;
    vectors.emplace_back();
    for (const json& x : j) vectors.back().push_back(static_cast<float>(x.get<double>()));
  }
  return vectors;
}

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = a.size() == b.size() ? 0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, std::abs(double(a[i]) - b[i]));
  }
  return d;
}

class EmbedCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    model_ = MakeEmbeddingModel(dir_, "embedder", kMeanPooling);
  }
  // The ids the model's tokenizer gives a text (special tokens added and parsed, as forge embed).
  std::vector<int32_t> Tokens(const std::string& text) {
    auto file = GgufFile::Open(model_);
    EXPECT_TRUE(file.ok());
    auto tok = Tokenizer::FromGguf(**file);
    EXPECT_TRUE(tok.ok());
    return (*tok)->Encode(text, true, true);
  }
  std::string model_;
};

TEST_F(EmbedCliTest, OneVectorPerLine) {
  const std::vector<std::string> texts = {"Once upon a time", "The cat sat on the mat", "zebra"};
  std::ofstream(dir_ + "/texts.txt") << texts[0] << "\n" << texts[1] << "\r\n" << texts[2] << "\n";
  CliResult r = Forge("embed -m '" + model_ + "' --file '" + dir_ + "/texts.txt' --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::vector<float>> vectors = Lines(r.out);
  ASSERT_EQ(vectors.size(), texts.size()) << r.out;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(vectors[i].size(), 64u);
    double norm = 0;
    for (float x : vectors[i]) norm += double(x) * x;
    EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5) << i;
    EXPECT_LT(PooledResidual(model_, Tokens(texts[i]), vectors[i], kMeanPooling), 1e-4) << i;
  }
  EXPECT_NE(r.err.find("3 texts"), std::string::npos) << r.err;

  // stdin and -p give the same vectors.
  r = Forge("embed -m '" + model_ + "' --file - --device cpu");  // empty stdin: no lines
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("holds no lines"), std::string::npos) << r.err;
  r = RunForge("embed -m '" + model_ + "' --file - --device cpu", dir_, texts[1] + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), 1u);
  EXPECT_LT(MaxDiff(Lines(r.out)[0], vectors[1]), 1e-5);
  r = Forge("embed -m '" + model_ + "' -p 'zebra' --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), 1u);
  EXPECT_LT(MaxDiff(Lines(r.out)[0], vectors[2]), 1e-5);

  // --ids-file: the texts' token ids, one comma-separated list a line, give their vectors.
  std::string id_lines;
  for (const std::string& t : texts) {
    std::string line;
    for (int32_t id : Tokens(t)) line += (line.empty() ? "" : ",") + std::to_string(id);
    id_lines += line + "\n";
  }
  std::ofstream(dir_ + "/ids.txt") << id_lines;
  r = Forge("embed -m '" + model_ + "' --ids-file '" + dir_ + "/ids.txt' --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Lines(r.out).size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_LT(MaxDiff(Lines(r.out)[i], vectors[i]), 1e-5);
  std::ofstream(dir_ + "/bad-ids.txt") << "1,2\n3,,4\n";
  r = Forge("embed -m '" + model_ + "' --ids-file '" + dir_ + "/bad-ids.txt' --device cpu");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("line 2: '' is not a token id"), std::string::npos) << r.err;

  // --dimensions: the first values, re-normalized.
  r = Forge("embed -m '" + model_ + "' --file '" + dir_ +
            "/texts.txt' --device cpu "
            "--dimensions 12");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::vector<float>> cut = Lines(r.out);
  ASSERT_EQ(cut.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<float> want(vectors[i].begin(), vectors[i].begin() + 12);
    double norm = 0;
    for (float x : want) norm += double(x) * x;
    for (float& x : want) x = static_cast<float>(x / std::sqrt(norm));
    EXPECT_LT(MaxDiff(cut[i], want), 1e-6) << i;
  }
}

TEST_F(EmbedCliTest, ManyLinesStreamInOrder) {
  // More lines than one group of the command (256): line i is "word<i % 7>" again and again.
  std::string text;
  for (int i = 0; i < 600; ++i) text += "word" + std::to_string(i % 7) + "\n";
  std::ofstream(dir_ + "/many.txt") << text;
  CliResult r = Forge("embed -m '" + model_ + "' --file '" + dir_ + "/many.txt' --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::vector<float>> v = Lines(r.out);
  ASSERT_EQ(v.size(), 600u);
  for (int i = 7; i < 600; ++i) ASSERT_LT(MaxDiff(v[i], v[i % 7]), 1e-5) << i;
  EXPECT_GT(MaxDiff(v[0], v[1]), 1e-3);
}

TEST_F(EmbedCliTest, ErrorsAreClearMessages) {
  // A model that does not embed.
  CliResult r =
      Forge("embed -m '" + TestDataPath("models/stories260K.gguf") + "' -p 'hello' --device cpu");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("does not embed: its GGUF has no pooling_type"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // An empty line, named.
  std::ofstream(dir_ + "/blank.txt") << "one\n\nthree\n";
  r = Forge("embed -m '" + model_ + "' --file '" + dir_ + "/blank.txt' --device cpu");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("line 2 is empty"), std::string::npos) << r.err;
  // A line longer than the 16 tokens a step takes; --truncate cuts it to fit.
  std::string long_line;
  for (int i = 0; i < 30; ++i) long_line += "word ";
  std::ofstream(dir_ + "/long.txt") << "short\n" << long_line << "\n";
  const std::string args = "embed -m '" + model_ + "' --file '" + dir_ +
                           "/long.txt' --device cpu --batch-tokens 16 --parallel 2";
  r = Forge(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at most 16"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--truncate"), std::string::npos) << r.err;
  r = Forge(args + " --truncate");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::vector<float>> v = Lines(r.out);
  ASSERT_EQ(v.size(), 2u);
  const std::vector<int32_t> ids = Tokens(long_line);
  ASSERT_GT(ids.size(), 16u);
  EXPECT_LT(PooledResidual(model_, std::vector<int32_t>(ids.begin(), ids.begin() + 16), v[1],
                           kMeanPooling),
            1e-4);
  // --dimensions past the width of 64, and no text at all.
  r = Forge("embed -m '" + model_ + "' -p 'a' --device cpu --dimensions 65");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--dimensions 65 must be in [1, 64]"), std::string::npos) << r.err;
  r = Forge("embed -m '" + model_ + "' --device cpu");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("give -p TEXT or --file"), std::string::npos) << r.err;
  // The commands that generate refuse an embedding model, pointing at forge embed.
  for (const std::string& cmd : {"run -m '" + model_ + "' -p 'a' -n 2 --device cpu",
                                 "bench -m '" + model_ + "' -p 8 -n 2 -r 1 --device cpu"}) {
    r = Forge(cmd);
    EXPECT_NE(r.exit_code, 0) << cmd;
    EXPECT_NE(r.err.find("use forge embed"), std::string::npos) << cmd << ": " << r.err;
  }
}

}  // namespace
}  // namespace forge::testing
