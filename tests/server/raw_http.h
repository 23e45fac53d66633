// Test helper (header-only): a raw TCP client for the server's hardening tests. It sends any
// bytes (malformed requests included), optionally half-closes, and reads back the HTTP responses
// (Content-Length, chunked or close-delimited bodies) as they come.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace forge::testing {

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;  // de-chunked
};

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawConnection() {
    if (sender_.joinable()) sender_.join();
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  // Sends bytes on a thread of its own (a large body is sent while responses are read); errors
  // (the server closed) end the send quietly.
  void Send(std::string bytes, bool half_close = false) {
    if (sender_.joinable()) sender_.join();
    sender_ = std::thread([this, b = std::move(bytes), half_close] {
      size_t at = 0;
      while (at < b.size()) {
        const ssize_t n = ::send(fd_, b.data() + at, b.size() - at, MSG_NOSIGNAL);
        if (n <= 0) return;
        at += static_cast<size_t>(n);
      }
      if (half_close) shutdown(fd_, SHUT_WR);
    });
  }
  void WaitSent() {
    if (sender_.joinable()) sender_.join();
  }

  // Reads until `count` whole responses arrived, the server closed, or timeout_ms passed.
  std::vector<RawResponse> Read(size_t count, int timeout_ms = 10000) {
    std::vector<RawResponse> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (out.size() < count) {
      RawResponse r;
      size_t used = 0;
      if (Parse(&r, &used)) {
        in_.erase(0, used);
        if (r.status != 100) out.push_back(std::move(r));  // interim answers are not counted
        continue;
      }
      if (closed_ || !Fill(deadline)) break;
    }
    return out;
  }

  // True when the server closed the connection within timeout_ms (bytes that came are kept).
  bool ClosedWithin(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!closed_ && Fill(deadline)) {
    }
    return closed_;
  }
  const std::string& pending() const { return in_; }

 private:
  // Reads some bytes; false at the deadline.
  bool Fill(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      closed_ = true;
      return true;
    }
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }

  // One whole response at the front of in_.
  bool Parse(RawResponse* r, size_t* used) {
    const size_t end = in_.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    r->head = in_.substr(0, end + 2);
    if (r->head.rfind("HTTP/1.", 0) != 0) return false;
    r->status = std::atoi(r->head.c_str() + 9);
    size_t at = end + 4;
    std::string lower;
    for (char c : r->head) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (r->status == 100) {
      *used = at;
      return true;
    }
    const size_t cl = lower.find("\r\ncontent-length:");
    if (cl != std::string::npos) {
      const size_t n = std::strtoull(lower.c_str() + cl + 17, nullptr, 10);
      if (in_.size() < at + n) return false;
      r->body = in_.substr(at, n);
      *used = at + n;
      return true;
    }
    if (lower.find("transfer-encoding: chunked") != std::string::npos) {
      std::string body;
      for (;;) {
        const size_t eol = in_.find("\r\n", at);
        if (eol == std::string::npos) return false;
        const size_t n = std::strtoull(in_.c_str() + at, nullptr, 16);
        if (in_.size() < eol + 2 + n + 2) return false;
        body += in_.substr(eol + 2, n);
        at = eol + 2 + n + 2;
        if (n == 0) break;
      }
      r->body = body;
      *used = at;
      return true;
    }
    if (!closed_) return false;  // close-delimited
    r->body = in_.substr(at);
    *used = in_.size();
    return true;
  }

  int fd_ = -1;
  bool closed_ = false;
  std::string in_;
  std::thread sender_;
};

// "POST path" with a JSON body, as a client writes it.
inline std::string PostRequest(const std::string& path, const std::string& body,
                               const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace forge::testing
