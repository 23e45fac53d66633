// The embeddings endpoint: encoding and bounds of the inputs, the queue limit, one engine request
// per input, and the vectors gathered in order into one answer.
#include "server/embeddings_handler.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>

#include "server/completion_handler.h"
#include "server/embedding_json.h"
#include "server/embeddings_request.h"
#include "server/json_body.h"

namespace forge::server {
namespace {

using nlohmann::json;

// The engine ids of one request's inputs as they are submitted, and whether the rest must stop
// (the client left, or an input failed): shared by the submitting worker, the connection's strand
// and the disconnect watch.
struct Submitted {
  Engine* engine = nullptr;
  std::mutex mu;
  std::vector<RequestId> ids;
  bool stop = false;

  // Cancels every input submitted, and those still to be.
  void CancelAll() {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    for (RequestId id : ids) engine->Cancel(id);
  }
};

// One request in flight: the vectors arrive (one finished event per input) on the connection's
// strand, where all of this state is touched; the answer goes out when the last has arrived.
struct Embeddings {
  ServerContext* ctx;
  std::shared_ptr<HttpSession> session;
  std::shared_ptr<Submitted> submitted;
  std::string model_name;  // as the response names it
  bool base64 = false;
  size_t dims = 0;  // the values each vector keeps (Matryoshka); the model's width: all
  int64_t width = 0;
  int64_t prompt_tokens = 0;
  std::vector<std::vector<float>> vectors;  // [inputs][dims]
  size_t unfinished = 0;
  Status error;  // the first failure other than a cancellation
  bool cancelled = false;
  double e2e_seconds = 0;

  void OnEvent(size_t index, RequestEvent ev) {
    if (!ev.finished) return;
    e2e_seconds = std::max(e2e_seconds, ev.timing.total_seconds);
    if (ev.status.ok() && static_cast<int64_t>(ev.embedding.size()) != width) {
      ev.status = InternalError("the engine gave " + std::to_string(ev.embedding.size()) +
                                " values for an embedding of " + std::to_string(width));
    }
    if (!ev.status.ok()) {
      if (ev.status.code() == StatusCode::kCancelled) {
        cancelled = true;
      } else if (error.ok()) {
        error = ev.status;
        submitted->CancelAll();  // the answer is this error: the other inputs need not run
      }
    } else if (dims < ev.embedding.size()) {
      vectors[index] = ShortenEmbedding(ev.embedding, dims);
    } else {
      vectors[index] = std::move(ev.embedding);
    }
    Done(1);
  }

  // `n` inputs are finished (or were never submitted).
  void Done(size_t n) {
    unfinished -= n;
    if (unfinished == 0) Finish();
  }

