// Structured output against a real `forge serve` (CPU, stories260K): response_format json_object
// and json_schema on both routes, llama.cpp's grammar field, vLLM's guided_* fields and
// structured_outputs; replies that end with "stop" validate (python3-jsonschema) or match
// (python3-regex), replies cut by max_tokens are prefixes the grammar accepts, streamed text
// equals the whole text, n > 1, the schema's property order, and errors that name the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_test_util.h"
#include "grammar/json_schema.h"
#include "server/server_process.h"

namespace forge::testing {
namespace {

using nlohmann::json;

const char* kPerson = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 8},
    "age": {"type": "integer", "minimum": 1, "maximum": 120},
    "pet": {"enum": ["cat", "dog", null]}},
  "required": ["name", "age"], "additionalProperties": false})";

json Post(ServerProcess& s, const std::string& path, const json& body, int want = 200) {
  HttpResult r = Http("POST", s.url(path), body.dump());
  EXPECT_EQ(r.status, want) << path << " " << body.dump() << ": " << r.body;
  return json::parse(r.body, nullptr, false);
}

std::string TextOf(const json& choice) {
  if (choice.contains("message")) return choice["message"]["content"].get<std::string>();
  return choice["text"].get<std::string>();
}

// Whether the grammar accepts text as a prefix of one of its sentences.
bool PrefixOf(const std::string& gbnf, const std::string& text) {
  auto g = Grammar::FromGbnf(gbnf);
  if (!g.ok()) return false;
  GrammarMatcher m(*g);
  return m.Accept(text);
}

class ServerStructuredTest : public ServerFixture {
 protected:
  ServerStructuredTest() : ServerFixture("--parallel 8") {}
};

TEST_F(ServerStructuredTest, JsonSchemaRepliesValidateOrArePrefixes) {
  const json schema = json::parse(kPerson);
  // The body is sent as schema.dump() writes it (keys sorted): the order the reply follows.
  const std::string gbnf = JsonSchemaToGbnf(schema.dump()).value();
  json docs = json::array();
  int cut = 0;
  for (int seed = 0; seed < 12; ++seed) {
    const bool chat = seed % 2 == 1;
    json body = {{"max_tokens", seed < 10 ? 120 : 10},
                 {"temperature", 1.0},
                 {"seed", seed},
                 {"response_format",
                  {{"type", "json_schema"},
                   {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}}}};
    if (chat) {
      body["messages"] = {{{"role", "user"}, {"content", "Tell me about a person."}}};
    } else {
      body["prompt"] = "Once upon a time";
    }
    json r = Post(server_, chat ? "/v1/chat/completions" : "/v1/completions", body);
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    const std::string text = TextOf(r["choices"][0]);
    const std::string finish = r["choices"][0]["finish_reason"];
    if (finish == "stop") {
      docs.push_back(text);
    } else {
      EXPECT_EQ(finish, "length");
      EXPECT_TRUE(PrefixOf(gbnf, text)) << text;
      ++cut;
    }
  }
  EXPECT_GE(docs.size(), 6u);
  EXPECT_GE(cut, 2);
  const json verdict = RunGrammarOracle({{"jsonschema", {{{"schema", schema}, {"docs", docs}}}}});
  ASSERT_FALSE(verdict.is_null());
  for (size_t d = 0; d < docs.size(); ++d) {
    EXPECT_TRUE(verdict["jsonschema"][0][d]["valid"].get<bool>())
        << docs[d] << ": " << verdict["jsonschema"][0][d].value("error", std::string());
  }
}

TEST_F(ServerStructuredTest, JsonObjectStreamingAndChoices) {
  // json_object: any JSON object; streamed deltas add up to the whole reply; n = 3.
  json body = {{"messages", {{{"role", "user"}, {"content", "JSON please"}}}},
               {"max_tokens", 150},
               {"temperature", 0.9},
               {"seed", 3},
               {"n", 3},
               {"response_format", {{"type", "json_object"}}}};
  json whole = Post(server_, "/v1/chat/completions", body);
  ASSERT_EQ(whole["choices"].size(), 3u);
  std::vector<std::string> texts(3);
  for (const json& c : whole["choices"]) {
    const std::string text = c["message"]["content"];
    texts[c["index"].get<int>()] = text;
    if (c["finish_reason"] == "stop") {
      json parsed = json::parse(text, nullptr, false);
      EXPECT_TRUE(parsed.is_object()) << text;
    } else {
      EXPECT_TRUE(PrefixOf(JsonObjectGbnf(), text)) << text;
    }
  }
  body["stream"] = true;
  HttpResult r = Http("POST", server_.url("/v1/chat/completions"), body.dump(), "-N");
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> streamed(3);
  for (const json& chunk : SseChunks(r.body)) {
    for (const json& c : chunk["choices"]) {
      if (c["delta"].contains("content") && c["delta"]["content"].is_string()) {
        streamed[c["index"].get<int>()] += c["delta"]["content"].get<std::string>();
      }
    }
  }
  EXPECT_EQ(streamed, texts);
}

