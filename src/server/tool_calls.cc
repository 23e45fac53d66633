// Tool calls: format detection, the parser (call blocks found with a JSON-aware scan for the
// end of each object, so "</tool_call>" inside a string does not end a block), the stream that
// holds back what may begin a call, and the grammar of calls built from each tool's schema.
#include "server/tool_calls.h"

#include <algorithm>

#include "base/check.h"
#include "base/json_scan.h"
#include "grammar/codepoint_set.h"
#include "grammar/json_schema.h"

namespace forge::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
// Deepest nesting of arguments parsed (deeper is not a call: the JSON parser recurses).
constexpr int kMaxJsonDepth = 256;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t SkipSpace(std::string_view s, size_t pos) {
  while (pos < s.size() && IsSpace(s[pos])) ++pos;
  return pos;
}

std::string_view TrimLeft(std::string_view s) { return s.substr(SkipSpace(s, 0)); }

std::string_view TrimRight(std::string_view s) {
  size_t end = s.size();
  while (end > 0 && IsSpace(s[end - 1])) --end;
  return s.substr(0, end);
}

// The length of the longest suffix of s that is a proper prefix of tag.
size_t PartialTag(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether word occurs in s as a whole identifier.
bool HasWord(std::string_view s, std::string_view word) {
  for (size_t at = s.find(word); at != std::string_view::npos; at = s.find(word, at + 1)) {
    const bool left = at == 0 || !IsIdentChar(s[at - 1]);
    const size_t end = at + word.size();
    const bool right = end >= s.size() || !IsIdentChar(s[end]);
    if (left && right) return true;
  }
  return false;
}

// The JSON value (object or array) at s[*pos], parsed; *pos moves past it. False when there is
// none or it does not parse.
bool TakeJson(std::string_view s, size_t* pos, char open, Json* out) {
  if (*pos >= s.size() || s[*pos] != open) return false;
  const size_t end = JsonValueEnd(s, *pos, kMaxJsonDepth);
  if (end == std::string_view::npos) return false;
  *out = Json::parse(s.substr(*pos, end - *pos), nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) return false;
  *pos = end;
  return true;
}

// One call object, checked against tools.
std::optional<ToolCall> MakeCall(const Json& item, ToolCallFormat format,
                                 const std::vector<ToolSpec>& tools) {
  if (!item.is_object()) return std::nullopt;
  auto name = item.find("name");
  if (name == item.end() || !name->is_string()) return std::nullopt;
  const std::string& n = name->get_ref<const std::string&>();
  if (std::none_of(tools.begin(), tools.end(), [&](const ToolSpec& t) { return t.name == n; })) {
    return std::nullopt;
  }
  auto args = item.end();
  if (format == ToolCallFormat::kLlama31) args = item.find("parameters");
  if (args == item.end()) args = item.find("arguments");
  ToolCall call;
  call.name = n;
  if (args == item.end()) {
    call.arguments = "{}";
  } else if (args->is_object()) {
    call.arguments = args->dump(-1, ' ', false, Json::error_handler_t::replace);
  } else {
    return std::nullopt;
  }
  return call;
}

// A block after a marker: its call objects; *pos moves past the block.
bool HermesBlock(std::string_view s, size_t* pos, std::vector<Json>* items) {
  size_t p = SkipSpace(s, *pos);
  Json item;
  if (!TakeJson(s, &p, '{', &item)) return false;
  p = SkipSpace(s, p);
  if (s.substr(p, kHermesClose.size()) == kHermesClose) {
    p += kHermesClose.size();
  } else if (p != s.size()) {  // an unclosed block is allowed only at the end
    return false;
  }
  items->push_back(std::move(item));
  *pos = p;
  return true;
}

bool MistralBlock(std::string_view s, size_t* pos, std::vector<Json>* items) {
  size_t p = SkipSpace(s, *pos);
  Json list;
  if (!TakeJson(s, &p, '[', &list) || !list.is_array() || list.empty()) return false;
  for (Json& item : list) items->push_back(std::move(item));
  *pos = p;
  return true;
}

// kHermes, kMistral: content around blocks that each begin with marker.
bool ParseMarked(std::string_view text, std::string_view marker,
                 bool (*block)(std::string_view, size_t*, std::vector<Json>*), std::string* content,
                 std::vector<Json>* items) {
  size_t pos = 0;
  while (true) {
    const size_t m = text.find(marker, pos);
    std::string_view segment =
        text.substr(pos, m == std::string_view::npos ? std::string_view::npos : m - pos);
    if (pos > 0) segment = TrimLeft(segment);  // after a block
    if (m != std::string_view::npos) segment = TrimRight(segment);
    content->append(segment);
    if (m == std::string_view::npos) return true;
    pos = m + marker.size();
    if (!block(text, &pos, items)) return false;
  }
}

// kLlama31: the whole reply is calls separated by ";", maybe after <|python_tag|>.
bool ParseLlama(std::string_view text, std::vector<Json>* items) {
  size_t p = SkipSpace(text, 0);
  if (text.substr(p, kPythonTag.size()) == kPythonTag) p = SkipSpace(text, p + kPythonTag.size());
  while (true) {
    Json item;
    if (!TakeJson(text, &p, '{', &item)) return false;
    items->push_back(std::move(item));
    p = SkipSpace(text, p);
    if (p == text.size()) return true;
    if (text[p] != ';') return false;
    p = SkipSpace(text, p + 1);
    if (p == text.size()) return true;
  }
}

// kGeneric: the whole reply is {"tool_calls": [...]}.
bool ParseGeneric(std::string_view text, std::vector<Json>* items) {
  size_t p = SkipSpace(text, 0);
  Json reply;
  if (!TakeJson(text, &p, '{', &reply) || SkipSpace(text, p) != text.size()) return false;
  if (!reply.is_object() || reply.size() != 1) return false;
  auto list = reply.find("tool_calls");
  if (list == reply.end() || !list->is_array() || list->empty()) return false;
  for (Json& item : *list) items->push_back(std::move(item));
  return true;
}

uint64_t Mix(uint64_t z) {  // splitmix64's finalizer: a bijection of 64-bit words
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr std::string_view kIdChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

// Rule names of a GBNF text (every word outside literals, classes, repetition counts and
// comments) with prefix put before them.
std::string PrefixRuleNames(std::string_view gbnf, std::string_view prefix) {
  std::string out;
  out.reserve(gbnf.size() * 5 / 4);
  size_t i = 0;
  auto copy_until = [&](char close) {  // copies s[i] and what follows through close
    out.push_back(gbnf[i++]);
    while (i < gbnf.size()) {
      const char c = gbnf[i++];
      out.push_back(c);
      if (c == '\\' && close != '\n' && i < gbnf.size()) {
        out.push_back(gbnf[i++]);
      } else if (c == close) {
        return;
      }
    }
  };
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    if (c == '"') {
      copy_until('"');
    } else if (c == '[') {
      copy_until(']');
    } else if (c == '{') {
      copy_until('}');
    } else if (c == '#') {
      copy_until('\n');
    } else if (IsIdentChar(c) || c == '-') {
      out.append(prefix);
      while (i < gbnf.size() && (IsIdentChar(gbnf[i]) || gbnf[i] == '-')) out.push_back(gbnf[i++]);
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
}

// Whether a parameters schema allows any object: null, {} or only annotations.
bool AnyObjectSchema(const Json& schema) {
  if (schema.is_null()) return true;
  if (!schema.is_object()) return false;
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& k = it.key();
    if (k != "title" && k != "description" && k != "$schema" && k != "$comment" && k != "$id" &&
        k != "examples" && k != "default") {
      return false;
    }
  }
  return true;
}

// Whether a schema's "type" (when it has one) lets the value be an object.
bool TypeAllowsObject(const Json& schema) {
  auto type = schema.find("type");
  if (type == schema.end()) return true;
  if (type->is_string()) return *type == "object";
  if (type->is_array()) {
    return std::any_of(type->begin(), type->end(), [](const Json& t) { return t == "object"; });
  }
  return false;
}

std::string Lit(std::string_view text) { return codepoints::GbnfLiteral(text); }

}  // namespace

ToolCallFormat DetectToolCallFormat(std::string_view source) {
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find(kMistralMarker) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (source.find(kPythonTag) != std::string_view::npos ||
      (source.find("\"parameters\"") != std::string_view::npos &&
       source.find("ipython") != std::string_view::npos)) {
    return ToolCallFormat::kLlama31;
  }
  if (HasWord(source, "tools")) return ToolCallFormat::kGeneric;
  return ToolCallFormat::kNone;
}

const char* ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "none";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama31:
      return "llama3.1";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kGeneric:
      return "generic";
  }
  return "unknown";
}

