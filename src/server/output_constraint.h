// OutputConstraint: what a completion request asks its text to be, as GBNF for the engine's
// constrained decoding. Read from OpenAI's response_format ({"type": "text" | "json_object" |
// "json_schema"}), llama.cpp's grammar and json_schema fields, vLLM's guided_json, guided_regex,
// guided_choice and guided_grammar, and vLLM's structured_outputs object
// ({"json" | "regex" | "choice" | "grammar": ...}). At most one of them per request.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace forge::server {

struct OutputConstraint {
  std::string field;  // the request field it came from; empty: unconstrained
  std::string gbnf;   // the grammar of the text (GBNF, root rule "root")
};

// The request fields ParseOutputConstraint reads.
inline constexpr const char* kConstraintFields[] = {
    "response_format", "grammar",       "json_schema",    "guided_json",
    "guided_regex",    "guided_choice", "guided_grammar", "structured_outputs"};

// Reads the constraint fields of a request body (null fields already removed); ordered_body, when
// given, is the same body parsed in the client's key order, where a schema is read (else keys come
// sorted). Errors are
// 400s naming the field: a wrong shape, two constraints at once, a JSON schema with a keyword
// Forge cannot enforce (named), an unsupported regular expression. The GBNF itself is checked
// when it is compiled (grammar/grammar.h).
std::optional<ApiError> ParseOutputConstraint(const nlohmann::json& body,
                                              const nlohmann::ordered_json* ordered_body,
                                              OutputConstraint* out);

}  // namespace forge::server
