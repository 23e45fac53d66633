// CompletionRequest: the body of POST /v1/completions or /v1/chat/completions, parsed and checked
// field by field (a wrong type or an unsupported field is an error naming the field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sampling/sampling_params.h"
#include "server/api_error.h"
#include "server/output_constraint.h"
#include "server/tool_request.h"
#include "tokenizer/chat_template.h"

namespace forge::server {

// One prompt of /v1/completions: text, or token ids used verbatim.
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

// Prompts x n of one request at most (each is a sequence of its own).
inline constexpr int kMaxChoices = 128;

struct CompletionRequest {
  bool chat = false;  // /v1/chat/completions
  std::string model;  // empty: the served model
  // Completions: one prompt or a list of them (each answered with n choices). Chat: messages.
  std::vector<PromptInput> prompts;
  std::vector<ChatMessage> messages;
  bool echo = false;  // completions: each choice's text starts with its prompt
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // stream_options.continuous_usage_stats (as vLLM), with include_usage: every event that
  // carries tokens is streamed as a chunk (even when its text is held back) with the usage so far.
  bool continuous_usage = false;
  // max_tokens / max_completion_tokens; unset: the server's default, capped by the context.
  std::optional<int32_t> max_tokens;
  // Logprobs: completions' `logprobs: N` or chat's `logprobs: true` + `top_logprobs: N`.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  // Everything else goes straight into the sampling params (max_tokens set later).
  SamplingParams params;
  // Chat: variables the template gets besides messages (chat_template_kwargs, e.g.
  // enable_thinking; reasoning_effort).
  std::vector<std::pair<std::string, jinja::Value>> template_variables;
  // What the text must be (response_format, grammar, guided_*): GBNF; empty field: anything.
  OutputConstraint constraint;
  // Chat: the tools the model may call (tools, tool_choice, parallel_tool_calls).
  RequestTools tools;
  // The history's tool-call text that reaches the template (names, ids, arguments), by field:
  // checked for control-token text once the tokenizer is known.
  std::vector<std::pair<std::string, std::string>> tool_texts;
  // Fields Forge does not know: ignored (as OpenAI-compatible servers do), counted and logged.
  std::vector<std::string> ignored_fields;
};

// A token id from JSON: an integer in [0, n_vocab) (ids past int32 are errors, never truncated),
// or an InvalidArgument naming `field`.
StatusOr<int32_t> TokenIdFromJson(const nlohmann::json& v, int64_t n_vocab,
                                  const std::string& field);

// Parses a request body (raw_body: its text, when known, for the key order of a JSON schema). A
// field sent as null is treated as absent. Errors are 400s naming the field: not an object, a
// wrong type, a value out of range, a missing prompt/messages, an output constraint that cannot be
// enforced (server/output_constraint.h), bad tools (server/tool_request.h), and features Forge
// knows but does not offer (functions, audio, ...). Unknown fields are listed in ignored_fields.
std::optional<ApiError> ParseCompletionRequest(const nlohmann::json& body, bool chat,
                                               CompletionRequest* out,
                                               std::string_view raw_body = {});

}  // namespace forge::server
