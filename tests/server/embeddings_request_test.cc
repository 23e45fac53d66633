// The embeddings API in process: every malformed body gets a 400 naming its field, inputs encode
// within the vocabulary and the length limit (truncated with their end tokens kept), and vectors
// are written as the API returns them: base64 against Python's struct + base64, JSON floats that
// read back bit for bit, Matryoshka shortening against a double-precision reference.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "gguf/gguf_file.h"
#include "server/embedding_json.h"
#include "server/embeddings_request.h"
#include "server/routes.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace forge::server {
namespace {

using nlohmann::json;

struct BadCase {
  const char* body;
  const char* param;  // the field the 400 names
};

TEST(EmbeddingsRequestTest, MalformedBodiesNameTheField) {
  const std::string many = [] {
    json j = {{"input", json::array()}};
    for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) j["input"].push_back("a");
    return j.dump();
  }();
  const BadCase cases[] = {
      {R"([])", ""},
      {R"("input")", ""},
      {R"({})", "input"},
      {R"({"input": null})", "input"},
      {R"({"input": 5})", "input"},
      {R"({"input": true})", "input"},
      {R"({"input": {"text": "a"}})", "input"},
      {R"({"input": ""})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": [1, "a"]})", "input"},
      {R"({"input": [1, 2.5]})", "input"},
      {R"({"input": [1, -1]})", "input"},
      {R"({"input": [4294967297]})", "input"},
      {R"({"input": [18446744073709551615]})", "input"},
      {R"({"input": ["a", ""]})", "input[1]"},
      {R"({"input": ["a", 5]})", "input[1]"},
      {R"({"input": ["a", null]})", "input[1]"},
      {R"({"input": ["a", {"x": 1}]})", "input[1]"},
      {R"({"input": [[1, 2], []]})", "input[1]"},
      {R"({"input": [[1, 2], [3, "4"]]})", "input[1]"},
      {R"({"input": [[1, 2], [3, [4]]]})", "input[1]"},
      {R"({"input": [[1], [2], [-7]]})", "input[2]"},
      {R"({"input": "a", "model": 3})", "model"},
      {R"({"input": "a", "encoding_format": "int8"})", "encoding_format"},
      {R"({"input": "a", "encoding_format": 1})", "encoding_format"},
      {R"({"input": "a", "dimensions": 0})", "dimensions"},
      {R"({"input": "a", "dimensions": -4})", "dimensions"},
      {R"({"input": "a", "dimensions": 8.5})", "dimensions"},
      {R"({"input": "a", "dimensions": "8"})", "dimensions"},
      {R"({"input": "a", "truncate": "yes"})", "truncate"},
      {R"({"input": "a", "user": 7})", "user"},
      {R"({"input": "a", "truncate_prompt_tokens": 8})", "truncate_prompt_tokens"},
      {many.c_str(), "input"},
  };
  for (const BadCase& c : cases) {
    EmbeddingsRequest req;
    const json body = json::parse(c.body);
    const auto e = ParseEmbeddingsRequest(body, &req);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->http_status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body << ": " << e->message;
    EXPECT_EQ(e->type, "invalid_request_error") << c.body;
    if (*c.param) {  // the message names the field too
      EXPECT_NE(e->message.find(c.param), std::string::npos) << e->message;
    }
  }
}