std::string ToolCallId(uint64_t id_seed, size_t index) {
  // The first 11 characters spell a bijection of index (62^11 > 2^64): distinct indexes give
  // distinct ids. The other 13 are more bits of the same mix.
  const uint64_t mixed = Mix(Mix(id_seed) + static_cast<uint64_t>(index));
  std::string id = "call_";
  for (uint64_t v = mixed, i = 0; i < 11; ++i, v /= kIdChars.size()) {
    id.push_back(kIdChars[v % kIdChars.size()]);
  }
  uint64_t more = mixed ^ 0x5DEECE66Dull;
  for (int i = 0; i < 13; ++i) {
    if (i % 8 == 0) more = Mix(more);
    id.push_back(kIdChars[(more >> (8 * (i % 8))) % kIdChars.size()]);
  }
  return id;
}

ParsedReply ParseToolCalls(ToolCallFormat format, std::string_view text,
                           const std::vector<ToolSpec>& tools, uint64_t id_seed) {
  ParsedReply out;
  std::vector<Json> items;
  bool ok = false;
  switch (format) {
    case ToolCallFormat::kNone:
      break;
    case ToolCallFormat::kHermes:
      ok = ParseMarked(text, kHermesOpen, HermesBlock, &out.content, &items);
      break;
    case ToolCallFormat::kMistral:
      ok = ParseMarked(text, kMistralMarker, MistralBlock, &out.content, &items);
      break;
    case ToolCallFormat::kLlama31:
      ok = ParseLlama(text, &items);
      break;
    case ToolCallFormat::kGeneric:
      ok = ParseGeneric(text, &items);
      break;
  }
  for (size_t i = 0; ok && i < items.size(); ++i) {
    std::optional<ToolCall> call = MakeCall(items[i], format, tools);
    if (!call.has_value()) {
      ok = false;
      break;
    }
    // Mistral's template takes only ids of 9 alphanumeric characters back in the history.
    call->id = format == ToolCallFormat::kMistral ? ToolCallId(id_seed, i).substr(5, 9)
                                                  : ToolCallId(id_seed, i);
    out.calls.push_back(std::move(*call));
  }
  if (!ok || out.calls.empty()) return ParsedReply{std::string(text), {}};
  return out;
}

