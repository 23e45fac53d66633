// HttpSession: one client connection on the server's thread pool (Boost.Beast, async, on a
// strand): reads requests, writes whole responses or a server-sent-event stream, and reports a
// client that goes away while a long request runs.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace forge::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query
  std::string body;
  std::string authorization;  // the Authorization header
};

using Headers = std::vector<std::pair<std::string, std::string>>;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  using Handler = std::function<void(std::shared_ptr<HttpSession>, HttpRequest)>;
  HttpSession(boost::asio::ip::tcp::socket socket, Handler handler);

  void Start();
  // The rest are thread-safe. One response per request: Respond, or StartStream + SendChunk... +
  // EndStream. After a response the connection reads the next request (keep-alive) unless the
  // client asked to close or WatchDisconnect was called; a stream always closes at its end.
  void Respond(int status, const std::string& content_type, std::string body, Headers headers = {});
  void StartStream();
  void SendChunk(std::string bytes);
  void EndStream();
  // Runs fn on the connection's strand, after what is already queued there: calls made from one
  // thread run in the order made.
  void Post(std::function<void()> fn);
  // Calls on_gone (on the pool) once if the client closes or resets the connection before the
  // response is complete. The connection closes after this request's response.
  void WatchDisconnect(std::function<void()> on_gone);

 private:
  void DoRead();
  void OnRead(boost::beast::error_code ec);
  void Queue(std::string bytes, bool last);
  void DoWrite();
  void Gone();
  void CloseSocket();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  Handler handler_;
  bool keep_alive_ = true;
  // Strand state.
  std::deque<std::string> writes_;
  bool writing_ = false;
  bool response_done_ = false;  // the last bytes of the response are queued
  bool watching_ = false;
  bool closed_ = false;
  std::function<void()> on_gone_;
};

}  // namespace forge::server