TEST_F(ServerStructuredTest, GrammarRegexAndChoiceFields) {
  struct Case {
    json constraint;  // merged into the body
    std::string regex;
  };
  const std::vector<Case> cases = {
      {{{"grammar", R"(root ::= "The " ("cat" | "dog") " ate " [0-9]{1,2} " fish.")"}},
       "The (cat|dog) ate [0-9]{1,2} fish\\."},
      {{{"guided_grammar", R"(root ::= [a-c]{2,4})"}}, "[a-c]{2,4}"},
      {{{"guided_regex", "[A-Z][a-z]{2,5}!"}}, "[A-Z][a-z]{2,5}!"},
      {{{"guided_choice", {"yes", "no", "maybe so"}}}, "yes|no|maybe so"},
      {{{"structured_outputs", {{"regex", "(ab|cd)+x"}}}}, "(ab|cd)+x"},
      {{{"structured_outputs", {{"choice", {"left", "right"}}}}}, "left|right"},
  };
  json jobs = json::array();
  for (const Case& c : cases) {
    json strings = json::array();
    for (int seed = 0; seed < 4; ++seed) {
      json body = {{"prompt", "Once upon a time"},
                   {"max_tokens", 60},
                   {"temperature", 1.0},
                   {"seed", seed}};
      body.update(c.constraint);
      json r = Post(server_, "/v1/completions", body);
      ASSERT_TRUE(r.contains("choices")) << r.dump();
      EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << body.dump() << " " << r.dump();
      strings.push_back(r["choices"][0]["text"]);
    }
    jobs.push_back({{"regex", c.regex}, {"strings", strings}});
  }
  const json verdict = RunGrammarOracle({{"fullmatch", jobs}});
  ASSERT_FALSE(verdict.is_null());
  for (size_t q = 0; q < jobs.size(); ++q) {
    for (size_t d = 0; d < jobs[q]["strings"].size(); ++d) {
      EXPECT_TRUE(verdict["fullmatch"][q][d].get<bool>())
          << jobs[q]["strings"][d] << " does not match " << jobs[q]["regex"];
    }
  }
}

TEST_F(ServerStructuredTest, PropertiesComeInTheSchemasOrder) {
  // Written zeta before alpha (not sorted): the reply's keys come in that order.
  const std::string schema =
      R"({"type":"object","properties":{"zeta":{"type":"boolean"},"alpha":{"type":"boolean"}},)"
      R"("required":["zeta","alpha"]})";
  const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 60, "temperature": 0,)"
                           R"( "response_format": {"type": "json_schema", "json_schema": )"
                           R"({"name": "order", "schema": )" +
                           schema + "}}}";
  HttpResult r = Http("POST", server_.url("/v1/completions"), body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = json::parse(r.body)["choices"][0]["text"];
  const size_t zeta = text.find("\"zeta\""), alpha = text.find("\"alpha\"");
  ASSERT_NE(zeta, std::string::npos) << text;
  ASSERT_NE(alpha, std::string::npos) << text;
  EXPECT_LT(zeta, alpha) << text;
}

TEST_F(ServerStructuredTest, ErrorsNameTheField) {
  struct Case {
    json fields;
    std::string param;
    std::string says;  // part of the message
  };
  const std::vector<Case> cases = {
      {{{"response_format", {{"type", "xml"}}}}, "response_format", "xml"},
      {{{"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"schema", {{"type", "string"}, {"contentEncoding", "base64"}}}}}}}},
       "response_format.json_schema.schema",
       "contentEncoding"},
      {{{"grammar", "root ::= (("}}, "grammar", ""},
      {{{"grammar", 5}}, "grammar", "GBNF"},
      {{{"guided_regex", "(?<=a)b"}}, "guided_regex", ""},
      {{{"guided_choice", json::array()}}, "guided_choice", ""},
      {{{"grammar", "root ::= \"a\""}, {"guided_choice", {"x"}}}, "guided_choice", "only one"},
      {{{"structured_outputs", {{"yaml", "x"}}}}, "structured_outputs.yaml", ""},
      {{{"guided_whitespace_pattern", " "}}, "guided_whitespace_pattern", ""},
  };
  for (const Case& c : cases) {
    json body = {{"prompt", "Once upon a time"}, {"max_tokens", 4}};
    body.update(c.fields);
    json e = Post(server_, "/v1/completions", body, 400);
    EXPECT_EQ(e["error"]["param"], c.param) << body.dump() << ": " << e.dump();
    EXPECT_NE(e["error"]["message"].get<std::string>().find(c.says), std::string::npos)
        << e.dump();
  }
  // The server is still serving.
  json ok = Post(server_, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}});
  EXPECT_EQ(ok["usage"]["completion_tokens"], 2);
}

}  // namespace
}  // namespace forge::testing
