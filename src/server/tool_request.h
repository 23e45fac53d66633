// The tool-calling fields of a chat completion request: `tools`, `tool_choice`,
// `parallel_tool_calls`, and the `tool_calls` / `tool_call_id` of the messages in the history.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/tool_calls.h"
#include "tokenizer/chat_template.h"

namespace forge::server {

// OpenAI's limit on the tools of one request.
inline constexpr size_t kMaxTools = 128;

enum class ToolChoice { kAuto, kNone, kRequired, kNamed };

struct RequestTools {
  std::vector<ToolSpec> specs;  // in the request's order; empty: no tools
  // The `tools` list as sent (keys in the client's order), as the chat template gets it.
  jinja::Value template_value = jinja::Value::None();
  std::string json_text;  // the same list as JSON text
  ToolChoice choice = ToolChoice::kAuto;
  std::string named;  // kNamed: the function
  bool parallel = true;

  bool active() const { return !specs.empty() && choice != ToolChoice::kNone; }
};

// Reads tools, tool_choice and parallel_tool_calls (null fields already removed); ordered_body,
// when given, is the same body in the client's key order, where the tools' schemas are read.
// Errors are 400s
// naming the field: a tool without a function name (or one of [A-Za-z0-9_-]{1,64}), two tools of
// one name, more than kMaxTools, a tool_choice naming no tool, tool_choice without tools.
std::optional<ApiError> ParseRequestTools(const nlohmann::json& body,
                                          const nlohmann::ordered_json* ordered_body,
                                          RequestTools* out);

// A history message's tool_calls ([{"id", "type": "function", "function": {"name",
// "arguments": JSON text of an object}}]), tool_call_id and name, into msg; each text of them
// that the template will show is added to texts with its field. field: "messages[i]".
std::optional<ApiError> ParseMessageToolFields(
    const nlohmann::json& message, const std::string& field, ChatMessage* msg,
    std::vector<std::pair<std::string, std::string>>* texts);

}  // namespace forge::server
