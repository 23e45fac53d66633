// HttpParser and ParseJsonBody without a server: requests fed whole and byte by byte give the
// same request, pipelined requests come apart, each malformed or oversized request gets its
// status, the body budget is taken and given back; the JSON bounds agree with nlohmann's own
// count of depth on random documents.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "server/http_parser.h"
#include "server/json_body.h"
#include "server/routes.h"

namespace forge::server {
namespace {

using State = HttpParser::State;

// Feeds `bytes` in pieces of `piece` bytes; returns the requests completed and the error status
// (0 when none).
struct FeedResult {
  std::vector<HttpRequest> requests;
  int error = 0;
  bool header_done_seen = false;
};

FeedResult Feed(HttpParser& parser, const std::string& bytes, size_t piece) {
  FeedResult out;
  std::string pending;
  for (size_t at = 0; at < bytes.size();) {
    pending += bytes.substr(at, piece);
    at += piece;
    for (;;) {
      size_t used = 0;
      const State s = parser.Put(pending, &used);
      pending.erase(0, used);
      if (s == State::kError) {
        out.error = parser.error_status();
        return out;
      }
      if (s == State::kDone) out.requests.push_back(parser.Take());
      if (s == State::kHeaderDone) out.header_done_seen = true;
      if ((s == State::kNeedMore && used == 0) || pending.empty()) break;
    }
  }
  return out;
}

TEST(HttpParserTest, WholeAndBytewiseAgree) {
  const std::string bytes =
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\n"
      "Content-Length: 11\r\n\r\n{\"prompt\":1}"  // 12 bytes: one goes to the next request
      "GET /health HTTP/1.1\r\n\r\n";
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, bytes.size()}) {
    HttpParser parser;
    FeedResult r = Feed(parser, bytes, piece);
    // The 12th body byte starts the next request line: "}GET" is a bad method.
    ASSERT_EQ(r.requests.size(), 1u) << piece;
    EXPECT_EQ(r.error, 400) << piece;
    EXPECT_EQ(r.requests[0].method, "POST");
    EXPECT_EQ(r.requests[0].path, "/v1/completions");
    EXPECT_EQ(r.requests[0].body, "{\"prompt\":1");
    EXPECT_EQ(r.requests[0].Header("AUTHORIZATION"), "Bearer k");
  }
}

TEST(HttpParserTest, PipelinedAndChunked) {
  const std::string bytes =
      "POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n"
      "GET /health HTTP/1.0\r\n\r\n"
      "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n";
  for (size_t piece : {size_t{1}, size_t{5}, bytes.size()}) {
    HttpParser parser;
    FeedResult r = Feed(parser, bytes, piece);
    ASSERT_EQ(r.requests.size(), 3u) << piece;
    EXPECT_EQ(r.error, 0);
    EXPECT_EQ(r.requests[0].body, "{\"a\":1}");
    EXPECT_TRUE(r.requests[0].keep_alive);
    EXPECT_EQ(r.requests[1].version, 10);
    EXPECT_FALSE(r.requests[1].keep_alive);
    EXPECT_FALSE(r.requests[2].keep_alive);
  }
}

// A chunked body whose only chunk is the last one, fed in every split (the fuzzer found Beast's
// debug-only assert on this input; the parse itself must be right under ASan).
TEST(HttpParserTest, OnlyTheLastChunk) {
  const std::string bytes =
      "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
      "GET /health HTTP/1.1\r\n\r\n";
  for (size_t piece = 1; piece <= bytes.size(); ++piece) {
    HttpParser parser;
    FeedResult r = Feed(parser, bytes, piece);
    ASSERT_EQ(r.requests.size(), 2u) << piece;
    EXPECT_EQ(r.error, 0);
    EXPECT_EQ(r.requests[0].body, "");
    EXPECT_EQ(r.requests[1].path, "/health");
  }
}

TEST(HttpParserTest, MalformedAndOversized) {
  struct Case {
    std::string bytes;
    int status;
  };
  HttpLimits limits;
  limits.max_line = 64;
  limits.max_header = 256;
  limits.max_fields = 4;
  limits.max_body = 100;
  const std::vector<Case> cases = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"GET /" + std::string(100, 'a') + " HTTP/1.1\r\n\r\n", 414},
      {"GET / HTTP/1.1\r\nX: " + std::string(300, 'a') + "\r\n\r\n", 431},
      {"GET / HTTP/1.1\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\n\r\n", 431},
      {"POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'a') +
           "\r\n40\r\n" + std::string(64, 'a') + "\r\n0\r\n\r\n",
       413},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
      {"GET / HTTP/1.1\r\nExpect: nothing\r\n\r\n", 417},
  };
  for (const Case& c : cases) {
    for (size_t piece : {size_t{1}, c.bytes.size()}) {
      HttpParser parser(limits);
      FeedResult r = Feed(parser, c.bytes, piece);
      EXPECT_EQ(r.error, c.status) << c.bytes.substr(0, 60) << " piece " << piece;
      EXPECT_TRUE(r.requests.empty());
    }
  }
}

