// Hostile and malformed input against a real `forge serve` (CPU, stories260K): a table of
// requests, each answered with its status (or the connection handled as the case says), after
// each of which the server still answers a good request correctly; then the connection rules
// (keep-alive, pipelining, half-close, 100-continue, timeouts, the connection cap), tokenizing
// off the I/O threads, --api-key-file and special-token text in chat content.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/raw_http.h"
#include "server/server_process.h"

namespace forge::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kPrompt = "Once upon a time";
constexpr int kTokens = 8;

const std::string& ExpectedText() {
  static const std::string text = ForgeRunGreedy(kPrompt, kTokens);
  return text;
}

std::string GoodBody() {
  return json{{"prompt", kPrompt}, {"max_tokens", kTokens}, {"temperature", 0}}.dump();
}

// The server is up and answers a good request with the greedy text.
void ExpectServes(ServerProcess& server, const std::string& after) {
  ASSERT_TRUE(server.alive()) << "the server died after " << after << ": " << server.log();
  HttpResult r = Http("POST", server.url("/v1/completions"), GoodBody());
  ASSERT_EQ(r.status, 200) << "after " << after << ": " << r.body;
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], ExpectedText()) << "after " << after;
}

// The body is OpenAI's error shape (which needs valid UTF-8 to parse) and names `param` if given.
void ExpectErrorBody(const RawResponse& r, const std::string& param, const std::string& name) {
  json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << name << ": " << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string()) << name;
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << name << ": " << r.body;
  }
}

std::string Repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

struct Case {
  const char* name;
  std::function<std::string()> bytes;
  int status;              // the answer expected
  std::string param = "";  // the field an error names, when it names one
};

