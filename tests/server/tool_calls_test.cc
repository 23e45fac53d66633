// Tool calls: the format of every test chat template; ParseToolCalls on hand-written replies of
// each format (valid, malformed, unknown tools, tags inside JSON strings, unicode); the stream
// against the parser for every split of each reply; and the grammar of calls: what it accepts
// and refuses, and that every reply a random walk of it generates parses into calls.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"

namespace forge::server {
namespace {

using Json = nlohmann::ordered_json;
using F = ToolCallFormat;
using Calls = std::vector<std::pair<std::string, std::string>>;  // name, arguments

std::vector<ToolSpec> Tools() {
  return {
      {"get_weather", Json::parse(R"({"type":"object","properties":{"location":{"type":"string"},
         "unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]})")},
      {"add", Json::parse(R"({"type":"object","properties":{"a":{"type":"integer"},
         "b":{"type":"integer"}},"required":["a","b"]})")},
      {"ping", nullptr},
      {"météo", Json::parse(R"({"type":"object","properties":{"ville":{"type":"string"}}})")},
  };
}

struct Case {
  F format;
  std::string text;
  bool is_call;  // false: the whole text is the content, no calls
  std::string content;
  Calls calls;
};
Case Call(F f, std::string text, std::string content, Calls calls) {
  return {f, std::move(text), true, std::move(content), std::move(calls)};
}
Case Text(F f, std::string text) { return {f, std::move(text), false, "", {}}; }

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      // Hermes.
      Call(F::kHermes,
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n"
           "</tool_call>",
           "", {{"get_weather", R"({"location":"Paris"})"}}),
      Call(F::kHermes,
           "Let me check.\n\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": "
           "2}}\n</tool_call>",
           "Let me check.", {{"add", R"({"a":1,"b":2})"}}),
      Call(F::kHermes,
           "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n"
           "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>",
           "", {{"add", R"({"a":1,"b":2})"}, {"ping", "{}"}}),
      Text(F::kHermes,
           "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1,}}\n</tool_call>"),
      Text(F::kHermes, "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>"),
      Call(F::kHermes,
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"a "
           "</tool_call> b \\\" } ]\", \"extra\": {\"deep\": [1, {\"x\": \"}\"}]}}}\n</tool_call>",
           "",
           {{"get_weather",
             R"({"location":"a </tool_call> b \" } ]","extra":{"deep":[1,{"x":"}"}]}})"}}),
      Call(F::kHermes,
           "Voilà :\n<tool_call>\n{\"name\": \"météo\", \"arguments\": {\"ville\": \"Zürich 東京 "
           "🌧\"}}\n</tool_call>",
           "Voilà :", {{"météo", R"({"ville":"Zürich 東京 🌧"})"}}),
      Call(F::kHermes,
           "<tool_call>{\"name\": \"m\\u00e9t\\u00e9o\", \"arguments\": {\"ville\": "
           "\"\\u6771\"}}</tool_call>",
           "", {{"météo", R"({"ville":"東"})"}}),
      Text(F::kHermes,
           "<tool_call>\n{\"name\": \"add\", \"arguments\": \"{\\\"a\\\": 1}\"}\n</tool_call>"),
      Text(F::kHermes, "<tool_call>\n{\"arguments\": {}}\n</tool_call>"),
      Text(F::kHermes, "Just text, with a <tool_ and a <tool_call in it. "),
      Call(F::kHermes, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n", "",
           {{"ping", "{}"}}),
      Text(F::kHermes, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}} and more"),
      Call(F::kHermes, "<tool_call>\n{\"name\": \"ping\"}\n</tool_call>\n\nDone.", "Done.",
           {{"ping", "{}"}}),
      Text(F::kHermes, "Use <tool_call> tags to call."),
      Text(F::kHermes,
           "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
           "{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>"),
      Text(F::kHermes, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {"),
      Text(F::kHermes, "  \n Hello \n"),
      // Mistral.
      Call(F::kMistral, "[TOOL_CALLS] [{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}]",
           "", {{"add", R"({"a":1,"b":2})"}}),
      Call(
          F::kMistral,
          "[TOOL_CALLS][{\"name\": \"ping\", \"arguments\": {}}, {\"name\": \"get_weather\", "
          "\"arguments\": {\"location\": \"東京\", \"unit\": \"celsius\"}, \"id\": \"abc123XYZ\"}]",
          "", {{"ping", "{}"}, {"get_weather", R"({"location":"東京","unit":"celsius"})"}}),
      Call(F::kMistral, "Sure.\n[TOOL_CALLS] [{\"name\": \"ping\", \"arguments\": {}}]", "Sure.",
           {{"ping", "{}"}}),
      Text(F::kMistral, "[TOOL_CALLS] [{\"name\": \"add\", \"arguments\": {\"a\": 1}]"),
      Text(F::kMistral, "[TOOL_CALLS] [{\"name\": \"nope\", \"arguments\": {}}]"),
      Text(F::kMistral, "[TOOL_CALLS] []"),
      Text(F::kMistral, "[TOOL_CALLS] {\"name\": \"ping\", \"arguments\": {}}"),
      Text(F::kMistral, "No tools needed [TOOL"),
      Call(F::kMistral,
           "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"location\": "
           "\"[TOOL_CALLS] ]}\"}}]",
           "", {{"get_weather", R"({"location":"[TOOL_CALLS] ]}"})"}}),
      // Llama 3.1.
      Call(F::kLlama31, "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}", "",
           {{"add", R"({"a":1,"b":2})"}}),
      Call(F::kLlama31,
           "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}",
           "", {{"get_weather", R"({"location":"Paris"})"}}),
      Call(F::kLlama31, "{\"name\": \"ping\", \"arguments\": {}}", "", {{"ping", "{}"}}),
      Call(F::kLlama31,
           "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}; {\"name\": \"ping\", "
           "\"parameters\": {}}",
           "", {{"add", R"({"a":1,"b":2})"}, {"ping", "{}"}}),
      Text(F::kLlama31, "The answer is 4."),
      Text(F::kLlama31, "{\"answer\": 4}"),
      Text(F::kLlama31, "{\"name\": \"ping\", \"parameters\": {}} Done."),
      Call(F::kLlama31, "  \n{\"name\": \"météo\", \"parameters\": {\"ville\": \"Zürich\"}}\n", "",
           {{"météo", R"({"ville":"Zürich"})"}}),
      Text(F::kLlama31, "<|python_tag|>brave_search.call(query=\"x\")"),
      Text(F::kLlama31, "<|pyramid|> is not a tag"),
      Text(F::kLlama31, "{\"name\": \"add\", \"parameters\": \"a=1\"}"),
      // Generic.
      Call(F::kGeneric,
           "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}]}", "",
           {{"add", R"({"a":1,"b":2})"}}),
      Call(F::kGeneric,
           "\n{\"tool_calls\": [{\"name\": \"ping\", \"arguments\": {}}, {\"name\": "
           "\"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}]}\n",
           "", {{"ping", "{}"}, {"get_weather", R"({"location":"Oslo"})"}}),
      Text(F::kGeneric,
           "{\"tool_calls\": [{\"name\": \"ping\", \"arguments\": {}}], \"content\": \"x\"}"),
      Text(F::kGeneric, "Plain answer."),
      Text(F::kGeneric, "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 1}}]"),
      Text(F::kGeneric, "{\"tool_calls\": []}"),
      // None.
      Text(F::kNone, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"),
  };
  return *cases;
}

