// HttpSession: async reads of requests and queued writes of responses and SSE chunks.
#include "server/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <chrono>

namespace forge::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr size_t kBodyLimit = 16 << 20;
constexpr auto kIdleTimeout = std::chrono::seconds(120);

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 499:
      return "Client Closed Request";
    case 503:
      return "Service Unavailable";
    default:
      return status >= 500 ? "Internal Server Error" : "Error";
  }
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, Handler handler)
    : stream_(std::move(socket)), handler_(std::move(handler)) {}

void HttpSession::Start() {
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->DoRead(); });
}

void HttpSession::DoRead() {
  parser_.emplace();
  parser_->body_limit(kBodyLimit);
  response_done_ = false;
  stream_.expires_after(kIdleTimeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
}

void HttpSession::OnRead(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    Respond(413, "application/json",
            R"({"error":{"message":"body too large","type":)"
            R"("invalid_request_error","param":null,"code":null}})");
    return;
  }
  if (ec) return CloseSocket();
  stream_.expires_never();
  auto& msg = parser_->get();
  keep_alive_ = msg.keep_alive();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  std::string target(msg.target());
  req.path = target.substr(0, target.find('?'));
  req.body = std::move(msg.body());
  auto auth = msg.find(http::field::authorization);
  if (auth != msg.end()) req.authorization = std::string(auth->value());
  handler_(shared_from_this(), std::move(req));
}

void HttpSession::Respond(int status, const std::string& content_type, std::string body,
                          Headers headers) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
  head += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\n";
  for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
  asio::dispatch(stream_.get_executor(), [self = shared_from_this(), head = std::move(head),
                                          body = std::move(body)]() mutable {
    const bool close = !self->keep_alive_ || self->watching_;
    head += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
    self->Queue(head + body, true);
  });
}

void HttpSession::StartStream() {
  std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "Connection: close\r\n\r\n";
  asio::dispatch(stream_.get_executor(), [self = shared_from_this(), head = std::move(head)] {
    self->keep_alive_ = false;
    self->Queue(head, false);
  });
}

void HttpSession::SendChunk(std::string bytes) {
  asio::dispatch(stream_.get_executor(),
                 [self = shared_from_this(), b = std::move(bytes)] { self->Queue(b, false); });
}

void HttpSession::Post(std::function<void()> fn) {
  asio::post(stream_.get_executor(), [self = shared_from_this(), f = std::move(fn)] { f(); });
}

void HttpSession::EndStream() {
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    self->keep_alive_ = false;
    self->Queue("", true);
  });
}

void HttpSession::WatchDisconnect(std::function<void()> on_gone) {
  asio::dispatch(stream_.get_executor(), [self = shared_from_this(), f = std::move(on_gone)] {
    if (self->closed_) {
      f();
      return;
    }
    self->on_gone_ = std::move(f);
    if (self->watching_) return;
    self->watching_ = true;
    // Bytes that arrive are kept (unused: the connection closes after this response); an error
    // or EOF means the client went away.
    auto read = std::make_shared<std::function<void()>>();
    *read = [self, read] {
      self->stream_.socket().async_read_some(self->buffer_.prepare(512),
                                             [self, read](beast::error_code ec, size_t n) {
                                               if (ec) {
                                                 self->Gone();
                                                 *read = nullptr;  // breaks the cycle
                                                 return;
                                               }
                                               self->buffer_.commit(n);
                                               if (self->buffer_.size() > (1 << 16))
                                                 self->buffer_.consume(self->buffer_.size());
                                               (*read)();
                                             });
    };
    (*read)();
  });
}

void HttpSession::Gone() {
  if (on_gone_) {
    auto f = std::move(on_gone_);
    on_gone_ = nullptr;
    if (!response_done_) f();
  }
  CloseSocket();
}

void HttpSession::Queue(std::string bytes, bool last) {
  if (closed_) return;
  if (!bytes.empty()) writes_.push_back(std::move(bytes));
  if (last) response_done_ = true;
  if (!writing_) DoWrite();
}

void HttpSession::DoWrite() {
  if (closed_) return;
  if (writes_.empty()) {
    writing_ = false;
    if (!response_done_) return;
    if (keep_alive_ && !watching_) return DoRead();
    beast::error_code ec;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    if (!watching_) CloseSocket();  // a watching read sees the client's EOF and closes
    return;
  }
  writing_ = true;
  asio::async_write(stream_.socket(), asio::buffer(writes_.front()),
                    [self = shared_from_this()](beast::error_code ec, size_t) {
                      // The socket may have been closed (client gone) while this write was in
                      // flight: the queue then belongs to nobody and is left alone.
                      if (self->closed_) {
                        self->writing_ = false;
                        return;
                      }
                      if (ec) return self->Gone();
                      self->writes_.pop_front();
                      self->DoWrite();
                    });
}

void HttpSession::CloseSocket() {
  if (closed_) return;
  closed_ = true;
  // writes_ is not cleared here: an async_write may still point into its front buffer.
  beast::error_code ec;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  stream_.socket().close(ec);
}

}  // namespace forge::server
