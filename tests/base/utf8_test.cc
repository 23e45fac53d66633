// UTF-8 handling against Python's bytes.decode("utf-8", "replace") on random byte strings (an
// independent implementation of the same maximal-subpart rule), and streaming == one shot.
#include "base/utf8.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "support/test_env.h"

namespace forge {
namespace {

// Random bytes biased towards the interesting ones: leads, continuations, edges of ranges.
std::vector<std::string> RandomByteStrings(int count) {
  static const uint8_t kBytes[] = {'a',  ' ',  0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                   0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED,
                                   0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};
  std::mt19937 rng(7);
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) {
      s.push_back(
          static_cast<char>(rng() % 4 == 0 ? rng() % 256 : kBytes[rng() % std::size(kBytes)]));
    }
    out.push_back(s);
  }
  return out;
}

std::string Hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h.push_back(digits[c >> 4]);
    h.push_back(digits[c & 15]);
  }
  return h;
}

TEST(Utf8Test, SanitizeMatchesPythonReplace) {
  const std::vector<std::string> inputs = RandomByteStrings(3000);
  const std::string dir = testing::TempDir();
  {
    std::ofstream job(dir + "/in.txt");
    for (const std::string& s : inputs) job << Hex(s) << "\n";
  }
  const std::string python =
      testing::FileExists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string cmd = python +
                          " -c 'import sys,json; print(json.dumps([bytes.fromhex(l.strip())"
                          ".decode(\"utf-8\", \"replace\") for l in open(sys.argv[1])]))' " +
                          dir + "/in.txt > " + dir + "/out.json";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir + "/out.json");
  const auto expected = nlohmann::json::parse(in).get<std::vector<std::string>>();
  ASSERT_EQ(expected.size(), inputs.size());
  int invalid = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string got;
    EXPECT_EQ(utf8::AppendSanitized(inputs[i], true, &got), inputs[i].size());
    EXPECT_EQ(got, expected[i]) << "input " << Hex(inputs[i]);
    EXPECT_EQ(utf8::IsValid(inputs[i]), got == inputs[i]) << Hex(inputs[i]);
    invalid += !utf8::IsValid(inputs[i]);
  }
  EXPECT_GT(invalid, 1000);  // the corpus does exercise the error paths
}

TEST(Utf8Test, StreamingEqualsOneShotAtEverySplit) {
  for (const std::string& s : RandomByteStrings(500)) {
    std::string whole;
    utf8::AppendSanitized(s, true, &whole);
    for (size_t cut = 0; cut <= s.size(); ++cut) {
      std::string out, pending;
      const std::string first = s.substr(0, cut);
      pending = first.substr(utf8::AppendSanitized(first, false, &out));
      EXPECT_LE(pending.size(), 3u);
      pending += s.substr(cut);
      utf8::AppendSanitized(pending, true, &out);
      EXPECT_EQ(out, whole) << Hex(s) << " cut at " << cut;
    }
  }
}

TEST(Utf8Test, DecodeAndEncode) {
  const std::string s = "a\u00e9\u4e2d\U0001F999";
  size_t pos = 0;
  std::vector<uint32_t> cps;
  while (pos < s.size()) cps.push_back(utf8::DecodeAt(s, &pos));
  EXPECT_EQ(cps, (std::vector<uint32_t>{'a', 0xE9, 0x4E2D, 0x1F999}));
  std::string back;
  for (uint32_t cp : cps) utf8::Append(cp, &back);
  EXPECT_EQ(back, s);
  EXPECT_EQ(utf8::Encode(0xD800), "\uFFFD");  // surrogates are not encodable
  EXPECT_EQ(utf8::Encode(0x110000), "\uFFFD");
}

}  // namespace
}  // namespace forge
