// HttpSession: one client connection on the server's thread pool (Boost.Asio, async, on a
// strand). It reads requests through HttpParser, hands each whole request to the handler, writes
// whole responses or a server-sent-event stream (chunked), keeps the connection alive between
// requests (pipelined requests wait their turn), and times out idle, slow and stalled clients.
// While a request runs it keeps reading, so a client that goes away is noticed; a client that
// only half-closes (EOF after a whole request) still gets its answer.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "server/http_parser.h"

namespace forge::server {

// Per-connection limits (ServerOptions::connection).
struct ConnectionOptions {
  HttpLimits http;
  // No byte of a next request within this: the connection is closed (also a fresh connection).
  std::chrono::milliseconds keep_alive_timeout{30'000};
  // From a request's first byte to its last: 408 and closed past it.
  std::chrono::milliseconds request_timeout{120'000};
  // A write the client does not read for this long: the client is taken as gone.
  std::chrono::milliseconds write_timeout{60'000};
  // Stream bytes waiting for a slow reader: the client is taken as gone past it.
  size_t max_queued_bytes = 32 << 20;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  using Handler = std::function<void(std::shared_ptr<HttpSession>, HttpRequest)>;
  // `options` and `budget` (may be null) outlive the session; `open` counts open sessions.
  HttpSession(boost::asio::ip::tcp::socket socket, Handler handler,
              const ConnectionOptions* options, BodyBudget* budget, std::atomic<int64_t>* open);
  ~HttpSession();

  void Start();
  // The rest are thread-safe. One response per request: Respond, or StartStream + SendChunk... +
  // EndStream. After a response the connection reads the next request unless the client asked
  // to close (or closed its side).
  void Respond(int status, const std::string& content_type, std::string body, Headers headers = {});
  // A header every response to the current request carries (CORS): call from the handler
  // before it responds.
  void AddResponseHeader(std::string name, std::string value);
  void StartStream();
  void SendChunk(std::string bytes);
  void EndStream();
  // Runs fn on the connection's strand, after what is already queued there: calls made from one
  // thread run in the order made.
  void Post(std::function<void()> fn);
  // Calls on_gone (on the pool) once if the client resets or leaves the connection before this
  // request's response is complete (a half-close is not leaving).
  void WatchDisconnect(std::function<void()> on_gone);

 private:
  enum class Phase {
    kIdle,     // between requests: no byte of the next one yet
    kReading,  // some bytes of a request
    kBusy,     // a request is with the handler; its response is not complete
    kClosing,  // the response is sent; reading what the client still sends until it closes
  };
  void ReadMore();
  void OnRead(boost::system::error_code ec, size_t n);
  void Parse();
  void Fail(int status, const std::string& message);
  void ResponseDone();
  void Queue(std::string bytes, bool last);
  void DoWrite();
  void Gone();
  void StartClosing();
  void CloseSocket();
  void ArmTimer();
  void OnTimer();
  std::chrono::steady_clock::time_point Deadline() const;

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  Handler handler_;
  const ConnectionOptions* options_;
  std::atomic<int64_t>* open_;
  HttpParser parser_;
  std::array<char, 16 << 10> read_buf_;  // what one read fills
  std::string in_;                       // bytes read and not yet parsed
  // Strand state.
  Phase phase_ = Phase::kIdle;
  std::chrono::steady_clock::time_point since_;  // when phase_ began
  bool reading_ = false;
  bool peer_eof_ = false;  // the client closed its side
  bool keep_alive_ = true;
  int version_ = 11;
  bool chunked_ = false;  // the response streams as chunks
  std::deque<std::string> writes_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  std::chrono::steady_clock::time_point write_since_;
  bool timer_waiting_ = false;
  std::chrono::steady_clock::time_point timer_at_;  // the expiry being waited for
  bool response_done_ = false;                      // the last bytes of the response are queued
  bool closed_ = false;
  std::function<void()> on_gone_;
  Headers extra_headers_;  // of the current request's response
};

}  // namespace forge::server