ToolCallStream::ToolCallStream(ToolCallFormat format, std::vector<ToolSpec> tools, uint64_t id_seed)
    : format_(format), tools_(std::move(tools)), id_seed_(id_seed) {}

ToolCallStream::Delta ToolCallStream::Feed(std::string_view piece) {
  Delta out;
  if (finished_) return out;
  text_.append(piece);
  if (holding_) return out;
  size_t end = text_.size();  // content may go out up to here
  switch (format_) {
    case ToolCallFormat::kNone:
      break;
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kMistral: {
      const std::string_view marker =
          format_ == ToolCallFormat::kHermes ? kHermesOpen : kMistralMarker;
      const size_t m = text_.find(marker, scanned_);
      if (m != std::string::npos) {
        holding_ = true;
        end = m;
      } else {
        end = text_.size() - PartialTag(text_, marker);
        scanned_ = end;
      }
      // Whitespace right before a block belongs to the block.
      while (end > emitted_ && IsSpace(text_[end - 1])) --end;
      break;
    }
    case ToolCallFormat::kLlama31:
    case ToolCallFormat::kGeneric: {
      if (decided_) break;
      const size_t first = SkipSpace(text_, 0);
      const std::string_view rest = std::string_view(text_).substr(first);
      if (rest.empty()) return out;  // only whitespace yet
      if (rest[0] == '{') {
        holding_ = true;
        return out;
      }
      if (format_ == ToolCallFormat::kLlama31) {
        if (rest.substr(0, kPythonTag.size()) == kPythonTag) {
          holding_ = true;
          return out;
        }
        if (kPythonTag.substr(0, rest.size()) == rest) return out;  // may become the tag
      }
      decided_ = true;  // not a call: all of it is content
      break;
    }
  }
  if (end > emitted_) {
    out.content = text_.substr(emitted_, end - emitted_);
    emitted_ = end;
  }
  return out;
}

