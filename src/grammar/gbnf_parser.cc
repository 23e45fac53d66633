// The GBNF parser: recursive descent over the text (bounded nesting), building GrammarIr rules.
// Groups become rules; x* becomes R ::= x R | "", x? becomes R ::= x | "", and x{m,n} becomes m
// copies of x and a chain of n-m optional ones, so repetition costs O(n) rules, never O(n^2).
#include "grammar/gbnf_parser.h"

#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "base/escapes.h"
#include "grammar/codepoint_set.h"

namespace forge {
namespace {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

  StatusOr<GrammarIr> Run() {
    if (text_.size() > limits_.max_text_bytes) {
      return ResourceExhaustedError("grammar is " + std::to_string(text_.size()) +
                                    " bytes, more than the limit of " +
                                    std::to_string(limits_.max_text_bytes));
    }
    SkipSpace(true);
    while (pos_ < text_.size()) {
      RETURN_IF_ERROR(ParseRule());
      SkipSpace(true);
    }
    for (size_t i = 0; i < ir_.rules.size(); ++i) {
      const IrRule& rule = ir_.rules[i];
      if (!rule.defined) return Error(rule.first_use, "undefined rule '" + rule.name + "'");
    }
    auto root = names_.find("root");
    if (root == names_.end()) return InvalidArgumentError("grammar has no rule named 'root'");
    ir_.root = root->second;
    return std::move(ir_);
  }

 private:
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool AtEnd() const { return pos_ >= text_.size(); }

  Status Error(size_t at, const std::string& message) const {
    return InvalidArgumentError(Where(at) + ": " + message);
  }