// "call_" and 24 alphanumeric characters; Mistral's: 9 alphanumeric characters.
bool ValidId(const std::string& id, F format = F::kHermes) {
  const char* alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  if (format == F::kMistral) {
    return id.size() == 9 && id.find_first_not_of(alnum) == std::string::npos;
  }
  if (id.size() != 29 || id.rfind("call_", 0) != 0) return false;
  return id.find_first_not_of(alnum, 5) == std::string::npos;
}

TEST(ToolCallFormatTest, DetectsTheFormatOfEveryTestTemplate) {
  const std::map<std::string, F> expected = {{"qwen25.jinja", F::kHermes},
                                             {"qwen3.jinja", F::kHermes},
                                             {"llama31.jinja", F::kLlama31},
                                             {"mistral_v03.jinja", F::kMistral}};
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(FORGE_SOURCE_DIR "/tests/tokenizer/chat_templates")) {
    if (entry.path().extension() != ".jinja") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream source;
    source << in.rdbuf();
    const std::string name = entry.path().filename().string();
    auto it = expected.find(name);
    // The others never mention tools: no format.
    const F want = it == expected.end() ? F::kNone : it->second;
    EXPECT_EQ(DetectToolCallFormat(source.str()), want)
        << name << ": " << ToolCallFormatName(DetectToolCallFormat(source.str()));
  }
  EXPECT_GE(files, 15);
  EXPECT_EQ(DetectToolCallFormat("{% if tools %}{{ tools | tojson }}{% endif %}"), F::kGeneric);
  EXPECT_EQ(DetectToolCallFormat("{{ message.tool_calls }} {{ mytools }}"), F::kNone);
  EXPECT_EQ(DetectToolCallFormat("\"parameters\" ... Environment: ipython"), F::kLlama31);
  EXPECT_STREQ(ToolCallFormatName(F::kHermes), "hermes");
}

