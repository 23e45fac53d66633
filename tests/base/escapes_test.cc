// HexDigitValue and ReadHexDigits over bytes and code points; AppendControlEscape.
#include "base/escapes.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace forge {
namespace {

TEST(EscapesTest, DigitValues) {
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  for (char c : std::string_view("gG/:@`-x \xC3")) EXPECT_EQ(HexDigitValue(c), -1) << c;
  EXPECT_EQ(HexDigitValue(0xFF10), -1);  // a fullwidth digit is not one
}

TEST(EscapesTest, ReadsRuns) {
  size_t pos = 2;
  EXPECT_EQ(ReadHexDigits(std::string_view("\\x4aZ"), &pos, 2), 0x4Au);
  EXPECT_EQ(pos, 4u);
  pos = 0;
  EXPECT_EQ(ReadHexDigits(std::string_view("FFFFFFFF"), &pos, 8), 0xFFFFFFFFu);
  pos = 0;
  EXPECT_EQ(ReadHexDigits(std::string_view("12g4"), &pos, 4), std::nullopt);
  EXPECT_EQ(pos, 2u);  // at the first that is not a digit
  pos = 1;
  EXPECT_EQ(ReadHexDigits(std::string_view("x1"), &pos, 2), std::nullopt);
  EXPECT_EQ(pos, 2u);  // at the end
  const std::vector<uint32_t> cps = {'0', 'e', 0x10041, '1'};
  pos = 0;
  EXPECT_EQ(ReadHexDigits(cps, &pos, 2), 0x0Eu);
  EXPECT_EQ(ReadHexDigits(cps, &pos, 1), std::nullopt);
  EXPECT_EQ(pos, 2u);
}

TEST(EscapesTest, ControlCharacters) {
  std::string out;
  for (uint32_t c : {uint32_t{'\n'}, uint32_t{'\t'}, uint32_t{'\r'}, uint32_t{0}, uint32_t{0x1B},
                     uint32_t{0x7F}}) {
    EXPECT_TRUE(AppendControlEscape(c, &out)) << c;
  }
  EXPECT_EQ(out, "\\n\\t\\r\\x00\\x1B\\x7F");
  for (uint32_t c : {uint32_t{' '}, uint32_t{'a'}, uint32_t{'"'}, uint32_t{0x80}, uint32_t{0xE9},
                     uint32_t{0x2028}}) {
    EXPECT_FALSE(AppendControlEscape(c, &out)) << c;
  }
  EXPECT_EQ(out, "\\n\\t\\r\\x00\\x1B\\x7F");  // nothing appended
}

}  // namespace
}  // namespace forge
