// EmbeddingsRequest: the body of POST /v1/embeddings, parsed and checked field by field (a wrong
// type, an empty input or too many of them is a 400 naming the field), and the token ids each
// input is encoded as (the server and `forge embed` encode alike).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "tokenizer/tokenizer.h"

namespace forge::server {

// Inputs of one request at most (OpenAI's limit); each is an engine request of its own.
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingsRequest {
  std::string model;  // empty: the served model
  // `input`: a string, a list of strings, a list of token ids (one input) or a list of lists of
  // token ids; none empty. Ids are below 2^31 here; the vocabulary is checked at encoding.
  std::vector<PromptInput> inputs;
  bool listed = false;  // `input` was a list of inputs: errors name input[i]
  bool base64 = false;  // encoding_format "base64" (default "float")
  // Matryoshka: the first N values, re-normalized; checked against the model's width later.
  std::optional<int64_t> dimensions;
  // Forge's own: an input longer than the model takes is cut to fit instead of refused.
  bool truncate = false;
  // Fields Forge does not know: ignored, counted and logged.
  std::vector<std::string> ignored_fields;

  // The field an error about input i names: "input" (a single input) or "input[i]".
  std::string InputField(size_t i) const;
};

// Parses a request body. A field sent as null is treated as absent. Errors are 400s naming the
// field: not an object, `input` missing, of a wrong shape, empty (the list or one of its inputs),
// holding more than kMaxEmbeddingInputs inputs or a token id that is not an integer in
// [0, 2^31); encoding_format not "float" or "base64"; dimensions not a positive integer;
// truncate not a boolean; user not a string; truncate_prompt_tokens (not offered: `truncate`).
std::optional<ApiError> ParseEmbeddingsRequest(const nlohmann::json& body, EmbeddingsRequest* out);

// The token ids that embed `input`: token ids as given, or the text encoded with the special
// tokens the vocabulary adds (BOS, EOS, SEP) and its control-token text parsed as those tokens
// (the input is the caller's whole text, as a raw completion prompt is). Errors start with
// `what` (the input as the caller knows it: "'input[3]'", "line 3"): no tokens or an id outside
// the vocabulary (InvalidArgument), more than `limit` tokens unless `truncate` (OutOfRange).
// Truncated, text keeps its first tokens and the special tokens the vocabulary puts at the end,
// `limit` in all; token ids keep their first `limit`.
StatusOr<std::vector<int32_t>> EmbeddingTokens(const Tokenizer& tokenizer, const PromptInput& input,
                                               int64_t limit, bool truncate,
                                               const std::string& what);

}  // namespace forge::server
