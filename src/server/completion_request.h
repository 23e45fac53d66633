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
#include "tokenizer/chat_template.h"

namespace forge::server {

struct CompletionRequest {
  bool chat = false;  // /v1/chat/completions
  std::string model;  // empty: the served model
  // Completions: text, or token ids used verbatim (prompt_is_ids). Chat: messages.
  std::string prompt;
  std::vector<int32_t> prompt_ids;
  bool prompt_is_ids = false;
  std::vector<ChatMessage> messages;
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
};

// A token id from JSON: an integer in [0, n_vocab) (ids past int32 are errors, never truncated),
// or an InvalidArgument naming `field`.
StatusOr<int32_t> TokenIdFromJson(const nlohmann::json& v, int64_t n_vocab,
                                  const std::string& field);

// Parses a request body. Errors are 400s naming the field: not an object, a wrong type, a value
// out of range, a missing prompt/messages, and fields Forge does not support (tools,
// response_format, functions, ...).
std::optional<ApiError> ParseCompletionRequest(const nlohmann::json& body, bool chat,
                                               CompletionRequest* out);

}  // namespace forge::server
