// Server: the listener and I/O threads, authentication and the routes (completions live in
// completion_handler.cc, embeddings in embeddings_handler.cc).
#include "server/server.h"

#include <sys/resource.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "server/completion_handler.h"
#include "server/completion_json.h"
#include "server/completion_request.h"
#include "server/embeddings_handler.h"
#include "server/http_session.h"
#include "server/routes.h"
#include "server/status_handler.h"
#include "server/web_assets.h"

namespace forge::server {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using tcp = asio::ip::tcp;

// The answer of /health and of every route that needs the model until SetModel (503).
ApiError Loading() { return ApiError::FromStatus(UnavailableError("the model is loading")); }

void Json200(HttpSession& session, const json& j) {
  session.Respond(200, "application/json", Dump(j));
}

void Tokenize(ServerContext& ctx, const ServedModel& m, HttpSession& session, const json& body) {
  if (!body.contains("content") || !body["content"].is_string()) {
    return SendError(ctx, session,
                     ApiError::InvalidRequest("'content': expected a string", "content"), false);
  }
  bool add_special = false, with_pieces = false, parse_special = true;
  for (auto [name, out] : {std::pair{"add_special", &add_special},
                           {"with_pieces", &with_pieces},
                           {"parse_special", &parse_special}}) {
    if (!body.contains(name)) continue;
    if (!body[name].is_boolean()) {
      return SendError(
          ctx, session,
          ApiError::InvalidRequest(std::string("'") + name + "': expected a boolean", name), false);
    }
    *out = body[name].get<bool>();
  }
  const auto ids =
      m.tokenizer->Encode(body["content"].get<std::string>(), add_special, parse_special);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (with_pieces) {
      tokens.push_back({{"id", id}, {"piece", m.tokenizer->TokenToPiece(id, true)}});
    } else {
      tokens.push_back(id);
    }
  }
  Json200(session, {{"tokens", tokens}});
}

void Detokenize(ServerContext& ctx, const ServedModel& m, HttpSession& session, const json& body) {
  if (!body.contains("tokens") || !body["tokens"].is_array()) {
    return SendError(ctx, session,
                     ApiError::InvalidRequest("'tokens': expected a list of token ids", "tokens"),
                     false);
  }
  std::vector<int32_t> ids;
  const int32_t n_vocab = m.tokenizer->vocab().size();
  for (const json& t : body["tokens"]) {
    auto id = TokenIdFromJson(t, n_vocab, "tokens");
    if (!id.ok())
      return SendError(ctx, session, ApiError::FromStatus(id.status(), "tokens"), false);
    ids.push_back(*id);
  }
  DecodeOptions opt;
  opt.strip_leading_space = false;
  Json200(session, {{"content", m.tokenizer->Decode(ids, opt)}});
}

// GET / and /web/{file}: an embedded file of the web page. Model output is shown by the page as
// text, and the policy below keeps any markup that slipped through inert: no inline scripts, no
// other origin, no plugins, no framing.
void ServeWebAsset(HttpSession& session, const RouteMatch& route) {
  const WebAsset* a = FindWebAsset(route.id == RouteId::kWebPage ? "index.html" : route.asset);
  if (a == nullptr) {
    std::string shown = route.asset.substr(0, 128);
    return session.Respond(404, "application/json",
                           ApiError::Http(404, "no web file " + shown).Json());
  }
  Headers h = {{"Cache-Control", "no-cache"},
               {"X-Content-Type-Options", "nosniff"},
               {"Referrer-Policy", "no-referrer"},
               {"X-Frame-Options", "DENY"},
               {"Content-Security-Policy",
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                "connect-src 'self'; base-uri 'none'; form-action 'none'; "
                "frame-ancestors 'none'"}};
  session.Respond(200, std::string(a->content_type), std::string(a->body), std::move(h));
}