  void Finish() {
    ctx->metrics.AddTokens(prompt_tokens, 0);
    ctx->metrics.e2e().Observe(e2e_seconds);
    const bool failed = !error.ok() || cancelled;
    ctx->metrics.CountRequest(!error.ok() ? Outcome::kError
                              : cancelled ? Outcome::kCancelled
                                          : Outcome::kStop);
    if (failed) {
      const Status why = !error.ok() ? error : CancelledError("the request was cancelled");
      SendError(*ctx, *session, ApiError::FromStatus(why), /*count=*/false);
    } else {
      session->Respond(200, "application/json",
                       EmbeddingsResponseJson(vectors, base64, model_name, prompt_tokens));
    }
    vectors.clear();
    // The submitting worker holds live_mu until every input is submitted: past this lock, the
    // ids are all known.
    std::lock_guard<std::mutex> lock(ctx->live_mu);
    std::lock_guard<std::mutex> ids_lock(submitted->mu);
    for (RequestId id : submitted->ids) ctx->live.erase(id);
    ctx->in_flight.fetch_sub(static_cast<int64_t>(submitted->ids.size()));
  }
};

}  // namespace

ApiError WrongModelKind(const ServedModel& model, bool embed, const std::string& endpoint) {
  if (embed) {
    return ApiError::InvalidRequest(
        "the model '" + model.name +
            "' does not embed: its GGUF has no pooling_type (an embedding model's names how its "
            "vectors are pooled: 1 mean, 2 cls, 3 last)",
        "model");
  }
  return ApiError::InvalidRequest("the model '" + model.name +
                                      "' is an embedding model (its GGUF names a pooling_type): "
                                      "it answers POST /v1/embeddings, not " +
                                      endpoint,
                                  "model");
}

void HandleEmbeddings(ServerContext& ctx, const ServedModel& model,
                      std::shared_ptr<HttpSession> session, const std::string& body) {
  json parsed;
  if (auto e = ParseJsonBody(body, ctx.options.json, &parsed)) {
    return SendError(ctx, *session, *e, true);
  }
  EmbeddingsRequest req;
  if (auto e = ParseEmbeddingsRequest(parsed, &req)) return SendError(ctx, *session, *e, true);
  parsed = json();  // the inputs are copied out; large bodies need not stay
  ctx.metrics.NoteIgnoredFields(req.ignored_fields);
  if (!model.Answers(req.model)) {
    return SendError(ctx, *session, UnknownModelError(model, req.model), true);
  }
  Engine* engine = model.engine;
  if (!engine->embeds()) {
    return SendError(ctx, *session, WrongModelKind(model, true, "/v1/embeddings"), true);
  }
  const int64_t width = engine->embedding_dim();
  if (req.dimensions && *req.dimensions > width) {
    return SendError(ctx, *session,
                     ApiError::InvalidRequest("'dimensions': " + std::to_string(*req.dimensions) +
                                                  " must be in [1, " + std::to_string(width) +
                                                  "] (the model's embeddings have " +
                                                  std::to_string(width) + " values)",
                                              "dimensions"),
                     true);
  }
  const int64_t limit = engine->max_embed_tokens();
  std::vector<std::vector<int32_t>> tokens;
  tokens.reserve(req.inputs.size());
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const std::string field = req.InputField(i);
    auto ids =
        EmbeddingTokens(*model.tokenizer, req.inputs[i], limit, req.truncate, "'" + field + "'");
    if (!ids.ok()) {
      ApiError e = ApiError::FromStatus(ids.status(), field);
      if (ids.status().code() == StatusCode::kOutOfRange) {
        e.code = "context_length_exceeded";
        e.message += " (\"truncate\": true cuts inputs to fit)";
      }
      return SendError(ctx, *session, e, true);
    }
    prompt_tokens += static_cast<int64_t>(ids->size());
    tokens.push_back(std::move(*ids));
    req.inputs[i] = PromptInput();  // its text is encoded: freed as we go
  }
  // The queue limit: a request is let in while the server holds fewer than the limit, whatever
  // its number of inputs (at most kMaxEmbeddingInputs), which then count against the others.
  const int64_t count = static_cast<int64_t>(tokens.size());
  const int64_t limit_in_flight = engine->options().max_num_seqs + ctx.options.max_queue;
  if (ctx.in_flight.fetch_add(count) >= limit_in_flight) {
    ctx.in_flight.fetch_sub(count);
    return SendError(ctx, *session,
                     ApiError::FromStatus(ResourceExhaustedError(
                         "the server is busy: " + std::to_string(limit_in_flight) +
                         " requests are running or queued; retry later")),
                     true);
  }
  auto e = std::make_shared<Embeddings>();
  e->ctx = &ctx;
  e->session = session;
  e->submitted = std::make_shared<Submitted>();
  e->submitted->engine = engine;
  e->model_name = req.model.empty() ? model.name : req.model;
  e->base64 = req.base64;
  e->width = width;
  e->dims = static_cast<size_t>(req.dimensions.value_or(width));
  e->prompt_tokens = prompt_tokens;
  e->vectors.resize(tokens.size());
  e->unfinished = tokens.size();

  // Watch before submitting: a client that leaves cancels every input's request.
  session->WatchDisconnect([submitted = e->submitted] { submitted->CancelAll(); });
  std::lock_guard<std::mutex> lock(ctx.live_mu);  // the ids are live before any event ends them
  for (size_t i = 0; i < tokens.size(); ++i) {
    {
      std::lock_guard<std::mutex> sl(e->submitted->mu);
      if (e->submitted->stop) {  // the client left or an input failed: the rest never run
        const size_t rest = tokens.size() - i;
        ctx.in_flight.fetch_sub(static_cast<int64_t>(rest));
        session->Post([e, rest] {
          e->cancelled = true;
          e->Done(rest);
        });
        return;
      }
    }
    EngineRequest er;
    er.embed = true;
    er.prompt_ids = std::move(tokens[i]);
    // The step thread hands each event over; the strand stores it (and answers after the last).
    er.on_event = [e, i](RequestEvent ev) {
      if (!ev.finished) return;
      e->session->Post([e, i, ev = std::move(ev)]() mutable { e->OnEvent(i, std::move(ev)); });
    };
    auto handle = engine->Submit(std::move(er));
    if (!handle.ok()) {
      const size_t rest = tokens.size() - i;
      ctx.in_flight.fetch_sub(static_cast<int64_t>(rest));
      if (i == 0) {  // nothing was submitted: the error is the answer
        return SendError(ctx, *session, ApiError::FromStatus(handle.status(), req.InputField(0)),
                         true);
      }
      // The inputs submitted are cancelled; the answer is this error once they end.
      session->Post([e, rest, status = handle.status()] {
        if (e->error.ok()) e->error = status;
        e->Done(rest);
      });
      e->submitted->CancelAll();
      return;
    }
    ctx.live.insert(handle->id);
    std::lock_guard<std::mutex> sl(e->submitted->mu);
    e->submitted->ids.push_back(handle->id);
    if (e->submitted->stop) engine->Cancel(handle->id);
  }
}

}  // namespace forge::server
