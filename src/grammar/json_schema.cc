// JSON Schema -> GBNF: the public entry points and the converter's core (keyword checks, $ref,
// enum/const, anyOf/oneOf/allOf, type dispatch and the shared JSON primitives).
#include "grammar/json_schema.h"

#include <set>

#include "base/json_scan.h"
#include "grammar/codepoint_set.h"
#include "grammar/json_schema_converter.h"

namespace forge {
namespace {

using Json = nlohmann::ordered_json;

// Keywords that only describe (never constrain) an instance.
const std::set<std::string>& Annotations() {
  static const std::set<std::string> kSet = {
      "title",      "description", "default",   "examples", "$schema",     "$comment",     "$id",
      "deprecated", "readOnly",    "writeOnly", "$defs",    "definitions", "discriminator"};
  return kSet;
}

const std::set<std::string>& Supported() {
  static const std::set<std::string> kSet = {"type",
                                             "properties",
                                             "required",
                                             "additionalProperties",
                                             "enum",
                                             "const",
                                             "items",
                                             "prefixItems",
                                             "additionalItems",
                                             "minItems",
                                             "maxItems",
                                             "anyOf",
                                             "oneOf",
                                             "allOf",
                                             "$ref",
                                             "pattern",
                                             "minLength",
                                             "maxLength",
                                             "format",
                                             "minimum",
                                             "maximum",
                                             "exclusiveMinimum",
                                             "exclusiveMaximum",
                                             "uniqueItems"};
  return kSet;
}

const std::vector<std::string>& PrimitiveNames() {
  static const std::vector<std::string> kNames = {
      "ws",        "char",    "string",     "integer",    "number",     "boolean",    "null",
      "value",     "object",  "array",      "member",     "hex",        "date",       "time",
      "date-time", "uuid",    "email",      "date-year",  "date-day28", "date-day30", "date-day31",
      "time-hh",   "time-mm", "email-atom", "email-label"};
  return kNames;
}

// The keywords of schema other than annotations and those in allowed.
std::vector<std::string> Others(const Json& schema, const std::set<std::string>& allowed) {
  std::vector<std::string> out;
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (Annotations().count(it.key()) == 0 && allowed.count(it.key()) == 0) out.push_back(it.key());
  }
  return out;
}

bool TypeMatches(const Json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object" || type == "json_object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer() || v.is_number_unsigned()) return true;
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    return d == static_cast<double>(static_cast<int64_t>(d));
  }
  return false;
}

}  // namespace

JsonSchemaConverter::JsonSchemaConverter(const Json& root, const JsonSchemaOptions& options)
    : root_(root), options_(options), rules_(PrimitiveNames()) {}

Status JsonSchemaConverter::Error(const std::string& path, const std::string& what) const {
  return InvalidArgumentError("JSON schema at " + path + ": " + what);
}

StatusOr<std::string> JsonSchemaConverter::Convert() {
  ASSIGN_OR_RETURN(std::string root, Visit(root_, "#", "root", 0));
  std::string text = rules_.ToGbnf(root);
  if (text.size() > options_.limits.max_text_bytes) {
    return ResourceExhaustedError("JSON schema: its grammar would be " +
                                  std::to_string(text.size()) + " bytes, past the limit of " +
                                  std::to_string(options_.limits.max_text_bytes));
  }
  return text;
}

std::string JsonSchemaConverter::AnyObjectGrammar() { return rules_.ToGbnf(AnyObject()); }

Status JsonSchemaConverter::CheckKeywords(const Json& schema, const std::string& path) const {
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& k = it.key();
    if (Annotations().count(k) == 0 && Supported().count(k) == 0) {
      return Error(path, "keyword '" + k + "' is not supported");
    }
  }
  auto unique = schema.find("uniqueItems");
  if (unique != schema.end() && !(unique->is_boolean() && !unique->get<bool>())) {
    return Error(path, "keyword 'uniqueItems' is not supported (only false)");
  }
  return Status::Ok();
}

