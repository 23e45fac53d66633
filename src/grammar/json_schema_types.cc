// JsonSchemaConverter by type: objects (properties in order, optional ones skippable, other keys
// excluded by a trie of the declared names), arrays (prefix items, min/max counts), strings
// (lengths, patterns, formats) and numbers (bounds).
#include <cmath>
#include <map>
#include <optional>

#include "grammar/codepoint_set.h"
#include "grammar/json_schema_converter.h"
#include "grammar/number_range_gbnf.h"
#include "grammar/regex_to_gbnf.h"

namespace forge {
namespace {

using Json = nlohmann::ordered_json;

const std::string kQuote = "\"\\\"\"";  // GBNF for a double quote

std::string Literal(const std::string& text) { return codepoints::GbnfLiteral(text); }

// A non-negative integer keyword (minItems, maxLength, ...); nullopt when absent.
StatusOr<std::optional<int64_t>> Count(const Json& schema, const char* key, const std::string& path,
                                       int64_t limit) {
  auto it = schema.find(key);
  if (it == schema.end()) return std::optional<int64_t>();
  if (!it->is_number()) {
    return InvalidArgumentError("JSON schema at " + path + ": " + key + " must be a number");
  }
  const double v = it->get<double>();
  if (v < 0 || v != std::floor(v)) {
    return InvalidArgumentError("JSON schema at " + path + ": " + key +
                                " must be a non-negative integer");
  }
  if (v > static_cast<double>(limit)) {
    return InvalidArgumentError("JSON schema at " + path + ": " + key + " " + it->dump() +
                                " is past the supported limit of " + std::to_string(limit));
  }
  return std::optional<int64_t>(static_cast<int64_t>(v));
}

std::string Utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

// Code points of valid UTF-8 text (the JSON parser checked it).
std::vector<uint32_t> Codepoints(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len && i + static_cast<size_t>(k) < s.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
    }
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return out;
}

}  // namespace

