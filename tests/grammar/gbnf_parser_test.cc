// GBNF parsing: the grammars of llama.cpp's grammar guide parse and match what they describe;
// malformed grammars fail with the line and column of the fault; limits hold against inputs
// built to exhaust memory or recursion.
#include "grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"

namespace forge {
namespace {

bool Matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.Accept(text) && m.CanEnd();
}

std::shared_ptr<const Grammar> MustCompile(std::string_view text) {
  auto g = Grammar::FromGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << text;
  return g.ok() ? *g : nullptr;
}

// The error of a grammar that must not parse.
std::string ErrorOf(std::string_view text, const GrammarLimits& limits = {}) {
  auto g = Grammar::FromGbnf(text, limits);
  EXPECT_FALSE(g.ok()) << "parsed, but should not have:\n" << text;
  return g.ok() ? "" : g.status().message();
}

TEST(GbnfParserTest, ParsesRulesAlternativesAndComments) {
  auto ir = ParseGbnf(
      "# a comment line\n"
      "root ::= greeting \" \" name   # trailing comment\n"
      "greeting ::= \"hello\" | \"hi\"\n"
      "\n"
      "name ::= [A-Z] [a-z]*\n");
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  ASSERT_EQ(ir->rules[ir->root].name, "root");
  int user_rules = 0;
  for (const IrRule& r : ir->rules) user_rules += r.generated ? 0 : 1;
  EXPECT_EQ(user_rules, 3);
  auto g = MustCompile(
      "root ::= greeting \" \" name\ngreeting ::= \"hello\" | \"hi\"\nname ::= [A-Z] [a-z]*\n");
  EXPECT_TRUE(Matches(g, "hello World"));
  EXPECT_TRUE(Matches(g, "hi X"));
  EXPECT_FALSE(Matches(g, "hey World"));
  EXPECT_FALSE(Matches(g, "hi world"));
  EXPECT_FALSE(Matches(g, "hi"));
}

TEST(GbnfParserTest, ChessGrammarFromTheGuide) {
  // grammars/chess.gbnf's shape (llama.cpp's guide): newlines inside groups, nested repetition.
  auto g = MustCompile(
      "root ::= (\n"
      "    # it must start with the characters \"1. \" followed by a sequence\n"
      "    \"1. \" move \" \" move \"\\n\"\n"
      "\n"
      "    ([1-9] [0-9]? \". \" move \" \" move \"\\n\")+\n"
      ")\n"
      "move ::= (pawn | nonpawn | castle) [+#]?\n"
      "pawn ::= [a-h] [1-8]\n"
      "nonpawn ::= [NBKQR] [a-h]? [1-8]? \"x\"? [a-h] [1-8]\n"
      "castle ::= \"O-O\" \"-O\"?\n");
  EXPECT_TRUE(Matches(g, "1. e4 e5\n2. Nf3 Nc6\n"));
  EXPECT_TRUE(Matches(g, "1. e4 e5\n2. O-O-O Qxd8#\n10. a3 b6+\n"));
  EXPECT_FALSE(Matches(g, "1. e4 e5\n"));  // the + needs one more numbered line
  EXPECT_FALSE(Matches(g, "1. e9 e5\n2. a3 a6\n"));
}

TEST(GbnfParserTest, EscapesClassesAndAnyChar) {
  auto g = MustCompile("root ::= \"\\x41\\u00e9\\U0001F600\\t\\\"\\\\\" [\\[\\]] [^\\n] . \"ü\"\n");
  EXPECT_TRUE(Matches(g, "A\u00e9\U0001F600\t\"\\[xyü"));
  EXPECT_TRUE(Matches(g, "A\u00e9\U0001F600\t\"\\]\U0001F601\u4e2dü"));
  EXPECT_FALSE(Matches(g, "A\u00e9\U0001F600\t\"\\[\nyü"));
  auto range = MustCompile("root ::= [a-cx-z0-9]+ [^a-z]\n");
  EXPECT_TRUE(Matches(range, "abz09A"));
  EXPECT_TRUE(Matches(range, "c\u00e9"));
  EXPECT_FALSE(Matches(range, "abdA"));
  EXPECT_FALSE(Matches(range, "abq"));
}

TEST(GbnfParserTest, RepetitionBounds) {
  auto g = MustCompile("root ::= \"a\"{2} \"b\"{1,3} \"c\"{2,} (\"d\" \"e\"){0,2}\n");
  EXPECT_TRUE(Matches(g, "aabcc"));
  EXPECT_TRUE(Matches(g, "aabbbccccccdede"));
  EXPECT_FALSE(Matches(g, "abcc"));
  EXPECT_FALSE(Matches(g, "aaabcc"));
  EXPECT_FALSE(Matches(g, "aabbbbcc"));
  EXPECT_FALSE(Matches(g, "aabc"));
  EXPECT_FALSE(Matches(g, "aabccdedede"));
  EXPECT_TRUE(Matches(g, "aabccde"));
  // A literal as a whole is the item a repetition applies to.
  auto lit = MustCompile("root ::= \"ab\"* \"c\"\n");
  EXPECT_TRUE(Matches(lit, "ababc"));
  EXPECT_FALSE(Matches(lit, "abbc"));
}

TEST(GbnfParserTest, AlternativesContinueAfterBarAcrossLines) {
  auto g = MustCompile("root ::= \"a\" |\n  \"b\" |\n\n  \"c\"\n");
  EXPECT_TRUE(Matches(g, "a"));
  EXPECT_TRUE(Matches(g, "c"));
  EXPECT_FALSE(Matches(g, "d"));
}

TEST(GbnfParserTest, CrlfLineEndingsAndEmptyAlternatives) {
  auto g = MustCompile("root ::= x \"!\"\r\nx ::= \"a\" x | \r\n");
  auto cr = MustCompile("root ::= x\rx ::= \"y\"\r");
  EXPECT_TRUE(Matches(cr, "y"));
  EXPECT_TRUE(Matches(g, "!"));
  EXPECT_TRUE(Matches(g, "aaa!"));
  EXPECT_FALSE(Matches(g, "aab!"));
}

TEST(GbnfParserTest, ErrorsNameLineAndColumn) {
  const std::pair<const char*, const char*> kCases[] = {
      {"root ::= foo\n", "line 1, column 10: undefined rule 'foo'"},
      {"root ::= \"a\"\nbar \"b\"\n", "line 2, column 5: expected '::=' after rule name 'bar'"},
      {"root ::= \"abc\n", "line 1, column 10: unterminated string literal"},
      {"root ::= [a-z\n", "line 1, column 10: unterminated character class"},
      {"root ::= [z-a]\n", "line 1, column 11: character range is out of order"},
      {"root ::= \"a\"\n  | \"b\"\n", "line 2, column 3: expected a rule name"},
      {"root ::= (\"a\" \"b\"\n",
       "line 2, column 1: expected ')' to close the group opened at line 1, column 10"},
      {"root ::= * \"a\"\n", "line 1, column 10: '*' must follow a symbol, literal or group"},
      {"root ::= \"a\"{3,2}\n",
       "line 1, column 13: repetition {3,2} has its maximum below its minimum"},
      {"root ::= \"a\"{2\n", "line 1, column 15: expected '}' to close the repetition"},
      {"root ::= \"\\q\"\n", "line 1, column 11: unknown escape '\\q'"},
      {"root ::= \"\\x4\"\n", "line 1, column 11: expected 2 hex digits"},
      {"root ::= \"a\" ) \"b\"\n",
       "line 1, column 14: expected end of line after rule 'root', found ')'"},
      {"root ::= \"a\"\nroot ::= \"b\"\n",
       "line 2, column 1: rule 'root' is defined twice (first at line 1, column 1)"},
      {"x ::= \"a\"\n", "grammar has no rule named 'root'"},
      {"", "grammar has no rule named 'root'"},
      {"root ::= <think> \"a\"\n",
       "line 1, column 10: token references (<...>, <[id]>, !<...>) are not supported"},
      // Columns count characters, not bytes.
      {"root ::= \"ü\" ü\n",
       "line 1, column 14: expected end of line after rule 'root', found 'ü'"},
      {"root ::= \"\xC3\x28\"\n", "line 1, column 11: invalid UTF-8"},
      {"root ::= \"\\uD800\"\n",
       "line 1, column 11: a surrogate code point cannot be matched in UTF-8 text"},
  };
  for (const auto& [text, error] : kCases) EXPECT_EQ(ErrorOf(text), error) << text;
}

TEST(GbnfParserTest, LeftRecursionIsRefused) {
  EXPECT_NE(ErrorOf("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n")
                .find("left recursion: rule 'expr'"),
            std::string::npos);
  // Through a rule that can be empty.
  EXPECT_NE(ErrorOf("root ::= opt root \"x\" | \"y\"\nopt ::= \"a\"?\n").find("left recursion"),
            std::string::npos);
  // A star over something that can be empty would loop without reading.
  EXPECT_NE(ErrorOf("root ::= (\"a\"?)*\n").find("left recursion"), std::string::npos);
  // Right recursion is fine.
  auto g = MustCompile("root ::= \"a\" root | \"b\"\n");
  EXPECT_TRUE(Matches(g, "aaab"));
}

TEST(GbnfParserTest, LimitsBoundHostileInput) {
  GrammarLimits limits;
  limits.max_nesting = 20;
  std::string deep = "root ::= " + std::string(25, '(') + "\"a\"" + std::string(25, ')') + "\n";
  EXPECT_EQ(ErrorOf(deep, limits), "line 1, column 30: groups nested deeper than 20");
  // A million-deep nesting is refused at the limit, not by running out of stack.
  std::string very_deep = "root ::= " + std::string(1000000, '(');
  EXPECT_NE(ErrorOf(very_deep).find("nested deeper than 100"), std::string::npos);

  EXPECT_NE(ErrorOf("root ::= \"a\"{1000000}\n").find("repetition count above the limit"),
            std::string::npos);
  limits = GrammarLimits();
  limits.max_symbols = 5000;
  // Nested repetitions multiply only in what they match, not in size: this stays small.
  auto small = Grammar::FromGbnf("root ::= ((\"ab\"{50}){50}){50}\n", limits);
  EXPECT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_NE(ErrorOf("root ::= \"a\"{3000} \"b\"{3000}\n", limits).find("symbols (limit)"),
            std::string::npos);
  limits = GrammarLimits();
  limits.max_rules = 100;
  EXPECT_NE(ErrorOf("root ::= \"a\"{0,500}\n", limits).find("rules (limit)"), std::string::npos);
  limits = GrammarLimits();
  limits.max_text_bytes = 10;
  EXPECT_NE(ErrorOf("root ::= \"abcdefgh\"\n", limits).find("more than the limit"),
            std::string::npos);
}

TEST(GbnfParserTest, AmbiguityIsBoundedNotExponential) {
  // Each of the 30 optional "a"s can take any of the input's a's: the parses are deduplicated
  // into at most one stack per position, so this stays small.
  std::string text = "root ::= ";
  for (int i = 0; i < 30; ++i) text += "\"a\"? ";
  text += "\n";
  auto g = MustCompile(text);
  EXPECT_TRUE(Matches(g, std::string(30, 'a')));
  EXPECT_TRUE(Matches(g, std::string(7, 'a')));
  EXPECT_FALSE(Matches(g, std::string(31, 'a')));
}

}  // namespace
}  // namespace forge
