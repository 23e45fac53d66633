// Server: the listener and I/O threads, authentication and the routes (completions live in
// completion_handler.cc).
#include "server/server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/logging.h"
#include "server/completion_handler.h"
#include "server/completion_json.h"
#include "server/http_session.h"

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
  bool add_special = false, with_pieces = false;
  for (auto [name, out] : {std::pair{"add_special", &add_special}, {"with_pieces", &with_pieces}}) {
    if (!body.contains(name)) continue;
    if (!body[name].is_boolean()) {
      return SendError(
          ctx, session,
          ApiError::InvalidRequest(std::string("'") + name + "': expected a boolean", name), false);
    }
    *out = body[name].get<bool>();
  }
  const auto ids = m.tokenizer->Encode(body["content"].get<std::string>(), add_special,
                                       /*parse_special=*/true);
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
  std::vector<int32_t> ids;
  const bool ok = body.contains("tokens") && body["tokens"].is_array();
  if (ok) {
    for (const json& t : body["tokens"]) {
      if (!t.is_number_integer() || !m.tokenizer->vocab().Valid(t.get<int32_t>())) {
        return SendError(
            ctx, session,
            ApiError::InvalidRequest("'tokens': expected token ids in the vocabulary", "tokens"),
            false);
      }
      ids.push_back(t.get<int32_t>());
    }
  } else {
    return SendError(ctx, session,
                     ApiError::InvalidRequest("'tokens': expected a list of token ids", "tokens"),
                     false);
  }
  DecodeOptions opt;
  opt.strip_leading_space = false;
  Json200(session, {{"content", m.tokenizer->Decode(ids, opt)}});
}

}  // namespace

struct Server::Impl {
  ServerContext ctx;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::vector<std::thread> threads;
  std::atomic<bool> shut{false};

  void Accept() {
    acceptor.async_accept(
        asio::make_strand(io), [this](boost::system::error_code ec, tcp::socket socket) {
          if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
            LOG(WARNING) << "serve: accept: " << ec.message();
          } else {
            std::make_shared<HttpSession>(std::move(socket), [this](auto s, HttpRequest r) {
              Route(std::move(s), std::move(r));
            })->Start();
          }
          Accept();
        });
  }

  void Route(std::shared_ptr<HttpSession> session, HttpRequest req) {
    const std::string& path = req.path;
    const ServedModel* model = ctx.model.load();
    if (path == "/health" && req.method == "GET") {
      if (!model) {
        json body = json::parse(Loading().Json());
        body["status"] = "loading";
        return session->Respond(503, "application/json", Dump(body));
      }
      return session->Respond(200, "application/json", R"({"status":"ok"})");
    }
    if (!ctx.options.api_key.empty() && req.authorization != "Bearer " + ctx.options.api_key) {
      return SendError(ctx, *session, ApiError::Unauthorized(), false);
    }
    const bool post = req.method == "POST";
    const bool known = path == "/v1/completions" || path == "/v1/chat/completions" ||
                       path == "/completions" || path == "/chat/completions" ||
                       path == "/tokenize" || path == "/detokenize" || path == "/v1/models" ||
                       path == "/models" || path == "/metrics";
    if (!known) {
      return SendError(ctx, *session,
                       ApiError::FromStatus(NotFoundError("no route " + req.method + " " + path)),
                       false);
    }
    const bool wants_post = path != "/v1/models" && path != "/models" && path != "/metrics";
    if (post != wants_post) {
      ApiError e = ApiError::InvalidRequest(req.method + " is not allowed on " + path, "");
      e.http_status = 405;
      return SendError(ctx, *session, e, false);
    }
    if (path == "/metrics") {
      const EngineStats stats = model ? model->engine->stats() : EngineStats{};
      return session->Respond(200, "text/plain; version=0.0.4; charset=utf-8",
                              ctx.metrics.Render(stats, model != nullptr));
    }
    if (!model) return SendError(ctx, *session, Loading(), false);
    if (path == "/v1/models" || path == "/models") {
      json m = {{"id", model->name},
                {"object", "model"},
                {"created", 0},
                {"owned_by", "forge"},
                {"max_model_len", model->engine->ctx_size()}};
      return Json200(*session, {{"object", "list"}, {"data", json::array({m})}});
    }
    if (path == "/tokenize" || path == "/detokenize") {
      json body = json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.is_object()) {
        return SendError(ctx, *session,
                         ApiError::InvalidRequest("the body is not a JSON object", ""), false);
      }
      return path == "/tokenize" ? Tokenize(ctx, *model, *session, body)
                                 : Detokenize(ctx, *model, *session, body);
    }
    const bool chat = path.find("chat") != std::string::npos;
    HandleCompletion(ctx, *model, std::move(session), req.body, chat);
  }
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->ctx.options = std::move(options);
}

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
  impl_->Accept();
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
  impl_->threads.clear();
}

}  // namespace forge::server
