// Stop conditions: EOS / stop tokens / max_tokens, and the streaming stop-string matcher's
// matches and held-back bytes (partial prefixes, overlapping stops, multibyte characters).
#include "sampling/stop.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace forge {
namespace {

TEST(CheckTokenStopTest, EosStopTokensAndLength) {
  SamplingParams p;
  p.max_tokens = 4;
  p.stop_token_ids = {7};
  const std::vector<int32_t> eos = {2};
  auto check = [&](std::vector<int32_t> generated) { return CheckTokenStop(p, eos, generated); };
  EXPECT_EQ(check({5}), FinishReason::kNone);
  EXPECT_EQ(check({5, 2}), FinishReason::kStop);
  EXPECT_EQ(check({5, 7}), FinishReason::kStop);
  EXPECT_EQ(check({2, 5}), FinishReason::kNone);  // only the newest token counts
  EXPECT_EQ(check({5, 5, 5, 5}), FinishReason::kLength);
  EXPECT_EQ(check({5, 5, 5, 2}), FinishReason::kStop);  // a stop beats the length limit
  p.ignore_eos = true;
  EXPECT_EQ(check({5, 2}), FinishReason::kNone);
  EXPECT_EQ(check({5, 7}), FinishReason::kStop);  // ignore_eos leaves stop_token_ids alone
  p.ignore_eos = false;
  p.min_tokens = 2;
  EXPECT_EQ(check({2}), FinishReason::kNone);  // within min_tokens
  EXPECT_EQ(check({5, 7}), FinishReason::kNone);
  EXPECT_EQ(check({5, 5, 2}), FinishReason::kStop);
  p.max_tokens = -1;
  EXPECT_EQ(check(std::vector<int32_t>(100000, 5)), FinishReason::kNone);
}

TEST(StopStringMatcherTest, NoStopsHoldsNothing) {
  StopStringMatcher m({});
  StopScan s = m.Scan("hello");
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.emit_end, 5u);
  EXPECT_EQ(s.held_back, 0u);
}

TEST(StopStringMatcherTest, FindsAStopAndCutsBeforeIt) {
  StopStringMatcher m({"###", "\nUser:"});
  StopScan s = m.Scan("The answer is 4.\nUser: and");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.stop_index, 1);
  EXPECT_EQ(s.emit_end, 16u);  // "The answer is 4."
  EXPECT_EQ(s.held_back, 0u);
  s = m.Scan("###");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.stop_index, 0);
  EXPECT_EQ(s.emit_end, 0u);
}

TEST(StopStringMatcherTest, HoldsBackAPartialPrefixAtTheEnd) {
  StopStringMatcher m({"\nUser:"});
  struct Case {
    std::string text;
    size_t held;
  };
  for (const Case& c : std::vector<Case>{{"abc", 0},
                                         {"abc\n", 1},
                                         {"abc\nUs", 3},
                                         {"abc\nUser", 5},
                                         {"abc\nUsex", 0},  // diverged: released
                                         {"\nU\nUse", 4},   // the later start counts
                                         {"User:", 0},      // the stop's tail is no prefix
                                         {"\n", 1}}) {
    StopScan s = m.Scan(c.text);
    EXPECT_FALSE(s.stopped) << c.text;
    EXPECT_EQ(s.held_back, c.held) << c.text;
    EXPECT_EQ(s.emit_end, c.text.size() - c.held) << c.text;
  }
}

