// Building completion and chat completion response bodies and stream chunks.
#include "server/completion_json.h"

namespace forge::server {

using nlohmann::json;

json FinishJson(FinishReason finish) {
  switch (finish) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    default:
      return nullptr;
  }
}

json UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

json LogprobsJson(const ResponseMeta& meta, const std::vector<int32_t>& tokens,
                  const std::vector<SampleResult>& logprobs) {
  if (!meta.logprobs) return nullptr;
  auto piece = [&](int32_t id) { return meta.tokenizer->TokenToPiece(id, true); };
  auto bytes = [](const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(int(c));
    return b;
  };
  const size_t count = std::min(tokens.size(), logprobs.size());
  if (meta.chat) {
    json content = json::array();
    for (size_t i = 0; i < count; ++i) {
      json top = json::array();
      for (const TokenLogprob& t : logprobs[i].top_logprobs) {
        const std::string p = piece(t.token);
        top.push_back({{"token", p}, {"logprob", t.logprob}, {"bytes", bytes(p)}});
      }
      const std::string p = piece(tokens[i]);
      content.push_back({{"token", p},
                         {"logprob", logprobs[i].logprob},
                         {"bytes", bytes(p)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json toks = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (size_t i = 0; i < count; ++i) {
    toks.push_back(piece(tokens[i]));
    lps.push_back(logprobs[i].logprob);
    json top = json::object();
    for (const TokenLogprob& t : logprobs[i].top_logprobs) top[piece(t.token)] = t.logprob;
    tops.push_back(top);
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}};
}

// OpenAI's tool_calls list; in a stream's delta each entry has its index.
json ToolCallsJson(const std::vector<ToolCall>& calls, int32_t first_index, bool indexed) {
  json list = json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    json call = {{"id", calls[k].id},
                 {"type", "function"},
                 {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}};
    if (indexed) call["index"] = first_index + static_cast<int32_t>(k);
    list.push_back(std::move(call));
  }
  return list;
}

json ResponseJson(const ResponseMeta& meta, const std::vector<SampleOutput>& samples,
                  int64_t prompt_tokens, int64_t cached_tokens) {
  json choices = json::array();
  int64_t completion = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const SampleOutput& s = samples[i];
    completion += s.completion_tokens;
    json c = {{"index", i},
              {"logprobs", LogprobsJson(meta, s.tokens, s.logprobs)},
              {"finish_reason", s.tool_finish ? json("tool_calls") : FinishJson(s.finish)}};
    if (meta.chat) {
      c["message"] = {{"role", "assistant"}, {"content", s.text}};
      if (!s.reasoning.empty()) c["message"]["reasoning_content"] = s.reasoning;
      if (!s.tool_calls.empty()) {
        c["message"]["tool_calls"] = ToolCallsJson(s.tool_calls, 0, false);
        if (s.text.empty()) c["message"]["content"] = nullptr;
      }
    } else {
      c["text"] = s.text;
    }
    choices.push_back(std::move(c));
  }
  return {
      {"id", meta.id},           {"object", meta.chat ? "chat.completion" : "text_completion"},
      {"created", meta.created}, {"model", meta.model},
      {"choices", choices},      {"usage", UsageJson(prompt_tokens, completion, cached_tokens)}};
}

json ChunkJson(const ResponseMeta& meta, const RequestEvent& ev, bool first, bool include_usage,
               const ChunkExtras& extras) {
  const std::string& reasoning = extras.reasoning;
  json finish = nullptr;
  if (ev.finished) finish = extras.tool_finish ? json("tool_calls") : FinishJson(ev.finish);
  json c = {{"index", ev.sample},
            {"logprobs", LogprobsJson(meta, ev.tokens, ev.logprobs)},
            {"finish_reason", finish}};
  if (meta.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    if (!ev.text.empty() || (!ev.finished && reasoning.empty() && extras.calls.empty())) {
      delta["content"] = ev.text;
    }
    if (!extras.calls.empty()) {
      delta["tool_calls"] = ToolCallsJson(extras.calls, extras.first_call_index, true);
    }
    c["delta"] = delta;
  } else {
    c["text"] = ev.text;
  }
  json j = {{"id", meta.id},
            {"object", meta.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", meta.created},
            {"model", meta.model},
            {"choices", json::array({c})}};
  if (include_usage) j["usage"] = nullptr;
  return j;
}

json UsageChunkJson(const ResponseMeta& meta, int64_t prompt_tokens, int64_t completion_tokens,
                    int64_t cached_tokens) {
  return {{"id", meta.id},
          {"object", meta.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array()},
          {"usage", UsageJson(prompt_tokens, completion_tokens, cached_tokens)}};
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string SseData(const json& j) { return "data: " + Dump(j) + "\n\n"; }

}  // namespace forge::server
