// JSON schema conversion: unsupported keywords and impossible schemas are refused by name and
// place; what the grammar accepts, keyword by keyword, against answers computed here (integer
// and decimal bounds by arithmetic over every number in a window) or by Python's re.search
// (patterns, as JSON Schema applies them).
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar_test_util.h"

namespace forge {
namespace {

std::shared_ptr<const Grammar> Compile(const std::string& schema,
                                       const JsonSchemaOptions& options = {}) {
  auto g = GrammarFromJsonSchema(schema, options);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

bool Accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.Accept(text) && m.CanEnd();
}

TEST(JsonSchemaTest, RefusesWhatItCannotExpressNamingKeywordAndPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"string","foo":1})", "JSON schema at #: keyword 'foo' is not supported"},
      {R"({"type":"object","properties":{"a":{"type":"array","contains":{}}}})",
       "JSON schema at #/properties/a: keyword 'contains' is not supported"},
      {R"({"type":"object","patternProperties":{"^x":{}}})", "keyword 'patternProperties'"},
      {R"({"type":"object","propertyNames":{"maxLength":3}})", "keyword 'propertyNames'"},
      {R"({"type":"object","minProperties":1})", "keyword 'minProperties'"},
      {R"({"type":"integer","multipleOf":3})", "keyword 'multipleOf'"},
      {R"({"not":{"type":"string"}})", "keyword 'not'"},
      {R"({"if":{"type":"string"},"then":{}})", "keyword 'if'"},
      {R"({"type":"array","uniqueItems":true})", "keyword 'uniqueItems' is not supported"},
      {R"({"$defs":{"a":{"$anchor":"x"}},"$ref":"#/$defs/a"})",
       "JSON schema at #/$defs/a: keyword '$anchor'"},
      {R"({"$ref":"https://example.com/s.json"})",
       "$ref 'https://example.com/s.json' is not "
       "supported (only local refs"},
      {R"({"$ref":"#/$defs/missing"})", "$ref '#/$defs/missing' points nowhere"},
      {R"({"$ref":"#/$defs/a","maxLength":3,"$defs":{"a":{}}})", "keyword 'maxLength' beside $ref"},
      {R"({"type":"string","format":"uri"})", "format 'uri' is not supported"},
      {R"({"type":"string","format":"date","maxLength":3})", "format together with"},
      {R"({"type":"string","pattern":"a+","maxLength":3})", "pattern together with"},
      {R"({"type":"string","pattern":"(?=a)b"})", "lookaround assertions are not supported"},
      {R"({"type":"string","pattern":"\\bword"})", "word boundaries"},
      {R"({"type":"string","pattern":"(a)\\1"})", "backreferences are not supported"},
      {R"({"type":"string","pattern":"\\p{L}"})", "Unicode property escapes"},
      {R"({"type":"string","pattern":"a$b"})", "'$' is supported only at the end"},
      {R"({"type":"string","pattern":"(a*)*"})",
       "unbounded quantifier over a part that can "
       "match the empty string"},
      {R"({"type":"string","pattern":"a**"})", "a quantifier cannot follow a quantifier"},
      {R"({"type":"string","pattern":"[]a]"})", "an empty class"},
      {R"({"type":"number","minimum":-1.5})",
       "bounds of a number are supported when they are "
       "non-negative integers"},
      {R"({"type":"integer","minimum":5,"maximum":3})", "no integer lies within"},
      {R"({"type":"integer","minimum":1e300})", "out of the supported range"},
      {R"({"allOf":[{"type":"string"},{"maxLength":3}]})", "allOf is supported with exactly one"},
      {R"({"type":"object","anyOf":[{"required":["a"]}]})", "keyword 'type' beside anyOf"},
      {R"({"type":"array","minItems":3,"maxItems":2})", "minItems 3 is more than the array"},
      {R"({"type":"array","prefixItems":[{}],"items":false,"minItems":2})",
       "minItems 2 is more than the array"},
      {R"({"type":"string","maxLength":1000000})", "maxLength 1000000 is past the supported limit"},
      {R"({"type":"string","minLength":-1})", "minLength must be a non-negative integer"},
      {R"({"enum":[]})", "enum must be a non-empty list"},
      {R"({"type":"string","enum":[1,2]})", "no enum/const value has the schema's type"},
      {R"({"enum":["a"],"maxLength":3})", "keyword 'maxLength' together with enum"},
      {R"(false)", "the schema false matches nothing"},
      {R"({"type":"strin"})", "unknown type 'strin'"},
      {R"({"type":"object","properties":{"a":false},"required":["a"]})",
       "JSON schema at #/properties/a: the schema false matches nothing"},
      {R"({"type":"object","required":["z"],"additionalProperties":false})",
       "required property 'z' is not in properties and additionalProperties is false"},
      {R"({"type": "string",)", "JSON schema is not valid JSON"},
      {std::string(300, '[') + std::string(300, ']'), "nests deeper than the limit"},
  };
  for (const auto& [schema, want] : cases) {
    auto gbnf = JsonSchemaToGbnf(schema);
    ASSERT_FALSE(gbnf.ok()) << schema << " converted:\n" << *gbnf;
    EXPECT_EQ(gbnf.status().code(), StatusCode::kInvalidArgument) << schema;
    EXPECT_NE(gbnf.status().message().find(want), std::string::npos)
        << schema << "\n  got:  " << gbnf.status().message() << "\n  want: " << want;
  }
  // A recursive $ref that never reads a character is refused by the grammar compiler.
  auto g = GrammarFromJsonSchema(R"({"$ref":"#"})");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("left recursion"), std::string::npos)
      << g.status().ToString();
}

TEST(JsonSchemaTest, AnnotationsAreIgnored) {
  const std::string plain = *JsonSchemaToGbnf(R"({"type":"string","maxLength":3})");
  auto annotated = JsonSchemaToGbnf(
      R"({"type":"string","maxLength":3,"title":"T","description":"D","default":"x",
          "examples":["a"],"$schema":"https://json-schema.org/draft/2020-12/schema",
          "$comment":"c","$id":"https://example.com/x","deprecated":false,"readOnly":true,
          "writeOnly":false})");
  ASSERT_TRUE(annotated.ok()) << annotated.status().ToString();
  EXPECT_EQ(*annotated, plain);
  // The same schema as text or parsed gives the same grammar, and conversion is deterministic.
  const auto parsed = nlohmann::ordered_json::parse(R"({"type":"string","maxLength":3})");
  EXPECT_EQ(*ParsedJsonSchemaToGbnf(parsed), plain);
  EXPECT_EQ(plain.rfind("root ::= ", 0), 0u) << plain;
}

