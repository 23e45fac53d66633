// Matching against independent answers: random regular grammars against the same language
// written as a Python regex (python3-regex fullmatch), context-free grammars against hand-written
// recognizers, on random strings and on strings generated from the grammar; text fed in pieces
// that split UTF-8 characters matches like text fed at once; rollback and forks.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocab.h"
#include "grammar_test_util.h"

namespace forge {
namespace {

// Letters of the random languages: ASCII and 2-, 3- and 4-byte UTF-8 characters, some at the
// edges where encodings change.
const std::vector<std::string> kAlphabet = {
    "a",      "b",      "c",      "\u00e9", "\u4e2d", "\U0001F600", "\u0080",     "\u07ff",
    "\u0800", "\u0fff", "\u1000", "\ud7ff", "\ue000", "\uffff",     "\U00010000", "\U0010ffff"};

uint32_t FirstCodepoint(const std::string& s) {
  const unsigned char c = static_cast<unsigned char>(s[0]);
  if (c < 0x80) return c;
  const int len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  uint32_t cp = c & (0x7F >> len);
  for (int i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
  return cp;
}

struct Fragment {
  std::string gbnf;
  std::string py;  // always a group or a single character, so a quantifier applies to it all
  bool nullable = false;
};

class RandomRegular {
 public:
  explicit RandomRegular(uint32_t seed) : rng_(seed) {}

  Fragment Gen(int depth) {
    const int kind = depth >= 3 ? static_cast<int>(rng_() % 2) : static_cast<int>(rng_() % 5);
    switch (kind) {
      case 0: {  // literal
        std::string s;
        const int n = 1 + static_cast<int>(rng_() % 3);
        for (int i = 0; i < n; ++i) s += kAlphabet[rng_() % kAlphabet.size()];
        return {"\"" + s + "\"", "(?:" + s + ")", false};
      }
      case 1: {  // class, negated class or any character
        if (rng_() % 6 == 0) return {".", "(?:.)", false};
        std::string members;
        for (const std::string& c : kAlphabet) {
          if (rng_() % 3 == 0) members += c;
        }
        if (rng_() % 2) {  // and a range between two letters
          std::string x = kAlphabet[rng_() % kAlphabet.size()];
          std::string y = kAlphabet[rng_() % kAlphabet.size()];
          if (FirstCodepoint(x) > FirstCodepoint(y)) std::swap(x, y);
          members += x + "-" + y;
        }
        if (members.empty()) members = "b";
        const std::string neg = rng_() % 3 == 0 ? "^" : "";
        return {"[" + neg + members + "]", "[" + neg + members + "]", false};
      }
      case 2: {  // sequence
        Fragment out{"(", "(?:", true};
        const int n = 2 + static_cast<int>(rng_() % 2);
        for (int i = 0; i < n; ++i) {
          Fragment f = Gen(depth + 1);
          out.gbnf += (i ? " " : "") + f.gbnf;
          out.py += f.py;
          out.nullable = out.nullable && f.nullable;
        }
        out.gbnf += ")";
        out.py += ")";
        return out;
      }
      case 3: {  // alternation
        Fragment out{"(", "(?:", false};
        const int n = 2 + static_cast<int>(rng_() % 2);
        for (int i = 0; i < n; ++i) {
          Fragment f = Gen(depth + 1);
          out.gbnf += (i ? " | " : "") + f.gbnf;
          out.py += (i ? "|" : "") + f.py;
          out.nullable = out.nullable || f.nullable;
        }
        out.gbnf += ")";
        out.py += ")";
        return out;
      }
      default: {  // repetition
        Fragment f = Gen(depth + 1);
        static const char* kOps[] = {"*", "+", "?", "{2}", "{1,}", "{0,3}", "{2,4}"};
        std::string op = kOps[rng_() % std::size(kOps)];
        const bool unbounded = op == "*" || op == "+" || op == "{1,}";
        if (unbounded && f.nullable) op = "{0,3}";  // x* of a nullable x is refused (loops)
        const bool nullable = op == "*" || op == "?" || op == "{0,3}" || f.nullable;
        return {"(" + f.gbnf + ")" + op, "(?:" + f.py + ")" + op, nullable};
      }
    }
  }

  std::string RandomString() {
    std::string s;
    const int n = static_cast<int>(rng_() % 8);
    for (int i = 0; i < n; ++i) s += kAlphabet[rng_() % kAlphabet.size()];
    return s;
  }

  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_;
};

// A vocabulary of the alphabet's characters and of every byte alone, so that random walks also
// pass through the middle of characters. The last token ends generation.
std::shared_ptr<const TokenVocabView> ByteAndCharVocab() {
  std::vector<std::string> pieces = kAlphabet;
  for (const std::string& c : kAlphabet) {
    if (c.size() > 1) {
      for (char b : c) pieces.push_back(std::string(1, b));
    }
  }
  pieces.push_back("");
  return TokenVocabView::Create(pieces, {static_cast<TokenId>(pieces.size() - 1)});
}

bool MatchWhole(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.Accept(s) && m.CanEnd();
}

// The same text in random pieces (cutting characters anywhere), all or nothing per piece.
bool MatchInPieces(const std::shared_ptr<const Grammar>& g, const std::string& s,
                   std::mt19937* rng) {
  GrammarMatcher m(g);
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t len = 1 + (*rng)() % 3;
    if (!m.Accept(std::string_view(s).substr(pos, len))) return false;
    pos += len;
  }
  return m.CanEnd();
}

// Strings from the grammar: random walks over a vocab of characters and single bytes.
std::vector<std::string> Generate(const std::shared_ptr<const Grammar>& g,
                                  const TokenVocabView& vocab, int count, std::mt19937* rng) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    GrammarMatcher m(g);
    testing::Walk w = testing::RandomWalk(&m, vocab, rng, 25, 40, 0.3,
                                          [](const GrammarMatcher&, const auto&, const auto&) {});
    if (w.ended) out.push_back(w.text);
  }
  return out;
}

