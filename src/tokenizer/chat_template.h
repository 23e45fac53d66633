// ChatTemplate: applies a GGUF's `tokenizer.chat_template` (a Jinja2 template written for HF
// transformers) to a conversation, rendering byte for byte what transformers'
// apply_chat_template renders, through Forge's own Jinja interpreter (src/jinja).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "jinja/value.h"

namespace forge {

namespace jinja {
struct Template;
}

// A tool call of an assistant message in the history, as templates read it (HF's convention:
// tool_call.function.arguments is the arguments object, not its JSON text).
struct ChatToolCall {
  std::string id;
  std::string name;
  jinja::Value arguments;  // a map
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool", ...
  std::string content;
  // Given to the template only when set: the speaker's name, the call a "tool" message answers,
  // an assistant message's tool calls ({"id", "type": "function", "function": {"name",
  // "arguments"}} each).
  std::string name = {};
  std::string tool_call_id = {};
  std::vector<ChatToolCall> tool_calls = {};
};

struct ChatTemplateOptions {
  // Ends the prompt with the header of an assistant turn.
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  // Further variables, overriding the ones above: e.g. {"date_string", "26 Jul 2024"},
  // {"enable_thinking", false}, {"tools", <list>}.
  std::vector<std::pair<std::string, jinja::Value>> extra_variables;
  // The time strftime_now() formats (seconds since the epoch, local time zone); unset: now.
  std::optional<int64_t> now_unix_seconds;
};

class ChatTemplate {
 public:
  // Parses a template. Syntax errors are InvalidArgument; Jinja features Forge does not
  // implement (include, extends, recursive loops, ...) are Unimplemented. Both name the line.
  static StatusOr<ChatTemplate> Parse(std::string_view source);

  // Renders the conversation as HF's apply_chat_template does: the variables are `messages`
  // (a list of {"role", "content"} dicts, with "name", "tool_call_id" and "tool_calls" where
  // set), `add_generation_prompt`, `bos_token`, `eos_token`, `tools` and `documents` (both none),
  // then opts.extra_variables (a `tools` list there replaces the none). A raise_exception("msg") in
  // the template returns InvalidArgument with exactly "msg"; other errors name the line.
  StatusOr<std::string> Apply(const std::vector<ChatMessage>& messages,
                              const ChatTemplateOptions& opts) const;

  // Renders with exactly `variables` (no defaults), for callers that build messages with more
  // fields (tool_calls, ...) themselves.
  StatusOr<std::string> Render(const std::vector<std::pair<std::string, jinja::Value>>& variables,
                               std::optional<int64_t> now_unix_seconds = std::nullopt) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::Template> template_;  // immutable; shared by copies
};

}  // namespace forge
