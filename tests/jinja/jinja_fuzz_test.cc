// Random and mutated templates never crash the interpreter: each parses and renders to text or
// returns an error. Also the resource limits: runaway loops, output and recursion stop with
// ResourceExhausted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "jinja/evaluator.h"
#include "jinja/parser.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/chat_templates/jinja_oracle.h"

namespace forge {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "sys"}, {"user", "hi"}, {"assistant", "hello"}, {"user", "bye"}};

// Renders `source` if it parses; either way it must come back (no crash, no hang).
void Exercise(const std::string& source, int* parsed, int* rendered) {
  StatusOr<ChatTemplate> t = ChatTemplate::Parse(source);
  if (!t.ok()) {
    EXPECT_FALSE(t.status().message().empty());
    return;
  }
  ++*parsed;
  ChatTemplateOptions opts;
  opts.add_generation_prompt = true;
  opts.bos_token = "<s>";
  opts.eos_token = "</s>";
  StatusOr<std::string> r = t->Apply(kConversation, opts);
  if (r.ok()) ++*rendered;
}

TEST(ChatTemplateFuzzTest, RandomTokenSoupNeverCrashes) {
  static const char* const kPieces[] = {"{{",         "}}",
                                        "{%",         "%}",
                                        "{#",         "#}",
                                        "-",          "+",
                                        " ",          "\n",
                                        "for",        "in",
                                        "if",         "elif",
                                        "else",       "endif",
                                        "endfor",     "set",
                                        "=",          "macro",
                                        "endmacro",   "call",
                                        "endcall",    "filter",
                                        "endfilter",  "raw",
                                        "endraw",     "namespace(",
                                        "ns",         ".",
                                        "x",          "messages",
                                        "message",    "loop",
                                        "index0",     "last",
                                        "(",          ")",
                                        "[",          "]",
                                        "{",          "}",
                                        ",",          ":",
                                        "|",          "~",
                                        "*",          "**",
                                        "/",          "//",
                                        "%",          "==",
                                        "!=",         "<",
                                        ">=",         "and",
                                        "or",         "not",
                                        "is",         "defined",
                                        "none",       "true",
                                        "'str'",      "\"s\\n\"",
                                        "'",          "\"",
                                        "1",          "-2",
                                        "3.5",        "1e999",
                                        "trim",       "length",
                                        "tojson",     "join",
                                        "map",        "selectattr",
                                        "items()",    "strip()",
                                        "split(",     "raise_exception(",
                                        "range(",     "caller()",
                                        "break",      "continue",
                                        "with",       "endwith",
                                        "generation", "\\",
                                        "\xC3\xA9",   "\xFF",
                                        "\x00",       "recursive",
                                        "include",    "9223372036854775807",
                                        "[::-1]"};
  std::mt19937 rng(1234);
  int parsed = 0, rendered = 0;
  const int kIterations = 4000;
  for (int i = 0; i < kIterations; ++i) {
    std::string source;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      const char* piece = kPieces[rng() % std::size(kPieces)];
      source += (piece[0] == '\0') ? std::string(1, '\0') : std::string(piece);
    }
    Exercise(source, &parsed, &rendered);
  }
  std::printf("  %d random templates: %d parsed, %d rendered\n", kIterations, parsed, rendered);
  EXPECT_GT(parsed, 0);
}

TEST(ChatTemplateFuzzTest, MutatedRealTemplatesNeverCrash) {
  const char* const kNames[] = {"llama2", "llama31", "mistral_v03", "qwen25",        "qwen3",
                                "gemma3", "phi3",    "deepseek_r1", "deepseek_coder"};
  std::mt19937 rng(42);
  int parsed = 0, rendered = 0, total = 0;
  for (const char* name : kNames) {
    const std::string original = testing::ReadTemplate(name);
    ASSERT_FALSE(original.empty());
    for (int i = 0; i < 300; ++i) {
      std::string s = original;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t pos = rng() % s.size();
        switch (rng() % 4) {
          case 0:
            s.erase(pos, 1 + rng() % 8);
            break;
          case 1:
            s.insert(pos, 1, static_cast<char>(rng() % 256));
            break;
          case 2:
            s[pos] = "{}%#-+()[]'\"|.\n "[rng() % 17];
            break;
          default: {  // duplicate a slice elsewhere
            const size_t len = std::min<size_t>(1 + rng() % 30, s.size() - pos);
            s.insert(rng() % s.size(), s.substr(pos, len));
          }
        }
      }
      Exercise(s, &parsed, &rendered);
      ++total;
    }
  }
  std::printf("  %d mutated templates: %d parsed, %d rendered\n", total, parsed, rendered);
  EXPECT_GT(rendered, 0);
}

TEST(ChatTemplateFuzzTest, LimitsStopRunawayTemplates) {
  jinja::RenderLimits limits;
  limits.max_steps = 200000;
  limits.max_output_bytes = 1 << 16;
  const std::pair<const char*, const char*> kCases[] = {
      {"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps"},
      {"{% for i in range(100000) %}{{ 'xxxxxxxxxxxxxxxx' }}{% endfor %}", "output"},
      {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nest deeper"},
      {"{{ 'x' * 1000000000 }}", "64 MiB"},
  };
  for (const auto& [source, expected] : kCases) {
    StatusOr<jinja::Template> t = jinja::ParseTemplate(source);
    ASSERT_TRUE(t.ok()) << source << ": " << t.status().ToString();
    StatusOr<std::string> r = jinja::Render(*t, jinja::ValueMap(), 0, limits);
    ASSERT_FALSE(r.ok()) << source;
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().ToString();
  }
  // Deep nesting is refused by the parser, not by the C++ stack.
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  StatusOr<ChatTemplate> t = ChatTemplate::Parse(deep);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nest deeper"), std::string::npos) << t.status().ToString();
  std::string negs = "{{ " + std::string(5000, '-') + "1 }}";
  EXPECT_FALSE(ChatTemplate::Parse(negs).ok());
  std::string nots = "{{ " + [] {
    std::string s;
    for (int i = 0; i < 3000; ++i) s += "not ";
    return s;
  }() + "1 }}";
  EXPECT_FALSE(ChatTemplate::Parse(nots).ok());
}

TEST(ChatTemplateFuzzTest, SelfReferencingNamespaceIsFreed) {
  // A cycle through a namespace must neither loop forever when printed nor leak (ASan checks).
  StatusOr<ChatTemplate> t = ChatTemplate::Parse(
      "{% set ns = namespace(a=1) %}{% set ns.self = ns %}{% set ns.l = [ns] %}{{ ns.a }}"
      "{{ ns.self.self.a }}{{ (ns.l|length) }}{{ ns.l }}");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  StatusOr<std::string> r = t->Apply({}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->substr(0, 3), "111");
}

}  // namespace
}  // namespace forge
