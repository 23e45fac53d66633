// POST /v1/embeddings end to end through `forge serve`: the errors (malformed bodies, a model that
// does not embed, completions to one that does, inputs past the vocabulary or the length limit),
// and the vectors of a small embedding model: against the dense reference forward, float ==
// base64, unit norm, `dimensions` == the shortened full vector, batched == alone, token ids ==
// the text's tokens, truncation == the first tokens (and the closing one), usage and metrics,
// for a mean- and a last-pooling qwen3 and a `make-model --arch bert` encoder; and a client that
// leaves cancels the inputs still to run.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/embedding_model.h"
#include "server/raw_http.h"
#include "server/server_process.h"
#include "support/cli_runner.h"
#include "support/test_env.h"

namespace forge::testing {
namespace {

using nlohmann::json;

// Checks the OpenAI error shape and returns its "param".
std::string ErrorParam(const HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << r.body;
  if (!j.is_object() || !j.contains("error")) return "";
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_EQ(e["type"], "invalid_request_error") << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code"));
  return e["param"].is_string() ? e["param"].get<std::string>() : "";
}

std::string ErrorMessage(const HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"]["message"].get<std::string>() : "";
}

// Standard base64, decoded here on its own (not Forge's encoder run backwards).
std::vector<float> DecodeBase64Floats(const std::string& text) {
  std::vector<uint8_t> bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    if (c >= '0' && c <= '9') v = c - '0' + 52;
    if (c == '+') v = 62;
    if (c == '/') v = 63;
    if (v < 0) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  EXPECT_EQ(bytes.size() % 4, 0u) << text;
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= uint32_t{bytes[4 * i + b]} << (8 * b);  // little-endian
    out[i] = std::bit_cast<float>(u);
  }
  return out;
}

// The vectors of a 200 response, in `index` order, from either encoding.
std::vector<std::vector<float>> Vectors(const HttpResult& r) {
  EXPECT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body, nullptr, false);
  std::vector<std::vector<float>> out;
  if (!j.is_object() || !j["data"].is_array()) return out;
  EXPECT_EQ(j["object"], "list");
  out.resize(j["data"].size());
  for (const json& d : j["data"]) {
    EXPECT_EQ(d["object"], "embedding");
    const size_t i = d["index"].get<size_t>();
    EXPECT_LT(i, out.size());
    if (i >= out.size()) continue;
    if (d["embedding"].is_string()) {
      out[i] = DecodeBase64Floats(d["embedding"].get<std::string>());
    } else {
      for (const json& x : d["embedding"]) out[i].push_back(static_cast<float>(x.get<double>()));
    }
  }
  return out;
}

double Norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = a.size() == b.size() ? 0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, std::abs(double(a[i]) - b[i]));
  }
  return d;
}

TEST(ServerEmbeddingsTest, MalformedRequestsAndAModelThatDoesNotEmbed) {
  ServerProcess server("--api-key k1");  // stories260K generates: it does not embed
  ASSERT_TRUE(server.ok());
  const std::string url = server.url("/v1/embeddings");
  const std::string key = "-H 'Authorization: Bearer k1'";
  EXPECT_EQ(Http("POST", url, R"({"input": "a"})").status, 401);  // the key guards it

  struct Case {
    std::string body;
    const char* param;
  };
  std::string many = R"({"input": [)";
  for (int i = 0; i < 2049; ++i) many += i ? ",\"a\"" : "\"a\"";
  many += "]}";
  const Case cases[] = {
      {"{not json", ""},
      {R"({"model": "stories260K"})", "input"},
      {R"({"input": 3})", "input"},
      {R"({"input": ""})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": ["a", ""]})", "input[1]"},
      {R"({"input": [[1, 2], []]})", "input[1]"},
      {R"({"input": ["a", [1, 2.5]]})", "input[1]"},
      {R"({"input": [1, -2]})", "input"},
      {R"({"input": "a", "encoding_format": "binary"})", "encoding_format"},
      {R"({"input": "a", "dimensions": 0})", "dimensions"},
      {R"({"input": "a", "truncate": 1})", "truncate"},
      {many, "input"},
  };
  for (const Case& c : cases) {
    HttpResult r = Http("POST", url, c.body, key);
    EXPECT_EQ(r.status, 400) << c.body.substr(0, 80) << ": " << r.body;
    EXPECT_EQ(ErrorParam(r), c.param) << c.body.substr(0, 80) << ": " << r.body;
  }
  // A well-formed request for another model, then for this one, which does not embed.
  HttpResult r = Http("POST", url, R"({"input": "a", "model": "text-embedding-3-small"})", key);
  EXPECT_EQ(r.status, 404) << r.body;
  r = Http("POST", url, R"({"input": "a", "model": "stories260K"})", key);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(ErrorParam(r), "model");
  EXPECT_NE(ErrorMessage(r).find("does not embed: its GGUF has no pooling_type"), std::string::npos)
      << r.body;
  EXPECT_EQ(Http("GET", url, "", key).status, 405);
  // Completions still work on it.
  EXPECT_EQ(Http("POST", server.url("/v1/completions"), R"({"prompt": "a", "max_tokens": 2})", key)
                .status,
            200);
}