TEST(GrammarMatchTest, RandomRegularGrammarsMatchPythonRegex) {
  RandomRegular gen(20251127);
  auto vocab = ByteAndCharVocab();
  struct Case {
    std::shared_ptr<const Grammar> grammar;
    std::string gbnf;
    std::vector<std::string> strings;
  };
  std::vector<Case> cases;
  nlohmann::json job;
  int generated = 0;
  for (int i = 0; i < 150; ++i) {
    const Fragment f = gen.Gen(0);
    Case c;
    c.gbnf = "root ::= " + f.gbnf + "\n";
    auto g = Grammar::FromGbnf(c.gbnf);
    ASSERT_TRUE(g.ok()) << g.status().ToString() << "\n" << c.gbnf;
    c.grammar = *g;
    for (int k = 0; k < 40; ++k) c.strings.push_back(gen.RandomString());
    for (std::string& s : Generate(c.grammar, *vocab, 15, &gen.rng())) {
      c.strings.push_back(std::move(s));
      ++generated;
    }
    job["fullmatch"].push_back({{"regex", f.py}, {"strings", c.strings}});
    cases.push_back(std::move(c));
  }
  const nlohmann::json result = testing::RunGrammarOracle(job);
  ASSERT_FALSE(result.is_null());
  int positives = 0, total = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    for (size_t k = 0; k < c.strings.size(); ++k) {
      const bool want = result["fullmatch"][i][k].get<bool>();
      positives += want ? 1 : 0;
      ++total;
      EXPECT_EQ(MatchWhole(c.grammar, c.strings[k]), want)
          << c.gbnf << "regex " << job["fullmatch"][i]["regex"] << " string '" << c.strings[k]
          << "'";
      EXPECT_EQ(MatchInPieces(c.grammar, c.strings[k], &gen.rng()), want)
          << c.gbnf << "string '" << c.strings[k] << "' in pieces";
    }
  }
  std::printf("[ oracle   ] python3-regex %s: %d strings (%d generated), %d match\n",
              result["versions"]["regex"].get<std::string>().c_str(), total, generated, positives);
  // Both outcomes are exercised in quantity.
  EXPECT_GT(positives, total / 10);
  EXPECT_GT(total - positives, total / 10);
}

// Hand-written recognizers for context-free languages.
bool Balanced(const std::string& s) {
  std::string stack;
  for (char c : s) {
    if (c == '(' || c == '[') {
      stack.push_back(c);
    } else if (c == ')' || c == ']') {
      if (stack.empty() || stack.back() != (c == ')' ? '(' : '[')) return false;
      stack.pop_back();
    } else {
      return false;
    }
  }
  return stack.empty();
}

bool AnBn(const std::string& s) {
  const size_t n = s.size() / 2;
  return s.size() % 2 == 0 && s == std::string(n, 'a') + std::string(n, 'b');
}

