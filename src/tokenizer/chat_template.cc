// ChatTemplate: the HF render context around the Jinja interpreter; see chat_template.h.
#include "tokenizer/chat_template.h"

#include <ctime>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/evaluator.h"
#include "jinja/parser.h"

namespace forge {

StatusOr<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  StatusOr<jinja::Template> parsed = jinja::ParseTemplate(source);
  if (!parsed.ok()) return parsed.status().WithContext("chat template");
  ChatTemplate t;
  t.source_ = std::string(source);
  t.template_ = std::make_shared<const jinja::Template>(std::move(parsed).value());
  return t;
}

StatusOr<std::string> ChatTemplate::Apply(const std::vector<ChatMessage>& messages,
                                          const ChatTemplateOptions& opts) const {
  jinja::ValueList list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    jinja::ValueMap map;
    map.Set("role", jinja::Value::String(m.role));
    map.Set("content", jinja::Value::String(m.content));
    if (!m.name.empty()) map.Set("name", jinja::Value::String(m.name));
    if (!m.tool_call_id.empty()) map.Set("tool_call_id", jinja::Value::String(m.tool_call_id));
    if (!m.tool_calls.empty()) {
      jinja::ValueList calls;
      for (const ChatToolCall& c : m.tool_calls) {
        jinja::ValueMap function;
        function.Set("name", jinja::Value::String(c.name));
        function.Set("arguments", c.arguments);
        jinja::ValueMap call;
        call.Set("id", jinja::Value::String(c.id));
        call.Set("type", jinja::Value::String("function"));
        call.Set("function", jinja::Value::Map(std::move(function)));
        calls.push_back(jinja::Value::Map(std::move(call)));
      }
      map.Set("tool_calls", jinja::Value::List(std::move(calls)));
    }
    list.push_back(jinja::Value::Map(std::move(map)));
  }
  std::vector<std::pair<std::string, jinja::Value>> vars;
  vars.emplace_back("messages", jinja::Value::List(std::move(list)));
  vars.emplace_back("tools", jinja::Value::None());
  vars.emplace_back("documents", jinja::Value::None());
  vars.emplace_back("add_generation_prompt", jinja::Value::Bool(opts.add_generation_prompt));
  vars.emplace_back("bos_token", jinja::Value::String(opts.bos_token));
  vars.emplace_back("eos_token", jinja::Value::String(opts.eos_token));
  vars.insert(vars.end(), opts.extra_variables.begin(), opts.extra_variables.end());
  return Render(vars, opts.now_unix_seconds);
}

StatusOr<std::string> ChatTemplate::Render(
    const std::vector<std::pair<std::string, jinja::Value>>& variables,
    std::optional<int64_t> now_unix_seconds) const {
  CHECK(template_ != nullptr) << "ChatTemplate used before Parse";
  jinja::ValueMap context;
  for (const auto& [name, value] : variables) context.Set(name, value);
  const std::time_t now =
      now_unix_seconds ? static_cast<std::time_t>(*now_unix_seconds) : std::time(nullptr);
  StatusOr<std::string> out = jinja::Render(*template_, context, now);
  if (out.ok()) return out;
  const std::string& message = out.status().message();
  if (message.starts_with(jinja::kRaisedPrefix)) {
    return InvalidArgumentError(message.substr(jinja::kRaisedPrefix.size()));
  }
  return out.status().WithContext("chat template");
}

}  // namespace forge