TEST(ToolCallParseTest, HandWrittenRepliesOfEachFormat) {
  const std::vector<ToolSpec> tools = Tools();
  for (const Case& c : Cases()) {
    SCOPED_TRACE(std::string(ToolCallFormatName(c.format)) + ": " + c.text);
    const ParsedReply r = ParseToolCalls(c.format, c.text, tools, 42);
    EXPECT_EQ(r.content, c.is_call ? c.content : c.text);
    ASSERT_EQ(r.calls.size(), c.calls.size());
    std::set<std::string> ids;
    for (size_t i = 0; i < c.calls.size(); ++i) {
      EXPECT_EQ(r.calls[i].name, c.calls[i].first);
      EXPECT_EQ(r.calls[i].arguments, c.calls[i].second);
      EXPECT_TRUE(ValidId(r.calls[i].id, c.format)) << r.calls[i].id;
      ids.insert(r.calls[i].id);
    }
    EXPECT_EQ(ids.size(), c.calls.size()) << "ids are not distinct";
    // The same seed gives the same ids, another seed others.
    const ParsedReply again = ParseToolCalls(c.format, c.text, tools, 42);
    const ParsedReply other = ParseToolCalls(c.format, c.text, tools, 43);
    for (size_t i = 0; i < r.calls.size(); ++i) {
      EXPECT_EQ(again.calls[i].id, r.calls[i].id);
      EXPECT_NE(other.calls[i].id, r.calls[i].id);
    }
  }
  // No tools: nothing is a call.
  EXPECT_TRUE(ParseToolCalls(F::kHermes, Cases()[0].text, {}, 1).calls.empty());
  std::set<std::string> ids;
  for (size_t i = 0; i < 10000; ++i) ids.insert(ToolCallId(7, i));
  EXPECT_EQ(ids.size(), 10000u);
}

// The deltas of one split of text, put together.
ParsedReply Streamed(const Case& c, const std::vector<size_t>& cuts) {
  ToolCallStream stream(c.format, Tools(), 42);
  ParsedReply out;
  auto add = [&](ToolCallStream::Delta d) {
    out.content += d.content;
    for (ToolCall& call : d.calls) out.calls.push_back(std::move(call));
  };
  size_t at = 0;
  for (size_t cut : cuts) {
    add(stream.Feed(std::string_view(c.text).substr(at, cut - at)));
    at = cut;
  }
  add(stream.Feed(std::string_view(c.text).substr(at)));
  add(stream.Finish());
  add(stream.Finish());  // nothing more
  return out;
}

void ExpectSame(const ParsedReply& got, const ParsedReply& want, const std::string& where) {
  EXPECT_EQ(got.content, want.content) << where;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << where;
  for (size_t i = 0; i < got.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].id, want.calls[i].id) << where;
    EXPECT_EQ(got.calls[i].name, want.calls[i].name) << where;
    EXPECT_EQ(got.calls[i].arguments, want.calls[i].arguments) << where;
  }
}