bool Palindrome(const std::string& s) {
  for (char c : s) {
    if (c != 'a' && c != 'b') return false;
  }
  return std::equal(s.begin(), s.end(), s.rbegin());
}

bool EqualCounts(const std::string& s) {
  int d = 0;
  for (char c : s) {
    if (c != 'a' && c != 'b') return false;
    d += c == 'a' ? 1 : -1;
  }
  return d == 0;
}

// expr := term (('+'|'-') term)* ; term := factor (('*'|'/') factor)* ;
// factor := digits | '(' expr ')' | '-' factor
class Arithmetic {
 public:
  static bool Check(const std::string& s) {
    Arithmetic a(s);
    return a.Expr(0) && a.pos_ == s.size();
  }

 private:
  explicit Arithmetic(const std::string& s) : s_(s) {}
  bool Expr(int depth) {
    if (!Term(depth)) return false;
    while (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
      ++pos_;
      if (!Term(depth)) return false;
    }
    return true;
  }
  bool Term(int depth) {
    if (!Factor(depth)) return false;
    while (pos_ < s_.size() && (s_[pos_] == '*' || s_[pos_] == '/')) {
      ++pos_;
      if (!Factor(depth)) return false;
    }
    return true;
  }
  bool Factor(int depth) {
    if (depth > 50 || pos_ >= s_.size()) return false;
    if (std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return true;
    }
    if (s_[pos_] == '-') {
      ++pos_;
      return Factor(depth + 1);
    }
    if (s_[pos_] != '(') return false;
    ++pos_;
    if (!Expr(depth + 1) || pos_ >= s_.size() || s_[pos_] != ')') return false;
    ++pos_;
    return true;
  }
  const std::string& s_;
  size_t pos_ = 0;
};

TEST(GrammarMatchTest, ContextFreeGrammarsMatchHandWrittenRecognizers) {
  struct Language {
    const char* name;
    const char* gbnf;
    std::string alphabet;
    std::function<bool(const std::string&)> recognizer;
  };
  const std::vector<Language> languages = {
      {"balanced", "root ::= (\"(\" root \")\" | \"[\" root \"]\")*\n", "()[]", Balanced},
      {"anbn", "root ::= \"a\" root \"b\" | \"\"\n", "ab", AnBn},
      {"palindromes", "root ::= \"a\" root \"a\" | \"b\" root \"b\" | \"a\" | \"b\" | \"\"\n", "ab",
       Palindrome},
      {"equal-counts", "root ::= \"a\" root \"b\" root | \"b\" root \"a\" root | \"\"\n", "ab",
       EqualCounts},
      {"arithmetic",
       "root ::= expr\n"
       "expr ::= term ([+-] term)*\n"
       "term ::= factor ([*/] factor)*\n"
       "factor ::= [0-9]+ | \"(\" expr \")\" | \"-\" factor\n",
       "0123456789+-*/()", Arithmetic::Check},
  };
  std::mt19937 rng(99);
  for (const Language& lang : languages) {
    auto g = Grammar::FromGbnf(lang.gbnf);
    ASSERT_TRUE(g.ok()) << lang.name << ": " << g.status().ToString();
    std::vector<std::string> pieces;
    for (char c : lang.alphabet) pieces.push_back(std::string(1, c));
    pieces.push_back("");
    auto vocab = TokenVocabView::Create(pieces, {static_cast<TokenId>(pieces.size() - 1)});
    std::vector<std::string> strings;
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      const int n = static_cast<int>(rng() % 13);
      for (int k = 0; k < n; ++k) s.push_back(lang.alphabet[rng() % lang.alphabet.size()]);
      strings.push_back(s);
    }
    std::vector<std::string> generated = Generate(*g, *vocab, 300, &rng);
    strings.insert(strings.end(), generated.begin(), generated.end());
    int positives = 0;
    for (const std::string& s : strings) {
      const bool want = lang.recognizer(s);
      positives += want ? 1 : 0;
      ASSERT_EQ(MatchWhole(*g, s), want) << lang.name << " '" << s << "'";
    }
    for (const std::string& s : generated) EXPECT_TRUE(lang.recognizer(s)) << lang.name << " " << s;
    std::printf("[ checked  ] %-12s %zu strings (%zu generated), %d in the language\n", lang.name,
                strings.size(), generated.size(), positives);
    EXPECT_GT(positives, 100) << lang.name;
  }
}

