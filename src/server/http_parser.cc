// HttpParser: Beast's basic_parser with Forge's limits and statuses.
#include "server/http_parser.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cctype>

namespace forge::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// The status for a Beast parse error.
int StatusFor(const beast::error_code& ec) {
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::body_limit) return 413;
  return 400;
}

// A request line that ends in a well-formed version other than 1.x ("PRI * HTTP/2.0").
bool IsOtherVersion(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() < 9) return false;
  const std::string_view v = line.substr(line.size() - 9);
  return v.substr(0, 6) == " HTTP/" && std::isdigit(static_cast<unsigned char>(v[6])) &&
         v[7] == '.' && std::isdigit(static_cast<unsigned char>(v[8])) && v[6] != '1';
}

}  // namespace

bool BodyBudget::Take(int64_t n) {
  int64_t cur = used_.load();
  do {
    if (cur + n > cap_) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n));
  return true;
}

bool BudgetHold::Take(int64_t n) {
  if (!budget_) return true;
  if (!budget_->Take(n)) return false;
  bytes_ += n;
  return true;
}

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (beast::iequals(k, beast::string_view(name.data(), name.size()))) return v;
  }
  return {};
}

class HttpParser::Impl : public http::basic_parser<true> {
 public:
  explicit Impl(HttpParser* owner) : owner_(owner) {
    header_limit(static_cast<uint32_t>(owner->limits_.max_header));
    body_limit(owner->limits_.max_body);
    eager(true);
  }

  int custom_status = 0;  // set with an error from a callback
  std::string custom_message;
  bool got_line = false;  // the request line was parsed

 private:
  void Custom(beast::error_code& ec, int status, std::string message) {
    custom_status = status;
    custom_message = std::move(message);
    ec = http::error::bad_value;  // any error stops the parse
  }

  void on_request_impl(http::verb, beast::string_view method, beast::string_view target,
                       int version, beast::error_code& ec) override {
    got_line = true;
    if (version != 10 && version != 11) {
      return Custom(ec, 505,
                    "HTTP version " + std::to_string(version / 10) + "." +
                        std::to_string(version % 10) + " is not supported (1.0, 1.1)");
    }
    HttpRequest& r = owner_->req_;
    r.method = std::string(method);
    const std::string_view t(target.data(), target.size());
    r.path = std::string(t.substr(0, t.find('?')));
    r.version = version;
  }

  void on_response_impl(int, beast::string_view, int, beast::error_code&) override {}

  void on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                     beast::error_code& ec) override {
    HttpRequest& r = owner_->req_;
    if (r.headers.size() >= owner_->limits_.max_fields) {
      return Custom(ec, 431,
                    "more than " + std::to_string(owner_->limits_.max_fields) + " header fields");
    }
    if (name == http::field::expect) {
      if (!beast::iequals(value, "100-continue")) {
        return Custom(ec, 417, "only 'Expect: 100-continue' is understood");
      }
      owner_->expect_continue_ = true;
    }
    r.headers.emplace_back(std::string(name_string), std::string(value));
  }

  void on_header_impl(beast::error_code&) override {}

  void on_body_init_impl(const boost::optional<std::uint64_t>& length,
                         beast::error_code& ec) override {
    if (!length) return;
    if (!owner_->req_.hold->Take(static_cast<int64_t>(*length))) {
      return Custom(ec, 503, "the server holds too many request bytes; retry later");
    }
    owner_->req_.body.reserve(*length);
  }

  size_t on_body_impl(beast::string_view body, beast::error_code&) override {
    owner_->req_.body.append(body.data(), body.size());
    return body.size();
  }

  void on_chunk_header_impl(std::uint64_t size, beast::string_view,
                            beast::error_code& ec) override {
    HttpRequest& r = owner_->req_;
    if (size > owner_->limits_.max_body - std::min(owner_->limits_.max_body, r.body.size())) {
      return Custom(ec, 413,
                    "the body is over " + std::to_string(owner_->limits_.max_body) + " bytes");
    }
    if (!r.hold->Take(static_cast<int64_t>(size))) {
      return Custom(ec, 503, "the server holds too many request bytes; retry later");
    }
  }

  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, beast::error_code&) override {
    owner_->req_.body.append(body.data(), body.size());
    return body.size();
  }

  void on_finish_impl(beast::error_code&) override {}

  HttpParser* owner_;
};

HttpParser::HttpParser(HttpLimits limits, BodyBudget* budget) : limits_(limits), budget_(budget) {
  Reset();
}

HttpParser::~HttpParser() = default;

void HttpParser::Reset() {
  req_ = HttpRequest{};
  req_.hold = std::make_shared<BudgetHold>(budget_);
  header_reported_ = false;
  expect_continue_ = false;
  impl_ = std::make_unique<Impl>(this);
}

HttpParser::State HttpParser::Fail(int status, std::string message) {
  error_status_ = status;
  error_message_ = std::move(message);
  return State::kError;
}

HttpParser::State HttpParser::Put(std::string_view data, size_t* used) {
  *used = 0;
  if (error_status_) return State::kError;
  if (impl_->is_done()) return State::kDone;
  const size_t eol = data.find('\n');
  const std::string_view line = data.substr(0, eol);
  if (!impl_->got_line) {
    // The request line is parsed once whole, so its length is checked on the raw bytes (a long
    // URL is 414, not the header limit's 431).
    if (line.size() > limits_.max_line) {
      return Fail(414, "the request line is over " + std::to_string(limits_.max_line) + " bytes");
    }
  }
  if (data.empty()) return State::kNeedMore;
  beast::error_code ec;
  *used = impl_->put(boost::asio::buffer(data.data(), data.size()), ec);
  if (impl_->custom_status) return Fail(impl_->custom_status, impl_->custom_message);
  if (ec == http::error::bad_version && IsOtherVersion(line)) {
    return Fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  }
  if (ec && ec != http::error::need_more) return Fail(StatusFor(ec), ec.message());
  if (impl_->is_done()) {
    header_reported_ = true;
    req_.keep_alive = impl_->keep_alive();
    return State::kDone;
  }
  if (impl_->is_header_done() && !header_reported_) {
    header_reported_ = true;
    req_.keep_alive = impl_->keep_alive();
    return State::kHeaderDone;
  }
  return State::kNeedMore;
}

HttpRequest HttpParser::Take() {
  HttpRequest r = std::move(req_);
  Reset();
  return r;
}

}  // namespace forge::server