TEST(ToolCallStreamTest, AnySplitGivesWhatTheParserGives) {
  std::mt19937 rng(5);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(std::string(ToolCallFormatName(c.format)) + ": " + c.text);
    const ParsedReply want = ParseToolCalls(c.format, c.text, Tools(), 42);
    ExpectSame(Streamed(c, {}), want, "whole");
    for (size_t k = 0; k <= c.text.size(); ++k) {
      ExpectSame(Streamed(c, {k}), want, "cut at " + std::to_string(k));
    }
    std::vector<size_t> bytes;
    for (size_t k = 1; k < c.text.size(); ++k) bytes.push_back(k);
    ExpectSame(Streamed(c, bytes), want, "byte by byte");
    for (int trial = 0; trial < 30; ++trial) {
      std::vector<size_t> cuts;
      for (size_t at = 0;;) {
        at += 1 + rng() % 9;
        if (at >= c.text.size()) break;
        cuts.push_back(at);
      }
      ExpectSame(Streamed(c, cuts), want, "random split " + std::to_string(trial));
    }
  }
}

TEST(ToolCallStreamTest, ContentStreamsBeforeTheReplyEnds) {
  ToolCallStream hermes(F::kHermes, Tools(), 1);
  EXPECT_EQ(hermes.Feed("Let me ").content, "Let me");  // the space may lead into a block
  EXPECT_EQ(hermes.Feed("check.\n<tool").content, " check.");
  EXPECT_EQ(hermes.Feed("_call>\n{\"name\": \"ping\"}").content, "");
  const ToolCallStream::Delta end = hermes.Finish();
  EXPECT_EQ(end.content, "");
  ASSERT_EQ(end.calls.size(), 1u);
  EXPECT_EQ(end.calls[0].name, "ping");

  ToolCallStream mistral(F::kMistral, Tools(), 1);
  EXPECT_EQ(mistral.Feed("No [TOOL").content, "No");
  EXPECT_EQ(mistral.Feed("S] needed").content, " [TOOLS] needed");

  ToolCallStream llama(F::kLlama31, Tools(), 1);
  EXPECT_EQ(llama.Feed(" <|py").content, "");
  EXPECT_EQ(llama.Feed("thon is").content, " <|python is");
  ToolCallStream generic(F::kGeneric, Tools(), 1);
  EXPECT_EQ(generic.Feed("\n{\"tool_calls\": ").content, "");
  EXPECT_EQ(generic.Feed("[]} and text").content, "");
  EXPECT_EQ(generic.Finish().content, "\n{\"tool_calls\": []} and text");
}

// Replies in format's exact syntax (names need no escaping).
std::string Render(F f, const Calls& calls) {
  std::string out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string key = f == F::kLlama31 ? "parameters" : "arguments";
    const std::string item =
        "{\"name\": \"" + calls[i].first + "\", \"" + key + "\": " + calls[i].second + "}";
    if (i > 0) out += f == F::kHermes ? "\n" : f == F::kLlama31 ? ";" : ", ";
    if (f == F::kHermes) {
      out.append("<tool_call>\n").append(item).append("\n</tool_call>");
    } else {
      out += item;
    }
  }
  if (f == F::kMistral) return "[TOOL_CALLS] [" + out + "]";
  if (f == F::kGeneric) return "{\"tool_calls\": [" + out + "]}";
  return out;
}

std::shared_ptr<const Grammar> Compile(F f, const std::vector<ToolSpec>& tools, bool parallel,
                                       std::optional<std::string> only = std::nullopt) {
  StatusOr<std::string> gbnf = ToolCallGbnf(f, tools, parallel, only);
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().ToString();
  if (!gbnf.ok()) return nullptr;
  auto g = Grammar::FromGbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << *gbnf;
  return g.ok() ? *g : nullptr;
}

bool Accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.Accept(text) && m.CanEnd();
}

const F kFormats[] = {F::kHermes, F::kLlama31, F::kMistral, F::kGeneric};

