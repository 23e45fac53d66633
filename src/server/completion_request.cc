// Parsing of OpenAI completion and chat completion request bodies into CompletionRequest.
#include "server/completion_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "server/jinja_json.h"

namespace forge::server {
namespace {

using nlohmann::json;

// Fields read (or accepted and ignored where they change nothing here).
const std::set<std::string>& KnownFields() {
  static const std::set<std::string> k = {"model",
                                          "prompt",
                                          "messages",
                                          "max_tokens",
                                          "max_completion_tokens",
                                          "temperature",
                                          "top_p",
                                          "top_k",
                                          "min_p",
                                          "presence_penalty",
                                          "frequency_penalty",
                                          "repetition_penalty",
                                          "logit_bias",
                                          "seed",
                                          "stop",
                                          "n",
                                          "logprobs",
                                          "top_logprobs",
                                          "ignore_eos",
                                          "min_tokens",
                                          "stream",
                                          "stream_options",
                                          "user",
                                          "stop_token_ids",
                                          "echo",
                                          "best_of",
                                          "suffix",
                                          "response_format",
                                          "grammar",
                                          "json_schema",
                                          "guided_json",
                                          "guided_regex",
                                          "guided_choice",
                                          "guided_grammar",
                                          "structured_outputs",
                                          "guided_decoding_backend",
                                          "tools",
                                          "tool_choice",
                                          "parallel_tool_calls",
                                          "store",
                                          "metadata",
                                          "service_tier",
                                          "chat_template_kwargs",
                                          "reasoning_effort"};
  return k;
}

// Features that change the answer and that Forge does not offer: refused, never ignored.
const std::set<std::string>& UnsupportedFields() {
  static const std::set<std::string> k = {
      "functions", "function_call", "audio", "modalities", "prediction", "web_search_options",
      "guided_whitespace_pattern"};
  return k;
}

ApiError Bad(const std::string& field, const std::string& what) {
  return ApiError::InvalidRequest("'" + field + "': " + what, field);
}

// Reads an optional number field; wrong types are errors.
std::optional<ApiError> GetDouble(const json& body, const char* field, double* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return Bad(field, "expected a number");
  *out = it->get<double>();
  if (!std::isfinite(*out)) return Bad(field, "must be finite");
  return std::nullopt;
}

std::optional<ApiError> GetInt(const json& body, const char* field, int64_t lo, int64_t hi,
                               std::optional<int64_t>* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return Bad(field, "expected an integer");
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : it->get<int64_t>();
  if (v < lo || v > hi) {
    return Bad(field, std::to_string(v) + " must be in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
  }
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> GetBool(const json& body, const char* field, bool* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return Bad(field, "expected a boolean");
  *out = it->get<bool>();
  return std::nullopt;
}

// One prompt: a string or a list of token ids.
std::optional<ApiError> ParseOnePrompt(const json& p, PromptInput* out) {
  if (p.is_string()) {
    out->text = p.get<std::string>();
    return std::nullopt;
  }
  if (p.is_array() && !p.empty() && p[0].is_number()) {
    for (const json& t : p) {
      auto id = TokenIdFromJson(t, int64_t{INT32_MAX} + 1, "prompt");
      if (!id.ok()) return ApiError::FromStatus(id.status(), "prompt");
      out->ids.push_back(*id);
    }
    out->is_ids = true;
    return std::nullopt;
  }
  return Bad("prompt", "expected a string, a list of token ids, or a list of either");
}

// A prompt, or a list of strings or of token-id lists (each answered on its own).
std::optional<ApiError> ParsePrompt(const json& p, CompletionRequest* out) {
  const bool list = p.is_array() && !p.empty() && (p[0].is_string() || p[0].is_array());
  if (!list) {
    out->prompts.emplace_back();
    return ParseOnePrompt(p, &out->prompts.back());
  }
  if (p.size() > kMaxChoices) {
    return Bad("prompt", "a list of at most " + std::to_string(kMaxChoices) + " prompts");
  }
  for (const json& one : p) {
    if (!one.is_string() && !one.is_array()) {
      return Bad("prompt", "a list of prompts holds strings or lists of token ids");
    }
    out->prompts.emplace_back();
    if (auto e = ParseOnePrompt(one, &out->prompts.back())) return e;
  }
  return std::nullopt;
}

std::optional<ApiError> ParseMessages(const json& m, CompletionRequest* out) {
  if (!m.is_array() || m.empty()) return Bad("messages", "expected a non-empty list");
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!m[i].is_object()) return Bad(field, "expected an object");
    auto role = m[i].find("role");
    if (role == m[i].end() || !role->is_string()) return Bad(field + ".role", "expected a string");
    ChatMessage msg{role->get<std::string>(), ""};
    auto content = m[i].find("content");
    if (content != m[i].end() && content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content != m[i].end() && content->is_array()) {  // [{"type":"text","text":...}]
      bool first = true;
      for (const json& part : *content) {  // text parts are joined by newlines
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" ||
            !part.contains("text") || !part["text"].is_string()) {
          return Bad(field + ".content", "only text parts are supported");
        }
        if (!first) msg.content += '\n';
        msg.content += part["text"].get<std::string>();
        first = false;
      }
    } else if (content != m[i].end() && !content->is_null()) {
      return Bad(field + ".content", "expected a string or a list of text parts");
    }
    if (auto e = ParseMessageToolFields(m[i], field, &msg, &out->tool_texts)) return e;
    for (const auto& [key, value] : m[i].items()) {
      if (value.is_null()) continue;
      if (key != "role" && key != "content" && key != "name" && key != "tool_calls" &&
          key != "tool_call_id") {
        return ApiError::FromStatus(
            UnimplementedError("'" + field + "." + key + "' is not supported"), field + "." + key);
      }
    }
    out->messages.push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> ParseStop(const json& s, SamplingParams* p) {
  if (s.is_null()) return std::nullopt;
  if (s.is_string()) {
    if (!s.get<std::string>().empty()) p->stop.push_back(s.get<std::string>());
    return std::nullopt;
  }
  if (!s.is_array() || s.size() > 4) return Bad("stop", "expected a string or a list of up to 4");
  for (const json& x : s) {
    if (!x.is_string()) return Bad("stop", "expected strings");
    if (!x.get<std::string>().empty()) p->stop.push_back(x.get<std::string>());
  }
  return std::nullopt;
}

std::optional<ApiError> ParseLogitBias(const json& b, SamplingParams* p) {
  if (b.is_null()) return std::nullopt;
  if (!b.is_object()) return Bad("logit_bias", "expected an object of token id -> bias");
  for (const auto& [key, value] : b.items()) {
    char* end = nullptr;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id > INT32_MAX) {
      return Bad("logit_bias", "key '" + key + "' is not a token id");
    }
    if (!value.is_number()) return Bad("logit_bias", "values must be numbers");
    const double v = value.get<double>();
    if (v < -100 || v > 100) return Bad("logit_bias", "values must be in [-100, 100]");
    p->logit_bias[static_cast<int32_t>(id)] = static_cast<float>(v);
  }
  return std::nullopt;
}


}  // namespace

StatusOr<int32_t> TokenIdFromJson(const json& v, int64_t n_vocab, const std::string& field) {
  if (!v.is_number_integer()) {
    return InvalidArgumentError("'" + field + "': token ids must be integers");
  }
  // Unsigned values past int64 and negative ones are both out of range.
  const bool negative = !v.is_number_unsigned() && v.get<int64_t>() < 0;
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() >= uint64_t(n_vocab);
  if (negative || huge || (!v.is_number_unsigned() && v.get<int64_t>() >= n_vocab)) {
    return InvalidArgumentError("'" + field + "': token id " + v.dump() + " is outside [0, " +
                                std::to_string(n_vocab) + ")");
  }
  return static_cast<int32_t>(v.get<int64_t>());
}

std::optional<ApiError> ParseCompletionRequest(const json& raw, bool chat, CompletionRequest* out,
                                               std::string_view raw_body) {
  if (!raw.is_object()) return ApiError::InvalidRequest("the body must be a JSON object", "");
  out->chat = chat;
  json body = json::object();  // without the fields sent as null
  for (const auto& [key, value] : raw.items()) {
    if (value.is_null()) continue;
    if (UnsupportedFields().count(key)) {
      return ApiError::FromStatus(UnimplementedError("'" + key + "' is not supported"), key);
    }
    if (!KnownFields().count(key)) {
      out->ignored_fields.push_back(key);
      continue;
    }
    body[key] = value;
  }
  // The body in the client's key order, parsed once when a schema or tools need it (the raw body
  // passed the same bounds when it was parsed the first time).
  nlohmann::ordered_json ordered;
  bool keyed = false;
  for (const char* f : kConstraintFields) keyed |= body.contains(f);
  if (!raw_body.empty() && (keyed || body.contains("tools"))) {
    ordered = nlohmann::ordered_json::parse(raw_body, nullptr, false);
  }
  const nlohmann::ordered_json* ordered_body = ordered.is_object() ? &ordered : nullptr;
  if (auto e = ParseOutputConstraint(body, ordered_body, &out->constraint)) return e;
  if (body.contains("best_of")) {
    std::optional<int64_t> best_of;
    if (auto e = GetInt(body, "best_of", 1, kMaxChoices, &best_of)) return e;
    if (*best_of != 1) {
      return ApiError::FromStatus(UnimplementedError("'best_of' other than 1 is not supported"),
                                  "best_of");
    }
  }
  if (body.contains("suffix")) {
    if (!body["suffix"].is_string()) return Bad("suffix", "expected a string");
    if (!body["suffix"].get<std::string>().empty()) {
      return ApiError::FromStatus(UnimplementedError("'suffix' is not supported"), "suffix");
    }
  }
  if (!chat) {
    if (auto e = GetBool(body, "echo", &out->echo)) return e;
  } else if (body.contains("echo")) {
    return Bad("echo", "is a field of /v1/completions");
  }
  for (const char* f : {"chat_template_kwargs", "reasoning_effort", "tools", "tool_choice",
                        "parallel_tool_calls"}) {
    if (body.contains(f) && !chat) return Bad(f, "is a field of /v1/chat/completions");
  }
  if (chat) {
    if (auto e = ParseRequestTools(body, ordered_body, &out->tools)) return e;
  }
  if (body.contains("chat_template_kwargs")) {
    const json& kw = body["chat_template_kwargs"];
    if (!kw.is_object()) return Bad("chat_template_kwargs", "expected an object");
    for (const auto& [k, v] : kw.items()) {
      if (k == "messages") return Bad("chat_template_kwargs", "cannot set 'messages'");
      out->template_variables.emplace_back(k, JinjaFromJson(v));
    }
  }
  if (body.contains("reasoning_effort")) {
    const json& r = body["reasoning_effort"];
    if (!r.is_string() || (r != "minimal" && r != "low" && r != "medium" && r != "high")) {
      return Bad("reasoning_effort", "expected \"minimal\", \"low\", \"medium\" or \"high\"");
    }
    out->template_variables.emplace_back("reasoning_effort",
                                         jinja::Value::String(r.get<std::string>()));
  }
  if (body.contains("model")) {
    if (!body["model"].is_string()) return Bad("model", "expected a string");
    out->model = body["model"].get<std::string>();
  }
  if (chat) {
    if (!body.contains("messages")) return Bad("messages", "required");
    if (auto e = ParseMessages(body["messages"], out)) return e;
  } else {
    if (!body.contains("prompt")) return Bad("prompt", "required");
    if (auto e = ParsePrompt(body["prompt"], out)) return e;
  }
  SamplingParams& p = out->params;
  std::optional<int64_t> v;
  for (const char* f : {"max_tokens", "max_completion_tokens"}) {
    v.reset();
    if (auto e = GetInt(body, f, 1, INT32_MAX, &v)) return e;
    if (v) out->max_tokens = static_cast<int32_t>(*v);
  }
  if (auto e = GetDouble(body, "temperature", &p.temperature)) return e;
  if (p.temperature < 0 || p.temperature > 2) return Bad("temperature", "must be in [0, 2]");
  if (auto e = GetDouble(body, "top_p", &p.top_p)) return e;
  if (!(p.top_p > 0 && p.top_p <= 1)) return Bad("top_p", "must be in (0, 1]");
  v.reset();
  if (auto e = GetInt(body, "top_k", -1, INT32_MAX, &v)) return e;
  if (v) p.top_k = static_cast<int32_t>(*v);
  if (auto e = GetDouble(body, "min_p", &p.min_p)) return e;
  if (p.min_p < 0 || p.min_p > 1) return Bad("min_p", "must be in [0, 1]");
  if (auto e = GetDouble(body, "presence_penalty", &p.presence_penalty)) return e;
  if (auto e = GetDouble(body, "frequency_penalty", &p.frequency_penalty)) return e;
  if (auto e = GetDouble(body, "repetition_penalty", &p.repetition_penalty)) return e;
  if (body.contains("logit_bias")) {
    if (auto e = ParseLogitBias(body["logit_bias"], &p)) return e;
  }
  if (body.contains("seed") && !body["seed"].is_null()) {
    if (!body["seed"].is_number_integer()) return Bad("seed", "expected an integer");
    p.seed = body["seed"].is_number_unsigned() ? body["seed"].get<uint64_t>()
                                               : static_cast<uint64_t>(body["seed"].get<int64_t>());
  }
  if (body.contains("stop")) {
    if (auto e = ParseStop(body["stop"], &p)) return e;
  }
  if (body.contains("stop_token_ids") && !body["stop_token_ids"].is_null()) {
    if (!body["stop_token_ids"].is_array()) return Bad("stop_token_ids", "expected a list");
    for (const json& t : body["stop_token_ids"]) {
      auto id = TokenIdFromJson(t, int64_t{INT32_MAX} + 1, "stop_token_ids");
      if (!id.ok()) return ApiError::FromStatus(id.status(), "stop_token_ids");
      p.stop_token_ids.push_back(*id);
    }
  }
  v.reset();
  if (auto e = GetInt(body, "n", 1, 16, &v)) return e;
  if (v) out->n = static_cast<int32_t>(*v);
  v.reset();
  if (auto e = GetInt(body, "min_tokens", 0, INT32_MAX, &v)) return e;
  if (v) p.min_tokens = static_cast<int32_t>(*v);
  if (auto e = GetBool(body, "ignore_eos", &p.ignore_eos)) return e;
  if (auto e = GetBool(body, "stream", &out->stream)) return e;
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) return Bad("stream_options", "expected an object");
    if (auto e = GetBool(so, "include_usage", &out->include_usage)) {
      return Bad("stream_options.include_usage", "expected a boolean");
    }
    if (auto e = GetBool(so, "continuous_usage_stats", &out->continuous_usage)) {
      return Bad("stream_options.continuous_usage_stats", "expected a boolean");
    }
  }
  if (chat) {
    if (auto e = GetBool(body, "logprobs", &out->logprobs)) return e;
    v.reset();
    if (auto e = GetInt(body, "top_logprobs", 0, kMaxTopLogprobs, &v)) return e;
    if (v) {
      if (!out->logprobs) return Bad("top_logprobs", "requires logprobs: true");
      out->top_logprobs = static_cast<int32_t>(*v);
    }
  } else {
    v.reset();
    if (auto e = GetInt(body, "logprobs", 0, 5, &v)) return e;
    if (v) {
      out->logprobs = true;
      out->top_logprobs = static_cast<int32_t>(*v);
    }
  }
  p.logprobs = out->logprobs;
  p.top_logprobs = out->top_logprobs;
  if (!chat && out->prompts.size() * out->n > kMaxChoices) {
    return Bad("n", "prompts x n must be at most " + std::to_string(kMaxChoices));
  }
  if (out->echo && out->logprobs) {
    return ApiError::FromStatus(
        UnimplementedError("'echo' with 'logprobs' (the prompt's logprobs) is not supported"),
        "echo");
  }
  Status s = p.Validate();
  if (!s.ok()) {
    const std::string& m = s.message();
    return ApiError::FromStatus(s, m.substr(0, m.find_first_of("=:")));
  }
  return std::nullopt;
}

}  // namespace forge::server
