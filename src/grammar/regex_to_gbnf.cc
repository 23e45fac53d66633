// Regex -> GBNF: the parsed pattern's tree spelled as a GBNF expression, characters spelled as
// they appear in JSON strings when asked (a quote as \", a newline as \n, ...), and any-character
// runs around the ends that are not anchored.
#include "grammar/regex_to_gbnf.h"

#include <vector>

#include "grammar/codepoint_set.h"
#include "grammar/regex_ast.h"

namespace forge {
namespace {

using Set = std::vector<CodepointRange>;

class Emitter {
 public:
  explicit Emitter(const RegexGbnfOptions& options) : options_(options) {}

  // The nodes emitted in parentheses, separated by sep (a sequence or alternatives).
  StatusOr<std::string> Group(const std::vector<RegexNode>& nodes, const char* sep) {
    std::string out = "(";
    for (size_t i = 0; i < nodes.size(); ++i) {
      ASSIGN_OR_RETURN(std::string c, Emit(nodes[i]));
      out += (i ? sep : "") + c;
    }
    return out + ")";
  }

  StatusOr<std::string> Emit(const RegexNode& n) {
    switch (n.kind) {
      case RegexNode::Kind::kEmpty:
        return std::string("\"\"");
      case RegexNode::Kind::kChars:
        return Chars(n.chars);
      case RegexNode::Kind::kSeq:
        return Group(n.children, " ");
      case RegexNode::Kind::kAlt:
        return Group(n.children, " | ");
      case RegexNode::Kind::kRepeat: {
        const RegexNode& child = n.children[0];
        if (n.max < 0 && RegexNullable(child)) {
          return InvalidArgumentError(
              "an unbounded quantifier over a part that can match the empty string is not "
              "supported");
        }
        ASSIGN_OR_RETURN(std::string c, Emit(child));
        if (n.max == 0) return std::string("\"\"");
        std::string q;
        if (n.min == 0 && n.max < 0) {
          q = "*";
        } else if (n.min == 1 && n.max < 0) {
          q = "+";
        } else if (n.min == 0 && n.max == 1) {
          q = "?";
        } else if (n.max < 0) {
          q = "{" + std::to_string(n.min) + ",}";
        } else if (n.min == n.max) {
          q = "{" + std::to_string(n.min) + "}";
        } else {
          q = "{" + std::to_string(n.min) + "," + std::to_string(n.max) + "}";
        }
        return "(" + c + ")" + q;
      }
    }
    return std::string("\"\"");
  }

 private:
  std::string Chars(const Set& set) const {
    if (!options_.json_string) return Class(set);
    std::vector<std::string> parts;
    const Set raw = codepoints::Subtract(set, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
    if (!raw.empty()) parts.push_back(Class(raw));
    if (codepoints::Contains(set, '"')) parts.push_back(codepoints::GbnfLiteral("\\\""));
    if (codepoints::Contains(set, '\\')) parts.push_back(codepoints::GbnfLiteral("\\\\"));
    std::string hex_digits[2];  // \u000X and \u001X escapes by their last digit
    for (uint32_t c = 0; c < 0x20; ++c) {
      if (!codepoints::Contains(set, c)) continue;
      const char* short_form = c == 0x08   ? "\\b"
                               : c == '\t' ? "\\t"
                               : c == '\n' ? "\\n"
                               : c == 0x0C ? "\\f"
                               : c == '\r' ? "\\r"
                                           : nullptr;
      if (short_form != nullptr) {
        parts.push_back(codepoints::GbnfLiteral(short_form));
        continue;
      }
      const uint32_t d = c & 15;
      hex_digits[c >> 4] +=
          d < 10 ? std::string(1, static_cast<char>('0' + d))
                 : std::string{static_cast<char>('a' + d - 10), static_cast<char>('A' + d - 10)};
    }
    for (int hi = 0; hi < 2; ++hi) {
      if (hex_digits[hi].empty()) continue;
      parts.push_back("\"\\\\u00" + std::to_string(hi) + "\" [" + hex_digits[hi] + "]");
    }
    if (parts.empty()) return "[]";
    if (parts.size() == 1) return parts[0];
    std::string out = "(";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
    return out + ")";
  }

  static std::string Class(const Set& set) {
    if (set.size() == 1 && set[0].lo == set[0].hi && set[0].lo >= 0x20 && set[0].lo < 0x7F) {
      return codepoints::GbnfLiteral(std::string(1, static_cast<char>(set[0].lo)));
    }
    return codepoints::ToGbnfClass(set);
  }

  const RegexGbnfOptions& options_;
};

}  // namespace

StatusOr<std::string> RegexToGbnf(std::string_view pattern, const RegexGbnfOptions& options) {
  ASSIGN_OR_RETURN(std::vector<RegexAlternative> alts,
                   ParseRegex(pattern, options.max_repetition, options.max_nesting));
  Emitter emitter(options);
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) {
    auto body = emitter.Emit(alts[i].node);
    if (!body.ok()) {
      return InvalidArgumentError("pattern '" + std::string(pattern) +
                                  "': " + body.status().message());
    }
    std::string alt;
    if (!alts[i].anchored_start) alt += "(" + options.any_char + ")* ";
    alt += *body;
    if (!alts[i].anchored_end) alt += " (" + options.any_char + ")*";
    out += (i ? " | " : "") + alt;
  }
  return out + ")";
}

}  // namespace forge