TEST(EmbeddingsRequestTest, EveryShapeOfInputParses) {
  EmbeddingsRequest one;
  ASSERT_FALSE(ParseEmbeddingsRequest(json{{"input", "hello"}}, &one));
  ASSERT_EQ(one.inputs.size(), 1u);
  EXPECT_EQ(one.inputs[0].text, "hello");
  EXPECT_FALSE(one.inputs[0].is_ids);
  EXPECT_EQ(one.InputField(0), "input");
  EXPECT_FALSE(one.base64);
  EXPECT_FALSE(one.dimensions.has_value());
  EXPECT_FALSE(one.truncate);

  EmbeddingsRequest ids;
  ASSERT_FALSE(ParseEmbeddingsRequest(json::parse(R"({"input": [5, 0, 2147483647]})"), &ids));
  ASSERT_EQ(ids.inputs.size(), 1u);
  EXPECT_TRUE(ids.inputs[0].is_ids);
  EXPECT_EQ(ids.inputs[0].ids, (std::vector<int32_t>{5, 0, 2147483647}));

  EmbeddingsRequest list;
  ASSERT_FALSE(ParseEmbeddingsRequest(
      json::parse(R"({"input": ["a", [7, 8], "b"], "model": "m", "encoding_format": "base64",
                      "dimensions": 16, "truncate": true, "user": "u", "extra": 1,
                      "priority": null})"),
      &list));
  ASSERT_EQ(list.inputs.size(), 3u);
  EXPECT_EQ(list.inputs[0].text, "a");
  EXPECT_EQ(list.inputs[1].ids, (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(list.inputs[2].text, "b");
  EXPECT_EQ(list.InputField(2), "input[2]");
  EXPECT_EQ(list.model, "m");
  EXPECT_TRUE(list.base64);
  EXPECT_EQ(list.dimensions, 16);
  EXPECT_TRUE(list.truncate);
  EXPECT_EQ(list.ignored_fields, std::vector<std::string>{"extra"});  // null: absent

  // Fields sent as null are absent; the most inputs allowed parse.
  EmbeddingsRequest nulls;
  ASSERT_FALSE(ParseEmbeddingsRequest(
      json::parse(R"({"input": "a", "encoding_format": null, "dimensions": null})"), &nulls));
  EXPECT_FALSE(nulls.base64);
  json most = {{"input", json::array()}};
  for (size_t i = 0; i < kMaxEmbeddingInputs; ++i)
    most["input"].push_back(json::array({int(i) % 50}));
  EmbeddingsRequest full;
  ASSERT_FALSE(ParseEmbeddingsRequest(most, &full));
  EXPECT_EQ(full.inputs.size(), kMaxEmbeddingInputs);
}

TEST(EmbeddingsRequestTest, RoutesTakePost) {
  EXPECT_EQ(MatchRoute("POST", "/v1/embeddings").id, RouteId::kEmbeddings);
  EXPECT_FALSE(MatchRoute("POST", "/v1/embeddings").error.has_value());
  EXPECT_EQ(MatchRoute("POST", "/embeddings").id, RouteId::kEmbeddings);
  EXPECT_EQ(MatchRoute("GET", "/v1/embeddings").error->http_status, 405);
  EXPECT_TRUE(MatchRoute("OPTIONS", "/v1/embeddings").preflight);
}

// stories260K's vocabulary (SentencePiece, BOS added), and the same with EOS added at the end.
std::unique_ptr<Tokenizer> Stories(bool add_eos) {
  auto file = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  EXPECT_TRUE(file.ok());
  auto tok = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tok.ok());
  Vocab v = (*tok)->vocab();
  v.add_eos = add_eos;
  auto out = Tokenizer::FromVocab(std::move(v));
  EXPECT_TRUE(out.ok());
  return std::move(*out);
}

TEST(EmbeddingsRequestTest, InputsEncodeWithinTheVocabularyAndTheLimit) {
  auto tok = Stories(false);
  const int32_t bos = tok->vocab().bos;
  const std::string text = "Once upon a time there was a little girl";
  const std::vector<int32_t> encoded = tok->Encode(text, true, true);
  ASSERT_GT(encoded.size(), 6u);
  ASSERT_EQ(encoded[0], bos);

  PromptInput in{text, {}, false};
  auto ids = EmbeddingTokens(*tok, in, 100, false, "'input'");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, encoded);

  // Too long: an error naming the input and the limit, or its first tokens when truncating.
  auto longer = EmbeddingTokens(*tok, in, 5, false, "'input[3]'");
  ASSERT_FALSE(longer.ok());
  EXPECT_EQ(longer.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(longer.status().message().find("'input[3]'"), std::string::npos);
  EXPECT_NE(longer.status().message().find("at most 5"), std::string::npos);
  auto cut = EmbeddingTokens(*tok, in, 5, true, "'input'");
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(*cut, std::vector<int32_t>(encoded.begin(), encoded.begin() + 5));

  // With EOS added at the end, a cut text keeps it.
  auto eos_tok = Stories(true);
  const std::vector<int32_t> with_eos = eos_tok->Encode(text, true, true);
  ASSERT_EQ(with_eos.size(), encoded.size() + 1);
  ASSERT_EQ(with_eos.back(), eos_tok->vocab().eos);
  auto cut_eos = EmbeddingTokens(*eos_tok, in, 5, true, "'input'");
  ASSERT_TRUE(cut_eos.ok());
  std::vector<int32_t> want(encoded.begin(), encoded.begin() + 4);
  want.push_back(eos_tok->vocab().eos);
  EXPECT_EQ(*cut_eos, want);

  // Control-token text in the input is that token (the caller's whole text).
  auto special = EmbeddingTokens(*tok, {"a</s>", {}, false}, 100, false, "'input'");
  ASSERT_TRUE(special.ok());
  EXPECT_EQ(special->back(), tok->vocab().eos);

  // Token ids: verbatim, checked against the vocabulary, cut to their first `limit`.
  const int32_t n_vocab = tok->vocab().size();
  PromptInput id_in{"", {3, 4, 5, 6}, true};
  auto same = EmbeddingTokens(*tok, id_in, 4, false, "'input'");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, id_in.ids);
  auto id_cut = EmbeddingTokens(*tok, id_in, 3, true, "'input'");
  ASSERT_TRUE(id_cut.ok());
  EXPECT_EQ(*id_cut, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(EmbeddingTokens(*tok, id_in, 3, false, "'input'").status().code(),
            StatusCode::kOutOfRange);
  PromptInput outside{"", {1, n_vocab}, true};
  auto bad = EmbeddingTokens(*tok, outside, 100, true, "'input[2]'");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'input[2]'"), std::string::npos);
  EXPECT_NE(bad.status().message().find(std::to_string(n_vocab)), std::string::npos);
}

