// JSON Schema -> GBNF: the grammar of the JSON texts a schema accepts (the subset that a
// context-free grammar can express; unsupported keywords are refused by name), and the grammar
// of "any JSON object" for response_format {"type": "json_object"}.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace forge {

struct JsonSchemaOptions {
  // JSON whitespace allowed between two tokens: nothing, one space, or a newline followed by at
  // most max_whitespace spaces or tabs (indentation), so that generation cannot go on producing
  // blank space. 0: compact JSON only.
  int max_whitespace = 20;
  // Digits of an integer part (and of a fraction) where the schema sets no bound.
  int max_number_digits = 16;
  int max_fraction_digits = 16;
  // Nesting of schemas (through properties, items, anyOf, $ref, ...) before the schema is refused.
  int max_depth = 128;
  GrammarLimits limits;
};

// GBNF for the JSON texts that validate against schema (JSON text of a Draft 2020-12 / Draft 7
// schema, or {"type": "json_object"}). The text starts with the value itself (no whitespace).
// Supported: type (one or a list; "json_object" as any object), properties (in their order),
// required, additionalProperties (absent = no other properties, unless the schema names none),
// enum, const, items, prefixItems, additionalItems (with an items list), minItems, maxItems,
// anyOf, oneOf (as anyOf: its branches should not overlap), allOf of one schema, $ref to "#..."
// JSON pointers ($defs, definitions; recursion allowed), pattern, minLength, maxLength, format
// (date, time, date-time, uuid, email), minimum/maximum/exclusive* for integers and (with
// non-negative integer bounds) numbers, uniqueItems false. Annotations are ignored (title,
// description, default, examples, $schema, $comment, $id, deprecated, readOnly, writeOnly).
// Anything else is InvalidArgument naming the keyword and where it is.
StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_json,
                                       const JsonSchemaOptions& options = {});
// The same for a parsed schema (ordered_json keeps the order of "properties"). Requires: its
// nesting is bounded (as by the caller's parser); deeper schemas are refused at max_depth.
StatusOr<std::string> ParsedJsonSchemaToGbnf(const nlohmann::ordered_json& schema,
                                             const JsonSchemaOptions& options = {});
// Any JSON object (nesting values of any kind).
std::string JsonObjectGbnf(const JsonSchemaOptions& options = {});

// JsonSchemaToGbnf and Grammar::FromGbnf in one step.
StatusOr<std::shared_ptr<const Grammar>> GrammarFromJsonSchema(
    std::string_view schema_json, const JsonSchemaOptions& options = {});

}  // namespace forge