TEST(JsonSchemaTest, ObjectsFollowPropertiesInOrderWithRequiredAndAdditional) {
  auto g = Compile(R"({"type":"object","properties":{"a":{"type":"integer"},
      "b":{"type":"string"},"c":{"type":"boolean"}},"required":["b"]})");
  EXPECT_TRUE(Accepts(g, R"({"b":"x"})"));
  EXPECT_TRUE(Accepts(g, R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(Accepts(g, R"({"a":1,"b":"x"})"));
  EXPECT_TRUE(Accepts(g, R"({"b":"x","c":false})"));
  EXPECT_FALSE(Accepts(g, R"({"b":"x","a":1})"));  // out of order
  EXPECT_FALSE(Accepts(g, R"({"a":1})"));          // b is required
  EXPECT_FALSE(Accepts(g, R"({})"));
  EXPECT_FALSE(Accepts(g, R"({"b":"x","d":1})"));  // no other properties when absent
  EXPECT_FALSE(Accepts(g, R"({"a":1,,"b":"x"})"));
  EXPECT_FALSE(Accepts(g, R"({"b":"x",})"));

  auto open = Compile(R"({"type":"object","properties":{"name":{"type":"string"}},
      "additionalProperties":true})");
  EXPECT_TRUE(Accepts(open, R"({})"));
  EXPECT_TRUE(Accepts(open, R"({"name":"x","nam":1,"names":[1,{"a":null}],"":2})"));
  EXPECT_TRUE(Accepts(open, R"({"other":1})"));
  EXPECT_FALSE(Accepts(open, R"({"other":1,"name":"x"})"));  // declared ones come first
  EXPECT_FALSE(Accepts(open, R"({"name":"x","name":"y"})"));
  EXPECT_FALSE(Accepts(open, R"({"n\u0061me":"x"})"));  // other keys have no escapes

  auto required_extra =
      Compile(R"({"type":"object","required":["z"],"additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(Accepts(required_extra, R"({"z":1,"y":2})"));
  EXPECT_FALSE(Accepts(required_extra, R"({"z":"1"})"));
  EXPECT_FALSE(Accepts(required_extra, R"({"y":2})"));

  auto typed = Compile(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(Accepts(typed, R"({"x":1,"y":-2})"));
  EXPECT_FALSE(Accepts(typed, R"({"x":"1"})"));

  auto never = Compile(R"({"type":"object","properties":{"a":false,"b":{"type":"null"}},
      "additionalProperties":true})");
  EXPECT_TRUE(Accepts(never, R"({"b":null,"c":1})"));
  EXPECT_FALSE(Accepts(never, R"({"a":1})"));
  EXPECT_FALSE(Accepts(never, R"({"b":null,"a":1})"));

  auto closed = Compile(R"({"type":"object","properties":{"a":{}},"additionalProperties":false})");
  EXPECT_TRUE(Accepts(closed, R"({"a":[{"deep":[1,2.5e3,"s",null,true]}]})"));
  EXPECT_FALSE(Accepts(closed, R"({"b":1})"));

  auto any = Compile(R"({"type":"json_object"})");
  EXPECT_TRUE(Accepts(any, R"({"k":{"n":[1,{"m":"\u00e9\n"}]},"e":[]})"));
  EXPECT_FALSE(Accepts(any, R"([1])"));
  EXPECT_FALSE(Accepts(any, R"("s")"));
  EXPECT_FALSE(Accepts(any, R"({"k":01})"));
  EXPECT_FALSE(Accepts(any, R"({"k":"\x"})"));
  EXPECT_FALSE(Accepts(any, "{\"k\":\"a\nb\"}"));  // raw control characters
  EXPECT_EQ(JsonObjectGbnf(), *JsonSchemaToGbnf(R"({"type":"json_object"})"));
}

TEST(JsonSchemaTest, WhitespaceIsBounded) {
  // Between two tokens: nothing, one space, or a newline and up to 20 spaces or tabs.
  auto g = Compile(R"({"type":"array","items":{"type":"integer"}})");
  const std::string indent20 = "\n" + std::string(19, ' ') + "\t", indent21(21, ' ');
  EXPECT_TRUE(Accepts(g, "[1,2]"));
  EXPECT_TRUE(Accepts(g, "[ 1, 2 ]"));
  EXPECT_TRUE(Accepts(g, "[" + indent20 + "1," + indent20 + "2\n]"));
  EXPECT_TRUE(Accepts(g, "[\n\t1 ,\n 2\n]"));
  EXPECT_FALSE(Accepts(g, "[\n" + indent21 + "1]"));
  EXPECT_FALSE(Accepts(g, "[  1]"));     // two spaces
  EXPECT_FALSE(Accepts(g, "[\n\n1]"));   // a blank line
  EXPECT_FALSE(Accepts(g, "[1,\r\n2]"));  // carriage returns are not generated
  EXPECT_FALSE(Accepts(g, " [1]"));      // the value starts the text
  EXPECT_FALSE(Accepts(g, "[1] "));
  JsonSchemaOptions compact;
  compact.max_whitespace = 0;
  auto c = Compile(R"({"type":"array","items":{"type":"integer"}})", compact);
  EXPECT_TRUE(Accepts(c, "[1,2]"));
  EXPECT_FALSE(Accepts(c, "[1, 2]"));
}

TEST(JsonSchemaTest, ArraysCountItemsAndTuples) {
  auto g = Compile(R"({"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":3})");
  EXPECT_FALSE(Accepts(g, "[true]"));
  EXPECT_TRUE(Accepts(g, "[true,false]"));
  EXPECT_TRUE(Accepts(g, "[true,false,true]"));
  EXPECT_FALSE(Accepts(g, "[true,false,true,true]"));
  EXPECT_FALSE(Accepts(g, "[]"));
  auto tuple = Compile(R"({"prefixItems":[{"type":"integer"},{"type":"string"}],
      "items":{"type":"null"},"maxItems":4})");
  EXPECT_TRUE(Accepts(tuple, "[]"));
  EXPECT_TRUE(Accepts(tuple, "[1]"));
  EXPECT_TRUE(Accepts(tuple, "[1,\"a\",null,null]"));
  EXPECT_FALSE(Accepts(tuple, "[1,\"a\",null,null,null]"));
  EXPECT_FALSE(Accepts(tuple, "[\"a\"]"));
  EXPECT_FALSE(Accepts(tuple, "[1,\"a\",1]"));
}