std::string JsonSchemaConverter::KeyOtherThan(const std::vector<std::string>& names,
                                              const std::string& hint) {
  // Key characters: anything a JSON string holds unescaped (escapes could spell a declared name
  // another way, so extra keys have none).
  const std::vector<CodepointRange> key_chars =
      codepoints::Complement(codepoints::Normalize({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
  const std::string key_char = rules_.Add(hint + "-key-char", codepoints::ToGbnfClass(key_chars));
  // A trie of the names (those a key could spell at all).
  struct TrieNode {
    std::map<uint32_t, int> children;
    bool terminal = false;
  };
  std::vector<TrieNode> trie(1);
  for (const std::string& name : names) {
    const std::vector<uint32_t> cps = Codepoints(name);
    bool spellable = true;
    for (uint32_t cp : cps) spellable = spellable && codepoints::Contains(key_chars, cp);
    if (!spellable) continue;
    int node = 0;
    for (uint32_t cp : cps) {
      auto it = trie[static_cast<size_t>(node)].children.find(cp);
      if (it == trie[static_cast<size_t>(node)].children.end()) {
        trie.emplace_back();
        it = trie[static_cast<size_t>(node)]
                 .children.emplace(cp, static_cast<int>(trie.size() - 1))
                 .first;
      }
      node = it->second;
    }
    trie[static_cast<size_t>(node)].terminal = true;
  }
  // Rule per trie node: the rest of a key (and its closing quote) that leads away from the names.
  std::vector<std::string> names_of(trie.size());
  for (size_t i = 0; i < trie.size(); ++i) names_of[i] = rules_.Reserve(hint + "-key");
  for (size_t i = 0; i < trie.size(); ++i) {
    const TrieNode& n = trie[i];
    std::vector<std::string> alts;
    if (!n.terminal) alts.push_back(kQuote);
    std::vector<CodepointRange> others = key_chars;
    for (const auto& [cp, child] : n.children) {
      others = codepoints::Subtract(others, {{cp, cp}});
      alts.push_back(Literal(Utf8(cp)) + " " + names_of[static_cast<size_t>(child)]);
    }
    if (!others.empty()) {
      alts.push_back(codepoints::ToGbnfClass(others) + " " + key_char + "* " + kQuote);
    }
    std::string body;
    for (size_t k = 0; k < alts.size(); ++k) body += (k ? " | " : "") + alts[k];
    rules_.Define(names_of[i], body);
  }
  return rules_.Add(hint + "-key", kQuote + " " + names_of[0]);
}

StatusOr<std::string> JsonSchemaConverter::Object(const Json& schema, const std::string& path,
                                                  const std::string& hint, int depth) {
  struct Property {
    std::string name;
    const Json* schema;
    bool required;
  };
  static const Json kAny = true;
  std::vector<Property> props;
  if (auto p = schema.find("properties"); p != schema.end()) {
    if (!p->is_object()) return Error(path, "properties must be an object");
    for (auto it = p->begin(); it != p->end(); ++it) props.push_back({it.key(), &*it, false});
  }
  if (auto r = schema.find("required"); r != schema.end()) {
    if (!r->is_array()) return Error(path, "required must be a list of names");
    for (const Json& name : *r) {
      if (!name.is_string()) return Error(path, "required must be a list of names");
      bool found = false;
      for (Property& p : props) {
        if (p.name == name.get<std::string>()) {
          p.required = true;
          found = true;
        }
      }
      if (found) continue;
      // Required but not among properties: its value follows additionalProperties.
      const auto extra = schema.find("additionalProperties");
      if (extra != schema.end() && extra->is_boolean() && !extra->get<bool>()) {
        return Error(path, "required property '" + name.get<std::string>() +
                               "' is not in properties and additionalProperties is false");
      }
      const bool typed = extra != schema.end() && extra->is_object();
      props.push_back({name.get<std::string>(), typed ? &*extra : &kAny, true});
    }
  }
  // Other keys: the value expression they take, or none.
  std::optional<std::string> extra_value;
  if (auto a = schema.find("additionalProperties"); a != schema.end()) {
    if (a->is_boolean()) {
      if (a->get<bool>()) extra_value = AnyValue();
    } else {
      ASSIGN_OR_RETURN(extra_value,
                       Visit(*a, path + "/additionalProperties", hint + "-additional", depth + 1));
    }
  } else if (props.empty()) {
    extra_value = AnyValue();
  }
  if (props.empty() && extra_value.has_value() && *extra_value == "value") return AnyObject();

  const std::string ws = Ws();
  const std::string sep = ws + " \",\" " + ws + " ";
  std::string extra_kv, extra_rest;
  if (extra_value.has_value()) {
    std::vector<std::string> names;
    for (const Property& p : props) names.push_back(p.name);
    const std::string key = KeyOtherThan(names, hint + "-additional");
    extra_kv =
        rules_.Add(hint + "-additional-kv", key + " " + ws + " \":\" " + ws + " " + *extra_value);
    extra_rest = rules_.Add(hint + "-additional-rest", "(" + sep + extra_kv + ")*");
  }
  // after[i]: members i.. when one was written before (each led by a comma).
  // first[i]: members i.., at least one, none written before.
  const size_t n = props.size();
  std::vector<std::string> after(n + 1), first(n + 1);
  after[n] = extra_rest;
  if (extra_value.has_value())
    first[n] = rules_.Add(hint + "-additional-first", extra_kv + " " + extra_rest);
  for (size_t i = n; i-- > 0;) {
    const Property& p = props[i];
    if (!p.required && p.schema->is_boolean() && !p.schema->get<bool>()) {
      after[i] = after[i + 1];  // a property that can never appear (nor be another one)
      first[i] = first[i + 1];
      continue;
    }
    ASSIGN_OR_RETURN(std::string value, Visit(*p.schema, path + "/properties/" + p.name,
                                              hint + "-" + p.name, depth + 1));
    const std::string kv =
        rules_.Add(hint + "-" + p.name + "-kv",
                   Literal(Json(p.name).dump(-1, ' ', false, Json::error_handler_t::replace)) +
                       " " + ws + " \":\" " + ws + " " + value);
    const std::string rest = after[i + 1].empty() ? "" : " " + after[i + 1];
    std::string body = sep + kv + rest;
    if (!p.required) body += " | " + (after[i + 1].empty() ? std::string("\"\"") : after[i + 1]);
    after[i] = rules_.Add(hint + "-after-" + p.name, body);
    body = kv + rest;
    if (!p.required && !first[i + 1].empty()) body += " | " + first[i + 1];
    first[i] = rules_.Add(hint + "-from-" + p.name, body);
  }
  bool any_required = false;
  for (const Property& p : props) any_required = any_required || p.required;
  if (first[0].empty()) return rules_.Add(hint, "\"{\" " + ws + " \"}\"");
  if (any_required) return rules_.Add(hint, "\"{\" " + ws + " " + first[0] + " " + ws + " \"}\"");
  return rules_.Add(hint, "\"{\" " + ws + " (" + first[0] + " " + ws + ")? \"}\"");
}

StatusOr<std::string> JsonSchemaConverter::Array(const Json& schema, const std::string& path,
                                                 const std::string& hint, int depth) {
  std::vector<const Json*> prefix;
  std::string prefix_key;
  const Json* rest = nullptr;  // schema of items past the prefix
  bool rest_allowed = true;
  auto items = schema.find("items");
  if (auto p = schema.find("prefixItems"); p != schema.end()) {
    if (!p->is_array()) return Error(path, "prefixItems must be a list");
    for (const Json& s : *p) prefix.push_back(&s);
    prefix_key = "prefixItems";
    if (items != schema.end()) rest = &*items;
  } else if (items != schema.end() && items->is_array()) {
    for (const Json& s : *items) prefix.push_back(&s);
    prefix_key = "items";
    if (auto a = schema.find("additionalItems"); a != schema.end()) rest = &*a;
  } else if (items != schema.end()) {
    rest = &*items;
  }
  if (rest != nullptr && rest->is_boolean() && !rest->get<bool>()) rest_allowed = false;
  const int64_t limit = options_.limits.max_repetition;
  ASSIGN_OR_RETURN(std::optional<int64_t> min_items, Count(schema, "minItems", path, limit));
  ASSIGN_OR_RETURN(std::optional<int64_t> max_items, Count(schema, "maxItems", path, limit));
  const int64_t k = static_cast<int64_t>(prefix.size());
  const int64_t lo = min_items.value_or(0);
  std::optional<int64_t> hi = max_items;
  if (!rest_allowed) hi = std::min(hi.value_or(k), k);
  if (hi.has_value() && lo > *hi) {
    return Error(path, "minItems " + std::to_string(lo) + " is more than the array can hold");
  }
  const std::string ws = Ws();
  if (hi.has_value() && *hi == 0) return rules_.Add(hint, "\"[\" " + ws + " \"]\"");

  std::vector<std::string> item(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    ASSIGN_OR_RETURN(
        item[static_cast<size_t>(i)],
        Visit(*prefix[static_cast<size_t>(i)], path + "/" + prefix_key + "/" + std::to_string(i),
              hint + "-" + std::to_string(i), depth + 1));
  }
  std::string rest_expr;
  if (rest_allowed && (!hi.has_value() || *hi > k)) {
    if (rest == nullptr) {
      rest_expr = AnyValue();
    } else {
      ASSIGN_OR_RETURN(rest_expr, Visit(*rest, path + "/items", hint + "-item", depth + 1));
    }
  }
  const std::string sep = ws + " \",\" " + ws + " ";
  // tail(i): what follows item i-1 (items i..), "" when nothing may.
  std::string tail;
  const int64_t end = hi.has_value() ? *hi : -1;
  if (!rest_expr.empty()) {
    const int64_t from = std::max<int64_t>(k, 1);
    const int64_t rmin = std::max<int64_t>(0, lo - from);
    std::string quant =
        "{" + std::to_string(rmin) + (end < 0 ? "," : "," + std::to_string(end - from)) + "}";
    if (end < 0 || end - from > 0)
      tail = rules_.Add(hint + "-rest", "(" + sep + rest_expr + ")" + quant);
  }
  for (int64_t i = k - 1; i >= 1; --i) {
    if (end >= 0 && i >= end) continue;  // never reached
    std::string body = sep + item[static_cast<size_t>(i)] + (tail.empty() ? "" : " " + tail);
    if (i >= lo) body = "(" + body + ")?";
    tail = rules_.Add(hint + "-tail-" + std::to_string(i), body);
  }
  const std::string head = k > 0 ? item[0] : rest_expr;
  const std::string elements = head + (tail.empty() ? "" : " " + tail);
  if (lo == 0) return rules_.Add(hint, "\"[\" " + ws + " (" + elements + " " + ws + ")? \"]\"");
  return rules_.Add(hint, "\"[\" " + ws + " " + elements + " " + ws + " \"]\"");
}

StatusOr<std::string> JsonSchemaConverter::String(const Json& schema, const std::string& path,
                                                  const std::string& hint) {
  const int64_t limit = options_.limits.max_repetition;
  ASSIGN_OR_RETURN(std::optional<int64_t> min_len, Count(schema, "minLength", path, limit));
  ASSIGN_OR_RETURN(std::optional<int64_t> max_len, Count(schema, "maxLength", path, limit));
  const bool lengths = min_len.has_value() || max_len.has_value();
  if (auto f = schema.find("format"); f != schema.end()) {
    if (!f->is_string()) return Error(path, "format must be a string");
    if (lengths || schema.contains("pattern")) {
      return Error(path, "format together with pattern, minLength or maxLength is not supported");
    }
    ASSIGN_OR_RETURN(std::string rule, Format(f->get<std::string>(), path));
    return rules_.Add(hint, kQuote + " " + rule + " " + kQuote);
  }
  if (auto p = schema.find("pattern"); p != schema.end()) {
    if (!p->is_string()) return Error(path, "pattern must be a string");
    if (lengths) {
      return Error(path, "pattern together with minLength or maxLength is not supported");
    }
    RegexGbnfOptions regex;
    regex.json_string = true;
    regex.any_char = Char();
    regex.max_repetition = options_.limits.max_repetition;
    auto expr = RegexToGbnf(p->get<std::string>(), regex);
    if (!expr.ok()) return Error(path, expr.status().message());
    return rules_.Add(hint, kQuote + " " + *expr + " " + kQuote);
  }
  const int64_t lo = min_len.value_or(0);
  if (max_len.has_value() && *max_len < lo) {
    return Error(path, "maxLength is less than minLength");
  }
  if (!lengths || (lo == 0 && !max_len.has_value())) return StringRule();
  const std::string quant =
      "{" + std::to_string(lo) + "," + (max_len.has_value() ? std::to_string(*max_len) : "") + "}";
  return rules_.Add(hint, kQuote + " " + Char() + quant + " " + kQuote);
}

namespace {

// Bounds of a number schema: minimum/maximum and the exclusive forms (numbers in Draft 6+,
// booleans modifying minimum/maximum in Draft 4).
struct Bounds {
  std::optional<double> lo, hi;
  bool lo_exclusive = false, hi_exclusive = false;
};

StatusOr<Bounds> ReadBounds(const Json& schema, const std::string& path) {
  Bounds b;
  auto number = [&](const char* key, std::optional<double>* out) -> Status {
    auto it = schema.find(key);
    if (it == schema.end()) return Status::Ok();
    if (!it->is_number()) {
      return InvalidArgumentError("JSON schema at " + path + ": " + key + " must be a number");
    }
    *out = it->get<double>();
    if (!std::isfinite(**out) || std::fabs(**out) > 1e18) {
      return InvalidArgumentError("JSON schema at " + path + ": " + key + " " + it->dump() +
                                  " is out of the supported range (|x| <= 1e18)");
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(number("minimum", &b.lo));
  RETURN_IF_ERROR(number("maximum", &b.hi));
  for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"}) {
    auto it = schema.find(key);
    if (it == schema.end()) continue;
    const bool is_min = key[9] == 'M' && key[10] == 'i';
    if (it->is_boolean()) {  // Draft 4
      (is_min ? b.lo_exclusive : b.hi_exclusive) = it->get<bool>();
      continue;
    }
    std::optional<double> v;
    RETURN_IF_ERROR(number(key, &v));
    std::optional<double>& bound = is_min ? b.lo : b.hi;
    bool& exclusive = is_min ? b.lo_exclusive : b.hi_exclusive;
    // The tighter of the two (at an equal value the exclusive one).
    if (!bound.has_value() || (is_min ? *v >= *bound : *v <= *bound)) {
      bound = v;
      exclusive = true;
    }
  }
  return b;
}

}  // namespace

StatusOr<std::string> JsonSchemaConverter::Integer(const Json& schema, const std::string& path,
                                                   const std::string& hint) {
  ASSIGN_OR_RETURN(Bounds b, ReadBounds(schema, path));
  if (!b.lo.has_value() && !b.hi.has_value()) return IntegerRule();
  std::optional<int64_t> lo, hi;
  if (b.lo.has_value()) {
    lo = static_cast<int64_t>(b.lo_exclusive ? std::floor(*b.lo) + 1 : std::ceil(*b.lo));
  }
  if (b.hi.has_value()) {
    hi = static_cast<int64_t>(b.hi_exclusive ? std::ceil(*b.hi) - 1 : std::floor(*b.hi));
  }
  if (lo.has_value() && hi.has_value() && *lo > *hi) {
    return Error(path, "no integer lies within minimum and maximum");
  }
  return rules_.Add(hint, IntegerRangeGbnf(lo, hi, options_.max_number_digits));
}

StatusOr<std::string> JsonSchemaConverter::Number(const Json& schema, const std::string& path,
                                                  const std::string& hint) {
  ASSIGN_OR_RETURN(Bounds b, ReadBounds(schema, path));
  if (!b.lo.has_value() && !b.hi.has_value()) return NumberRule();
  for (const std::optional<double>& v : {b.lo, b.hi}) {
    if (v.has_value() && (*v < 0 || *v != std::floor(*v))) {
      return Error(path,
                   "bounds of a number are supported when they are non-negative integers "
                   "(got " +
                       Json(*v).dump() + "; an integer type takes any bound)");
    }
  }
  std::optional<int64_t> lo, hi;
  if (b.lo.has_value()) lo = static_cast<int64_t>(*b.lo);
  if (b.hi.has_value()) hi = static_cast<int64_t>(*b.hi);
  if (lo.has_value() && hi.has_value() &&
      (*lo > *hi || (*lo == *hi && (b.lo_exclusive || b.hi_exclusive)))) {
    return Error(path, "no number lies within minimum and maximum");
  }
  return rules_.Add(
      hint, DecimalRangeGbnf(lo, b.lo_exclusive, hi, b.hi_exclusive, options_.max_number_digits,
                             options_.max_fraction_digits));
}

}  // namespace forge