TEST(ToolCallGbnfTest, AcceptsCallsValidForTheSchemasAndRefusesOthers) {
  const std::vector<ToolSpec> tools = Tools();
  const std::vector<Calls> good = {
      {{"get_weather", R"({"location": "Paris", "unit": "celsius"})"}},
      {{"get_weather", R"({"location": "a </tool_call> \"b\""})"}},
      {{"add", R"({"a": 1, "b": -2})"}},
      {{"ping", "{}"}},
      {{"ping", R"({"x": [1, {"y": null}], "z": "é"})"}},
      {{"météo", R"({"ville": "Zürich"})"}},
      {{"météo", "{}"}},
  };
  const std::vector<Calls> bad = {
      {{"get_wether", R"({"location": "Paris"})"}},                 // no such tool
      {{"add", R"({"a": "1", "b": 2})"}},                           // a string for an integer
      {{"add", R"({"a": 1.5, "b": 2})"}},                           // a number for an integer
      {{"add", R"({"a": 1})"}},                                     // b is required
      {{"get_weather", R"({"unit": "celsius"})"}},                  // location is required
      {{"get_weather", R"({"location": "x", "unit": "kelvin"})"}},  // not in the enum
      {{"ping", "[]"}},                                             // not an object
  };
  const Calls two = {{"add", R"({"a": 1, "b": 2})"}, {"ping", "{}"}};
  for (F f : kFormats) {
    for (bool parallel : {false, true}) {
      SCOPED_TRACE(std::string(ToolCallFormatName(f)) + (parallel ? " parallel" : ""));
      auto g = Compile(f, tools, parallel);
      ASSERT_NE(g, nullptr);
      for (const Calls& calls : good) {
        const std::string text = Render(f, calls);
        EXPECT_TRUE(Accepts(g, text)) << text;
        const ParsedReply r = ParseToolCalls(f, text, tools, 1);
        EXPECT_EQ(r.content, "") << text;
        ASSERT_EQ(r.calls.size(), 1u) << text;
        EXPECT_EQ(r.calls[0].name, calls[0].first);
      }
      for (const Calls& calls : bad) EXPECT_FALSE(Accepts(g, Render(f, calls))) << Render(f, calls);
      EXPECT_EQ(Accepts(g, Render(f, two)), parallel) << Render(f, two);
      EXPECT_EQ(ParseToolCalls(f, Render(f, two), tools, 1).calls.size(), 2u);
      EXPECT_FALSE(Accepts(g, "Hello")) << "content is no call";
    }
    auto only = Compile(f, tools, false, "add");
    ASSERT_NE(only, nullptr);
    EXPECT_TRUE(Accepts(only, Render(f, {{"add", R"({"a": 1, "b": 2})"}})));
    EXPECT_FALSE(Accepts(only, Render(f, {{"ping", "{}"}})));
  }
}

TEST(ToolCallGbnfTest, RulesOfDifferentToolsDoNotClash) {
  // Both schemas make rules of the same names (root, root-x, ...): each keeps its own.
  const std::vector<ToolSpec> tools = {
      {"s", Json::parse(R"({"type":"object","properties":{"x":{"type":"string"}},
                            "required":["x"]})")},
      {"n", Json::parse(R"({"type":"object","properties":{"x":{"type":"integer"}},
                            "required":["x"]})")},
  };
  auto g = Compile(F::kHermes, tools, true);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Accepts(g, Render(F::kHermes, {{"s", R"({"x": "a"})"}, {"n", R"({"x": 1})"}})));
  EXPECT_FALSE(Accepts(g, Render(F::kHermes, {{"s", R"({"x": 1})"}})));
  EXPECT_FALSE(Accepts(g, Render(F::kHermes, {{"n", R"({"x": "a"})"}})));
}

