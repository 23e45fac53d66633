// JsonSchemaConverter: the walk over a schema behind JsonSchemaToGbnf (internal to the grammar
// module). Each sub-schema becomes a GBNF expression, usually a rule name; $refs become rules
// named once, so recursive schemas give recursive grammars.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "grammar/gbnf_rules.h"
#include "grammar/json_schema.h"

namespace forge {

class JsonSchemaConverter {
 public:
  using Json = nlohmann::ordered_json;

  JsonSchemaConverter(const Json& root, const JsonSchemaOptions& options);
  // The whole grammar ("root ::= ..." first).
  StatusOr<std::string> Convert();
  // The grammar of any JSON object.
  std::string AnyObjectGrammar();

 private:
  // An expression for the JSON texts valid against schema (found at path, a JSON pointer).
  StatusOr<std::string> Visit(const Json& schema, const std::string& path, const std::string& hint,
                              int depth);
  StatusOr<std::string> VisitRef(const std::string& ref, const std::string& path, int depth);
  StatusOr<std::string> VisitEnum(const Json& schema, const std::string& path,
                                  const std::string& hint);
  StatusOr<std::string> VisitType(const Json& schema, const std::string& type,
                                  const std::string& path, const std::string& hint, int depth);
  // json_schema_types.cc
  StatusOr<std::string> Object(const Json& schema, const std::string& path, const std::string& hint,
                               int depth);
  StatusOr<std::string> Array(const Json& schema, const std::string& path, const std::string& hint,
                              int depth);
  StatusOr<std::string> String(const Json& schema, const std::string& path,
                               const std::string& hint);
  StatusOr<std::string> Integer(const Json& schema, const std::string& path,
                                const std::string& hint);
  StatusOr<std::string> Number(const Json& schema, const std::string& path,
                               const std::string& hint);
  StatusOr<std::string> Format(const std::string& format, const std::string& path);
  // A JSON string (no escapes) that is none of names.
  std::string KeyOtherThan(const std::vector<std::string>& names, const std::string& hint);

  // Shared primitives, added on first use; each returns its rule name.
  std::string Ws();
  std::string Char();
  std::string StringRule();
  std::string IntegerRule();
  std::string NumberRule();
  std::string BooleanRule();
  std::string NullRule();
  std::string AnyValue();
  std::string AnyObject();
  std::string AnyArray();

  Status CheckKeywords(const Json& schema, const std::string& path) const;
  StatusOr<const Json*> Resolve(const std::string& ref, const std::string& path) const;
  Status Error(const std::string& path, const std::string& what) const;

  const Json& root_;
  JsonSchemaOptions options_;
  GbnfRules rules_;
  std::unordered_map<std::string, std::string> refs_;  // $ref -> rule name
};

}  // namespace forge
