// RegexToGbnf's reading of the pattern's bytes: strict UTF-8, as base/utf8.h and the GBNF parser
// read it.
#include "grammar/regex_to_gbnf.h"

#include <gtest/gtest.h>

#include <string>

#include "base/utf8.h"

namespace forge {
namespace {

TEST(RegexToGbnfTest, RefusesWhatIsNotStrictUtf8) {
  const char* bad[] = {
      "a\xC0\x80",          // overlong NUL
      "\xE0\x80\xAF",       // overlong '/' in three bytes
      "\xF0\x80\x80\xAF",   // overlong '/' in four bytes
      "\xED\xA0\x80",       // a UTF-16 surrogate
      "\xF4\x90\x80\x80",   // past U+10FFFF
      "\xE2\x82",           // truncated
      "\x80",               // a lone continuation byte
  };
  for (const char* p : bad) {
    ASSERT_FALSE(utf8::IsValid(p)) << "the oracle agrees it is invalid";
    auto r = RegexToGbnf(p, RegexGbnfOptions{});
    ASSERT_FALSE(r.ok()) << "accepted: " << p;
    EXPECT_NE(r.status().ToString().find("invalid UTF-8"), std::string::npos)
        << r.status().ToString();
  }
}

TEST(RegexToGbnfTest, AcceptsEveryEncodingLength) {
  for (const char* p : {"a", "\xC3\xA9", "\xE2\x82\xAC+", "[\xF0\x9F\x98\x80-\xF0\x9F\x98\x8F]",
                        "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF"}) {
    auto r = RegexToGbnf(p, RegexGbnfOptions{});
    EXPECT_TRUE(r.ok()) << p << ": " << r.status().ToString();
  }
}

}  // namespace
}  // namespace forge
