// Tool calls (OpenAI "tools"): which syntax a chat template teaches its model for calling a
// function, the calls parsed out of a finished reply or out of a stream of pieces (the same
// answer for any split), and the GBNF grammar of replies that must call a tool (tool_choice
// "required" or a named function), each tool's arguments constrained by its JSON schema.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace forge::server {

enum class ToolCallFormat {
  kNone,     // the template knows no tools
  kHermes,   // <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call> (Qwen 2.5, Qwen 3,
             // Hermes); several blocks = parallel calls
  kLlama31,  // {"name": N, "parameters": {...}} as the whole reply ("arguments" is accepted for
             // "parameters"), optionally after <|python_tag|>; several separated by ";"
  kMistral,  // [TOOL_CALLS] [{"name": N, "arguments": {...}}, ...] (the space is optional)
  kGeneric,  // Forge's own, for templates without a format: {"tool_calls": [{"name": N,
             // "arguments": {...}}, ...]} as the whole reply
};

// The format a chat template's source text asks for, by the first rule that matches:
//   it contains "<tool_call>"                                        -> kHermes
//   it contains "[TOOL_CALLS]"                                       -> kMistral
//   it contains "<|python_tag|>", or both "\"parameters\"" and "ipython" -> kLlama31
//   it mentions `tools` as a whole word (not "tool_calls", "tools_x") -> kGeneric
//   otherwise                                                        -> kNone
// A template that never mentions tools cannot show them to the model; callers may still use
// kGeneric with a system prompt of their own.
ToolCallFormat DetectToolCallFormat(std::string_view template_source);
// "none", "hermes", "llama3.1", "mistral", "generic".
const char* ToolCallFormatName(ToolCallFormat format);

struct ToolSpec {
  std::string name;
  // JSON schema of the arguments; null or {} = any object.
  nlohmann::ordered_json parameters;
};

struct ToolCall {
  std::string id;  // "call_" + 24 characters of [a-zA-Z0-9]
  std::string name;
  std::string arguments;  // compact JSON text of an object
};

struct ParsedReply {
  std::string content;
  std::vector<ToolCall> calls;
};

// A finished reply split into its content and its calls. The content is the text outside the
// calls; each call block absorbs the whitespace right around it (kHermes, kMistral: content may
// come before, between and after blocks; kLlama31, kGeneric: the calls are the whole reply, so
// the content is empty). A call is an object with a string "name" naming one of tools and an
// object "arguments" (kLlama31: "parameters" or "arguments"); a missing arguments key counts as
// {}, other keys (a model's "id") are ignored. Leniencies: a kHermes block may lack its closing
// "</tool_call>" when only whitespace follows it; kLlama31 calls may end in ";".
// When anything that begins a call is not a valid call (JSON that does not parse, no string
// name, an unknown tool, arguments not an object, an unclosed block), there is no call at all:
// the whole reply, unchanged, is the content. Ids come from id_seed (the i-th call of a reply
// gets an id distinct from the other calls' ids; the same seed gives the same ids); kMistral's
// are 9 alphanumeric characters (the first 9 after "call_"), as its template requires.
ParsedReply ParseToolCalls(ToolCallFormat format, std::string_view text,
                           const std::vector<ToolSpec>& tools, uint64_t id_seed);

// The id of the index-th call for a seed: "call_" + 24 characters of [a-zA-Z0-9]. Distinct
// indexes give distinct ids.
std::string ToolCallId(uint64_t id_seed, size_t index);

// ParseToolCalls on a text that arrives in pieces. Content streams out as soon as it is final:
// text that may begin a call marker ("<tool_call>", "[TOOL_CALLS]") and whitespace that a call
// block could absorb are held back. Once a marker has appeared, everything after it is held
// until Finish(), which reports the calls; and for kLlama31 and kGeneric a reply whose first
// non-space character is '{' (or that starts with <|python_tag|>) is held back whole. Calls come
// only from Finish(): a later malformed block turns the whole reply into content (see
// ParseToolCalls), which a call reported earlier could not be taken back from. For any split of
// a text into pieces, the concatenated content and the calls of Feed* + Finish equal
// ParseToolCalls(format, text, tools, id_seed).
class ToolCallStream {
 public:
  ToolCallStream(ToolCallFormat format, std::vector<ToolSpec> tools, uint64_t id_seed);

  struct Delta {
    std::string content;
    std::vector<ToolCall> calls;
  };
  Delta Feed(std::string_view text);
  // What is held back, decided; the stream is done (a later Feed or Finish returns nothing).
  Delta Finish();

 private:
  ToolCallFormat format_;
  std::vector<ToolSpec> tools_;
  uint64_t id_seed_;
  std::string text_;      // everything fed so far
  size_t emitted_ = 0;    // bytes of text_ returned as content
  size_t scanned_ = 0;    // no marker starts before this offset of text_
  bool holding_ = false;  // a call may have begun: the rest waits for Finish()
  bool decided_ = false;  // kLlama31/kGeneric: the reply is known to be plain content
  bool finished_ = false;
};

// GBNF of a reply that calls tools, in format's exact syntax and spacing (kHermes:
// "<tool_call>\n{\"name\": N, \"arguments\": A}\n</tool_call>", blocks joined by "\n";
// kMistral: "[TOOL_CALLS] [" items joined by ", " "]"; kLlama31: {"name": N, "parameters": A}
// joined by ";"; kGeneric: {"tool_calls": [" items joined by ", " "]}"). A is constrained by the
// tool's parameters schema (any object when it has none). One call, or one or more when
// parallel; only: the name of the one tool the reply must call. Errors: InvalidArgument for
// kNone, no tools, `only` naming no tool, or a tool whose schema cannot be converted (naming
// the tool).
StatusOr<std::string> ToolCallGbnf(ToolCallFormat format, const std::vector<ToolSpec>& tools,
                                   bool parallel, std::optional<std::string> only);

}  // namespace forge::server