ToolCallStream::Delta ToolCallStream::Finish() {
  Delta out;
  if (finished_) return out;
  finished_ = true;
  ParsedReply reply = ParseToolCalls(format_, text_, tools_, id_seed_);
  // What went out is a prefix of the content: the text before any marker, less the whitespace
  // that a block absorbs, or all of a reply that is content.
  DCHECK(reply.content.compare(0, emitted_, text_, 0, emitted_) == 0);
  if (reply.content.size() > emitted_) out.content = reply.content.substr(emitted_);
  out.calls = std::move(reply.calls);
  return out;
}

StatusOr<std::string> ToolCallGbnf(ToolCallFormat format, const std::vector<ToolSpec>& tools,
                                   bool parallel, std::optional<std::string> only) {
  if (format == ToolCallFormat::kNone) {
    return InvalidArgumentError("tool calls: the chat template has no tool call format");
  }
  std::vector<const ToolSpec*> chosen;
  for (const ToolSpec& t : tools) {
    if (!only.has_value() || t.name == *only) chosen.push_back(&t);
  }
  if (only.has_value() && chosen.empty()) {
    return InvalidArgumentError("tool_choice names function '" + *only +
                                "', which is not among the tools");
  }
  if (chosen.empty()) return InvalidArgumentError("tool calls: no tools are given");

  const std::string args_key =
      format == ToolCallFormat::kLlama31 ? "\"parameters\"" : "\"arguments\"";
  std::string rules, call_body;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const ToolSpec& tool = *chosen[i];
    std::string gbnf;
    if (AnyObjectSchema(tool.parameters)) {
      gbnf = JsonObjectGbnf();
    } else {
      if (!tool.parameters.is_object() || !TypeAllowsObject(tool.parameters)) {
        return InvalidArgumentError("tool '" + tool.name +
                                    "': parameters must be a JSON schema of an object");
      }
      StatusOr<std::string> converted = ParsedJsonSchemaToGbnf(tool.parameters);
      if (!converted.ok()) {
        return InvalidArgumentError("tool '" + tool.name +
                                    "': parameters: " + converted.status().message());
      }
      gbnf = std::move(converted).value();
    }
    const std::string prefix = "tool" + std::to_string(i) + "-";
    rules += PrefixRuleNames(gbnf, prefix);
    const std::string quoted_name =
        Json(tool.name).dump(-1, ' ', false, Json::error_handler_t::replace);
    call_body += (i ? " | " : "") + Lit("{\"name\": ") + " " + Lit(quoted_name) + " " +
                 Lit(", " + args_key + ": ") + " " + prefix + "root " + Lit("}");
  }
  // item, or (parallel) one or more items joined by sep.
  auto list = [&](const std::string& item, std::string_view sep) {
    return parallel ? item + " (" + Lit(sep) + " " + item + ")*" : item;
  };
  std::string root;
  switch (format) {
    case ToolCallFormat::kHermes:
      root = list("block", "\n") + "\nblock ::= " + Lit("<tool_call>\n") + " call " +
             Lit("\n</tool_call>");
      break;
    case ToolCallFormat::kMistral:
      root = Lit("[TOOL_CALLS] [") + " " + list("call", ", ") + " " + Lit("]");
      break;
    case ToolCallFormat::kLlama31:
      root = list("call", ";");
      break;
    case ToolCallFormat::kGeneric:
      root = Lit("{\"tool_calls\": [") + " " + list("call", ", ") + " " + Lit("]}");
      break;
    case ToolCallFormat::kNone:
      break;
  }
  return "root ::= " + root + "\ncall ::= " + call_body + "\n" + rules;
}

}  // namespace forge::server
