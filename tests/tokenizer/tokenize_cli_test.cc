// `forge tokenize` run as users run it: ids only, ids with pieces, --no-special, --file read byte
// for byte, and a one-line error for a file that is not a GGUF.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include "support/cli_runner.h"
#include "support/test_env.h"
#include "tokenizer_test_util.h"

namespace forge {
namespace {

using testing::CliResult;

class TokenizeCliTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    model_ = testing::TestDataPath("models/stories260K.gguf");
  }
  std::string model_;
};

TEST_F(TokenizeCliTest, IdsOnOneLine) {
  CliResult r = Forge("tokenize -m '" + model_ + "' --ids 'Once upon a time'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  r = Forge("tokenize -m '" + model_ + "' --ids --no-special 'Once upon a time'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "403 407 261 378\n");
}

TEST_F(TokenizeCliTest, IdsWithPieces) {
  CliResult r = Forge("tokenize -m '" + model_ + "' 'Once upon'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "     1 -> '<s>'\n   403 -> ' Once'\n   407 -> ' upon'\n");
}

TEST_F(TokenizeCliTest, FileIsReadByteForByte) {
  const std::string path = dir_ + "/prompt.txt";
  const std::string text = "Once upon a time\n\n\xE2\x9C\x85 \xFF";  // newlines, ✅, a stray byte
  std::ofstream(path, std::ios::binary) << text;
  auto tok = testing::LoadVocab("models/stories260K.gguf");
  std::string want;
  for (TokenId id : tok->Encode(text, true, false)) {
    if (!want.empty()) want.push_back(' ');
    want += std::to_string(id);
  }
  CliResult r = Forge("tokenize -m '" + model_ + "' --ids --file '" + path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, want + "\n");
  // Stray bytes are shown escaped in the piece listing.
  r = Forge("tokenize -m '" + model_ + "' --file '" + path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("'\\xFF'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'\\n'"), std::string::npos) << r.out;
}

TEST_F(TokenizeCliTest, NeedsTextOrFile) {
  CliResult r = Forge("tokenize -m '" + model_ + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("TEXT or --file"), std::string::npos) << r.err;
  r = Forge("tokenize -m '" + model_ + "' --ids ''");  // an empty prompt is just BOS
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
}

TEST_F(TokenizeCliTest, BadFileIsAOneLineError) {
  const std::string path = dir_ + "/not.gguf";
  std::ofstream(path) << "not a gguf file";
  CliResult r = Forge("tokenize -m '" + path + "' hello");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("forge tokenize: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace forge
