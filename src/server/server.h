// Server: the OpenAI-compatible HTTP server over one Engine. It listens at once (GET /health
// answers 503 while the model loads), serves /v1/completions, /v1/chat/completions (a model that
// generates), /v1/embeddings (a model that embeds), /v1/models, /tokenize, /detokenize,
// /apply-template, /metrics, the live status (/status, /status/stream) and the web page (/), and
// shuts down gracefully. Connections are read and
// written on a few I/O threads; request bodies are parsed, templates rendered and prompts
// tokenized on worker threads, so a large request never holds up /health or other clients.
// Contract notes: max_tokens (or max_completion_tokens) defaults to ServerOptions::
// default_max_tokens capped by the context left after the prompt; a prompt that fills the context,
// or prompt + an explicit max_tokens beyond it, is refused with 400 (never silently truncated).
// Every reply keeps the connection alive unless the client asks otherwise; the server watches a
// connection whose request runs for a client that leaves, and cancels that request.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "grammar/grammar_cache.h"
#include "server/http_session.h"
#include "server/json_body.h"
#include "server/live_status.h"
#include "server/metrics.h"
#include "server/model_facts.h"
#include "server/status_stream.h"
#include "server/tool_calls.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace forge::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: any free port (see Server::port())
  // Non-empty: every route but /health and the web page's files needs "Bearer <key>".
  std::string api_key;
  // Origins whose browser pages may call the API (CORS; "*": any). Empty: CORS is off.
  std::vector<std::string> cors_origins;
  int threads = 2;                 // I/O threads (connections are async; this is not per client)
  int workers = 2;                 // threads that parse bodies, render templates and tokenize
  int64_t max_connections = 1024;  // open connections; past it a new one gets 503 and is closed
  // Request body bytes held at once over all connections; a body past it gets 503.
  int64_t max_buffered_bytes = int64_t{256} << 20;
  ConnectionOptions connection;  // per-connection limits and timeouts
  JsonLimits json;               // bounds of a JSON body
  int32_t max_queue = 64;  // requests beyond the engine's max_num_seqs that may wait; then 429
  // max_tokens when a request gives none (capped by what the context leaves after the prompt).
  int32_t default_max_tokens = 256;
};

// What the server serves once loading is done. Everything must outlive the server.
struct ServedModel {
  std::string name;  // the id in /v1/models and in responses
  // More names the server answers to (--served-model-name: clients that send a fixed name).
  std::vector<std::string> aliases;
  Engine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  ChatTemplate chat_template;
  ChatTemplateOptions template_options;  // bos/eos tokens, add_generation_prompt
  // The template writes "<think>" blocks: chat answers split them into reasoning_content.
  bool reasoning = false;
  // How the template asks the model to call tools (kNone: it knows no tools; Forge then
  // describes them in a system message and reads replies in its generic format).
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  // What /status and the web page say about the model and its device.
  ModelFacts facts;

  // Whether a request's "model" names this model (empty: the served model).
  bool Answers(const std::string& model) const {
    if (model.empty() || model == name) return true;
    for (const std::string& a : aliases) {
      if (model == a) return true;
    }
    return false;
  }
};

// Shared by the request handlers.
struct ServerContext {
  explicit ServerContext(ServerOptions o)
      : options(std::move(o)), body_budget(options.max_buffered_bytes) {}
  ServerOptions options;
  BodyBudget body_budget;               // request bodies held by all connections
  std::atomic<int64_t> connections{0};  // open connections
  std::atomic<const ServedModel*> model{nullptr};
  ServerMetrics metrics;
  LiveStatus status{&metrics};   // /status: rates, percentiles, the requests in flight
  StatusStreams status_streams;  // the clients of /status/stream
  GrammarCache grammars;  // compiled output constraints, shared by requests that send the same
  std::atomic<int64_t> in_flight{0};  // engine requests submitted and not finished
  std::mutex live_mu;
  std::unordered_set<RequestId> live;  // their engine ids, cancelled at shutdown
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Errors: the address cannot be bound.
  Status Start();
  uint16_t port() const { return port_; }
  // Marks the server ready (GET /health -> 200). `model` must outlive the server.
  void SetModel(const ServedModel* model);
  // Stops accepting, cancels running requests, lets their responses end (up to `grace_ms`),
  // then stops the threads. Idempotent.
  void Shutdown(int grace_ms = 3000);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace forge::server
