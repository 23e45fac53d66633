// JSON shapes of completion responses: whole bodies, SSE chunks, usage and logprobs, for the
// completions and chat completions APIs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace forge::server {

struct ResponseMeta {
  bool chat = false;
  std::string id;  // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  bool logprobs = false;
  const Tokenizer* tokenizer = nullptr;
};

// One sample's accumulated output.
struct SampleOutput {
  std::string text;
  std::string reasoning;  // a reasoning model's reasoning (chat: message.reasoning_content)
  std::vector<ToolCall> tool_calls;  // chat with tools: the calls parsed from the reply
  bool tool_finish = false;          // finish_reason "tool_calls" (auto / required, with calls)
  std::vector<int32_t> tokens;
  std::vector<SampleResult> logprobs;
  FinishReason finish = FinishReason::kNone;
  int64_t completion_tokens = 0;
  bool started = false;  // a chat stream sent its role delta
  bool echoed = false;   // the prompt's text went out first (echo)
};

// "stop", "length" or null.
nlohmann::json FinishJson(FinishReason finish);
// With prompt_tokens_details.cached_tokens: prompt tokens found in the prefix cache.
nlohmann::json UsageJson(int64_t prompt_tokens, int64_t completion_tokens,
                         int64_t cached_tokens = 0);
// Logprobs of tokens in the API's shape (null when !meta.logprobs).
nlohmann::json LogprobsJson(const ResponseMeta& meta, const std::vector<int32_t>& tokens,
                            const std::vector<SampleResult>& logprobs);
// The whole non-streaming response.
nlohmann::json ResponseJson(const ResponseMeta& meta, const std::vector<SampleOutput>& samples,
                            int64_t prompt_tokens, int64_t cached_tokens);
// What a chat chunk carries besides the event's text.
struct ChunkExtras {
  std::string reasoning;         // the delta's reasoning_content
  std::vector<ToolCall> calls;   // the delta's tool_calls (whole calls)
  int32_t first_call_index = 0;  // the choice's index of calls[0]
  bool tool_finish = false;      // finish_reason "tool_calls" instead of the event's
};
// One streamed choice chunk for an event (with include_usage, "usage": null).
nlohmann::json ChunkJson(const ResponseMeta& meta, const RequestEvent& event, bool first,
                         bool include_usage, const ChunkExtras& extras = {});
// The final usage chunk (choices []).
nlohmann::json UsageChunkJson(const ResponseMeta& meta, int64_t prompt_tokens,
                              int64_t completion_tokens, int64_t cached_tokens);
// "data: <json>\n\n"; invalid UTF-8 is replaced, never thrown.
std::string SseData(const nlohmann::json& j);
std::string Dump(const nlohmann::json& j);

}  // namespace forge::server
