// HttpParser: incremental parsing of HTTP/1.x requests from a connection's bytes, within the
// server's limits, and the status a malformed or oversized request is answered with. It does no
// I/O (the session feeds it what it reads), so the fuzzer drives it directly.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace forge::server {

struct HttpLimits {
  size_t max_line = 8 << 10;     // the request line (method, target, version): 414 past it
  size_t max_header = 64 << 10;  // request line and fields together: 431 past it
  size_t max_fields = 100;       // header fields: 431 past it
  size_t max_body = 16 << 20;    // the body, before chunked decoding: 413 past it
};

// The bytes of request bodies held by all connections at once, capped: a body is reserved
// before it is read (its Content-Length, or each chunk's size) and given back when the request
// is gone. Thread-safe.
class BodyBudget {
 public:
  explicit BodyBudget(int64_t cap) : cap_(cap) {}
  // Takes n bytes; false (taking nothing) if that would pass the cap.
  bool Take(int64_t n);
  void Give(int64_t n) { used_.fetch_sub(n); }
  int64_t used() const { return used_.load(); }
  int64_t cap() const { return cap_; }

 private:
  const int64_t cap_;
  std::atomic<int64_t> used_{0};
};

// Bytes taken from a BodyBudget, given back on destruction.
class BudgetHold {
 public:
  BudgetHold() = default;
  explicit BudgetHold(BodyBudget* budget) : budget_(budget) {}
  ~BudgetHold() {
    if (budget_ && bytes_) budget_->Give(bytes_);
  }
  BudgetHold(const BudgetHold&) = delete;
  BudgetHold& operator=(const BudgetHold&) = delete;
  bool Take(int64_t n);  // true when there is no budget
  int64_t bytes() const { return bytes_; }

 private:
  BodyBudget* budget_ = nullptr;
  int64_t bytes_ = 0;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query
  std::string body;
  int version = 11;  // 10: HTTP/1.0, 11: HTTP/1.1
  bool keep_alive = true;
  Headers headers;  // as received (names in their case)
  // The share of the BodyBudget this request's body holds (given back with the request).
  std::shared_ptr<BudgetHold> hold;

  // The value of the first field named `name` (case-insensitive); "" when absent.
  std::string_view Header(std::string_view name) const;
};

class HttpParser {
 public:
  enum class State {
    kNeedMore,    // every byte given was used; the request is not complete
    kHeaderDone,  // the header is complete (once per request); the body may follow
    kDone,        // the request is complete: Take() it
    kError,       // the request is malformed or over a limit: answer error_status()
  };
  // budget may be null (no shared cap).
  explicit HttpParser(HttpLimits limits = {}, BodyBudget* budget = nullptr);
  ~HttpParser();
  HttpParser(const HttpParser&) = delete;
  HttpParser& operator=(const HttpParser&) = delete;

  // Parses from `data`, the connection's bytes not used yet, and sets *used to how many it used
  // (bytes after a complete request are left for the next one). Call again with the rest after
  // kHeaderDone; after kDone, Take() before parsing on; after kError, stop.
  State Put(std::string_view data, size_t* used);

  // The request so far: method, path, version, headers once kHeaderDone was returned.
  const HttpRequest& request() const { return req_; }
  bool expects_continue() const { return expect_continue_; }
  // Takes the complete request and resets for the next one.
  HttpRequest Take();
  // After kError: the HTTP status to answer (400, 413, 414, 431, 503, 505) and why.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

 private:
  class Impl;
  void Reset();
  State Fail(int status, std::string message);

  HttpLimits limits_;
  BodyBudget* budget_;
  std::unique_ptr<Impl> impl_;
  HttpRequest req_;
  bool header_reported_ = false;
  bool expect_continue_ = false;
  int error_status_ = 0;
  std::string error_message_;
  friend class Impl;
};

}  // namespace forge::server
