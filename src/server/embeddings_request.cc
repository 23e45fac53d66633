// Parsing of OpenAI embeddings request bodies into EmbeddingsRequest, and the inputs' token ids.
#include "server/embeddings_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace forge::server {
namespace {

using nlohmann::json;

ApiError Bad(const std::string& field, const std::string& what) {
  return ApiError::InvalidRequest("'" + field + "': " + what, field);
}

constexpr const char* kShapes =
    "expected a string, a list of strings, a list of token ids or a list of lists of token ids";

// A list of token ids (non-empty, checked by the caller) as one input.
std::optional<ApiError> ParseIds(const json& list, const std::string& field, PromptInput* out) {
  out->is_ids = true;
  out->ids.reserve(list.size());
  for (const json& t : list) {
    auto id = TokenIdFromJson(t, int64_t{INT32_MAX} + 1, field);
    if (!id.ok()) return ApiError::FromStatus(id.status(), field);
    out->ids.push_back(*id);
  }
  return std::nullopt;
}

std::optional<ApiError> ParseInput(const json& input, EmbeddingsRequest* out) {
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().empty()) return Bad("input", "the string is empty");
    out->inputs.push_back({input.get<std::string>(), {}, false});
    return std::nullopt;
  }
  if (!input.is_array()) return Bad("input", kShapes);
  if (input.empty()) return Bad("input", "the list is empty");
  if (input[0].is_number()) {  // one input of token ids
    out->inputs.emplace_back();
    return ParseIds(input, "input", &out->inputs.back());
  }
  if (input.size() > kMaxEmbeddingInputs) {
    return Bad("input", "a list of at most " + std::to_string(kMaxEmbeddingInputs) +
                            " inputs; got " + std::to_string(input.size()));
  }
  out->listed = true;
  out->inputs.reserve(input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    const json& one = input[i];
    const std::string field = out->InputField(i);
    out->inputs.emplace_back();
    if (one.is_string()) {
      if (one.get_ref<const std::string&>().empty()) return Bad(field, "the string is empty");
      out->inputs.back().text = one.get<std::string>();
    } else if (one.is_array()) {
      if (one.empty()) return Bad(field, "the list of token ids is empty");
      if (auto e = ParseIds(one, field, &out->inputs.back())) return e;
    } else {
      return Bad(field, "expected a string or a list of token ids (" + std::string(kShapes) +
                            " as the whole input)");
    }
  }
  return std::nullopt;
}

}  // namespace

std::string EmbeddingsRequest::InputField(size_t i) const {
  return listed ? "input[" + std::to_string(i) + "]" : std::string("input");
}

std::optional<ApiError> ParseEmbeddingsRequest(const json& raw, EmbeddingsRequest* out) {
  if (!raw.is_object()) return ApiError::InvalidRequest("the body must be a JSON object", "");
  const json* input = nullptr;
  for (const auto& [key, value] : raw.items()) {
    if (value.is_null()) continue;
    if (key == "input") {
      input = &value;
    } else if (key == "model") {
      if (!value.is_string()) return Bad("model", "expected a string");
      out->model = value.get<std::string>();
    } else if (key == "encoding_format") {
      if (value != "float" && value != "base64") {
        return Bad("encoding_format", "expected \"float\" or \"base64\"");
      }
      out->base64 = value == "base64";
    } else if (key == "dimensions") {
      // Any integer, however large, is read without overflow; the model's width bounds it later.
      if (!value.is_number_integer()) return Bad("dimensions", "expected a positive integer");
      const int64_t n =
          value.is_number_unsigned()
              ? static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), INT64_MAX))
              : value.get<int64_t>();
      if (n < 1) return Bad("dimensions", std::to_string(n) + " is not a positive integer");
      out->dimensions = n;
    } else if (key == "truncate") {
      if (!value.is_boolean()) return Bad("truncate", "expected a boolean");
      out->truncate = value.get<bool>();
    } else if (key == "user") {
      if (!value.is_string()) return Bad("user", "expected a string");
    } else if (key == "truncate_prompt_tokens") {
      return ApiError::FromStatus(
          UnimplementedError("'truncate_prompt_tokens' is not supported; 'truncate': true cuts "
                             "each input to the most tokens the model takes"),
          key);
    } else {
      out->ignored_fields.push_back(key);
    }
  }
  if (input == nullptr) return Bad("input", "required");
  return ParseInput(*input, out);
}

StatusOr<std::vector<int32_t>> EmbeddingTokens(const Tokenizer& tokenizer, const PromptInput& input,
                                               int64_t limit, bool truncate,
                                               const std::string& what) {
  const int64_t n_vocab = tokenizer.vocab().size();
  std::vector<int32_t> ids;
  if (input.is_ids) {
    for (int32_t t : input.ids) {
      if (t < 0 || t >= n_vocab) {
        return InvalidArgumentError(what + ": token id " + std::to_string(t) +
                                    " is outside the vocabulary of " + std::to_string(n_vocab));
      }
    }
    ids = input.ids;
  } else {
    ids = tokenizer.Encode(input.text, /*add_special=*/true, /*parse_special=*/true);
  }
  if (ids.empty()) return InvalidArgumentError(what + ": no tokens to embed");
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n <= limit) return ids;
  if (!truncate) {
    return OutOfRangeError(what + ": " + std::to_string(n) + " tokens; the model embeds at most " +
                           std::to_string(limit) + " at once");
  }
  size_t trail = 0;  // the special tokens Encode put after the text (EOS, SEP)
  if (!input.is_ids) {
    const std::vector<int32_t> plain = tokenizer.Encode(input.text, false, true);
    for (size_t lead = 0; lead + plain.size() <= ids.size(); ++lead) {
      if (std::equal(plain.begin(), plain.end(), ids.begin() + static_cast<ptrdiff_t>(lead))) {
        trail = ids.size() - lead - plain.size();
        break;
      }
    }
  }
  const size_t keep = static_cast<size_t>(limit);
  if (trail >= keep) trail = 0;
  std::copy(ids.end() - static_cast<ptrdiff_t>(trail), ids.end(),
            ids.begin() + static_cast<ptrdiff_t>(keep - trail));
  ids.resize(keep);
  return ids;
}

}  // namespace forge::server