StatusOr<std::string> JsonSchemaConverter::Visit(const Json& schema, const std::string& path,
                                                 const std::string& hint, int depth) {
  if (depth > options_.max_depth) {
    return Error(path, "schemas nest deeper than " + std::to_string(options_.max_depth));
  }
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return AnyValue();
    return Error(path, "the schema false matches nothing");
  }
  if (!schema.is_object()) return Error(path, "a schema must be an object or a boolean");
  RETURN_IF_ERROR(CheckKeywords(schema, path));

  if (auto ref = schema.find("$ref"); ref != schema.end()) {
    const std::vector<std::string> others = Others(schema, {"$ref"});
    if (!others.empty()) return Error(path, "keyword '" + others[0] + "' beside $ref");
    if (!ref->is_string()) return Error(path, "$ref must be a string");
    return VisitRef(ref->get<std::string>(), path, depth);
  }
  if (schema.contains("enum") || schema.contains("const")) return VisitEnum(schema, path, hint);
  for (const char* key : {"anyOf", "oneOf"}) {
    auto it = schema.find(key);
    if (it == schema.end()) continue;
    const std::vector<std::string> others = Others(schema, {key});
    if (!others.empty()) {
      return Error(path, "keyword '" + others[0] + "' beside " + key + " is not supported");
    }
    if (!it->is_array() || it->empty()) return Error(path, std::string(key) + " must be a list");
    std::string body;
    for (size_t i = 0; i < it->size(); ++i) {
      ASSIGN_OR_RETURN(std::string alt, Visit((*it)[i], path + "/" + key + "/" + std::to_string(i),
                                              hint + "-" + std::to_string(i), depth + 1));
      body += (i ? " | " : "") + alt;
    }
    return rules_.Add(hint, body);
  }
  if (auto all = schema.find("allOf"); all != schema.end()) {
    const std::vector<std::string> others = Others(schema, {"allOf"});
    if (!others.empty()) return Error(path, "keyword '" + others[0] + "' beside allOf");
    if (!all->is_array() || all->size() != 1) {
      return Error(path, "allOf is supported with exactly one schema");
    }
    return Visit((*all)[0], path + "/allOf/0", hint, depth + 1);
  }

  std::vector<std::string> types;
  if (auto type = schema.find("type"); type != schema.end()) {
    if (type->is_string()) {
      types.push_back(type->get<std::string>());
    } else if (type->is_array() && !type->empty()) {
      for (const Json& t : *type) {
        if (!t.is_string()) return Error(path, "type must be a string or a list of strings");
        types.push_back(t.get<std::string>());
      }
    } else {
      return Error(path, "type must be a string or a list of strings");
    }
  } else {
    // No type: the one its keywords imply (a subset of what the schema allows), else any value.
    auto has = [&](std::initializer_list<const char*> keys) {
      for (const char* k : keys) {
        if (schema.contains(k)) return true;
      }
      return false;
    };
    if (has({"properties", "required", "additionalProperties"})) {
      types.push_back("object");
    } else if (has({"items", "prefixItems", "additionalItems", "minItems", "maxItems"})) {
      types.push_back("array");
    } else if (has({"pattern", "minLength", "maxLength", "format"})) {
      types.push_back("string");
    } else if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
      types.push_back("number");
    } else {
      return AnyValue();
    }
  }
  if (types.size() == 1) return VisitType(schema, types[0], path, hint, depth);
  std::string body;
  for (size_t i = 0; i < types.size(); ++i) {
    ASSIGN_OR_RETURN(std::string alt,
                     VisitType(schema, types[i], path, hint + "-" + types[i], depth));
    body += (i ? " | " : "") + alt;
  }
  return rules_.Add(hint, body);
}

StatusOr<std::string> JsonSchemaConverter::VisitType(const Json& schema, const std::string& type,
                                                     const std::string& path,
                                                     const std::string& hint, int depth) {
  if (type == "object") return Object(schema, path, hint, depth);
  if (type == "array") return Array(schema, path, hint, depth);
  if (type == "string") return String(schema, path, hint);
  if (type == "integer") return Integer(schema, path, hint);
  if (type == "number") return Number(schema, path, hint);
  if (type == "boolean") return BooleanRule();
  if (type == "null") return NullRule();
  if (type == "json_object") return AnyObject();
  return Error(path, "unknown type '" + type + "'");
}

StatusOr<std::string> JsonSchemaConverter::VisitEnum(const Json& schema, const std::string& path,
                                                     const std::string& hint) {
  const std::vector<std::string> others = Others(schema, {"enum", "const", "type"});
  if (!others.empty()) {
    return Error(path, "keyword '" + others[0] + "' together with enum/const is not supported");
  }
  std::vector<const Json*> values;
  if (auto c = schema.find("const"); c != schema.end()) {
    if (schema.contains("enum")) return Error(path, "enum together with const is not supported");
    values.push_back(&*c);
  } else {
    const Json& e = schema["enum"];
    if (!e.is_array() || e.empty()) return Error(path, "enum must be a non-empty list");
    for (const Json& v : e) values.push_back(&v);
  }
  std::vector<std::string> types;
  if (auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) {
      types.push_back(t->get<std::string>());
    } else if (t->is_array()) {
      for (const Json& x : *t) {
        if (x.is_string()) types.push_back(x.get<std::string>());
      }
    }
  }
  std::string body;
  std::set<std::string> seen;
  for (const Json* v : values) {
    bool ok = types.empty();
    for (const std::string& type : types) ok = ok || TypeMatches(*v, type);
    if (!ok) continue;
    const std::string literal =
        codepoints::GbnfLiteral(v->dump(-1, ' ', false, Json::error_handler_t::replace));
    if (!seen.insert(literal).second) continue;
    body += (body.empty() ? "" : " | ") + literal;
  }
  if (body.empty()) return Error(path, "no enum/const value has the schema's type");
  return rules_.Add(hint, body);
}

