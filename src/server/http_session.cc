// HttpSession: the read loop through HttpParser, queued writes of responses and SSE chunks, and
// the connection's one timer.
#include "server/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "server/api_error.h"

namespace forge::server {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// Bytes of pipelined requests read ahead while a request runs; reading pauses past it.
constexpr size_t kReadAhead = 64 << 10;
// After a response that closes the connection, what the client still sends is read (so that
// closing does not reset the connection under the response) for at most this long.
constexpr auto kLinger = std::chrono::seconds(2);

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return status >= 500 ? "Internal Server Error" : "Error";
  }
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, Handler handler,
                         const ConnectionOptions* options, BodyBudget* budget,
                         std::atomic<int64_t>* open)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      handler_(std::move(handler)),
      options_(options),
      open_(open),
      parser_(options->http, budget) {
  if (open_) open_->fetch_add(1);
}

HttpSession::~HttpSession() {
  if (open_) open_->fetch_sub(1);
}

void HttpSession::Start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    self->since_ = Clock::now();
    self->ArmTimer();
    self->ReadMore();
  });
}

void HttpSession::ReadMore() {
  if (reading_ || closed_ || peer_eof_) return;
  if (phase_ == Phase::kBusy && in_.size() >= kReadAhead) return;  // resumed after the response
  reading_ = true;
  socket_.async_read_some(
      asio::buffer(read_buf_),
      [self = shared_from_this()](boost::system::error_code ec, size_t n) { self->OnRead(ec, n); });
}

void HttpSession::OnRead(boost::system::error_code ec, size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec == asio::error::eof) {
    peer_eof_ = true;
    // A half-close after a whole request: the answer still goes out, then the connection
    // closes. Otherwise nothing more will come.
    if (phase_ != Phase::kBusy) CloseSocket();
    return;
  }
  if (ec) return phase_ == Phase::kBusy ? Gone() : CloseSocket();
  if (phase_ != Phase::kClosing) in_.append(read_buf_.data(), n);
  if (phase_ == Phase::kIdle || phase_ == Phase::kReading) Parse();
  ReadMore();
}

void HttpSession::Parse() {
  while (!closed_ && (phase_ == Phase::kIdle || phase_ == Phase::kReading) && !in_.empty()) {
    if (phase_ == Phase::kIdle) {
      phase_ = Phase::kReading;
      since_ = Clock::now();
      ArmTimer();
    }
    size_t used = 0;
    const HttpParser::State state = parser_.Put(in_, &used);
    in_.erase(0, used);
    switch (state) {
      case HttpParser::State::kNeedMore:
        if (used == 0) return;
        break;
      case HttpParser::State::kHeaderDone:
        if (parser_.expects_continue()) Queue("HTTP/1.1 100 Continue\r\n\r\n", false);
        break;
      case HttpParser::State::kError:
        return Fail(parser_.error_status(), parser_.error_message());
      case HttpParser::State::kDone: {
        HttpRequest req = parser_.Take();
        keep_alive_ = req.keep_alive;
        version_ = req.version;
        phase_ = Phase::kBusy;
        since_ = Clock::now();
        response_done_ = false;
        chunked_ = false;
        handler_(shared_from_this(), std::move(req));
        return;
      }
    }
  }
}

void HttpSession::Fail(int status, const std::string& message) {
  keep_alive_ = false;
  phase_ = Phase::kBusy;
  since_ = Clock::now();
  response_done_ = false;
  chunked_ = false;
  Respond(status, "application/json", ApiError::Http(status, message).Json());
}

void HttpSession::Respond(int status, const std::string& content_type, std::string body,
                          Headers headers) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) + "\r\n";
  if (status != 204) {  // a 204 has no body and no length
    head += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\n";
  } else {
    body.clear();
  }
  for (const auto& [k, v] : headers) head += k + ": " + v + "\r\n";
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), head = std::move(head),
                                          body = std::move(body)]() mutable {
    for (const auto& [k, v] : self->extra_headers_) head += k + ": " + v + "\r\n";
    const bool close = !self->keep_alive_ || self->peer_eof_;
    head += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
    self->Queue(head + body, true);
  });
}

void HttpSession::StartStream() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    // HTTP/1.1 streams in chunks, so the connection can carry the next request; HTTP/1.0
    // streams until the connection closes.
    self->chunked_ = self->version_ >= 11 && self->keep_alive_ && !self->peer_eof_;
    if (!self->chunked_) self->keep_alive_ = false;
    std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n";
    for (const auto& [k, v] : self->extra_headers_) head += k + ": " + v + "\r\n";
    head += self->chunked_ ? "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
                           : "Connection: close\r\n\r\n";
    self->Queue(std::move(head), false);
  });
}