TEST(HttpParserTest, BudgetIsTakenAndGivenBack) {
  BodyBudget budget(100);
  const std::string req = "POST / HTTP/1.1\r\nContent-Length: 60\r\n\r\n" + std::string(60, 'x');
  HttpParser a({}, &budget), b({}, &budget);
  FeedResult ra = Feed(a, req, req.size());
  ASSERT_EQ(ra.requests.size(), 1u);
  EXPECT_EQ(budget.used(), 60);
  FeedResult rb = Feed(b, req, req.size());  // 60 + 60 > 100
  EXPECT_EQ(rb.error, 503);
  ra.requests.clear();  // the request (and its body) is gone
  EXPECT_EQ(budget.used(), 0);
  HttpParser c({}, &budget);
  EXPECT_EQ(Feed(c, req, 7).requests.size(), 1u);
}

TEST(HttpParserTest, ExpectContinueIsReported) {
  HttpParser parser;
  FeedResult r =
      Feed(parser, "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", 1000);
  EXPECT_TRUE(r.header_done_seen);
  EXPECT_TRUE(parser.expects_continue());
}

TEST(RoutesTest, MethodsAndPaths) {
  EXPECT_FALSE(MatchRoute("GET", "/health").error);
  EXPECT_EQ(MatchRoute("DELETE", "/metrics").error->http_status, 405);
  EXPECT_STREQ(MatchRoute("DELETE", "/metrics").allow, "GET");
  EXPECT_EQ(MatchRoute("GET", "/v1/chat/completions").error->http_status, 405);
  EXPECT_EQ(MatchRoute("POST", "/v1/chat/completions").id, RouteId::kChatCompletions);
  EXPECT_EQ(MatchRoute("GET", "/\xff").error->http_status, 404);
  // The path is the client's: the error still dumps as JSON.
  EXPECT_TRUE(nlohmann::json::accept(MatchRoute("GET", "/\xff\xfe").error->Json()));
}

// The nesting depth of a JSON document, by nlohmann's parser callback (the reference).
int DepthByNlohmann(const std::string& text) {
  int max_depth = 0;
  nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (event == nlohmann::json::parse_event_t::object_start ||
        event == nlohmann::json::parse_event_t::array_start) {
      max_depth = std::max(max_depth, depth + 1);
    }
    return true;
  });
  return max_depth;
}

// A random document with strings that hold brackets, quotes and escapes.
nlohmann::json RandomJson(std::mt19937& rng, int depth) {
  const int kind = depth > 12 ? static_cast<int>(rng() % 3) : static_cast<int>(rng() % 6);
  switch (kind) {
    case 0:
      return static_cast<int>(rng() % 1000);
    case 1: {
      const char* strings[] = {"[", "]{", "\"[[", "\\", "a\\\"[", "}}", "plain"};
      return strings[rng() % 7];
    }
    case 2:
      return nullptr;
    case 3:
    case 4: {
      nlohmann::json a = nlohmann::json::array();
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) {
        a.push_back(RandomJson(rng, depth + 1));
      }
      return a;
    }
    default: {
      nlohmann::json o = nlohmann::json::object();
      for (int i = 0, n = static_cast<int>(rng() % 4); i < n; ++i) {
        o["k[" + std::to_string(i)] = RandomJson(rng, depth + 1);
      }
      return o;
    }
  }
}

TEST(JsonBodyTest, DepthLimitAgreesWithNlohmann) {
  std::mt19937 rng(7);
  int rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string text = RandomJson(rng, 0).dump();
    const int depth = DepthByNlohmann(text);
    JsonLimits limits;
    limits.max_depth = 4;
    nlohmann::json out;
    auto e = ParseJsonBody(text, limits, &out);
    EXPECT_EQ(e.has_value(), depth > 4) << text;
    if (e) {
      EXPECT_EQ(e->http_status, 400);
      ++rejected;
    } else {
      EXPECT_EQ(out, nlohmann::json::parse(text));
    }
  }
  EXPECT_GT(rejected, 100);  // both sides of the limit were seen
}

TEST(JsonBodyTest, ValueLimitAndHostileBodies) {
  JsonLimits limits;
  limits.max_values = 10;
  nlohmann::json out;
  EXPECT_FALSE(ParseJsonBody("[1,2,3,4,5,6,7,8,9,10]", limits, &out));
  EXPECT_EQ(ParseJsonBody("[1,2,3,4,5,6,7,8,9,10,11]", limits, &out)->http_status, 413);
  EXPECT_FALSE(ParseJsonBody("[\",,,,,,,,,,,,,,,,,,,,\"]", limits, &out));  // commas in a string
  EXPECT_EQ(ParseJsonBody(std::string(1 << 20, '['), JsonLimits{}, &out)->http_status, 400);
  EXPECT_EQ(ParseJsonBody("{\"a\":", JsonLimits{}, &out)->http_status, 400);
  EXPECT_EQ(ParseJsonBody("\"\xff\"", JsonLimits{}, &out)->http_status, 400);
}

}  // namespace
}  // namespace forge::server
