// Shortening, float text, base64 and the response body of the embeddings API.
#include "server/embedding_json.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/check.h"

namespace forge::server {

std::vector<float> ShortenEmbedding(std::span<const float> v, size_t dims) {
  CHECK(dims >= 1 && dims <= v.size()) << "dims " << dims << " of " << v.size();
  double sum = 0;
  for (size_t i = 0; i < dims; ++i) sum += static_cast<double>(v[i]) * v[i];
  const double norm = std::sqrt(sum);
  std::vector<float> out(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(dims));
  if (norm > 0) {
    for (float& x : out) x = static_cast<float>(x / norm);
  }
  return out;
}

void AppendJsonFloats(std::span<const float> v, std::string* out) {
  out->reserve(out->size() + v.size() * 12 + 2);
  out->push_back('[');
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out->push_back(',');
    if (!std::isfinite(v[i])) {
      out->append("null");
      continue;
    }
    // The shortest round-trip form of the float32 (not of the double it widens to).
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v[i]);
    out->append(buf, r.ptr);
    // "1" and "-0" as "1.0" and "-0.0": every value reads as a float, -0 with its sign.
    if (std::find_if(buf, r.ptr, [](char c) { return c == '.' || c == 'e'; }) == r.ptr) {
      out->append(".0");
    }
  }
  out->push_back(']');
}

std::string Base64Floats(std::span<const float> v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes;
  bytes.reserve(v.size() * 4);
  for (float x : v) {
    const uint32_t u = std::bit_cast<uint32_t>(x);
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<uint8_t>(u >> (8 * b)));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t g = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    out.push_back(kAlphabet[(g >> 18) & 63]);
    out.push_back(kAlphabet[(g >> 12) & 63]);
    out.push_back(kAlphabet[(g >> 6) & 63]);
    out.push_back(kAlphabet[g & 63]);
  }
  const size_t rest = bytes.size() - i;  // 0, 1 or 2 bytes left: padded to a group of 4
  if (rest > 0) {
    uint32_t g = uint32_t{bytes[i]} << 16;
    if (rest == 2) g |= uint32_t{bytes[i + 1]} << 8;
    out.push_back(kAlphabet[(g >> 18) & 63]);
    out.push_back(kAlphabet[(g >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(g >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string EmbeddingsResponseJson(const std::vector<std::vector<float>>& vectors, bool base64,
                                   const std::string& model, int64_t prompt_tokens) {
  std::string out = R"({"object":"list","data":[)";
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += R"({"object":"embedding","index":)" + std::to_string(i) + R"(,"embedding":)";
    if (base64) {
      out += '"' + Base64Floats(vectors[i]) + '"';
    } else {
      AppendJsonFloats(vectors[i], &out);
    }
    out.push_back('}');
  }
  // The model's name is the client's text (or the served name): escaped, invalid UTF-8 replaced.
  out += R"(],"model":)" +
         nlohmann::json(model).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string n = std::to_string(prompt_tokens);
  out += R"(,"usage":{"prompt_tokens":)" + n + R"(,"total_tokens":)" + n + "}}";
  return out;
}

}  // namespace forge::server