TEST(ToolCallGbnfTest, RefusesWhatItCannotBuild) {
  const std::vector<ToolSpec> tools = Tools();
  auto no_such = ToolCallGbnf(F::kHermes, tools, false, "nope");
  ASSERT_FALSE(no_such.ok());
  EXPECT_EQ(no_such.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_such.status().message().find("nope"), std::string::npos);
  auto bad = ToolCallGbnf(
      F::kMistral,
      {{"ok", nullptr},
       {"bad_tool", Json::parse(R"({"type":"object","properties":{"x":{"not":{}}}})")}},
      true, std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("bad_tool"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(
      ToolCallGbnf(F::kHermes, {{"str", Json::parse(R"({"type":"string"})")}}, false, std::nullopt)
          .ok());
  EXPECT_FALSE(ToolCallGbnf(F::kNone, tools, false, std::nullopt).ok());
  EXPECT_FALSE(ToolCallGbnf(F::kHermes, {}, false, std::nullopt).ok());
}

// Text generated byte by byte from the grammar: a uniformly random allowed byte (half of the
// time an ASCII one); past budget, closing characters when allowed, and the end when possible.
std::string RandomReply(const std::shared_ptr<const Grammar>& g, std::mt19937* rng, int budget) {
  GrammarMatcher m(g);
  std::string out;
  for (int step = 0; step < 4000; ++step) {
    std::vector<char> allowed;
    for (int b = 0; b < 256; ++b) {
      const char c = static_cast<char>(b);
      if (m.Accept(std::string_view(&c, 1))) {
        allowed.push_back(c);
        EXPECT_TRUE(m.Rollback(1));
      }
    }
    if (m.CanEnd() && (allowed.empty() || step >= budget || (*rng)() % 64 == 0)) return out;
    if (allowed.empty()) {
      ADD_FAILURE() << "dead end after " << out;
      return out;
    }
    std::vector<char> pool;
    if (step >= budget) {
      for (char c : allowed) {
        if (c == '"' || c == '}' || c == ']') pool.push_back(c);
      }
    }
    if (pool.empty() && (*rng)() % 2 == 0) {
      for (char c : allowed) {
        if (c >= 0x20 && c < 0x7F) pool.push_back(c);
      }
    }
    if (pool.empty()) pool = allowed;
    const char c = pool[(*rng)() % pool.size()];
    EXPECT_TRUE(m.Accept(std::string_view(&c, 1)));
    out.push_back(c);
  }
  ADD_FAILURE() << "the walk did not end: " << out;
  return out;
}

TEST(ToolCallGbnfTest, EveryReplyTheGrammarGeneratesParsesIntoCalls) {
  const std::vector<ToolSpec> tools = Tools();
  std::mt19937 rng(2024);
  for (F f : kFormats) {
    for (bool parallel : {false, true}) {
      SCOPED_TRACE(std::string(ToolCallFormatName(f)) + (parallel ? " parallel" : ""));
      auto g = Compile(f, tools, parallel);
      ASSERT_NE(g, nullptr);
      std::set<std::string> names;
      size_t most_calls = 0;
      for (int walk = 0; walk < 25; ++walk) {
        const std::string text = RandomReply(g, &rng, 40 + static_cast<int>(rng() % 120));
        EXPECT_TRUE(Accepts(g, text)) << text;
        const ParsedReply r = ParseToolCalls(f, text, tools, 3);
        EXPECT_EQ(r.content, "") << text;
        ASSERT_FALSE(r.calls.empty()) << text;
        if (!parallel) {
          EXPECT_EQ(r.calls.size(), 1u) << text;
        }
        most_calls = std::max(most_calls, r.calls.size());
        for (const ToolCall& call : r.calls) {
          names.insert(call.name);
          EXPECT_TRUE(Json::parse(call.arguments).is_object()) << call.arguments;
        }
        // And the stream agrees, piece by piece.
        ToolCallStream stream(f, tools, 3);
        std::string content;
        for (char c : text) content += stream.Feed(std::string_view(&c, 1)).content;
        const ToolCallStream::Delta end = stream.Finish();
        EXPECT_EQ(content + end.content, "");
        EXPECT_EQ(end.calls.size(), r.calls.size());
      }
      EXPECT_GE(names.size(), 2u) << "the walks should reach several tools";
      if (parallel) {
        EXPECT_GE(most_calls, 2u) << "and write several calls";
      }
    }
  }
}

}  // namespace
}  // namespace forge::server