StatusOr<const JsonSchemaConverter::Json*> JsonSchemaConverter::Resolve(
    const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#') {
    return Error(path, "$ref '" + ref + "' is not supported (only local refs \"#/...\")");
  }
  const Json* node = &root_;
  size_t pos = 1;
  if (ref.size() > 1 && ref[1] != '/') {
    return Error(path, "$ref '" + ref + "' is not supported (anchors; use a JSON pointer)");
  }
  while (pos < ref.size()) {
    const size_t next = ref.find('/', pos + 1);
    std::string token =
        ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    pos = next == std::string::npos ? ref.size() : next;
    // Percent-decoding (URI fragment), then ~1 -> / and ~0 -> ~ (JSON pointer).
    std::string decoded;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '%' && i + 2 < token.size() + 0 && std::isxdigit(token[i + 1]) &&
          std::isxdigit(token[i + 2])) {
        decoded.push_back(static_cast<char>(std::stoi(token.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        decoded.push_back(token[i]);
      }
    }
    std::string key;
    for (size_t i = 0; i < decoded.size(); ++i) {
      if (decoded[i] == '~' && i + 1 < decoded.size() &&
          (decoded[i + 1] == '0' || decoded[i + 1] == '1')) {
        key.push_back(decoded[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        key.push_back(decoded[i]);
      }
    }
    if (node->is_object()) {
      auto it = node->find(key);
      if (it == node->end()) return Error(path, "$ref '" + ref + "' points nowhere");
      node = &*it;
    } else if (node->is_array()) {
      size_t index = 0;
      if (key.empty() || key.size() > 9 ||
          key.find_first_not_of("0123456789") != std::string::npos) {
        return Error(path, "$ref '" + ref + "' points nowhere");
      }
      index = std::stoul(key);
      if (index >= node->size()) return Error(path, "$ref '" + ref + "' points nowhere");
      node = &(*node)[index];
    } else {
      return Error(path, "$ref '" + ref + "' points nowhere");
    }
  }
  return node;
}

StatusOr<std::string> JsonSchemaConverter::VisitRef(const std::string& ref, const std::string& path,
                                                    int depth) {
  auto it = refs_.find(ref);
  if (it != refs_.end()) return it->second;
  ASSIGN_OR_RETURN(const Json* target, Resolve(ref, path));
  const size_t slash = ref.find_last_of('/');
  const std::string hint = slash == std::string::npos ? "ref" : ref.substr(slash + 1);
  // Named before its body is made, so a recursive reference finds it.
  const std::string name = rules_.Reserve(hint);
  refs_[ref] = name;
  ASSIGN_OR_RETURN(std::string body, Visit(*target, ref, hint, depth + 1));
  rules_.Define(name, body);
  return name;
}

StatusOr<std::string> ParsedJsonSchemaToGbnf(const nlohmann::ordered_json& schema,
                                             const JsonSchemaOptions& options) {
  JsonSchemaConverter converter(schema, options);
  return converter.Convert();
}

StatusOr<std::string> JsonSchemaToGbnf(std::string_view schema_json,
                                       const JsonSchemaOptions& options) {
  if (JsonNestingDepth(schema_json) > 2 * options.max_depth + 8) {
    return InvalidArgumentError("JSON schema nests deeper than the limit");
  }
  Json schema = Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidArgumentError("JSON schema is not valid JSON");
  return ParsedJsonSchemaToGbnf(schema, options);
}

std::string JsonObjectGbnf(const JsonSchemaOptions& options) {
  Json empty = Json::object();
  JsonSchemaConverter converter(empty, options);
  return converter.AnyObjectGrammar();
}

StatusOr<std::shared_ptr<const Grammar>> GrammarFromJsonSchema(std::string_view schema_json,
                                                               const JsonSchemaOptions& options) {
  ASSIGN_OR_RETURN(std::string gbnf, JsonSchemaToGbnf(schema_json, options));
  auto grammar = Grammar::FromGbnf(gbnf, options.limits);
  if (!grammar.ok()) {
    return Status(grammar.status().code(), "JSON schema's grammar: " + grammar.status().message());
  }
  return grammar;
}

}  // namespace forge
