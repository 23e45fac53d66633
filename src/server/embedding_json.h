// Embedding vectors as the embeddings API returns them: shortened to the first N values and
// re-normalized (Matryoshka `dimensions`), written as a JSON array of float32 values or as base64
// of their little-endian bytes, and the whole response body of POST /v1/embeddings.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace forge::server {

// The first `dims` values of v scaled to unit L2 norm (the norm summed in double). A zero prefix
// stays zero. Requires: 1 <= dims <= v.size().
std::vector<float> ShortenEmbedding(std::span<const float> v, size_t dims);

// Appends v as a JSON array ("[0.125,-2.5e-05,1.0]"): each value as the shortest text that reads
// back as the same float32, always with a fraction or an exponent (so -0.0 keeps its sign); a NaN
// or infinity (no JSON number) as null.
void AppendJsonFloats(std::span<const float> v, std::string* out);

// Standard base64 (RFC 4648, padded) of v's float32 values as little-endian bytes, as OpenAI's
// encoding_format "base64" gives them.
std::string Base64Floats(std::span<const float> v);

// {"object":"list","data":[{"object":"embedding","index":i,"embedding":...}],"model":model,
//  "usage":{"prompt_tokens":n,"total_tokens":n}}: vectors[i] written as base64 or a JSON array.
// Written directly (no JSON tree): thousands of vectors of thousands of values are common.
std::string EmbeddingsResponseJson(const std::vector<std::vector<float>>& vectors, bool base64,
                                   const std::string& model, int64_t prompt_tokens);

}  // namespace forge::server