  // "line L, column C" (1-based; columns count code points).
  std::string Where(size_t at) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text_[i]);
      if (c == '\n') {
        ++line;
        column = 1;
      } else if ((c & 0xC0) != 0x80) {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  // Blanks and # comments; line breaks only where newline_ok (inside groups, after ::= and |).
  void SkipSpace(bool newline_ok) {
    while (!AtEnd()) {
      const char c = Peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n' && Peek() != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view ParseName() {
    const size_t start = pos_;
    while (!AtEnd() && IsWordChar(Peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  StatusOr<int32_t> NewRule(std::string name, bool generated, size_t at) {
    if (static_cast<int>(ir_.rules.size()) >= limits_.max_rules) {
      return ResourceExhaustedError("grammar needs more than " + std::to_string(limits_.max_rules) +
                                    " rules (limit)");
    }
    IrRule rule;
    rule.name = std::move(name);
    rule.generated = generated;
    rule.defined = generated;
    rule.first_use = at;
    ir_.rules.push_back(std::move(rule));
    return static_cast<int32_t>(ir_.rules.size() - 1);
  }

  StatusOr<int32_t> RuleByName(std::string_view name, size_t at) {
    auto it = names_.find(std::string(name));
    if (it != names_.end()) return it->second;
    ASSIGN_OR_RETURN(int32_t id, NewRule(std::string(name), false, at));
    names_.emplace(std::string(name), id);
    return id;
  }

  StatusOr<int32_t> GeneratedRule(std::vector<IrSequence> alternatives) {
    std::string name = ir_.rules[base_rule_].name + "_" + std::to_string(++generated_count_);
    ASSIGN_OR_RETURN(int32_t id, NewRule(std::move(name), true, pos_));
    ir_.rules[id].alternatives = std::move(alternatives);
    return id;
  }

  int32_t ClassId(std::vector<CodepointRange> ranges) {
    ranges = codepoints::Normalize(std::move(ranges));
    auto [it, inserted] = class_ids_.emplace(ranges, static_cast<int32_t>(ir_.classes.size()));
    if (inserted) ir_.classes.push_back(std::move(ranges));
    return it->second;
  }

  Status Append(IrSequence* seq, IrSymbol symbol) {
    if (++symbol_count_ > limits_.max_symbols) {
      return ResourceExhaustedError("grammar needs more than " +
                                    std::to_string(limits_.max_symbols) + " symbols (limit)");
    }
    seq->push_back(symbol);
    return Status::Ok();
  }

  Status ParseRule() {
    const size_t name_at = pos_;
    const std::string_view name = ParseName();
    if (name.empty()) return Error(pos_, "expected a rule name");
    ASSIGN_OR_RETURN(const int32_t id, RuleByName(name, name_at));
    if (ir_.rules[id].defined) {
      return Error(name_at, "rule '" + std::string(name) + "' is defined twice (first at " +
                                Where(defined_at_[id]) + ")");
    }
    ir_.rules[id].defined = true;
    defined_at_[id] = name_at;
    SkipSpace(false);
    if (text_.substr(pos_, 3) != "::=") {
      return Error(pos_, "expected '::=' after rule name '" + std::string(name) + "'");
    }
    pos_ += 3;
    SkipSpace(true);
    base_rule_ = id;
    std::vector<IrSequence> alternatives;
    RETURN_IF_ERROR(ParseAlternatives(false, 0, &alternatives));
    ir_.rules[id].alternatives = std::move(alternatives);
    if (AtEnd()) return Status::Ok();
    if (Peek() == '\r' || Peek() == '\n') {  // \n, \r\n or a lone \r
      if (Peek() == '\r') ++pos_;
      if (Peek() == '\n') ++pos_;
      return Status::Ok();
    }
    const unsigned char c = static_cast<unsigned char>(Peek());
    const size_t len = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return Error(pos_, "expected end of line after rule '" + std::string(name) + "', found '" +
                           std::string(text_.substr(pos_, len)) + "'");
  }

  Status ParseAlternatives(bool nested, int depth, std::vector<IrSequence>* alternatives) {
    while (true) {
      IrSequence seq;
      RETURN_IF_ERROR(ParseSequence(nested, depth, &seq));
      alternatives->push_back(std::move(seq));
      if (Peek() != '|') return Status::Ok();
      ++pos_;
      SkipSpace(true);
    }
  }

  Status ParseSequence(bool nested, int depth, IrSequence* seq) {
    size_t last_start = seq->size();
    bool has_last = false;
    while (!AtEnd()) {
      const size_t at = pos_;
      const char c = Peek();
      if (c == '"') {
        last_start = seq->size();
        has_last = true;
        RETURN_IF_ERROR(ParseLiteral(seq));
      } else if (c == '[') {
        last_start = seq->size();
        has_last = true;
        ASSIGN_OR_RETURN(std::vector<CodepointRange> ranges, ParseClass());
        RETURN_IF_ERROR(Append(seq, {IrSymbol::Kind::kClass, ClassId(std::move(ranges))}));
      } else if (c == '.') {
        ++pos_;
        last_start = seq->size();
        has_last = true;
        RETURN_IF_ERROR(Append(seq, {IrSymbol::Kind::kClass, ClassId({{0, kMaxCodepoint}})}));
      } else if (IsWordChar(c)) {
        const std::string_view name = ParseName();
        ASSIGN_OR_RETURN(const int32_t id, RuleByName(name, at));
        last_start = seq->size();
        has_last = true;
        RETURN_IF_ERROR(Append(seq, {IrSymbol::Kind::kRule, id}));
      } else if (c == '(') {
        if (depth + 1 > limits_.max_nesting) {
          return Error(at, "groups nested deeper than " + std::to_string(limits_.max_nesting));
        }
        ++pos_;
        SkipSpace(true);
        std::vector<IrSequence> alternatives;
        RETURN_IF_ERROR(ParseAlternatives(true, depth + 1, &alternatives));
        if (Peek() != ')')
          return Error(pos_, "expected ')' to close the group opened at " + Where(at));
        ++pos_;
        last_start = seq->size();
        has_last = true;
        if (alternatives.size() == 1) {
          symbol_count_ -= static_cast<int>(alternatives[0].size());  // counted once, inside
          for (const IrSymbol& s : alternatives[0]) RETURN_IF_ERROR(Append(seq, s));
        } else {
          ASSIGN_OR_RETURN(const int32_t id, GeneratedRule(std::move(alternatives)));
          RETURN_IF_ERROR(Append(seq, {IrSymbol::Kind::kRule, id}));
        }
      } else if (c == '<' || c == '!') {
        return Error(at, "token references (<...>, <[id]>, !<...>) are not supported");
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!has_last) {
          return Error(at, std::string("'") + c + "' must follow a symbol, literal or group");
        }
        uint64_t min = 0, max = kUnbounded;
        if (c == '*') {
          ++pos_;
        } else if (c == '+') {
          min = 1;
          ++pos_;
        } else if (c == '?') {
          max = 1;
          ++pos_;
        } else {
          RETURN_IF_ERROR(ParseBraces(&min, &max));
        }
        RETURN_IF_ERROR(Repeat(seq, last_start, min, max));
      } else {
        break;
      }
      SkipSpace(nested);
    }
    return Status::Ok();
  }

  // {m}, {m,}, {m,n}; pos_ is at '{'.
  Status ParseBraces(uint64_t* min, uint64_t* max) {
    const size_t at = pos_;
    ++pos_;
    SkipSpace(false);
    ASSIGN_OR_RETURN(*min, ParseCount());
    SkipSpace(false);
    if (Peek() == '}') {
      *max = *min;
    } else if (Peek() == ',') {
      ++pos_;
      SkipSpace(false);
      if (Peek() == '}') {
        *max = kUnbounded;
      } else {
        ASSIGN_OR_RETURN(*max, ParseCount());
        SkipSpace(false);
      }
    }
    if (Peek() != '}') return Error(pos_, "expected '}' to close the repetition");
    ++pos_;
    if (*max != kUnbounded && *max < *min) {
      return Error(at, "repetition {" + std::to_string(*min) + "," + std::to_string(*max) +
                           "} has its maximum below its minimum");
    }
    return Status::Ok();
  }

  StatusOr<uint64_t> ParseCount() {
    const size_t at = pos_;
    uint64_t value = 0;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      value = value * 10 + static_cast<uint64_t>(Peek() - '0');
      if (value > static_cast<uint64_t>(limits_.max_repetition)) {
        return Error(
            at, "repetition count above the limit of " + std::to_string(limits_.max_repetition));
      }
      ++pos_;
    }
    if (pos_ == at) return Error(at, "expected a number");
    return value;
  }

  // Replaces seq[last_start..] (the last item) by its repetition {min,max}.
  Status Repeat(IrSequence* seq, size_t last_start, uint64_t min, uint64_t max) {
    IrSequence item(seq->begin() + static_cast<std::ptrdiff_t>(last_start), seq->end());
    seq->resize(last_start);
    if (item.empty()) return Status::Ok();  // "" repeated is still ""
    IrSymbol x = item[0];
    if (item.size() > 1) {  // the item's symbols move to a rule of their own (still counted)
      ASSIGN_OR_RETURN(const int32_t id, GeneratedRule({item}));
      x = {IrSymbol::Kind::kRule, id};
    } else {
      --symbol_count_;  // counted again with each copy
    }
    for (uint64_t i = 0; i < min; ++i) RETURN_IF_ERROR(Append(seq, x));
    if (max == kUnbounded) {
      ASSIGN_OR_RETURN(const int32_t star, Star(x));
      return Append(seq, {IrSymbol::Kind::kRule, star});
    }
    if (max > min) {
      ASSIGN_OR_RETURN(const int32_t opt, Optional(x, max - min));
      return Append(seq, {IrSymbol::Kind::kRule, opt});
    }
    return Status::Ok();
  }

  static uint64_t Key(IrSymbol x) {
    return (static_cast<uint64_t>(x.kind) << 32) | static_cast<uint32_t>(x.index);
  }

  // R ::= x R | ""
  StatusOr<int32_t> Star(IrSymbol x) {
    auto it = stars_.find(Key(x));
    if (it != stars_.end()) return it->second;
    ASSIGN_OR_RETURN(const int32_t id, GeneratedRule({}));
    ir_.rules[id].alternatives = {{x, {IrSymbol::Kind::kRule, id}}, {}};
    symbol_count_ += 2;
    stars_[Key(x)] = id;
    return id;
  }

  // Up to k copies of x: O_1 ::= x | "" ; O_j ::= x O_{j-1} | "".
  StatusOr<int32_t> Optional(IrSymbol x, uint64_t k) {
    std::vector<int32_t>& chain = optionals_[Key(x)];
    while (chain.size() < k) {
      IrSequence first = {x};
      if (!chain.empty()) first.push_back({IrSymbol::Kind::kRule, chain.back()});
      symbol_count_ += static_cast<int>(first.size());
      if (symbol_count_ > limits_.max_symbols) {
        return ResourceExhaustedError("grammar needs more than " +
                                      std::to_string(limits_.max_symbols) + " symbols (limit)");
      }
      ASSIGN_OR_RETURN(const int32_t id, GeneratedRule({std::move(first), {}}));
      chain.push_back(id);
    }
    return chain[k - 1];
  }

  Status ParseLiteral(IrSequence* seq) {
    const size_t open = pos_;
    ++pos_;
    while (true) {
      if (AtEnd()) return Error(open, "unterminated string literal");
      if (Peek() == '"') break;
      const size_t at = pos_;
      ASSIGN_OR_RETURN(const uint32_t cp, ParseChar());
      if (cp >= 0xD800 && cp <= 0xDFFF) {
        return Error(at, "a surrogate code point cannot be matched in UTF-8 text");
      }
      RETURN_IF_ERROR(Append(seq, {IrSymbol::Kind::kClass, ClassId({{cp, cp}})}));
    }
    ++pos_;
    return Status::Ok();
  }

  StatusOr<std::vector<CodepointRange>> ParseClass() {
    const size_t open = pos_;
    ++pos_;
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodepointRange> ranges;
    while (true) {
      if (AtEnd()) return Error(open, "unterminated character class");
      if (Peek() == ']') break;
      const size_t at = pos_;
      ASSIGN_OR_RETURN(const uint32_t lo, ParseChar());
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        ASSIGN_OR_RETURN(hi, ParseChar());
        if (hi < lo) return Error(at, "character range is out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    ranges = codepoints::Normalize(std::move(ranges));
    return negated ? codepoints::Complement(ranges) : ranges;
  }

  // One character of a literal or class: an escape or a UTF-8 sequence.
  StatusOr<uint32_t> ParseChar() {
    const size_t at = pos_;
    const unsigned char c = static_cast<unsigned char>(Peek());
    if (c == '\\') {
      const char e = Peek(1);
      pos_ += 2;
      switch (e) {
        case 'x':
          return ParseHex(at, 2);
        case 'u':
          return ParseHex(at, 4);
        case 'U':
          return ParseHex(at, 8);
        case 't':
          return uint32_t{'\t'};
        case 'r':
          return uint32_t{'\r'};
        case 'n':
          return uint32_t{'\n'};
        case '\\':
        case '"':
        case '[':
        case ']':
          return static_cast<uint32_t>(e);
        default:
          return Error(at, e == '\0' ? std::string("escape at end of input")
                                     : std::string("unknown escape '\\") + e + "'");
      }
    }
    if (c < 0x80) {
      ++pos_;
      return uint32_t{c};
    }
    int len = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return Error(at, "invalid UTF-8");
    }
    for (int i = 1; i < len; ++i) {
      const unsigned char cc = static_cast<unsigned char>(Peek(i));
      if ((cc & 0xC0) != 0x80) return Error(at, "invalid UTF-8");
      cp = (cp << 6) | (cc & 0x3F);
    }
    const uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Error(at, "invalid UTF-8");
    }
    pos_ += len;
    return cp;
  }

  StatusOr<uint32_t> ParseHex(size_t at, int digits) {
    const std::optional<uint64_t> value = ReadHexDigits(text_, &pos_, digits);
    if (!value) return Error(at, "expected " + std::to_string(digits) + " hex digits");
    if (*value > kMaxCodepoint) return Error(at, "code point past U+10FFFF");
    return static_cast<uint32_t>(*value);
  }

  std::string_view text_;
  GrammarLimits limits_;
  size_t pos_ = 0;
  GrammarIr ir_;
  std::unordered_map<std::string, int32_t> names_;
  std::unordered_map<int32_t, size_t> defined_at_;
  std::map<std::vector<CodepointRange>, int32_t> class_ids_;
  std::unordered_map<uint64_t, int32_t> stars_;
  std::unordered_map<uint64_t, std::vector<int32_t>> optionals_;
  int32_t base_rule_ = 0;
  int generated_count_ = 0;
  int symbol_count_ = 0;
};

}  // namespace

StatusOr<GrammarIr> ParseGbnf(std::string_view text, const GrammarLimits& limits) {
  return Parser(text, limits).Run();
}

}  // namespace forge
