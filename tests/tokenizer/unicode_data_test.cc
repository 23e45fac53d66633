// The generated Unicode tables are current (regenerating them gives the checked-in file) and give
// what BERT's normalizer needs on a few known characters.
#include "tokenizer/unicode_data.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "support/test_env.h"
#include "tokenizer_test_util.h"

namespace forge {
namespace {

std::u32string Lower(uint32_t cp) {
  std::u32string out;
  unicode_data::AppendLowercase(cp, &out);
  return out;
}

std::u32string Strip(uint32_t cp) {
  std::u32string out;
  unicode_data::AppendStripAccents(cp, &out);
  return out;
}

TEST(UnicodeDataTest, GeneratedFileIsCurrent) {
  if (!testing::FileExists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 (Debian's)";
  const std::string out = testing::TempDir() + "/unicode_data.cc";
  const std::string cmd =
      "/usr/bin/python3 " FORGE_SOURCE_DIR "/src/tokenizer/gen_unicode_data.py > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(testing::ReadTestFile(out),
            testing::ReadTestFile(FORGE_SOURCE_DIR "/src/tokenizer/unicode_data.cc"))
      << "src/tokenizer/unicode_data.cc differs from what gen_unicode_data.py writes";
}

TEST(UnicodeDataTest, KnownMappings) {
  EXPECT_EQ(Lower('A'), U"a");
  EXPECT_EQ(Lower(0xC4), U"\u00e4");                // Ä
  EXPECT_EQ(Lower(0x411), U"\u0431");               // Б
  EXPECT_EQ(Lower(0x130), U"i\u0307");              // İ: full mapping, two code points
  EXPECT_EQ(Lower(0x4E2D), U"\u4e2d");              // no case
  EXPECT_EQ(Strip(0xC4), U"A");                     // Ä
  EXPECT_EQ(Strip(0x1EED), U"u");                   // ử: u + horn + hook above
  EXPECT_EQ(Strip(0x1EC7), U"e");                   // ệ
  EXPECT_EQ(Strip(0xD55C), U"\u1112\u1161\u11ab");  // 한 -> jamo
  EXPECT_EQ(Strip('a'), U"a");
  EXPECT_STREQ(unicode_data::kUnicodeVersion, "14.0.0");
}

}  // namespace
}  // namespace forge