TEST(StopStringMatcherTest, OverlappingStops) {
  // The stop that completes first wins; at the same end, the longer one.
  StopStringMatcher m({"abcd", "bc"});
  StopScan s = m.Scan("xabcd");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.stop_index, 1);
  EXPECT_EQ(s.emit_end, 2u);

  StopStringMatcher same_end({"b", "ab"});
  s = same_end.Scan("xab");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.stop_index, 1);
  EXPECT_EQ(s.emit_end, 1u);

  // Holdback is the longest suffix that begins any stop.
  StopStringMatcher two({"abc", "bcd"});
  EXPECT_EQ(two.Scan("xab").held_back, 2u);  // "ab" < "abc"
  EXPECT_EQ(two.Scan("xbc").held_back, 2u);  // "bc" < "bcd"
  EXPECT_EQ(two.Scan("xabc").stop_index, 0);
  EXPECT_EQ(two.Scan("xabd").held_back, 0u);

  // A self-overlapping stop.
  StopStringMatcher self({"abab"});
  EXPECT_EQ(self.Scan("aba").held_back, 3u);
  EXPECT_EQ(self.Scan("ababa").emit_end, 0u);
  EXPECT_TRUE(self.Scan("xxabab").stopped);
  EXPECT_EQ(self.Scan("xxabab").emit_end, 2u);
  StopStringMatcher aab({"aab"});
  EXPECT_EQ(aab.Scan("aaa").held_back, 2u);
  EXPECT_EQ(aab.Scan("aaab").emit_end, 1u);
}

TEST(StopStringMatcherTest, MultibyteStops) {
  // "é" is C3 A9, "ü" is C3 BC: byte-wise prefixes are held, other characters are not.
  StopStringMatcher m({"\xC3\xA9t\xC3\xA9"});           // "été"
  EXPECT_EQ(m.Scan("caf\xC3").held_back, 1u);           // half an "é"
  EXPECT_EQ(m.Scan("caf\xC3\xA9").held_back, 2u);       // a whole "é"
  EXPECT_EQ(m.Scan("caf\xC3\xA9t\xC3").held_back, 4u);  // "ét" + half
  EXPECT_EQ(m.Scan("caf\xC3\xBC").held_back, 0u);       // "ü" is not "é"
  StopScan s = m.Scan("l'\xC3\xA9t\xC3\xA9 dernier");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.emit_end, 2u);
  StopStringMatcher emoji({"\xF0\x9F\x98\x80"});  // U+1F600
  EXPECT_EQ(emoji.Scan("hi \xF0\x9F\x98").held_back, 3u);
  EXPECT_EQ(emoji.Scan("hi \xF0\x9F\x99").held_back, 0u);
}

TEST(StopStringMatcherTest, StreamingIsIndependentOfChunking) {
  // Feed the same text in chunks of every size; what is emitted and where it stops must match a
  // one-shot scan, and emit_end never moves back.
  const std::vector<std::string> stops = {"END", "ENDING", "\xC3\xA9\xC3\xA9", "nd!"};
  const std::vector<std::string> texts = {"the ENDING", "stop nd!",
                                          "caf\xC3\xA9\xC3\xA8 \xC3\xA9\xC3\xA9 x", "E EN EN",
                                          "no stop here"};
  StopStringMatcher m(stops);
  for (const std::string& text : texts) {
    const StopScan whole = m.Scan(text);
    for (size_t chunk = 1; chunk <= text.size(); ++chunk) {
      size_t scanned = 0, emitted = 0;
      StopScan last;
      for (size_t len = std::min(chunk, text.size());; len = std::min(len + chunk, text.size())) {
        last = m.Scan(std::string_view(text).substr(0, len), scanned);
        ASSERT_GE(last.emit_end, emitted) << text << " chunk " << chunk;
        emitted = last.emit_end;
        scanned = len;
        if (last.stopped || len == text.size()) break;
      }
      EXPECT_EQ(last.stopped, whole.stopped) << text << " chunk " << chunk;
      EXPECT_EQ(last.stop_index, whole.stop_index) << text << " chunk " << chunk;
      EXPECT_EQ(last.emit_end, whole.emit_end) << text << " chunk " << chunk;
    }
  }
  EXPECT_TRUE(m.Scan("the ENDING").stopped);
  EXPECT_EQ(m.Scan("the ENDING").stop_index, 0);  // "END" completes before "ENDING"
}

}  // namespace
}  // namespace forge
