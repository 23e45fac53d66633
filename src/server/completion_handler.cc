// The completion endpoints: prompt building (chat template or text or ids), the context check,
// the queue limit, submission, and the streamed or whole answer.
#include "server/completion_handler.h"

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "server/completion_json.h"
#include "server/completion_request.h"
#include "server/json_body.h"

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
  int64_t prompt_tokens = 0;
  int64_t generated = 0;  // tokens streamed so far, all samples
  RequestId id = 0;
  std::vector<SampleOutput> samples;
  std::vector<Clock::time_point> last_token;  // per sample, for inter-token latency
  int32_t unfinished = 0;
  Status error;  // the first non-OK status of a sample
  bool cancelled = false;
  double e2e_seconds = 0;

  void OnEvent(const RequestEvent& ev, Clock::time_point now) {
    SampleOutput& s = samples[ev.sample];
    if (!ev.tokens.empty()) {
      if (s.started || !s.tokens.empty()) {
        const double gap =
            std::chrono::duration<double>(now - last_token[ev.sample]).count() / ev.tokens.size();
        for (size_t i = 0; i < ev.tokens.size(); ++i) ctx->metrics.itl().Observe(gap);
      } else if (ev.tokens.size() > 1) {
        for (size_t i = 1; i < ev.tokens.size(); ++i) ctx->metrics.itl().Observe(0);
      }
      last_token[ev.sample] = now;
    }
    generated += static_cast<int64_t>(ev.tokens.size());
    if (stream) {
      if (!ev.text.empty() || ev.finished || (meta.logprobs && !ev.tokens.empty()) ||
          (meta.chat && !s.started) || (continuous_usage && !ev.tokens.empty())) {
        if (!(ev.finished && !ev.status.ok())) {
          json chunk = ChunkJson(meta, ev, meta.chat && !s.started, include_usage);
          if (continuous_usage) chunk["usage"] = UsageJson(prompt_tokens, generated);
          session->SendChunk(SseData(chunk));
          s.started = true;
        }
      }
    } else {
      s.text += ev.text;
    }
    s.tokens.insert(s.tokens.end(), ev.tokens.begin(), ev.tokens.end());
    if (meta.logprobs) s.logprobs.insert(s.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    if (!ev.finished) return;
    s.finish = ev.finish;
    s.completion_tokens = ev.usage.completion_tokens;
    if (ev.timing.ttft_seconds > 0) ctx->metrics.ttft().Observe(ev.timing.ttft_seconds);
    e2e_seconds = std::max(e2e_seconds, ev.timing.total_seconds);
    if (!ev.status.ok()) {
      if (ev.status.code() == StatusCode::kCancelled) cancelled = true;
      if (error.ok()) error = ev.status;
    }
    if (--unfinished == 0) Finish();
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
        session->SendChunk(SseData(UsageChunkJson(meta, prompt_tokens, completion)));
      }
      session->SendChunk("data: [DONE]\n\n");
      session->EndStream();
    } else if (!error.ok()) {
      SendError(*ctx, *session, ApiError::FromStatus(error), /*count=*/false);
    } else {
      session->Respond(200, "application/json", Dump(ResponseJson(meta, samples, prompt_tokens)));
    }
    {
      std::lock_guard<std::mutex> lock(ctx->live_mu);
      ctx->live.erase(id);
    }
    ctx->in_flight.fetch_sub(1);
  }
};

// The prompt's token ids, or an error naming the field.
std::optional<ApiError> BuildPrompt(const ServedModel& model, const CompletionRequest& req,
                                    std::vector<int32_t>* ids) {
  const Tokenizer& tok = *model.tokenizer;
  if (req.chat) {
    auto text = model.chat_template.Apply(req.messages, model.template_options);
    if (!text.ok()) return ApiError::FromStatus(text.status(), "messages");
    *ids = tok.Encode(*text, /*add_special=*/false, /*parse_special=*/true);
    const Vocab& vocab = tok.vocab();
    if (vocab.add_bos && vocab.Valid(vocab.bos) && (ids->empty() || (*ids)[0] != vocab.bos)) {
      ids->insert(ids->begin(), vocab.bos);
    }
  } else if (req.prompt_is_ids) {
    *ids = req.prompt_ids;
  } else {
    *ids = tok.Encode(req.prompt, /*add_special=*/true, /*parse_special=*/false);
  }
  if (ids->empty())
    return ApiError::InvalidRequest("the prompt is empty", req.chat ? "messages" : "prompt");
  return std::nullopt;
}

}  // namespace

