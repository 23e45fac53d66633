// Real chat templates (Llama 2/3/3.1, Mistral v0.2/v0.3, ChatML, Qwen2/2.5/3, Phi-3, Gemma 1-3,
// DeepSeek R1/Coder, Zephyr; tests/tokenizer/chat_templates/*.jinja) rendered by ChatTemplate
// over many conversations, compared byte for byte with python3-jinja2 set up as HF does.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tokenizer/chat_templates/jinja_oracle.h"

namespace forge {
namespace {

using testing::OracleCase;
using testing::OracleResult;
using testing::OrderedJson;

struct TemplateSpec {
  const char* name;
  const char* bos;
  const char* eos;
};

// Each template with its model's special tokens.
const TemplateSpec kTemplates[] = {
    {"llama2", "<s>", "</s>"},
    {"llama3", "<|begin_of_text|>", "<|eot_id|>"},
    {"llama31", "<|begin_of_text|>", "<|eot_id|>"},
    {"mistral_v02", "<s>", "</s>"},
    {"mistral_v03", "<s>", "</s>"},
    {"chatml", "<s>", "<|im_end|>"},
    {"qwen2", "", "<|im_end|>"},
    {"qwen25", "", "<|im_end|>"},
    {"qwen3", "", "<|im_end|>"},
    {"phi3", "<s>", "<|endoftext|>"},
    {"gemma", "<bos>", "<eos>"},
    {"gemma3", "<bos>", "<eos>"},
    {"deepseek_r1", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
    {"deepseek_coder", "<｜begin▁of▁sentence｜>", "<|EOT|>"},
    {"zephyr", "<s>", "</s>"},
};

struct Conversation {
  const char* name;
  std::vector<ChatMessage> messages;
};

const std::vector<Conversation>& Conversations() {
  static const auto* kConversations = new std::vector<Conversation>{
      {"system_user", {{"system", "You are a helpful assistant."}, {"user", "Hello!"}}},
      {"user_only", {{"user", "What is 2+2?"}}},
      {"multi_turn",
       {{"system", "Be brief."},
        {"user", "Hi"},
        {"assistant", "Hello! How can I help?"},
        {"user", "Tell me a joke."}}},
      {"no_system_ends_with_assistant",
       {{"user", "Hi"},
        {"assistant", "  Hello  "},
        {"user", "  Bye  \n"},
        {"assistant", "See you."}}},
      {"unicode_and_escapes",
       {{"user",
         "h\xC3\xA9llo w\xC3\xB6rld \xE2\x80\x94 \xE4\xB8\x96\xE7\x95\x8C \xF0\x9F\x99\x82 "
         "\"double\" 'single' \\back\\slash\ttab\nnewline {{ not a tag }} {% x %}"}}},
      {"thinking",
       {{"user", "2+2?"}, {"assistant", "<think>\nadd them\n</think>\n\n4"}, {"user", "and 3+3?"}}},
      {"bad_alternation", {{"user", "a"}, {"user", "b"}}},
      {"assistant_first", {{"assistant", "I start"}, {"user", "ok"}}},
      {"tool_role", {{"user", "call it"}, {"tool", "{\"result\": 1}"}}},
      {"empty", {}},
      {"whitespace", {{"system", "  \n sys \n "}, {"user", "\n\n  padded  \n"}}},
      {"other_role", {{"user", "x"}, {"ipython", "y"}}},
      {"system_only", {{"system", "Only a system prompt."}}},
  };
  return *kConversations;
}

OrderedJson MessagesJson(const std::vector<ChatMessage>& messages) {
  OrderedJson list = OrderedJson::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  return list;
}

// Compares one C++ result with jinja2's; returns whether they agree.
bool Agree(const std::string& what, const StatusOr<std::string>& mine, const OracleResult& ref) {
  if (ref.ok) {
    EXPECT_TRUE(mine.ok()) << what
                           << ": jinja2 rendered, Forge failed: " << mine.status().ToString();
    if (!mine.ok()) return false;
    EXPECT_EQ(*mine, ref.output) << what;
    return *mine == ref.output;
  }
  EXPECT_FALSE(mine.ok()) << what << ": jinja2 failed (" << ref.type << ": " << ref.message
                          << "), Forge rendered:\n"
                          << (mine.ok() ? *mine : "");
  if (mine.ok()) return false;
  if (ref.raised) {
    EXPECT_EQ(mine.status().code(), StatusCode::kInvalidArgument) << what;
    EXPECT_EQ(mine.status().message(), ref.message) << what;
    return mine.status().message() == ref.message;
  }
  return true;
}

class ChatTemplateVsJinja2 : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::JinjaUnavailableReason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(ChatTemplateVsJinja2, RealTemplatesOverConversations) {
  struct Mine {
    std::string label;
    std::string tmpl_name;
    StatusOr<std::string> result;
  };
  std::vector<OracleCase> cases;
  std::vector<Mine> mine;
  for (const TemplateSpec& spec : kTemplates) {
    const std::string source = testing::ReadTemplate(spec.name);
    StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse(source);
    ASSERT_TRUE(tmpl.ok()) << spec.name << ": " << tmpl.status().ToString();
    for (const Conversation& conv : Conversations()) {
      for (bool agp : {false, true}) {
        ChatTemplateOptions opts;
        opts.add_generation_prompt = agp;
        opts.bos_token = spec.bos;
        opts.eos_token = spec.eos;
        OracleCase c;
        c.tmpl = source;
        c.variables = {{"messages", MessagesJson(conv.messages)},
                       {"tools", nullptr},
                       {"documents", nullptr},
                       {"add_generation_prompt", agp},
                       {"bos_token", spec.bos},
                       {"eos_token", spec.eos}};
        if (std::string(spec.name) == "qwen3" && agp) {  // its "no thinking" switch
          opts.extra_variables.emplace_back("enable_thinking", jinja::Value::Bool(false));
          c.variables["enable_thinking"] = false;
        }
        cases.push_back(std::move(c));
        mine.push_back({std::string(spec.name) + "/" + conv.name + (agp ? "/agp" : ""), spec.name,
                        tmpl->Apply(conv.messages, opts)});
      }
    }
  }
  const std::vector<OracleResult> ref = testing::RunOracle(cases);
  ASSERT_EQ(ref.size(), mine.size());
  std::map<std::string, std::array<int, 3>> per_template;  // agree, rendered, errors
  for (size_t i = 0; i < ref.size(); ++i) {
    auto& counts = per_template[mine[i].tmpl_name];
    counts[0] += Agree(mine[i].label, mine[i].result, ref[i]);
    counts[ref[i].ok ? 1 : 2]++;
  }
  for (const auto& [name, c] : per_template) {
    std::printf("  %-15s %2d/%2d cases equal to jinja2 (%d rendered, %d errors)\n", name.c_str(),
                c[0], c[1] + c[2], c[1], c[2]);
  }
}

// Conversations with tool definitions, tool calls and structured content, which need message
// fields beyond role and content: rendered through ChatTemplate::Render.
TEST_F(ChatTemplateVsJinja2, ToolsAndStructuredMessages) {
  const OrderedJson weather_tool = OrderedJson::parse(R"({"type": "function", "function": {
      "name": "get_weather", "description": "Current weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string",
      "description": "City name, e.g. Paris"}, "unit": {"type": "string",
      "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}})");
  const OrderedJson tools = OrderedJson::array({weather_tool});
  const OrderedJson call = OrderedJson::parse(R"({"id": "call12345", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}})");
  OrderedJson with_calls = OrderedJson::array();
  with_calls.push_back({{"role", "system"}, {"content", "You can call tools."}});
  with_calls.push_back({{"role", "user"}, {"content", "Weather in Paris?"}});
  with_calls.push_back(
      {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", OrderedJson::array({call})}});
  with_calls.push_back({{"role", "tool"},
                        {"tool_call_id", "call12345"},
                        {"content", "{\"temperature\": 21.5, \"sky\": \"clear\"}"}});
  with_calls.push_back({{"role", "assistant"},
                        {"content",
                         "It is 21.5 \xC2\xB0"
                         "C and clear."}});
  with_calls.push_back({{"role", "user"}, {"content", "Thanks!"}});
  OrderedJson bad_id = with_calls;
  bad_id[2]["tool_calls"][0]["id"] = "short";
  OrderedJson qwen_calls = with_calls;  // Qwen and DeepSeek templates want content strings
  qwen_calls[2]["content"] = "";
  qwen_calls[2]["tool_calls"][0]["function"]["arguments"] = "{\"city\": \"Paris\"}";
  OrderedJson builtin = OrderedJson::array();
  builtin.push_back({{"role", "user"}, {"content", "Search the news"}});
  builtin.push_back({{"role", "assistant"},
                     {"content", nullptr},
                     {"tool_calls", OrderedJson::parse(R"([{"function": {"name": "brave_search",
                         "arguments": {"query": "news today", "count": "3"}}}])")}});
  const OrderedJson gemma_parts = OrderedJson::parse(R"([
      {"role": "system", "content": [{"type": "text", "text": "  Be nice.  "}]},
      {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " What is it? "}]},
      {"role": "assistant", "content": "A cat."}])");

  struct Rich {
    const char* label;
    const char* tmpl;
    OrderedJson vars;
  };
  auto vars = [](OrderedJson messages, OrderedJson extra = OrderedJson::object()) {
    OrderedJson v = {
        {"messages", std::move(messages)}, {"tools", nullptr},   {"documents", nullptr},
        {"add_generation_prompt", true},   {"bos_token", "<s>"}, {"eos_token", "</s>"}};
    for (const auto& [k, val] : extra.items()) v[k] = val;
    return v;
  };
  const std::vector<Rich> rich = {
      {"llama31/tools_in_user_message", "llama31", vars(with_calls, {{"tools", tools}})},
      {"llama31/tools_in_system", "llama31",
       vars(with_calls,
            {{"tools", tools}, {"tools_in_user_message", false}, {"date_string", "01 Jan 2025"}})},
      {"llama31/builtin_tools", "llama31",
       vars(builtin, {{"builtin_tools", OrderedJson::array({"brave_search", "code_interpreter",
                                                            "wolfram_alpha"})}})},
      {"mistral_v03/tools", "mistral_v03", vars(with_calls, {{"tools", tools}})},
      {"mistral_v03/bad_call_id", "mistral_v03", vars(bad_id, {{"tools", tools}})},
      {"qwen25/tools", "qwen25", vars(with_calls, {{"tools", tools}})},
      {"qwen25/no_tools", "qwen25", vars(qwen_calls)},
      {"qwen3/tools", "qwen3", vars(qwen_calls, {{"tools", tools}})},
      {"qwen3/dict_arguments", "qwen3", vars(with_calls)},
      {"gemma3/content_parts", "gemma3", vars(gemma_parts)},
      {"deepseek_r1/tool_calls", "deepseek_r1", vars(qwen_calls)},
  };
  std::vector<OracleCase> cases;
  std::vector<StatusOr<std::string>> mine;
  for (const Rich& r : rich) {
    const std::string source = testing::ReadTemplate(r.tmpl);
    StatusOr<ChatTemplate> tmpl = ChatTemplate::Parse(source);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
    cases.push_back({source, r.vars, 0});
    mine.push_back(tmpl->Render(testing::ToVariables(r.vars)));
  }
  const std::vector<OracleResult> ref = testing::RunOracle(cases);
  ASSERT_EQ(ref.size(), rich.size());
  int agree = 0;
  for (size_t i = 0; i < ref.size(); ++i) agree += Agree(rich[i].label, mine[i], ref[i]);
  std::printf("  tool and structured-content cases: %d/%zu equal to jinja2\n", agree, rich.size());
}

TEST(ChatTemplateTest, RaiseExceptionReturnsTheTemplatesMessage) {
  StatusOr<ChatTemplate> t = ChatTemplate::Parse(testing::ReadTemplate("gemma"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  StatusOr<std::string> r = t->Apply({{"system", "sys"}, {"user", "hi"}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "System role not supported");
}

TEST(ChatTemplateTest, UnsupportedConstructsAreNamedErrors) {
  const std::pair<const char*, const char*> kCases[] = {
      {"{% include 'other.jinja' %}", "unsupported tag 'include'"},
      {"{% extends 'base' %}", "unsupported tag 'extends'"},
      {"a\n{% for x in y recursive %}{% endfor %}", "line 2: recursive for loops"},
      {"{{ f(*args) }}", "*args and **kwargs"},
  };
  for (const auto& [source, expected] : kCases) {
    StatusOr<ChatTemplate> t = ChatTemplate::Parse(source);
    ASSERT_FALSE(t.ok()) << source;
    EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented) << source;
    EXPECT_NE(t.status().message().find(expected), std::string::npos) << t.status().ToString();
  }
  // Constructs that parse but cannot run say so when they run.
  const std::pair<const char*, const char*> kRuntime[] = {
      {"{{ '{} {}'.format(1, 2) }}", "str.format() is not supported"},
      {"{{ 'a %s' % 1 }}", "printf-style string formatting"},
      {"{{ 'x'|wordwrap(3) }}", "unsupported filter 'wordwrap'"},
      {"{{ 2 ** 70 }}", "64-bit integers"},
  };
  for (const auto& [source, expected] : kRuntime) {
    StatusOr<ChatTemplate> t = ChatTemplate::Parse(source);
    ASSERT_TRUE(t.ok()) << source << ": " << t.status().ToString();
    StatusOr<std::string> r = t->Apply({}, {});
    ASSERT_FALSE(r.ok()) << source;
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << source;
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().ToString();
  }
}

TEST(ChatTemplateTest, ErrorsNameTheLine) {
  StatusOr<ChatTemplate> bad = ChatTemplate::Parse("ok\n{% if x %}\n{{ 1 + }}\n{% endif %}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status().ToString();

  StatusOr<ChatTemplate> t = ChatTemplate::Parse("a\nb\n{{ messages[0].role.upper() + 1 }}");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  StatusOr<std::string> r = t->Apply({{"user", "x"}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("can only concatenate str"), std::string::npos);

  StatusOr<ChatTemplate> unterminated = ChatTemplate::Parse("{% for m in messages %}x");
  ASSERT_FALSE(unterminated.ok());
  EXPECT_NE(unterminated.status().message().find("'endfor'"), std::string::npos);
}

TEST(ChatTemplateTest, ExtraVariablesAndFixedClock) {
  StatusOr<ChatTemplate> t =
      ChatTemplate::Parse("{{ strftime_now('%Y-%m-%d') }}|{{ date_string }}|{{ enable_thinking }}");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ChatTemplateOptions opts;
  opts.now_unix_seconds = 86400 * 365 + 43200;  // 1971-01-01 12:00 UTC
  opts.extra_variables = {{"date_string", jinja::Value::String("26 Jul 2024")},
                          {"enable_thinking", jinja::Value::Bool(false)}};
  StatusOr<std::string> r = t->Apply({}, opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "1971-01-01|26 Jul 2024|False");
}

TEST(ChatTemplateTest, CopiesShareTheParsedTemplate) {
  StatusOr<ChatTemplate> t = ChatTemplate::Parse(testing::ReadTemplate("chatml"));
  ASSERT_TRUE(t.ok());
  const ChatTemplate copy = *t;
  ChatTemplateOptions opts;
  opts.add_generation_prompt = true;
  StatusOr<std::string> r = copy.Apply({{"user", "hi"}}, opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(copy.source(), t->source());
}

}  // namespace
}  // namespace forge