std::vector<Case> Cases() {
  const auto post = [](const char* path, std::string body) {
    return [path, body = std::move(body)] { return PostRequest(path, body); };
  };
  const auto raw = [](std::string bytes) { return [bytes = std::move(bytes)] { return bytes; }; };
  return {
      // 1. Client bytes in an error message (the 404 names the path).
      {"non-UTF-8 path", raw("GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n"), 404},
      {"non-UTF-8 model name", post("/v1/completions", "{\"prompt\":\"a\",\"model\":\"\xc3\"}"),
       400},
      {"escaped lone surrogate model",
       post("/v1/completions", R"({"prompt":"a","model":"\udc80x"})"), 400},
      {"unknown model named in the error",
       post("/v1/completions", R"({"prompt":"a","model":"\u00ff\u4e2d"})"), 404, "model"},
      // 2. Nesting.
      {"prompt nested 24000 deep",
       post("/v1/completions",
            "{\"prompt\":" + Repeat("[", 24000) + "1" + Repeat("]", 24000) + "}"),
       400},
      {"messages nested deep",
       post("/v1/chat/completions",
            "{\"messages\":" + Repeat("[{\"a\":", 5000) + "1" + Repeat("}]", 5000) + "}"),
       400},
      {"tokenize body nested deep", post("/tokenize", Repeat("[", 100000)), 400},
      // 3. Size.
      {"16 MB of [", post("/v1/completions", Repeat("[", (16 << 20) - 64)), 400},
      {"Content-Length past the body limit",
       raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 17000000\r\n\r\n"), 413},
      {"two million values",
       post("/v1/completions", "{\"prompt\":[" + Repeat("1,", 2000000) + "1]}"), 413},
      // 6. Token ids past int32.
      {"stop_token_ids past int32",
       post("/v1/completions", R"({"prompt":"a","stop_token_ids":[4294967728]})"), 400,
       "stop_token_ids"},
      {"prompt id past int32", post("/v1/completions", R"({"prompt":[4294967297]})"), 400,
       "prompt"},
      {"prompt id past uint64", post("/v1/completions", R"({"prompt":[18446744073709551615]})"),
       400, "prompt"},
      {"negative stop token id", post("/v1/completions", R"({"prompt":"a","stop_token_ids":[-1]})"),
       400, "stop_token_ids"},
      {"detokenize id past int32", post("/detokenize", R"({"tokens":[4294967297]})"), 400,
       "tokens"},
      {"detokenize id past the vocab", post("/detokenize", R"({"tokens":[1000000]})"), 400,
       "tokens"},
      {"logit_bias key past int32",
       post("/v1/completions", R"({"prompt":"a","logit_bias":{"4294967297":1}})"), 400,
       "logit_bias"},
      // Types nlohmann would throw on if read blindly.
      {"text part type not a string",
       post("/v1/chat/completions",
            R"({"messages":[{"role":"user","content":[{"type":1,"text":"a"}]}]})"),
       400},
      {"role not a string", post("/v1/chat/completions", R"({"messages":[{"role":7}]})"), 400},
      {"body a bare string", post("/v1/completions", R"("prompt")"), 400},
      {"tokenize content a number", post("/tokenize", R"({"content":5})"), 400, "content"},
      // 9. Malformed HTTP.
      {"bad request line", raw("GARBAGE\r\n\r\n"), 400},
      {"bad Content-Length", raw("POST /tokenize HTTP/1.1\r\nContent-Length: abc\r\n\r\n"), 400},
      {"two different Content-Lengths",
       raw("POST /tokenize HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}"), 400},
      {"bad chunk size",
       raw("POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"),
       400},
      {"100 KB header", raw("GET /health HTTP/1.1\r\nX-Big: " + Repeat("a", 100000) + "\r\n\r\n"),
       431},
      {"10000 headers", raw("GET /health HTTP/1.1\r\n" + Repeat("X-A: b\r\n", 10000) + "\r\n"),
       431},
      {"200 headers", raw("GET /health HTTP/1.1\r\n" + Repeat("X-A: b\r\n", 200) + "\r\n"), 431},
      {"1 MB URL", raw("GET /" + Repeat("a", 1 << 20) + " HTTP/1.1\r\n\r\n"), 414},
      {"HTTP/2 preface", raw("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 505},
      {"HTTP/3.1", raw("GET /health HTTP/3.1\r\n\r\n"), 505},
      {"unknown Expect", raw("GET /health HTTP/1.1\r\nExpect: teapot\r\n\r\n"), 417},
      // 10. Routes and methods.
      {"DELETE /metrics", raw("DELETE /metrics HTTP/1.1\r\n\r\n"), 405},
      {"POST /health", post("/health", "{}"), 405},
      {"GET /v1/completions", raw("GET /v1/completions HTTP/1.1\r\n\r\n"), 405},
      {"unknown route", raw("GET /v2/nothing HTTP/1.1\r\n\r\n"), 404},
  };
}

class ServerHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(ExpectedText().empty());
    ASSERT_TRUE(server_.ok());
  }
  ServerProcess server_{"--parallel 4"};
};

TEST_F(ServerHardeningTest, EveryCaseIsAnsweredAndTheServerStillServes) {
  for (const Case& c : Cases()) {
    RawConnection conn(server_.port());
    ASSERT_TRUE(conn.ok()) << c.name;
    conn.Send(c.bytes());
    std::vector<RawResponse> got = conn.Read(1, 30000);
    ASSERT_EQ(got.size(), 1u) << c.name << ": no response; " << server_.log();
    EXPECT_EQ(got[0].status, c.status) << c.name << ": " << got[0].body.substr(0, 300);
    ExpectErrorBody(got[0], c.param, c.name);
    ExpectServes(server_, c.name);
  }
}

// 4. A client that half-closes after a whole request still gets the whole answer.
TEST_F(ServerHardeningTest, HalfCloseAfterRequestIsAnswered) {
  for (bool stream : {false, true}) {
    json body = json::parse(GoodBody());
    body["stream"] = stream;
    RawConnection conn(server_.port());
    conn.Send(PostRequest("/v1/completions", body.dump()), /*half_close=*/true);
    std::vector<RawResponse> got = conn.Read(1);
    ASSERT_EQ(got.size(), 1u) << "stream " << stream << ": " << server_.log();
    ASSERT_EQ(got[0].status, 200);
    if (!stream) {
      EXPECT_EQ(json::parse(got[0].body)["choices"][0]["text"], ExpectedText());
    } else {
      EXPECT_NE(got[0].body.find("data: [DONE]"), std::string::npos) << got[0].body;
    }
    EXPECT_TRUE(conn.ClosedWithin(5000));
  }
  HttpResult m = Http("GET", server_.url("/metrics"));
  EXPECT_EQ(MetricValue(m.body, "forge_requests_total{outcome=\"cancelled\"}"), 0) << m.body;
}

// 10. Keep-alive for every reply (whole, streamed, error), pipelining, 100-continue.
TEST_F(ServerHardeningTest, OneConnectionCarriesManyRequests) {
  RawConnection conn(server_.port());
  json stream = json::parse(GoodBody());
  stream["stream"] = true;
  conn.Send(PostRequest("/v1/completions", GoodBody()) +
            PostRequest("/v1/completions", stream.dump()) + PostRequest("/tokenize", "{bad") +
            "GET /health HTTP/1.1\r\n\r\n" + PostRequest("/v1/completions", GoodBody()));
  std::vector<RawResponse> got = conn.Read(5);
  ASSERT_EQ(got.size(), 5u) << server_.log();
  EXPECT_EQ(got[0].status, 200);
  EXPECT_EQ(json::parse(got[0].body)["choices"][0]["text"], ExpectedText());
  EXPECT_NE(got[0].head.find("Connection: keep-alive"), std::string::npos) << got[0].head;
  EXPECT_EQ(got[1].status, 200);
  EXPECT_NE(got[1].head.find("Transfer-Encoding: chunked"), std::string::npos) << got[1].head;
  EXPECT_NE(got[1].body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(got[2].status, 400);
  EXPECT_EQ(got[3].status, 200);
  EXPECT_EQ(got[4].status, 200);
  EXPECT_EQ(json::parse(got[4].body)["choices"][0]["text"], ExpectedText());
  EXPECT_FALSE(conn.ClosedWithin(200));
}

TEST_F(ServerHardeningTest, ExpectContinueIsAnswered) {
  RawConnection conn(server_.port());
  const std::string body = GoodBody();
  conn.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n");
  conn.WaitSent();
  EXPECT_FALSE(conn.ClosedWithin(2000));  // reads what came meanwhile
  EXPECT_EQ(conn.pending().rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << conn.pending();
  conn.Send(body);
  std::vector<RawResponse> got = conn.Read(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, 200);
}

TEST_F(ServerHardeningTest, HttpOneZeroClosesUnlessAskedToKeepAlive) {
  RawConnection conn(server_.port());
  conn.Send("GET /health HTTP/1.0\r\n\r\n");
  std::vector<RawResponse> got = conn.Read(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, 200);
  EXPECT_TRUE(conn.ClosedWithin(5000));
}

// 8. Tokenizing runs on worker threads: /health answers while large /tokenize requests run, one
// per I/O thread (with tokenizing on the I/O threads, /health waited for one of them to end).
TEST_F(ServerHardeningTest, LargeTokenizeDoesNotHoldUpHealth) {
  const std::string text = Repeat("Once upon a time there was a little dog. ", 350000);  // 14 MB
  const std::string req = PostRequest("/tokenize", json{{"content", text}}.dump());
  RawConnection a(server_.port()), b(server_.port());
  a.Send(req);
  b.Send(req);
  a.WaitSent();
  b.WaitSent();
  // The bodies are read and parsed within this (they take seconds to tokenize).
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const auto t0 = Clock::now();
  double done_a = 0, done_b = 0;
  size_t got_a = 0, got_b = 0;
  std::thread ta([&] {
    got_a = a.Read(1, 120000).size();
    done_a = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  std::thread tb([&] {
    got_b = b.Read(1, 120000).size();
    done_b = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  HttpResult h = Http("GET", server_.url("/health"));
  const double health_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ta.join();
  tb.join();
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(got_a, 1u);
  EXPECT_EQ(got_b, 1u);
  const double first = std::min(done_a, done_b);
  // Not held up: well inside the tokenizing (held up, it comes as one of them ends).
  EXPECT_LT(health_s, 0.5 * first)
      << "health " << health_s << " s, first tokenize " << first << " s";
  std::printf("/health %.3f s while two 14 MB /tokenize requests took %.3f and %.3f s\n", health_s,
              done_a, done_b);
}

// 5. Special-token text in chat content is text, not a control token: the prompt's length is
// that of the rendered prompt tokenized without special parsing (the served model's template
// has no special tokens of its own), plus BOS.
TEST_F(ServerHardeningTest, SpecialTokenTextInContentIsPlainText) {
  const std::string rendered = "<|im_start|>user\n</s><s><unk><|im_end|>\n<|im_start|>assistant\n";
  json chat = {{"messages", {{{"role", "user"}, {"content", "</s><s><unk>"}}}},
               {"max_tokens", 1},
               {"temperature", 0}};
  HttpResult r = Http("POST", server_.url("/v1/chat/completions"), chat.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const int prompt_tokens = json::parse(r.body)["usage"]["prompt_tokens"];
  HttpResult plain =
      Http("POST", server_.url("/tokenize"),
           json{{"content", rendered}, {"add_special", true}, {"parse_special", false}}.dump());
  ASSERT_EQ(plain.status, 200) << plain.body;
  HttpResult special = Http("POST", server_.url("/tokenize"),
                            json{{"content", rendered}, {"add_special", true}}.dump());
  ASSERT_EQ(special.status, 200) << special.body;
  const size_t n_plain = json::parse(plain.body)["tokens"].size();
  EXPECT_EQ(static_cast<size_t>(prompt_tokens), n_plain);
  EXPECT_NE(json::parse(special.body)["tokens"].size(), n_plain);  // the case can fail
}

TEST(ServerConnectionsTest, IdleAndSlowConnectionsAreTimedOut) {
  ServerProcess server("--keep-alive-timeout 1 --request-timeout 2");
  ASSERT_TRUE(server.ok());
  {  // 7. Idle after a response.
    RawConnection conn(server.port());
    conn.Send("GET /health HTTP/1.1\r\n\r\n");
    ASSERT_EQ(conn.Read(1).size(), 1u);
    EXPECT_TRUE(conn.ClosedWithin(4000));
  }
  {  // Idle from the start.
    RawConnection conn(server.port());
    EXPECT_TRUE(conn.ClosedWithin(4000));
  }
  {  // A request that never completes: 408.
    RawConnection conn(server.port());
    conn.Send("GET /health HTTP/1.1\r\nX-Slow: ");
    std::vector<RawResponse> got = conn.Read(1, 6000);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status, 408);
    EXPECT_TRUE(conn.ClosedWithin(4000));
  }
  EXPECT_EQ(Http("GET", server.url("/health")).status, 200);
}

TEST(ServerConnectionsTest, ConnectionsPastTheCapAreRefused) {
  ServerProcess server("--max-connections 4");
  ASSERT_TRUE(server.ok());
  std::vector<std::unique_ptr<RawConnection>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(std::make_unique<RawConnection>(server.port()));
    // Each is served (so the server counts it) before the next opens.
    open.back()->Send("GET /health HTTP/1.1\r\n\r\n");
    ASSERT_EQ(open.back()->Read(1).size(), 1u);
  }
  RawConnection extra(server.port());
  std::vector<RawResponse> got = extra.Read(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, 503);
  open.clear();
  for (int i = 0; i < 100; ++i) {  // the server sees the closes
    if (Http("GET", server.url("/health")).status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Http("GET", server.url("/health")).status, 200);
}

TEST(ServerApiKeyFileTest, KeyFromFile) {
  const std::string file = ::testing::TempDir() + "/forge-api-key";
  std::ofstream(file) << "s3cret-key\n";
  ServerProcess server("--api-key-file " + file);
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(Http("GET", server.url("/v1/models")).status, 401);
  EXPECT_EQ(Http("GET", server.url("/v1/models"), "", "-H 'Authorization: Bearer wrong'").status,
            401);
  EXPECT_EQ(
      Http("GET", server.url("/v1/models"), "", "-H 'Authorization: Bearer s3cret-key'").status,
      200);
}

}  // namespace
}  // namespace forge::testing