void HttpSession::AddResponseHeader(std::string name, std::string value) {
  asio::dispatch(socket_.get_executor(),
                 [self = shared_from_this(), n = std::move(name), v = std::move(value)]() mutable {
                   self->extra_headers_.emplace_back(std::move(n), std::move(v));
                 });
}

void HttpSession::SendChunk(std::string bytes) {
  if (bytes.empty()) return;  // an empty chunk would end the stream
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), b = std::move(bytes)] {
    if (!self->chunked_) return self->Queue(std::move(b), false);
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", b.size());
    self->Queue(size + b + "\r\n", false);
  });
}

void HttpSession::EndStream() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    self->Queue(self->chunked_ ? "0\r\n\r\n" : "", true);
  });
}

void HttpSession::Post(std::function<void()> fn) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), f = std::move(fn)] { f(); });
}

void HttpSession::WatchDisconnect(std::function<void()> on_gone) {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), f = std::move(on_gone)] {
    if (self->closed_) return f();
    self->on_gone_ = std::move(f);
  });
}

void HttpSession::Gone() {
  if (on_gone_) {
    auto f = std::move(on_gone_);
    on_gone_ = nullptr;
    if (phase_ == Phase::kBusy && !response_done_) f();
  }
  CloseSocket();
}

void HttpSession::Queue(std::string bytes, bool last) {
  if (closed_) return;
  queued_bytes_ += bytes.size();
  // A stream's chunks piling up: a client that does not read. (A whole response is one item,
  // already made; it is not refused for its size.)
  if (!last && queued_bytes_ > options_->max_queued_bytes) return Gone();
  if (!bytes.empty()) writes_.push_back(std::move(bytes));
  if (last) response_done_ = true;
  if (!writing_) DoWrite();
}

void HttpSession::DoWrite() {
  if (closed_) return;
  if (writes_.empty()) {
    writing_ = false;
    if (response_done_ && phase_ == Phase::kBusy) ResponseDone();
    return;
  }
  if (!writing_) {
    writing_ = true;
    write_since_ = Clock::now();
    ArmTimer();
  }
  asio::async_write(socket_, asio::buffer(writes_.front()),
                    [self = shared_from_this()](boost::system::error_code ec, size_t) {
                      // The socket may have been closed (client gone) while this write was in
                      // flight: the queue then belongs to nobody and is left alone.
                      if (self->closed_) {
                        self->writing_ = false;
                        return;
                      }
                      if (ec) return self->Gone();
                      self->queued_bytes_ -= self->writes_.front().size();
                      self->writes_.pop_front();
                      self->write_since_ = Clock::now();
                      self->DoWrite();
                    });
}

void HttpSession::ResponseDone() {
  on_gone_ = nullptr;
  if (!keep_alive_ || peer_eof_) return StartClosing();
  phase_ = Phase::kIdle;
  since_ = Clock::now();
  response_done_ = false;
  chunked_ = false;
  queued_bytes_ = 0;
  extra_headers_.clear();
  ArmTimer();
  Parse();  // a request that came while this one ran
  ReadMore();
}

void HttpSession::StartClosing() {
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  if (peer_eof_ || ec) return CloseSocket();
  phase_ = Phase::kClosing;
  since_ = Clock::now();
  in_.clear();
  ArmTimer();
  ReadMore();
}

void HttpSession::CloseSocket() {
  if (closed_) return;
  closed_ = true;
  // writes_ is not cleared here: an async_write may still point into its front buffer.
  boost::system::error_code ec;
  timer_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

Clock::time_point HttpSession::Deadline() const {
  if (closed_) return Clock::time_point::max();
  if (writing_) return write_since_ + options_->write_timeout;
  switch (phase_) {
    case Phase::kIdle:
      return since_ + options_->keep_alive_timeout;
    case Phase::kReading:
      return since_ + options_->request_timeout;
    case Phase::kClosing:
      return since_ + kLinger;
    case Phase::kBusy:
      break;
  }
  return Clock::time_point::max();
}

void HttpSession::ArmTimer() {
  const Clock::time_point at = Deadline();
  if (at == Clock::time_point::max()) return;     // a wait in flight finds nothing due
  if (timer_waiting_ && timer_at_ <= at) return;  // it fires first and re-arms
  timer_waiting_ = true;
  timer_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted) return;  // re-armed or closed
    self->timer_waiting_ = false;
    self->OnTimer();
  });
}

void HttpSession::OnTimer() {
  if (closed_) return;
  if (Clock::now() < Deadline()) return ArmTimer();
  if (writing_) return Gone();  // the client has not read for write_timeout
  switch (phase_) {
    case Phase::kReading:
      return Fail(408, "the request did not arrive within " +
                           std::to_string(options_->request_timeout.count() / 1000) + " s");
    case Phase::kIdle:
    case Phase::kClosing:
      return CloseSocket();
    case Phase::kBusy:
      return;
  }
}

}  // namespace forge::server