TEST(EmbeddingJsonTest, Base64MatchesPythonStructPack) {
  // base64.b64encode(struct.pack('<Nf', ...)) from Python: every padding case.
  EXPECT_EQ(Base64Floats(std::vector<float>{1.0f}), "AACAPw==");
  EXPECT_EQ(Base64Floats(std::vector<float>{1.0f, -2.5f}), "AACAPwAAIMA=");
  EXPECT_EQ(Base64Floats(std::vector<float>{1.0f, -2.5f, 0.1f}), "AACAPwAAIMDNzMw9");
  EXPECT_EQ(Base64Floats(
                std::vector<float>{0.0f, -0.0f, FLT_MAX, std::numeric_limits<float>::denorm_min()}),
            "AAAAAAAAAID//39/AQAAAA==");
  EXPECT_EQ(Base64Floats(std::vector<float>{}), "");
}

TEST(EmbeddingJsonTest, FloatsReadBackBitForBit) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> v = {
      0.0f,  -0.0f,  1.0f,    -1.0f,   0.1f,
      1e-5f, -3e-9f, FLT_MAX, FLT_MIN, std::numeric_limits<float>::denorm_min()};
  for (int i = 0; i < 2000; ++i) v.push_back(normal(rng));
  std::string text;
  AppendJsonFloats(v, &text);
  const json j = json::parse(text);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float back = static_cast<float>(j[i].get<double>());
    EXPECT_EQ(std::bit_cast<uint32_t>(back), std::bit_cast<uint32_t>(v[i])) << i << ": " << j[i];
  }
  // Every value reads as a float (a fraction or an exponent), -0 with its sign.
  EXPECT_NE(text.find("[0.0,-0.0,1.0,-1.0,0.1,1e-05,"), std::string::npos) << text.substr(0, 64);
  std::string odd;
  AppendJsonFloats(std::vector<float>{1.5f, NAN, INFINITY}, &odd);
  EXPECT_EQ(odd, "[1.5,null,null]");
  std::string none;
  AppendJsonFloats(std::vector<float>{}, &none);
  EXPECT_EQ(none, "[]");
}

TEST(EmbeddingJsonTest, ShorteningRenormalizesThePrefix) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> v(37);
  for (float& x : v) x = normal(rng);
  for (size_t dims : {size_t{1}, size_t{5}, size_t{36}, size_t{37}}) {
    const std::vector<float> s = ShortenEmbedding(v, dims);
    ASSERT_EQ(s.size(), dims);
    double norm = 0;
    for (size_t i = 0; i < dims; ++i) norm += double(v[i]) * v[i];
    norm = std::sqrt(norm);
    double unit = 0;
    for (size_t i = 0; i < dims; ++i) {
      EXPECT_NEAR(s[i], v[i] / norm, 1e-7) << dims << " " << i;
      unit += double(s[i]) * s[i];
    }
    EXPECT_NEAR(unit, 1.0, 1e-6) << dims;
  }
  EXPECT_EQ(ShortenEmbedding(std::vector<float>{0, 0, 1}, 2), (std::vector<float>{0, 0}));
}

TEST(EmbeddingJsonTest, ResponseHasOpenAisShape) {
  const std::vector<std::vector<float>> vectors = {{0.6f, 0.8f}, {1.0f, 0.0f}};
  const json f = json::parse(EmbeddingsResponseJson(vectors, false, "m\"x", 7));
  EXPECT_EQ(f["object"], "list");
  EXPECT_EQ(f["model"], "m\"x");
  EXPECT_EQ(f["usage"], (json{{"prompt_tokens", 7}, {"total_tokens", 7}}));
  ASSERT_EQ(f["data"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(f["data"][i]["object"], "embedding");
    EXPECT_EQ(f["data"][i]["index"], i);
    ASSERT_EQ(f["data"][i]["embedding"].size(), 2u);
    EXPECT_EQ(f["data"][i]["embedding"][0].get<float>(), vectors[i][0]);
  }
  const json b = json::parse(EmbeddingsResponseJson(vectors, true, "m", 7));
  EXPECT_EQ(b["data"][0]["embedding"], Base64Floats(vectors[0]));
  // Invalid UTF-8 in the name (the client's bytes) is replaced, never thrown on.
  EXPECT_TRUE(json::parse(EmbeddingsResponseJson(vectors, true, "\xff", 1)).is_object());
}

}  // namespace
}  // namespace forge::server
