// JsonScanner and the scans built on it: brackets and commas inside strings (escaped quotes and
// backslashes included) are not structure, depth counts '[' and '{', and text that is not valid
// JSON still scans.
#include "base/json_scan.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace forge {
namespace {

// The structural bytes of text, each followed by the depth after it in brackets.
std::string Walk(std::string_view text, size_t pos = 0) {
  std::string out;
  JsonScanner scan(text, pos);
  while (scan.Next()) {
    EXPECT_EQ(text[scan.pos()], scan.byte());
    out += scan.byte();
    out += "(" + std::to_string(scan.depth()) + ")";
  }
  return out;
}

TEST(JsonScanTest, SkipsStringsAndCountsDepth) {
  EXPECT_EQ(Walk(R"({"a":[1,2]})"), "{(1):(1)[(2)1(2),(2)2(2)](1)}(0)");
  EXPECT_EQ(Walk(R"(["[{,", "\"]", "\\"])"), "[(1),(1) (1),(1) (1)](0)");
  EXPECT_EQ(Walk(R"( "]}"x)"), " (0)x(0)");
  EXPECT_EQ(Walk("]]["), "](-1)](-2)[(-1)");
  EXPECT_EQ(Walk(R"("unterminated [ {)"), "");
  EXPECT_EQ(Walk(R"("ends in a backslash\)"), "");
  EXPECT_EQ(Walk(R"(x{"k":1})", 1), "{(1):(1)1(1)}(0)");
  EXPECT_EQ(Walk(""), "");
}

TEST(JsonScanTest, OpensAndCloses) {
  JsonScanner scan("[}a");
  ASSERT_TRUE(scan.Next());
  EXPECT_TRUE(scan.opens());
  EXPECT_FALSE(scan.closes());
  ASSERT_TRUE(scan.Next());
  EXPECT_TRUE(scan.closes());
  ASSERT_TRUE(scan.Next());
  EXPECT_FALSE(scan.opens());
  EXPECT_FALSE(scan.closes());
  EXPECT_FALSE(scan.Next());
}

TEST(JsonScanTest, ValueEnd) {
  constexpr size_t npos = std::string_view::npos;
  EXPECT_EQ(JsonValueEnd(R"({"a": "}"} tail)", 0, 8), 10u);
  EXPECT_EQ(JsonValueEnd(R"(x [1, [2], {"b": "]\""}] y)", 2, 8), 24u);
  EXPECT_EQ(JsonValueEnd(R"({"a": [1, 2})", 0, 8), npos);  // never back to depth 0
  EXPECT_EQ(JsonValueEnd(R"({"open)", 0, 8), npos);
  EXPECT_EQ(JsonValueEnd("[[[]]]", 0, 3), 6u);
  EXPECT_EQ(JsonValueEnd("[[[[]]]]", 0, 3), npos);  // deeper than the limit
}

TEST(JsonScanTest, NestingDepth) {
  EXPECT_EQ(JsonNestingDepth(""), 0);
  EXPECT_EQ(JsonNestingDepth("42"), 0);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [[1], {"b": []}]})"), 4);
  EXPECT_EQ(JsonNestingDepth(R"(["[[[[", "\"[[["])"), 1);
  EXPECT_EQ(JsonNestingDepth("[][][]"), 1);
  EXPECT_EQ(JsonNestingDepth("]]][["), 0);  // depth below zero first: never above it
  EXPECT_EQ(JsonNestingDepth(std::string(1000, '[')), 1000);
}

}  // namespace
}  // namespace forge