TEST(GrammarMatchTest, InvalidUtf8IsNeverAccepted) {
  auto g = Grammar::FromGbnf("root ::= .*\n");
  ASSERT_TRUE(g.ok());
  GrammarMatcher m(*g);
  EXPECT_TRUE(m.Accept("\xE4\xB8"));  // the first two bytes of U+4E2D
  EXPECT_FALSE(m.CanEnd());           // ... an incomplete character
  EXPECT_TRUE(m.Accept("\xAD"));
  EXPECT_TRUE(m.CanEnd());
  for (const char* bad : {"\x80", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80",
                          "\xF4\x90\x80\x80", "\xF5", "\xFF", "\xC3\x28"}) {
    GrammarMatcher fresh(*g);
    EXPECT_FALSE(fresh.Accept(bad) && fresh.CanEnd()) << ::testing::PrintToString(bad);
  }
  // Every byte value alone: accepted exactly when it is an ASCII character.
  for (int b = 0; b < 256; ++b) {
    GrammarMatcher fresh(*g);
    const std::string s(1, static_cast<char>(b));
    EXPECT_EQ(fresh.Accept(s) && fresh.CanEnd(), b < 0x80) << b;
  }
}

TEST(GrammarMatchTest, RollbackRestoresEarlierStates) {
  auto g = Grammar::FromGbnf("root ::= \"ab\" [0-9]+ \"!\"\n");
  ASSERT_TRUE(g.ok());
  GrammarMatcherOptions options;
  options.max_rollback = 3;
  GrammarMatcher m(*g, options);
  ASSERT_TRUE(m.Accept("a"));
  ASSERT_TRUE(m.Accept("b1"));
  ASSERT_TRUE(m.Accept("2!"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Accept("x"));  // refused input is not remembered
  ASSERT_TRUE(m.Rollback(1));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_TRUE(m.Accept("3"));
  EXPECT_FALSE(m.Accept("b"));
  ASSERT_TRUE(m.Rollback(2));  // back to after "a"
  EXPECT_FALSE(m.Accept("1"));
  EXPECT_TRUE(m.Accept("b"));
  // Only max_rollback steps are remembered.
  ASSERT_TRUE(m.Accept("1"));
  ASSERT_TRUE(m.Accept("2"));
  ASSERT_TRUE(m.Accept("3"));
  EXPECT_FALSE(m.Rollback(4));
  EXPECT_TRUE(m.Rollback(3));
  EXPECT_TRUE(m.Accept("5!"));
  EXPECT_TRUE(m.CanEnd());
  m.Reset();
  EXPECT_TRUE(m.Accept("ab0!"));
  EXPECT_TRUE(m.CanEnd());
}

TEST(GrammarMatchTest, ForksAreIndependentAndEndTokensTerminate) {
  auto g = Grammar::FromGbnf("root ::= (\"x\" | \"y\")+\n");
  ASSERT_TRUE(g.ok());
  auto vocab = TokenVocabView::Create({"x", "y", "xy", "", "z"}, {3});
  GrammarMatcher a(*g);
  ASSERT_TRUE(a.AcceptToken(*vocab, 0));
  GrammarMatcher b = a;  // fork
  EXPECT_TRUE(a.AcceptToken(*vocab, 2));
  EXPECT_TRUE(b.AcceptToken(*vocab, 1));
  EXPECT_FALSE(b.AcceptToken(*vocab, 4));
  std::vector<uint32_t> mask(vocab->mask_words());
  a.FillMask(*vocab, mask.data());
  EXPECT_EQ(mask[0], 0b01111u);  // x y xy, and the end token (the grammar can end)
  EXPECT_TRUE(a.AcceptToken(*vocab, 3));
  EXPECT_TRUE(a.IsTerminated());
  EXPECT_FALSE(a.CanEnd());
  EXPECT_FALSE(a.AcceptToken(*vocab, 0));
  a.FillMask(*vocab, mask.data());
  EXPECT_EQ(mask[0], 0u);
  EXPECT_TRUE(a.Rollback(1));  // the end token, undone
  EXPECT_TRUE(a.CanEnd());
  // The fork never saw a's tokens.
  EXPECT_TRUE(b.CanEnd());
  GrammarMatcher fresh(*g);
  EXPECT_FALSE(fresh.AcceptToken(*vocab, 3));  // nothing accepted yet: cannot end
  fresh.FillMask(*vocab, mask.data());
  EXPECT_EQ(mask[0], 0b00111u);
}

}  // namespace
}  // namespace forge