TEST(JsonSchemaTest, StringLengthsCountCharacters) {
  auto g = Compile(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(Accepts(g, R"("a")"));
  EXPECT_TRUE(Accepts(g, R"("ab")"));
  EXPECT_TRUE(Accepts(g, "\"\u00e9\u4e2d\U0001F600\""));  // three characters, nine bytes
  EXPECT_TRUE(Accepts(g, R"("\n\u00e9")"));               // escapes are one character each
  EXPECT_FALSE(Accepts(g, R"("abcd")"));
  EXPECT_FALSE(Accepts(g, R"("\ud83d\ude00")"));  // surrogate escapes are not generated
}

TEST(JsonSchemaTest, IntegerBoundsMatchArithmetic) {
  struct Range {
    std::optional<int64_t> lo, hi;
  };
  const std::vector<Range> ranges = {{0, std::nullopt},
                                     {1, std::nullopt},
                                     {std::nullopt, 0},
                                     {std::nullopt, -7},
                                     {-50, 1234},
                                     {0, 150},
                                     {7, 9},
                                     {100000, 100250},
                                     {-1000, -999},
                                     {-5, 5},
                                     {99, 1000},
                                     {38, std::nullopt},
                                     {5, 5},
                                     {0, 0},
                                     {std::nullopt, 120},
                                     {-109, -1}};
  for (const Range& r : ranges) {
    nlohmann::json schema = {{"type", "integer"}};
    if (r.lo) schema["minimum"] = *r.lo;
    if (r.hi) schema["maximum"] = *r.hi;
    auto g = Compile(schema.dump());
    ASSERT_NE(g, nullptr);
    const int64_t from = (r.lo ? *r.lo : (r.hi ? *r.hi : 0)) - 1200;
    const int64_t to = (r.hi ? *r.hi : (r.lo ? *r.lo : 0)) + 1200;
    for (int64_t n = from; n <= to; ++n) {
      const bool want = (!r.lo || n >= *r.lo) && (!r.hi || n <= *r.hi);
      ASSERT_EQ(Accepts(g, std::to_string(n)), want) << schema.dump() << " " << n;
    }
    for (const char* bad : {"-0", "01", "+1", "1.0", "1e2", "--1", ""}) {
      EXPECT_FALSE(Accepts(g, bad)) << schema.dump() << " " << bad;
    }
  }
  // Exclusive bounds and non-integer bounds.
  auto g = Compile(R"({"type":"integer","exclusiveMinimum":2.5,"exclusiveMaximum":7})");
  for (int n = -3; n < 12; ++n) EXPECT_EQ(Accepts(g, std::to_string(n)), n >= 3 && n <= 6) << n;
  auto d4 = Compile(R"({"type":"integer","minimum":2,"exclusiveMinimum":true,"maximum":5})");
  for (int n = -3; n < 12; ++n) EXPECT_EQ(Accepts(d4, std::to_string(n)), n >= 3 && n <= 5) << n;
}

// Exact comparison of a decimal text with an integer bound: -1, 0, 1.
int Compare(const std::string& text, int64_t bound) {
  const bool neg = text[0] == '-';
  const std::string body = neg ? text.substr(1) : text;
  const size_t dot = body.find('.');
  const int64_t ip = std::stoll(body.substr(0, dot));
  bool frac = false;
  if (dot != std::string::npos) frac = body.find_first_not_of('0', dot + 1) != std::string::npos;
  if (!neg) return ip < bound ? -1 : ip > bound ? 1 : (frac ? 1 : 0);
  // -(ip.frac): exactly -ip without a fraction, else strictly between -ip-1 and -ip.
  if (!frac) return -ip < bound ? -1 : -ip > bound ? 1 : 0;
  return -ip <= bound ? -1 : 1;
}

TEST(JsonSchemaTest, DecimalBoundsMatchArithmetic) {
  struct Case {
    const char* schema;
    std::optional<int64_t> lo, hi;
    bool lo_ex, hi_ex;
  };
  const std::vector<Case> cases = {
      {R"({"type":"number","minimum":0,"maximum":1})", 0, 1, false, false},
      {R"({"type":"number","exclusiveMinimum":0,"maximum":100})", 0, 100, true, false},
      {R"({"type":"number","minimum":2,"exclusiveMaximum":3})", 2, 3, false, true},
      {R"({"type":"number","maximum":5})", std::nullopt, 5, false, false},
      {R"({"type":"number","exclusiveMaximum":0})", std::nullopt, 0, false, true},
      {R"({"type":"number","minimum":10})", 10, std::nullopt, false, false},
      {R"({"type":"number","exclusiveMinimum":4,"exclusiveMaximum":5})", 4, 5, true, true},
  };
  std::mt19937 rng(8);
  for (const Case& c : cases) {
    auto g = Compile(c.schema);
    ASSERT_NE(g, nullptr);
    int accepted = 0;
    for (int i = 0; i < 4000; ++i) {
      std::string t = rng() % 3 == 0 ? "-" : "";
      const int ip = static_cast<int>(rng() % 4 == 0 ? rng() % 200 : rng() % 12);
      t += std::to_string(ip);
      if (rng() % 2) {
        t += ".";
        const int digits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < digits; ++k)
          t += static_cast<char>('0' + (rng() % 3 == 0 ? 0 : rng() % 10));
      }
      const bool want = (!c.lo || (c.lo_ex ? Compare(t, *c.lo) > 0 : Compare(t, *c.lo) >= 0)) &&
                        (!c.hi || (c.hi_ex ? Compare(t, *c.hi) < 0 : Compare(t, *c.hi) <= 0));
      const bool got = Accepts(g, t);
      // The grammar may refuse spellings of an allowed value (trailing zeros after the bound, a
      // minus zero), never allow a value outside.
      if (got) {
        ASSERT_TRUE(want) << c.schema << " accepts " << t;
        ++accepted;
      } else if (want) {
        const bool odd_spelling = t[0] == '-' || t.back() == '0';
        ASSERT_TRUE(odd_spelling) << c.schema << " refuses " << t;
      }
    }
    EXPECT_GT(accepted, 20) << c.schema;
  }
}