void SendError(ServerContext& ctx, HttpSession& session, const ApiError& error, bool count) {
  if (count) ctx.metrics.CountRequest(Outcome::kRejected);
  Headers headers;
  if (error.http_status == 429) headers.emplace_back("Retry-After", "1");
  if (error.http_status == 401) headers.emplace_back("WWW-Authenticate", "Bearer");
  session.Respond(error.http_status, "application/json", error.Json(), std::move(headers));
}

void HandleCompletion(ServerContext& ctx, const ServedModel& model,
                      std::shared_ptr<HttpSession> session, const std::string& body, bool chat) {
  json parsed;
  if (auto e = ParseJsonBody(body, ctx.options.json, &parsed)) {
    return SendError(ctx, *session, *e, true);
  }
  CompletionRequest req;
  if (auto e = ParseCompletionRequest(parsed, chat, &req))
    return SendError(ctx, *session, *e, true);
  if (!req.model.empty() && req.model != model.name) {
    return SendError(ctx, *session,
                     ApiError::FromStatus(
                         NotFoundError("the model '" + req.model +
                                       "' does not exist; this server has '" + model.name + "'"),
                         "model"),
                     true);
  }
  std::vector<int32_t> ids;
  if (auto e = BuildPrompt(model, req, &ids)) return SendError(ctx, *session, *e, true);
  const int32_t n_vocab = model.tokenizer->vocab().size();
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
  if (Status s = req.params.ValidateForVocab(n_vocab); !s.ok()) {
    return SendError(ctx, *session, ApiError::FromStatus(s), true);
  }
  const int64_t ctx_size = model.engine->ctx_size();
  const int64_t prompt_len = static_cast<int64_t>(ids.size());
  const char* prompt_field = chat ? "messages" : "prompt";
  if (prompt_len >= ctx_size) {
    return SendError(
        ctx, *session,
        ApiError::InvalidRequest("the prompt has " + std::to_string(prompt_len) +
                                     " tokens; the context holds " + std::to_string(ctx_size),
                                 prompt_field),
        true);
  }
  if (req.max_tokens && prompt_len + *req.max_tokens > ctx_size) {
    return SendError(
        ctx, *session,
        ApiError::InvalidRequest("prompt (" + std::to_string(prompt_len) +
                                     " tokens) + max_tokens (" + std::to_string(*req.max_tokens) +
                                     ") exceeds the context of " + std::to_string(ctx_size),
                                 "max_tokens"),
        true);
  }
  req.params.max_tokens = req.max_tokens.value_or(static_cast<int32_t>(
      std::min<int64_t>(ctx.options.default_max_tokens, ctx_size - prompt_len)));
  const int64_t limit = model.engine->options().max_num_seqs + ctx.options.max_queue;
  if (ctx.in_flight.fetch_add(1) >= limit) {
    ctx.in_flight.fetch_sub(1);
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
             model.name,
             req.logprobs,
             model.tokenizer};
  c->stream = req.stream;
  c->include_usage = req.include_usage;
  c->continuous_usage = req.stream && req.include_usage && req.continuous_usage;
  c->prompt_tokens = prompt_len;
  c->samples.resize(req.n);
  c->last_token.resize(req.n);
  c->unfinished = req.n;

  EngineRequest er;
  er.prompt_ids = std::move(ids);
  er.params = req.params;
  er.n = req.n;
  // The step thread delivers events in order and posts them, in that order, to the connection's
  // strand: Completion's state is touched only there.
  er.on_event = [c](RequestEvent ev) {
    const Clock::time_point now = Clock::now();
    c->session->Post([c, ev = std::move(ev), now] { c->OnEvent(ev, now); });
  };
  // Watch before submitting: the connection must not go back to reading requests meanwhile.
  struct Watch {
    std::atomic<RequestId> id{0};
    std::atomic<bool> gone{false};
  };
  auto watch = std::make_shared<Watch>();
  Engine* engine = model.engine;
  session->WatchDisconnect([engine, watch] {
    watch->gone = true;
    if (RequestId id = watch->id.load()) engine->Cancel(id);
  });
  if (req.stream) session->StartStream();
  std::lock_guard<std::mutex> lock(ctx.live_mu);  // the id is live before any event can end it
  auto handle = model.engine->Submit(std::move(er));
  if (!handle.ok()) {
    ctx.in_flight.fetch_sub(1);
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
  c->id = handle->id;
  ctx.live.insert(handle->id);
  watch->id = handle->id;
  if (watch->gone) engine->Cancel(handle->id);  // the client left before the id was known
}

}  // namespace forge::server