// A server of a small mean-pooling qwen3 with at most 64 tokens an input (--batch-tokens) and 4
// sequences a step (so most requests here take several steps).
class EmbeddingServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(MakeEmbeddingModel(OwnTempDir(), "embedder", kMeanPooling));
  }
  static void TearDownTestSuite() {
    delete path_;
    path_ = nullptr;
  }
  EmbeddingServerTest()
      : server_("--batch-tokens 64 --parallel 4", ServerProcess::Wait::kHealthy, "cpu", *path_) {}
  void SetUp() override { ASSERT_TRUE(server_.ok()); }

  HttpResult Embed(const json& body) {
    return Http("POST", server_.url("/v1/embeddings"), body.dump());
  }
  // The ids the server embeds a text as: /tokenize with the special tokens added and parsed.
  std::vector<int32_t> Tokens(const std::string& text) {
    HttpResult r = Http("POST", server_.url("/tokenize"),
                        json{{"content", text}, {"add_special", true}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["tokens"].get<std::vector<int32_t>>();
  }

  static std::string* path_;
  ServerProcess server_;
};
std::string* EmbeddingServerTest::path_ = nullptr;

TEST_F(EmbeddingServerTest, WrongRequestsAreRefused) {
  // Completions and chat: the model embeds.
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    const json body = std::string(path) == "/v1/completions"
                          ? json{{"prompt", "a"}}
                          : json{{"messages", {{{"role", "user"}, {"content", "a"}}}}};
    HttpResult r = Http("POST", server_.url(path), body.dump());
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    EXPECT_EQ(ErrorParam(r), "model") << path;
    EXPECT_NE(ErrorMessage(r).find("is an embedding model"), std::string::npos) << r.body;
    EXPECT_NE(ErrorMessage(r).find("/v1/embeddings"), std::string::npos) << r.body;
  }
  // Token ids outside the vocabulary of 300.
  HttpResult r = Embed({{"input", {{1, 2}, {3, 300}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(ErrorParam(r), "input[1]");
  EXPECT_NE(ErrorMessage(r).find("300"), std::string::npos) << r.body;
  // Too long: 65 tokens where 64 fit, named with its index and the limit.
  std::vector<int32_t> long_ids(65, 7);
  r = Embed({{"input", {json::array({1, 2}), json::array({3}), long_ids}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(ErrorParam(r), "input[2]");
  EXPECT_NE(ErrorMessage(r).find("at most 64"), std::string::npos) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "context_length_exceeded");
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "word ";
  r = Embed({{"input", long_text}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(ErrorParam(r), "input");
  // dimensions past the width of 64.
  r = Embed({{"input", "a"}, {"dimensions", 65}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(ErrorParam(r), "dimensions");
  EXPECT_NE(ErrorMessage(r).find("64"), std::string::npos) << r.body;
  r = Embed({{"input", "a"}, {"dimensions", 18446744073709551615ull}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(ErrorParam(r), "dimensions");
}

TEST_F(EmbeddingServerTest, VectorsMatchTheDenseForwardAndEachOther) {
  const std::vector<std::string> texts = {"Once upon a time", "The cat sat on the mat",
                                          "a b c d e f g h", "zebra", "Once upon a time there"};
  HttpResult r = Embed({{"input", texts}, {"model", "embedder"}});
  const std::vector<std::vector<float>> batched = Vectors(r);
  ASSERT_EQ(batched.size(), texts.size()) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body["model"], "embedder");
  int64_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<int32_t> ids = Tokens(texts[i]);
    tokens += static_cast<int64_t>(ids.size());
    ASSERT_EQ(batched[i].size(), 64u);
    EXPECT_NEAR(Norm(batched[i]), 1.0, 1e-5) << i;
    // The oracle: the dense forward's mean-pooled logits; and it tells mean from last pooling.
    EXPECT_LT(PooledResidual(*path_, ids, batched[i], kMeanPooling), 1e-4) << texts[i];
    if (ids.size() > 1) {
      EXPECT_GT(PooledResidual(*path_, ids, batched[i], kLastPooling), 1e-2) << texts[i];
    }
    // Alone == batched; the text's token ids == the text.
    const std::vector<std::vector<float>> alone = Vectors(Embed({{"input", texts[i]}}));
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_LT(MaxDiff(alone[0], batched[i]), 1e-5) << texts[i];
    const std::vector<std::vector<float>> by_ids = Vectors(Embed({{"input", ids}}));
    ASSERT_EQ(by_ids.size(), 1u);
    EXPECT_LT(MaxDiff(by_ids[0], alone[0]), 1e-6) << texts[i];
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(body["usage"]["total_tokens"], tokens);
  EXPECT_GT(MaxDiff(batched[0], batched[1]), 1e-3) << "different texts, different vectors";

  // base64 == float, bit for bit; dimensions == the full vector cut and re-normalized.
  const std::vector<std::vector<float>> b64 =
      Vectors(Embed({{"input", texts}, {"encoding_format", "base64"}}));
  ASSERT_EQ(b64.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(b64[i].size(), batched[i].size());
    for (size_t k = 0; k < b64[i].size(); ++k) {
      EXPECT_EQ(std::bit_cast<uint32_t>(b64[i][k]), std::bit_cast<uint32_t>(batched[i][k]))
          << i << " " << k;
    }
  }
  for (int dims : {1, 10, 64}) {
    for (const char* format : {"float", "base64"}) {
      const std::vector<std::vector<float>> cut =
          Vectors(Embed({{"input", texts}, {"dimensions", dims}, {"encoding_format", format}}));
      ASSERT_EQ(cut.size(), texts.size());
      for (size_t i = 0; i < texts.size(); ++i) {
        ASSERT_EQ(cut[i].size(), static_cast<size_t>(dims));
        std::vector<float> want(batched[i].begin(), batched[i].begin() + dims);
        const double norm = Norm(want);
        for (float& x : want) x = static_cast<float>(x / norm);
        EXPECT_LT(MaxDiff(cut[i], want), 1e-6) << dims << " " << format << " " << i;
        EXPECT_NEAR(Norm(cut[i]), 1.0, 1e-5);
      }
    }
  }
}

TEST_F(EmbeddingServerTest, TruncationManyInputsAndMetrics) {
  // truncate: the first 64 tokens, as the ids themselves give them.
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "Once upon a time ";
  const std::vector<int32_t> ids = Tokens(long_text);
  ASSERT_GT(ids.size(), 64u);
  HttpResult r = Embed({{"input", long_text}, {"truncate", true}});
  const std::vector<std::vector<float>> cut = Vectors(r);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"], 64);
  const std::vector<int32_t> first(ids.begin(), ids.begin() + 64);
  const std::vector<std::vector<float>> want = Vectors(Embed({{"input", first}}));
  ASSERT_EQ(want.size(), 1u);
  EXPECT_LT(MaxDiff(cut[0], want[0]), 1e-6);
  EXPECT_LT(PooledResidual(*path_, first, cut[0], kMeanPooling), 1e-4);

  // The most inputs a request takes, answered in order: input i is token i % 300 alone.
  json each = json::array();
  for (int t = 0; t < 300; ++t) each.push_back(json::array({t}));
  const std::vector<std::vector<float>> ref = Vectors(Embed({{"input", each}}));
  ASSERT_EQ(ref.size(), 300u);
  json most = json::array();
  for (int i = 0; i < 2048; ++i) most.push_back(json::array({i % 300}));
  const HttpResult big = Embed({{"input", most}, {"encoding_format", "base64"}});
  const std::vector<std::vector<float>> all = Vectors(big);
  ASSERT_EQ(all.size(), 2048u);
  for (int i = 0; i < 2048; ++i) {
    ASSERT_LT(MaxDiff(all[i], ref[i % 300]), 1e-5) << i;
  }
  EXPECT_EQ(json::parse(big.body)["usage"]["prompt_tokens"], 2048);

  // Prompt tokens and outcomes in /metrics: 64 + 64 + 300 + 2048, four requests that stopped.
  const std::string m = Http("GET", server_.url("/metrics")).body;
  EXPECT_EQ(MetricValue(m, "forge_prompt_tokens_total"), 64 + 64 + 300 + 2048) << m;
  EXPECT_EQ(MetricValue(m, "forge_requests_total{outcome=\"stop\"}"), 4) << m;
  EXPECT_EQ(MetricValue(m, "forge_generation_tokens_total"), 0) << m;
  EXPECT_EQ(server_.Terminate(), 0);
}

// Sends `request` on a fresh connection to the port, waits, then resets the connection (RST, as
// a client that dies or aborts does; a plain close reads as a half-close, which the server
// answers).
void SendAndReset(int port, const std::string& request, std::chrono::milliseconds wait) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (size_t at = 0; at < request.size();) {
    const ssize_t n = ::send(fd, request.data() + at, request.size() - at, MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    at += static_cast<size_t>(n);
  }
  std::this_thread::sleep_for(wait);
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(fd);
}

// A client that leaves mid-request cancels its inputs still to run: one input a step, 50 ms a
// step, 40 inputs, a client gone after 0.5 s; the request ends cancelled long before 40 steps.
TEST(ServerEmbeddingsCancelTest, AClientThatLeavesCancelsTheRest) {
  const std::string path = MakeEmbeddingModel(TempDir(), "cancel", kMeanPooling);
  ServerProcess server("--parallel 1 --debug-step-delay-ms 50", ServerProcess::Wait::kHealthy,
                       "cpu", path);
  ASSERT_TRUE(server.ok());
  json inputs = json::array();
  for (int i = 0; i < 40; ++i) inputs.push_back(json::array({i + 1}));
  SendAndReset(server.port(), PostRequest("/v1/embeddings", json{{"input", inputs}}.dump()),
               std::chrono::milliseconds(500));
  std::string m;
  for (int i = 0; i < 500; ++i) {
    m = Http("GET", server.url("/metrics")).body;
    if (MetricValue(m, "forge_requests_total{outcome=\"cancelled\"}") == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(MetricValue(m, "forge_requests_total{outcome=\"cancelled\"}"), 1) << m;
  EXPECT_EQ(MetricValue(m, "forge_num_requests_running"), 0) << m;
  const double steps = MetricValue(m, "forge_engine_steps_total");
  EXPECT_GT(steps, 0) << m;
  EXPECT_LT(steps, 30) << m;
  EXPECT_GT(MetricValue(m, "forge_engine_requests_cancelled_total"), 10) << m;
  EXPECT_EQ(server.Terminate(), 0);
}

// An encoder from `forge make-model --arch bert`, its vocabulary set to close every text with EOS
// (as BERT's [SEP]): batched == alone, base64 == float, ids == text, and a cut text keeps its
// closing token.
TEST(ServerEmbeddingsBertTest, AnEncoderFromMakeModelServes) {
  const std::string dir = TempDir();
  const CliResult made = RunForge("make-model '" + dir +
                                      "/made.gguf' --arch bert --n-vocab 300 --n-embd 64 "
                                      "--n-layer 2 --n-head 4 --n-head-kv 4 --n-ff 96",
                                  dir);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  RewriteGguf(dir + "/made.gguf", dir + "/bert.gguf",
              {{"tokenizer.ggml.add_eos_token", GgufValue::Bool(true)}});
  ServerProcess server("--batch-tokens 16 --parallel 2", ServerProcess::Wait::kHealthy, "cpu",
                       dir + "/bert.gguf");
  ASSERT_TRUE(server.ok());
  const std::string url = server.url("/v1/embeddings");
  const std::vector<std::string> texts = {"hello world", "the cat sat", "a", "zz top"};
  const std::vector<std::vector<float>> batched =
      Vectors(Http("POST", url, json{{"input", texts}}.dump()));
  ASSERT_EQ(batched.size(), texts.size());
  const std::vector<std::vector<float>> b64 =
      Vectors(Http("POST", url, json{{"input", texts}, {"encoding_format", "base64"}}.dump()));
  ASSERT_EQ(b64.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_NEAR(Norm(batched[i]), 1.0, 1e-5) << i;
    EXPECT_EQ(MaxDiff(b64[i], batched[i]), 0) << i;
    const std::vector<std::vector<float>> alone =
        Vectors(Http("POST", url, json{{"input", texts[i]}}.dump()));
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_LT(MaxDiff(alone[0], batched[i]), 1e-5) << i;
    const HttpResult tok = Http("POST", server.url("/tokenize"),
                                json{{"content", texts[i]}, {"add_special", true}}.dump());
    const std::vector<int32_t> ids = json::parse(tok.body)["tokens"].get<std::vector<int32_t>>();
    const std::vector<std::vector<float>> by_ids =
        Vectors(Http("POST", url, json{{"input", ids}}.dump()));
    ASSERT_EQ(by_ids.size(), 1u);
    EXPECT_LT(MaxDiff(by_ids[0], alone[0]), 1e-6) << i;
  }
  // Cut to 16 tokens: the first 15 and the EOS the vocabulary closes every text with.
  std::string long_text;
  for (int i = 0; i < 20; ++i) long_text += "hello world ";
  const HttpResult tok = Http("POST", server.url("/tokenize"),
                              json{{"content", long_text}, {"add_special", true}}.dump());
  const std::vector<int32_t> ids = json::parse(tok.body)["tokens"].get<std::vector<int32_t>>();
  ASSERT_GT(ids.size(), 16u);
  ASSERT_NE(ids.back(), ids[15]);
  std::vector<int32_t> want_ids(ids.begin(), ids.begin() + 15);
  want_ids.push_back(ids.back());
  const HttpResult cut = Http("POST", url, json{{"input", long_text}, {"truncate", true}}.dump());
  const std::vector<std::vector<float>> got = Vectors(cut);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(json::parse(cut.body)["usage"]["prompt_tokens"], 16);
  const std::vector<std::vector<float>> want =
      Vectors(Http("POST", url, json{{"input", want_ids}}.dump()));
  ASSERT_EQ(want.size(), 1u);
  EXPECT_LT(MaxDiff(got[0], want[0]), 1e-6);
  const std::vector<int32_t> plain_cut(ids.begin(), ids.begin() + 16);
  EXPECT_GT(MaxDiff(got[0], Vectors(Http("POST", url, json{{"input", plain_cut}}.dump()))[0]), 1e-4)
      << "the closing token changes the vector";
}

// Last-token pooling: the dense forward's last row, not the mean.
TEST(ServerEmbeddingsLastTest, LastPoolingMatchesTheDenseForward) {
  const std::string path = MakeEmbeddingModel(TempDir(), "last", kLastPooling);
  ServerProcess server("", ServerProcess::Wait::kHealthy, "cpu", path);
  ASSERT_TRUE(server.ok());
  const std::vector<int32_t> ids = {1, 17, 250, 3, 99, 42};
  HttpResult r = Http("POST", server.url("/v1/embeddings"), json{{"input", ids}}.dump());
  const std::vector<std::vector<float>> v = Vectors(r);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_LT(PooledResidual(path, ids, v[0], kLastPooling), 1e-4);
  EXPECT_GT(PooledResidual(path, ids, v[0], kMeanPooling), 1e-2);
}

}  // namespace
}  // namespace forge::testing