// A == B in time that does not depend on where they differ.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0);
  return diff == 0;
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions options)
      : ctx(std::move(options)), workers(std::max(1, ctx.options.workers)) {}

  ServerContext ctx;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  asio::thread_pool workers;      // body parsing, templates, tokenization
  asio::steady_timer ticker{io};  // the status tick, once a second
  std::vector<std::thread> threads;
  std::atomic<bool> shut{false};

  // Every second: the status history's point and the status streams' event (on a worker).
  void Tick() {
    ticker.expires_after(std::chrono::seconds(1));
    ticker.async_wait([this](boost::system::error_code ec) {
      if (ec || shut.load()) return;
      if (const ServedModel* model = ctx.model.load()) {
        asio::post(workers, [this, model] { StatusTick(ctx, *model); });
      }
      Tick();
    });
  }

  void Accept() {
    acceptor.async_accept(asio::make_strand(io), [this](boost::system::error_code ec,
                                                        tcp::socket socket) {
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
        // Out of descriptors (or another transient failure): wait instead of spinning.
        LOG(WARNING) << "serve: accept: " << ec.message();
        accept_retry.expires_after(std::chrono::milliseconds(100));
        accept_retry.async_wait([this](boost::system::error_code e) {
          if (!e) Accept();
        });
        return;
      }
      if (ctx.connections.load() >= ctx.options.max_connections) {
        Refuse(std::move(socket));
      } else {
        std::make_shared<HttpSession>(
            std::move(socket), [this](auto s, HttpRequest r) { Route(std::move(s), std::move(r)); },
            &ctx.options.connection, &ctx.body_budget, &ctx.connections)
            ->Start();
      }
      Accept();
    });
  }

  // A connection past max_connections: 503 and closed.
  void Refuse(tcp::socket socket) {
    static const std::string kBody =
        ApiError::Http(503, "the server has too many open connections; retry later").Json();
    static const std::string kReply =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(kBody.size()) + "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + kBody;
    auto s = std::make_shared<tcp::socket>(std::move(socket));
    asio::async_write(*s, asio::buffer(kReply), [s](boost::system::error_code, size_t) {
      boost::system::error_code ec;
      s->shutdown(tcp::socket::shutdown_both, ec);
      s->close(ec);
    });
  }

  void Route(std::shared_ptr<HttpSession> session, HttpRequest req) {
    const std::string& path = req.path;
    const RouteMatch route = MatchRoute(req.method, path);
    const bool cors = Cors(*session, req);
    if (route.preflight) {
      // Answered without the API key: browsers send no credentials in a preflight.
      Headers h = {{"Allow", std::string(route.allow) + ", OPTIONS"}};
      if (cors) {
        const std::string_view asked = req.Header("access-control-request-headers");
        h.emplace_back("Access-Control-Allow-Methods", std::string(route.allow) + ", OPTIONS");
        h.emplace_back("Access-Control-Allow-Headers",
                       asked.empty() ? "Authorization, Content-Type" : std::string(asked));
        h.emplace_back("Access-Control-Max-Age", "600");
      }
      return session->Respond(204, "text/plain", "", std::move(h));
    }
    if (route.error) {
      Headers headers;
      if (route.allow) headers.emplace_back("Allow", route.allow);
      return session->Respond(route.error->http_status, "application/json", route.error->Json(),
                              std::move(headers));
    }
    const ServedModel* model = ctx.model.load();
    if (route.id == RouteId::kHealth) {
      if (!model) {
        json body = json::parse(Loading().Json());
        body["status"] = "loading";
        return session->Respond(503, "application/json", Dump(body));
      }
      return session->Respond(200, "application/json", R"({"status":"ok"})");
    }
    if (route.id == RouteId::kWebPage || route.id == RouteId::kWebAsset) {
      return ServeWebAsset(*session, route);  // no key: the page asks for it
    }
    if (!ctx.options.api_key.empty()) {
      const std::string_view auth = req.Header("authorization");
      const std::string expected = "Bearer " + ctx.options.api_key;
      if (!SameSecret(auth, expected))
        return SendError(ctx, *session, ApiError::Unauthorized(), false);
    }
    if (route.id == RouteId::kMetrics) {
      const EngineStats stats = model ? model->engine->stats() : EngineStats{};
      return session->Respond(200, "text/plain; version=0.0.4; charset=utf-8",
                              ctx.metrics.Render(stats, model != nullptr));
    }
    if (!model) return SendError(ctx, *session, Loading(), false);
    if (route.id == RouteId::kModels || route.id == RouteId::kModel) {
      auto entry = [&](const std::string& id) {
        return json{{"id", id},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "forge"},
                    {"max_model_len", model->engine->ctx_size()}};
      };
      if (route.id == RouteId::kModel) {
        if (!model->Answers(route.model_id) || route.model_id.empty()) {
          return SendError(
              ctx, *session,
              ApiError::FromStatus(
                  NotFoundError("the model '" + route.model_id + "' does not exist"), "model"),
              false);
        }
        return Json200(*session, entry(route.model_id));
      }
      json data = json::array({entry(model->name)});
      for (const std::string& a : model->aliases) data.push_back(entry(a));
      return Json200(*session, {{"object", "list"}, {"data", data}});
    }
    // The POST routes parse, render and tokenize, and status snapshots read the latency
    // windows: on the workers, off the I/O threads.
    asio::post(workers, [this, session = std::move(session), req = std::move(req), model,
                         id = route.id] {
      try {
        Work(session, req, id, *model);
      } catch (const std::exception& e) {
        LOG(ERROR) << "serve: " << req.method << " " << req.path.substr(0, 256) << ": " << e.what();
        SendError(ctx, *session, ApiError::Http(500, "internal error"), true);
      }
    });
  }

  // With --cors-origins: the CORS header for a request from an allowed origin (true then).
  bool Cors(HttpSession& session, const HttpRequest& req) {
    const std::string_view origin = req.Header("origin");
    if (origin.empty() || ctx.options.cors_origins.empty()) return false;
    for (const std::string& o : ctx.options.cors_origins) {
      if (o == "*" || o == origin) {
        session.AddResponseHeader("Access-Control-Allow-Origin", o == "*" ? "*" : o);
        if (o != "*") session.AddResponseHeader("Vary", "Origin");
        return true;
      }
    }
    return false;
  }

  void Work(const std::shared_ptr<HttpSession>& session, const HttpRequest& req, RouteId id,
            const ServedModel& model) {
    if (id == RouteId::kStatus) return HandleStatus(ctx, model, *session);
    if (id == RouteId::kStatusStream) return HandleStatusStream(ctx, model, session);
    if (id == RouteId::kApplyTemplate) return HandleApplyTemplate(ctx, model, *session, req.body);
    if (id == RouteId::kEmbeddings) return HandleEmbeddings(ctx, model, session, req.body);
    if (id == RouteId::kTokenize || id == RouteId::kDetokenize) {
      json body;
      if (auto e = ParseJsonBody(req.body, ctx.options.json, &body)) {
        return SendError(ctx, *session, *e, false);
      }
      if (!body.is_object()) {
        return SendError(ctx, *session,
                         ApiError::InvalidRequest("the body is not a JSON object", ""), false);
      }
      return id == RouteId::kTokenize ? Tokenize(ctx, model, *session, body)
                                      : Detokenize(ctx, model, *session, body);
    }
    HandleCompletion(ctx, model, session, req.body, id == RouteId::kChatCompletions);
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { Shutdown(0); }

Status Server::Start() {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(impl_->ctx.options.host, ec);
  if (ec) return InvalidArgumentError("--host " + impl_->ctx.options.host + ": " + ec.message());
  tcp::endpoint ep(address, impl_->ctx.options.port);
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return UnavailableError("cannot listen on " + impl_->ctx.options.host + ":" +
                            std::to_string(impl_->ctx.options.port) + ": " + ec.message());
  }
  port_ = a.local_endpoint().port();
  // Connections past the descriptors the process may open would fail at accept: keep the cap
  // below the soft limit (model files, logs and the engine need some).
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    const int64_t room = static_cast<int64_t>(nofile.rlim_cur) - 64;
    int64_t& cap = impl_->ctx.options.max_connections;
    if (room < cap) {
      LOG(WARNING) << "serve: at most " << std::max<int64_t>(room, 1)
                   << " connections (the open-file limit is " << nofile.rlim_cur << ")";
      cap = std::max<int64_t>(room, 1);
    }
  }
  impl_->Accept();
  impl_->Tick();
  for (int i = 0; i < std::max(1, impl_->ctx.options.threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->io.run(); });
  }
  return Status::Ok();
}

void Server::SetModel(const ServedModel* model) { impl_->ctx.model.store(model); }

void Server::Shutdown(int grace_ms) {
  if (impl_->shut.exchange(true)) return;
  asio::post(impl_->io, [this] {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
  });
  asio::post(impl_->io, [this] { impl_->ticker.cancel(); });
  impl_->ctx.status_streams.EndAll();
  const ServedModel* model = impl_->ctx.model.load();
  if (model) {
    std::vector<RequestId> live;
    {
      std::lock_guard<std::mutex> lock(impl_->ctx.live_mu);
      live.assign(impl_->ctx.live.begin(), impl_->ctx.live.end());
    }
    for (RequestId id : live) model->engine->Cancel(id);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (impl_->ctx.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (grace_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // last writes
  impl_->io.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->workers.join();
  impl_->threads.clear();
}

}  // namespace forge::server
