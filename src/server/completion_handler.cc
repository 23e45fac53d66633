// The completion endpoints: prompt building (chat template or text or ids), the context check,
// the queue limit, submission, and the streamed or whole answer.
#include "server/completion_handler.h"

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "server/completion_json.h"
#include "server/completion_request.h"
#include "server/embeddings_handler.h"
#include "server/json_body.h"
#include "server/reasoning.h"
#include "tokenizer/chat_prompt.h"

namespace forge::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string RandomId(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

// One submitted request: collects events and answers the client. The engine's step thread only
// hands each event over (with the time it arrived); the JSON is built and sent on the
// connection's strand, so a step with hundreds of streams does not wait for their formatting.
struct Completion : std::enable_shared_from_this<Completion> {
  ServerContext* ctx;
  const ServedModel* model;
  std::shared_ptr<HttpSession> session;
  ResponseMeta meta;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // every token-carrying event is a chunk with the usage so far
  int64_t prompt_tokens = 0;      // all prompts
  int64_t generated = 0;          // tokens streamed so far, all samples
  int32_t n = 1;                  // choices per prompt: choice i answers prompt i / n
  std::vector<RequestId> ids;     // one engine request per prompt
  std::vector<std::string> echo;  // per prompt: the text each of its choices starts with
  std::vector<int64_t> cached;    // per prompt: its tokens found in the prefix cache
  std::vector<SampleOutput> samples;
  // Per choice, for a model that reasons first: its text split into reasoning and answer.
  std::vector<ReasoningSplitter> splitters;
  // Per choice, with tools: its answer split into content and tool calls as it streams.
  std::vector<ToolCallStream> tool_streams;
  bool tool_named = false;  // tool_choice named a function: finish_reason stays "stop"
  std::vector<Clock::time_point> last_token;  // per sample, for inter-token latency
  int32_t unfinished = 0;
  Status error;  // the first non-OK status of a sample
  bool cancelled = false;
  double e2e_seconds = 0;

  void OnEvent(RequestEvent ev, Clock::time_point now) {
    SampleOutput& s = samples[ev.sample];
    const size_t prompt = static_cast<size_t>(ev.sample / n);
    if (!echo.empty() && !s.echoed) {  // the choice's first text is its prompt
      ev.text = echo[prompt] + ev.text;
      s.echoed = true;
    }
    if (!ev.tokens.empty()) {
      if (s.started || !s.tokens.empty()) {
        const double gap =
            std::chrono::duration<double>(now - last_token[ev.sample]).count() / ev.tokens.size();
        for (size_t i = 0; i < ev.tokens.size(); ++i) ctx->metrics.ObserveItl(gap);
      } else if (ev.tokens.size() > 1) {
        for (size_t i = 1; i < ev.tokens.size(); ++i) ctx->metrics.ObserveItl(0);
      }
      last_token[ev.sample] = now;
    }
    generated += static_cast<int64_t>(ev.tokens.size());
    std::string reasoning;  // of this event's text, the part inside a reasoning block
    if (!splitters.empty()) {
      ReasoningSplitter& split = splitters[ev.sample];
      ReasoningPiece piece = split.Feed(ev.text);
      if (ev.finished) {
        ReasoningPiece last = split.Finish();
        piece.reasoning += last.reasoning;
        piece.content += last.content;
      }
      ev.text = std::move(piece.content);
      reasoning = std::move(piece.reasoning);
    }
    ChunkExtras extras;
    if (!tool_streams.empty()) {
      ToolCallStream& calls = tool_streams[ev.sample];
      ToolCallStream::Delta d = calls.Feed(ev.text);
      if (ev.finished) {
        ToolCallStream::Delta last = calls.Finish();
        d.content += last.content;
        d.calls.insert(d.calls.end(), last.calls.begin(), last.calls.end());
      }
      ev.text = std::move(d.content);
      extras.first_call_index = static_cast<int32_t>(s.tool_calls.size());
      extras.calls = std::move(d.calls);
      s.tool_calls.insert(s.tool_calls.end(), extras.calls.begin(), extras.calls.end());
      s.tool_finish =
          !s.tool_calls.empty() && !tool_named && ev.finished && ev.finish == FinishReason::kStop;
      extras.tool_finish = s.tool_finish;
    }
    extras.reasoning = std::move(reasoning);
    if (stream) {
      if (!ev.text.empty() || !extras.reasoning.empty() || !extras.calls.empty() || ev.finished ||
          (meta.logprobs && !ev.tokens.empty()) || (meta.chat && !s.started) ||
          (continuous_usage && !ev.tokens.empty())) {
        if (!(ev.finished && !ev.status.ok())) {
          json chunk = ChunkJson(meta, ev, meta.chat && !s.started, include_usage, extras);
          if (continuous_usage) chunk["usage"] = UsageJson(prompt_tokens, generated, Cached());
          session->SendChunk(SseData(chunk));
          s.started = true;
        }
      }
    } else {
      s.text += ev.text;
      s.reasoning += extras.reasoning;
    }
    s.tokens.insert(s.tokens.end(), ev.tokens.begin(), ev.tokens.end());
    if (meta.logprobs) s.logprobs.insert(s.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    if (!ev.finished) return;
    s.finish = ev.finish;
    s.completion_tokens = ev.usage.completion_tokens;
    cached[prompt] = std::max(cached[prompt], ev.usage.cached_prompt_tokens);
    if (ev.timing.ttft_seconds > 0) ctx->metrics.ObserveTtft(ev.timing.ttft_seconds);
    e2e_seconds = std::max(e2e_seconds, ev.timing.total_seconds);
    if (!ev.status.ok()) {
      if (ev.status.code() == StatusCode::kCancelled) cancelled = true;
      if (error.ok()) error = ev.status;
    }
    if (--unfinished == 0) Finish();
  }

  int64_t Cached() const {
    int64_t total = 0;
    for (int64_t c : cached) total += c;
    return total;
  }

  void Finish() {
    int64_t completion = 0;
    bool length = false;
    for (const SampleOutput& s : samples) {
      completion += s.completion_tokens;
      length |= s.finish == FinishReason::kLength;
    }
    ctx->metrics.AddTokens(prompt_tokens, completion);
    ctx->metrics.e2e().Observe(e2e_seconds);
    ctx->metrics.CountRequest(cancelled     ? Outcome::kCancelled
                              : !error.ok() ? Outcome::kError
                              : length      ? Outcome::kLength
                                            : Outcome::kStop);
    if (stream) {
      if (!error.ok() && !cancelled) {
        session->SendChunk(SseData(json::parse(ApiError::FromStatus(error).Json())));
      }
      if (include_usage && error.ok()) {
        session->SendChunk(SseData(UsageChunkJson(meta, prompt_tokens, completion, Cached())));
      }
      session->SendChunk("data: [DONE]\n\n");
      session->EndStream();
    } else if (!error.ok()) {
      SendError(*ctx, *session, ApiError::FromStatus(error), /*count=*/false);
    } else {
      session->Respond(200, "application/json",
                       Dump(ResponseJson(meta, samples, prompt_tokens, Cached())));
    }
    {
      std::lock_guard<std::mutex> lock(ctx->live_mu);
      for (RequestId id : ids) ctx->live.erase(id);
    }
    ctx->in_flight.fetch_sub(static_cast<int64_t>(ids.size()));
  }
};

// The tool-call format replies are read in: the template's, else Forge's generic one.
ToolCallFormat EffectiveToolFormat(const ServedModel& model) {
  return model.tool_format != ToolCallFormat::kNone ? model.tool_format : ToolCallFormat::kGeneric;
}

// Tool definitions and the history's tool calls reach the template as text: like a role, they may
// not hold the text of a control token (no forged turn markers).
std::optional<ApiError> CheckToolText(const Tokenizer& tok, const CompletionRequest& req) {
  if (!req.tools.json_text.empty() && !tok.FindControlText(req.tools.json_text).empty()) {
    return ApiError::InvalidRequest("'tools' holds the text of a control token", "tools");
  }
  for (const auto& [field, text] : req.tool_texts) {
    if (!tok.FindControlText(text).empty()) {
      return ApiError::InvalidRequest("'" + field + "' holds the text of a control token", field);
    }
  }
  return std::nullopt;
}

// For a template without tools: the tools and Forge's generic call format in a system message
// (the first message's, when it is one).
std::vector<ChatMessage> WithGenericToolPrompt(const std::vector<ChatMessage>& messages,
                                               const std::string& tools_json) {
  const std::string text =
      "You can call these functions (each given as {\"type\": \"function\", \"function\": "
      "{name, description, parameters}}, parameters being a JSON schema of its arguments):\n" +
      tools_json +
      "\nTo call functions, reply with only this JSON and nothing else: {\"tool_calls\": "
      "[{\"name\": <function name>, \"arguments\": <arguments object>}]}";
  std::vector<ChatMessage> out = messages;
  if (!out.empty() && out[0].role == "system") {
    out[0].content += "\n\n" + text;
  } else {
    ChatMessage system;
    system.role = "system";
    system.content = text;
    out.insert(out.begin(), std::move(system));
  }
  return out;
}

// A chat request's messages and template options as the template gets them: tools in the
// template's variables, or described in a system message for a template that knows none.
std::optional<ApiError> ChatInputs(const ServedModel& model, const CompletionRequest& req,
                                   std::vector<ChatMessage>* messages, ChatTemplateOptions* opts) {
  if (auto e = CheckToolText(*model.tokenizer, req)) return e;
  *opts = model.template_options;
  *messages = req.messages;
  if (!req.tools.specs.empty()) {
    if (model.tool_format != ToolCallFormat::kNone) {
      opts->extra_variables.emplace_back("tools", req.tools.template_value);
    } else {  // the template knows no tools: they are described in a system message
      *messages = WithGenericToolPrompt(req.messages, req.tools.json_text);
    }
  }
  for (const auto& kv : req.template_variables) opts->extra_variables.push_back(kv);
  return std::nullopt;
}

// The token ids of each prompt (chat: one, from the template), or an error naming the field.
std::optional<ApiError> BuildPrompts(const ServedModel& model, const CompletionRequest& req,
                                     std::vector<std::vector<int32_t>>* prompts) {
  const Tokenizer& tok = *model.tokenizer;
  if (req.chat) {
    // Control-token text inside a message is text: only the template makes control tokens.
    ChatTemplateOptions opts;
    std::vector<ChatMessage> messages;
    if (auto e = ChatInputs(model, req, &messages, &opts)) return e;
    auto ids = EncodeChatPrompt(model.chat_template, tok, messages, opts);
    if (!ids.ok()) return ApiError::FromStatus(ids.status(), "messages");
    prompts->push_back(std::move(*ids));
  } else {
    for (const PromptInput& p : req.prompts) {
      prompts->push_back(p.is_ids ? p.ids
                                  : tok.Encode(p.text, /*add_special=*/true,
                                               /*parse_special=*/false));
    }
  }
  for (const auto& ids : *prompts) {
    if (ids.empty()) {
      return ApiError::InvalidRequest("the prompt is empty", req.chat ? "messages" : "prompt");
    }
  }
  return std::nullopt;
}

ApiError ContextExceeded(std::string message, std::string param) {
  ApiError e = ApiError::InvalidRequest(std::move(message), std::move(param));
  e.code = "context_length_exceeded";
  return e;
}

}  // namespace

ApiError UnknownModelError(const ServedModel& model, const std::string& requested) {
  return ApiError::FromStatus(
      NotFoundError("the model '" + requested + "' does not exist; this server has '" + model.name +
                    "'"),
      "model");
}

void SendError(ServerContext& ctx, HttpSession& session, const ApiError& error, bool count) {
  if (count) ctx.metrics.CountRequest(Outcome::kRejected);
  Headers headers;
  if (error.http_status == 429) headers.emplace_back("Retry-After", "1");
  if (error.http_status == 401) headers.emplace_back("WWW-Authenticate", "Bearer");
  session.Respond(error.http_status, "application/json", error.Json(), std::move(headers));
}

void HandleApplyTemplate(ServerContext& ctx, const ServedModel& model, HttpSession& session,
                         const std::string& body) {
  json parsed;
  if (auto e = ParseJsonBody(body, ctx.options.json, &parsed)) {
    return SendError(ctx, session, *e, false);
  }
  CompletionRequest req;
  if (auto e = ParseCompletionRequest(parsed, /*chat=*/true, &req, body)) {
    return SendError(ctx, session, *e, false);
  }
  std::vector<ChatMessage> messages;
  ChatTemplateOptions opts;
  if (auto e = ChatInputs(model, req, &messages, &opts)) return SendError(ctx, session, *e, false);
  auto text = model.chat_template.Apply(messages, opts);
  if (!text.ok()) {
    return SendError(ctx, session, ApiError::FromStatus(text.status(), "messages"), false);
  }
  auto ids = EncodeChatPrompt(model.chat_template, *model.tokenizer, messages, opts);
  if (!ids.ok()) {
    return SendError(ctx, session, ApiError::FromStatus(ids.status(), "messages"), false);
  }
  session.Respond(200, "application/json",
                  Dump({{"prompt", *text}, {"tokens", static_cast<int64_t>(ids->size())}}));
}

void HandleCompletion(ServerContext& ctx, const ServedModel& model,
                      std::shared_ptr<HttpSession> session, const std::string& body, bool chat) {
  json parsed;
  if (auto e = ParseJsonBody(body, ctx.options.json, &parsed)) {
    return SendError(ctx, *session, *e, true);
  }
  CompletionRequest req;
  if (auto e = ParseCompletionRequest(parsed, chat, &req, body))
    return SendError(ctx, *session, *e, true);
  ctx.metrics.NoteIgnoredFields(req.ignored_fields);
  if (!model.Answers(req.model)) {
    return SendError(ctx, *session, UnknownModelError(model, req.model), true);
  }
  if (model.engine->embeds()) {
    return SendError(
        ctx, *session,
        WrongModelKind(model, false, chat ? "/v1/chat/completions" : "/v1/completions"), true);
  }
  if (req.tools.active() &&
      (req.tools.choice == ToolChoice::kRequired || req.tools.choice == ToolChoice::kNamed)) {
    // The reply must be a call: constrained to the format's call syntax and the tools' schemas.
    if (!req.constraint.gbnf.empty()) {
      const std::string what = "'tool_choice' that requires a call cannot be combined with '" +
                               req.constraint.field + "'";
      return SendError(ctx, *session, ApiError::InvalidRequest(what, "tool_choice"), true);
    }
    auto gbnf = ToolCallGbnf(EffectiveToolFormat(model), req.tools.specs, req.tools.parallel,
                             req.tools.choice == ToolChoice::kNamed
                                 ? std::optional<std::string>(req.tools.named)
                                 : std::nullopt);
    if (!gbnf.ok()) {
      return SendError(ctx, *session, ApiError::InvalidRequest(gbnf.status().message(), "tools"),
                       true);
    }
    req.constraint.field = "tool_choice";
    req.constraint.gbnf = std::move(*gbnf);
  }
  std::shared_ptr<const Grammar> grammar;
  if (!req.constraint.gbnf.empty()) {
    auto compiled = ctx.grammars.Get(req.constraint.gbnf);
    if (!compiled.ok()) {
      const std::string& field = req.constraint.field;
      return SendError(
          ctx, *session,
          ApiError::InvalidRequest("'" + field + "': " + compiled.status().message(), field), true);
    }
    grammar = std::move(*compiled);
  }
  std::vector<std::vector<int32_t>> prompts;
  if (auto e = BuildPrompts(model, req, &prompts)) return SendError(ctx, *session, *e, true);
  const int32_t n_vocab = model.tokenizer->vocab().size();
  const int64_t ctx_size = model.engine->ctx_size();
  const char* prompt_field = chat ? "messages" : "prompt";
  int64_t prompt_tokens = 0;
  int64_t longest = 0;
  for (const auto& ids : prompts) {
    for (int32_t t : ids) {
      if (t >= n_vocab) {
        return SendError(
            ctx, *session,
            ApiError::InvalidRequest("token id " + std::to_string(t) +
                                         " is outside the vocabulary of " + std::to_string(n_vocab),
                                     "prompt"),
            true);
      }
    }
    const int64_t len = static_cast<int64_t>(ids.size());
    prompt_tokens += len;
    longest = std::max(longest, len);
    if (len >= ctx_size) {
      return SendError(ctx, *session,
                       ContextExceeded("the prompt has " + std::to_string(len) +
                                           " tokens; the context holds " + std::to_string(ctx_size),
                                       prompt_field),
                       true);
    }
    if (req.max_tokens && len + *req.max_tokens > ctx_size) {
      return SendError(
          ctx, *session,
          ContextExceeded("prompt (" + std::to_string(len) + " tokens) + max_tokens (" +
                              std::to_string(*req.max_tokens) + ") exceeds the context of " +
                              std::to_string(ctx_size),
                          "max_tokens"),
          true);
    }
  }
  if (Status s = req.params.ValidateForVocab(n_vocab); !s.ok()) {
    return SendError(ctx, *session, ApiError::FromStatus(s), true);
  }
  const int64_t count = static_cast<int64_t>(prompts.size());
  const int64_t limit = model.engine->options().max_num_seqs + ctx.options.max_queue;
  if (ctx.in_flight.fetch_add(count) + count > limit) {
    ctx.in_flight.fetch_sub(count);
    return SendError(ctx, *session,
                     ApiError::FromStatus(
                         ResourceExhaustedError("the server is busy: " + std::to_string(limit) +
                                                " requests are running or queued; retry later")),
                     true);
  }
  auto c = std::make_shared<Completion>();
  c->ctx = &ctx;
  c->model = &model;
  c->session = session;
  c->meta = {chat,
             RandomId(chat ? "chatcmpl-" : "cmpl-"),
             std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count(),
             req.model.empty() ? model.name : req.model,
             req.logprobs,
             model.tokenizer};
  c->stream = req.stream;
  c->include_usage = req.include_usage;
  c->continuous_usage = req.stream && req.include_usage && req.continuous_usage;
  c->prompt_tokens = prompt_tokens;
  c->n = req.n;
  c->cached.assign(prompts.size(), 0);
  if (req.echo) {
    for (size_t p = 0; p < prompts.size(); ++p) {
      const PromptInput& in = req.prompts[p];
      DecodeOptions opt;
      opt.strip_leading_space = false;
      c->echo.push_back(in.is_ids ? model.tokenizer->Decode(in.ids, opt) : in.text);
    }
  }
  const size_t choices = prompts.size() * static_cast<size_t>(req.n);
  c->samples.resize(choices);
  if (chat && model.reasoning) {
    // Does the prompt leave the model inside a reasoning block? (Its last tokens say.)
    const std::vector<int32_t>& ids = prompts[0];
    const size_t tail = std::min<size_t>(ids.size(), 32);
    DecodeOptions opt;
    opt.special = true;
    opt.strip_leading_space = false;
    const std::string end = model.tokenizer->Decode(
        std::span<const int32_t>(ids.data() + ids.size() - tail, tail), opt);
    c->splitters.assign(choices, ReasoningSplitter(PromptOpensReasoning(end)));
  }
  if (chat && req.tools.active()) {
    c->tool_named = req.tools.choice == ToolChoice::kNamed;
    const uint64_t seed = std::hash<std::string>{}(c->meta.id);
    for (size_t i = 0; i < choices; ++i) {
      c->tool_streams.emplace_back(EffectiveToolFormat(model), req.tools.specs, seed + i);
    }
  }
  c->last_token.resize(choices);
  c->unfinished = static_cast<int32_t>(choices);

  // Watch before submitting: a client that leaves cancels every prompt's request.
  struct Watch {
    std::mutex mu;
    std::vector<RequestId> ids;
    bool gone = false;
  };
  auto watch = std::make_shared<Watch>();
  Engine* engine = model.engine;
  session->WatchDisconnect([engine, watch] {
    std::lock_guard<std::mutex> lock(watch->mu);
    watch->gone = true;
    for (RequestId id : watch->ids) engine->Cancel(id);
  });
  if (req.stream) session->StartStream();
  std::lock_guard<std::mutex> lock(ctx.live_mu);  // the ids are live before any event can end them
  for (size_t p = 0; p < prompts.size(); ++p) {
    EngineRequest er;
    er.prompt_ids = std::move(prompts[p]);
    er.params = req.params;
    er.n = req.n;
    er.grammar = grammar;
    if (req.max_tokens) {
      er.params.max_tokens = *req.max_tokens;
    } else {
      er.params.max_tokens = static_cast<int32_t>(std::min<int64_t>(
          ctx.options.default_max_tokens, ctx_size - static_cast<int64_t>(er.prompt_ids.size())));
    }
    // The step thread delivers events in order and posts them, in that order, to the
    // connection's strand: Completion's state is touched only there.
    const int32_t offset = static_cast<int32_t>(p) * req.n;
    er.on_event = [c, offset](RequestEvent ev) {
      const Clock::time_point now = Clock::now();
      ev.sample += offset;
      c->session->Post([c, ev = std::move(ev), now]() mutable { c->OnEvent(std::move(ev), now); });
    };
    auto handle = model.engine->Submit(std::move(er));
    if (!handle.ok()) {
      // Nothing was submitted: answer the error. Otherwise the prompts submitted are cancelled
      // and the answer is this error once they end.
      ctx.in_flight.fetch_sub(count - static_cast<int64_t>(p));
      if (p == 0) {
        ApiError e = ApiError::FromStatus(handle.status());
        if (req.stream) {
          ctx.metrics.CountRequest(Outcome::kRejected);
          session->SendChunk(SseData(json::parse(e.Json())));
          session->SendChunk("data: [DONE]\n\n");
          session->EndStream();
          return;
        }
        return SendError(ctx, *session, e, true);
      }
      c->session->Post([c, p, status = handle.status()] {
        if (c->error.ok()) c->error = status;
        c->unfinished -= static_cast<int32_t>((c->samples.size() / c->n - p) * c->n);
        if (c->unfinished == 0) c->Finish();
      });
      for (RequestId id : c->ids) engine->Cancel(id);
      return;
    }
    c->ids.push_back(handle->id);
    ctx.live.insert(handle->id);
    std::lock_guard<std::mutex> wl(watch->mu);
    watch->ids.push_back(handle->id);
    if (watch->gone) engine->Cancel(handle->id);  // the client left before the id was known
  }
}

}  // namespace forge::server