TEST(JsonSchemaTest, FormatsAcceptValidAndRefuseInvalidValues) {
  auto g = Compile(R"({"type":"object","properties":{"d":{"format":"date"},
      "t":{"format":"time"},"dt":{"format":"date-time"},"u":{"format":"uuid"},
      "e":{"format":"email"}}})");
  auto field = [&](const char* key, const std::string& value) {
    return Accepts(g, std::string("{\"") + key + "\":\"" + value + "\"}");
  };
  for (const char* d : {"2024-01-31", "1999-12-01", "2023-02-28", "2023-04-30"}) {
    EXPECT_TRUE(field("d", d)) << d;
  }
  for (const char* d : {"2024-1-31", "2023-02-30", "2023-04-31", "2023-13-01", "2023-00-10",
                        "0000-01-01", "2023-01-32", "20230101"}) {
    EXPECT_FALSE(field("d", d)) << d;
  }
  for (const char* t : {"00:00:00Z", "23:59:59.123456+05:30", "12:30:00-08:00"}) {
    EXPECT_TRUE(field("t", t)) << t;
  }
  for (const char* t : {"24:00:00Z", "12:60:00Z", "12:00:00", "12:00Z", "12:00:00+5:00"}) {
    EXPECT_FALSE(field("t", t)) << t;
  }
  EXPECT_TRUE(field("dt", "2024-05-06T07:08:09Z"));
  EXPECT_FALSE(field("dt", "2024-05-06 07:08:09Z"));
  EXPECT_TRUE(field("u", "123e4567-e89b-12d3-A456-426614174000"));
  EXPECT_FALSE(field("u", "123e4567-e89b-12d3-a456-42661417400"));
  EXPECT_FALSE(field("u", "123e4567e89b12d3a456426614174000"));
  EXPECT_TRUE(field("e", "first.last+tag@example.co.uk"));
  EXPECT_FALSE(field("e", "no-at-sign.example.com"));
  EXPECT_FALSE(field("e", "a@b"));
  EXPECT_FALSE(field("e", ".a@example.com"));
}

TEST(JsonSchemaTest, PatternsMatchPythonSearch) {
  const std::vector<std::string> patterns = {"^[A-Z]{2}-\\d{3}$",
                                             "^\\+?[0-9 ()-]{7,15}$",
                                             "^[a-z0-9]+(?:-[a-z0-9]+)*$",
                                             "ab|c\\d",
                                             "^a.c$",
                                             "x[^a-c\\d]y",
                                             "^(ab)+$",
                                             "^\\w+@\\w+\\.com$",
                                             "^\"[^\"\\\\]{0,3}\"$",
                                             "\\s\\S",
                                             "^é+中?$",
                                             "^(?:a|bc){2,3}$",
                                             "^[\\-.]{2}$",
                                             "\\t|\\n",
                                             "^\\x41\\u0042$",
                                             "^a{0}b$",
                                             "^[^\\D]$",
                                             "q\\W"};
  const std::string alphabet[] = {"a",  "b",  "c", "x", "y",  "A", "Z", "0",  "5",
                                  "-",  "+",  "(", ")", " ",  ".", "@", "\"", "\\",
                                  "\n", "\t", "_", "é", "中", "m", "o", "B",  "q"};
  std::mt19937 rng(12);
  nlohmann::json job;
  std::vector<std::shared_ptr<const Grammar>> grammars;
  std::vector<std::vector<std::string>> strings;
  // A vocabulary of JSON-encoded characters, to generate strings from each grammar.
  std::vector<std::string> pieces = {"\""};
  for (const std::string& c : alphabet) {
    std::string enc = nlohmann::json(c).dump();
    pieces.push_back(enc.substr(1, enc.size() - 2));
  }
  pieces.push_back("");
  auto vocab = TokenVocabView::Create(pieces, {static_cast<TokenId>(pieces.size() - 1)});
  for (const std::string& p : patterns) {
    nlohmann::json schema = {{"type", "string"}, {"pattern", p}};
    grammars.push_back(Compile(schema.dump()));
    ASSERT_NE(grammars.back(), nullptr) << p;
    std::vector<std::string> s;
    for (int i = 0; i < 300; ++i) {
      std::string t;
      const int n = static_cast<int>(rng() % 9);
      for (int k = 0; k < n; ++k) t += alphabet[rng() % std::size(alphabet)];
      s.push_back(t);
    }
    for (int i = 0; i < 60; ++i) {
      GrammarMatcher m(grammars.back());
      testing::Walk w = testing::RandomWalk(&m, *vocab, &rng, 20, 40, 0.4,
                                            [](const GrammarMatcher&, const auto&, const auto&) {});
      if (w.ended) s.push_back(nlohmann::json::parse(w.text).get<std::string>());
    }
    job["search"].push_back({{"regex", p}, {"strings", s}});
    strings.push_back(std::move(s));
  }
  const nlohmann::json result = testing::RunGrammarOracle(job);
  ASSERT_FALSE(result.is_null());
  int matches = 0, total = 0;
  for (size_t i = 0; i < patterns.size(); ++i) {
    int pattern_matches = 0;
    for (size_t k = 0; k < strings[i].size(); ++k) {
      const bool want = result["search"][i][k].get<bool>();
      const std::string doc = nlohmann::json(strings[i][k]).dump();
      const bool got = Accepts(grammars[i], doc);
      // Whatever the grammar accepts matches. Python's \w, \d, \s also take non-ASCII
      // characters, which the grammar leaves out of them (and so out of \W, \D, \S, [^\d]):
      // on non-ASCII text a match may be refused.
      const bool ascii = std::all_of(strings[i][k].begin(), strings[i][k].end(),
                                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
      // Python's $ also matches before a final newline (ECMA-262's, JSON Schema's, does not).
      const bool final_newline = !strings[i][k].empty() && strings[i][k].back() == '\n' &&
                                 patterns[i].find('$') != std::string::npos;
      if (got || (ascii && !final_newline)) {
        EXPECT_EQ(got, want) << "pattern " << patterns[i] << " string " << doc;
      }
      pattern_matches += want ? 1 : 0;
      ++total;
    }
    EXPECT_GT(pattern_matches, 0) << patterns[i];
    matches += pattern_matches;
  }
  std::printf("[ oracle   ] python re.search: %zu patterns, %d strings, %d match\n",
              patterns.size(), total, matches);
}

TEST(JsonSchemaTest, RecursiveRefsAndCombinators) {
  auto tree = Compile(R"({"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/n"}}},"required":["v"],
      "additionalProperties":false}},"$ref":"#/$defs/n"})");
  EXPECT_TRUE(Accepts(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(Accepts(tree, R"({"v":1,"kids":[{"kids":[]}]})"));
  auto any_of = Compile(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":2}]})");
  EXPECT_TRUE(Accepts(any_of, "12"));
  EXPECT_TRUE(Accepts(any_of, "\"ab\""));
  EXPECT_FALSE(Accepts(any_of, "\"abc\""));
  EXPECT_FALSE(Accepts(any_of, "true"));
  auto pointer = Compile(R"({"definitions":{"a/b":{"const":"slash"},"t~x":{"const":"tilde"}},
      "type":"array","prefixItems":[{"$ref":"#/definitions/a~1b"},{"$ref":"#/definitions/t~0x"}],
      "items":false})");
  EXPECT_TRUE(Accepts(pointer, R"(["slash","tilde"])"));
  EXPECT_FALSE(Accepts(pointer, R"(["tilde","slash"])"));
  auto enums = Compile(R"({"enum":["a\"b",1.5,null,[1,{"k":"v"}],{"x":{}}]})");
  EXPECT_TRUE(Accepts(enums, R"("a\"b")"));
  EXPECT_TRUE(Accepts(enums, "1.5"));
  EXPECT_TRUE(Accepts(enums, "null"));
  EXPECT_TRUE(Accepts(enums, R"([1,{"k":"v"}])"));
  EXPECT_TRUE(Accepts(enums, R"({"x":{}})"));
  EXPECT_FALSE(Accepts(enums, "2"));
  EXPECT_FALSE(Accepts(enums, R"("ab")"));
  auto types = Compile(R"({"type":["integer","null"],"minimum":3})");
  EXPECT_TRUE(Accepts(types, "3"));
  EXPECT_TRUE(Accepts(types, "null"));
  EXPECT_FALSE(Accepts(types, "2"));
}

}  // namespace
}  // namespace forge
