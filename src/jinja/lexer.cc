// The Jinja2 lexer, rule for rule (jinja2/lexer.py, with trim_blocks and lstrip_blocks on).
#include "jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/escapes.h"
#include "jinja/text.h"

namespace forge::jinja {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  StatusOr<std::vector<Token>> Run() {
    while (pos_ < src_.size()) RETURN_IF_ERROR(LexRoot());
    Push(TokenType::kEof, "");
    return std::move(tokens_);
  }

 private:
  Status Error(std::string message) const {
    return InvalidArgumentError("line " + std::to_string(line_) + ": " + std::move(message));
  }

  void Push(TokenType type, std::string value) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }

  bool At(size_t p, std::string_view s) const {
    return p <= src_.size() && std::string_view(src_).substr(p, s.size()) == s;
  }
  size_t SkipSpace(size_t p) const {
    while (size_t len = SpaceLenAt(src_, p)) p += len;
    return p;
  }
  // Past the end of a block or comment tag whose closing delimiter ("%}" or "#}") is at p: with
  // '+' before it what follows is kept, with '-' the whitespace after it is skipped, else one
  // newline after it (trim_blocks); npos when no closing delimiter is at p.
  size_t BlockEndAt(size_t p, std::string_view close) const {
    if (At(p, "+") && At(p + 1, close)) return p + 1 + close.size();
    if (At(p, "-") && At(p + 1, close)) return SkipSpace(p + 1 + close.size());
    if (At(p, close)) return p + close.size() + (At(p + close.size(), "\n") ? 1 : 0);
    return std::string::npos;
  }
  // Consumes src_[pos_, end): counts its lines and remembers whether it ended a line.
  void Advance(size_t end) {
    line_ += static_cast<int>(std::count(src_.begin() + pos_, src_.begin() + end, '\n'));
    line_starting_ = end > pos_ && src_[end - 1] == '\n';
    pos_ = end;
  }

  // The text before a tag, after `-` (strip all whitespace) or lstrip_blocks (strip the
  // indentation of a line that holds only the tag).
  void EmitText(std::string_view text, char sign, bool lstrip_allowed) {
    if (sign == '-') {
      text = RStripSpace(text);
    } else if (sign != '+' && lstrip_allowed) {
      const size_t l_pos = text.rfind('\n') + 1;  // npos + 1 == 0
      if (l_pos > 0 || line_starting_) {
        size_t p = l_pos;
        while (p < text.size()) {
          const size_t len = SpaceLenAt(text, p);
          if (len == 0) break;
          p += len;
        }
        if (p == text.size() && p > l_pos) text = text.substr(0, l_pos);
      }
    }
    if (!text.empty()) Push(TokenType::kData, std::string(text));
  }

  // {%(-|+|)\s*raw\s*(-%}\s*|%}) at `p`; returns the end or npos.
  size_t MatchRawBegin(size_t p, char* sign) const {
    p += 2;
    *sign = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) *sign = src_[p++];
    p = SkipSpace(p);
    if (!At(p, "raw")) return std::string::npos;
    p = SkipSpace(p + 3);
    if (At(p, "-%}")) return SkipSpace(p + 3);
    if (At(p, "%}")) return p + 2;
    return std::string::npos;
  }

  Status LexRoot() {
    size_t tag = pos_;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        EmitText(std::string_view(src_).substr(pos_), 0, false);
        Advance(src_.size());
        return Status::Ok();
      }
      const char c = src_[tag + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++tag;
    }
    const char kind = src_[tag + 1];
    char sign = 0;
    size_t end = std::string::npos;
    const bool raw = kind == '%' && (end = MatchRawBegin(tag, &sign)) != std::string::npos;
    if (!raw) {
      end = tag + 2;
      if (end < src_.size() && (src_[end] == '-' || src_[end] == '+')) sign = src_[end++];
    }
    EmitText(std::string_view(src_).substr(pos_, tag - pos_), sign, kind != '{');
    Advance(end);
    if (raw) return LexRawBody();
    if (kind == '#') return LexComment();
    return LexTag(kind == '{');
  }

  // At the very end of the template an unterminated raw or comment tag is silently accepted,
  // as Jinja's lexer does (its "missing end" rule needs one more character to fail on).
  Status LexRawBody() {
    if (pos_ >= src_.size()) return Status::Ok();
    for (size_t q = src_.find("{%", pos_); q != std::string::npos; q = src_.find("{%", q + 1)) {
      size_t p = q + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      p = SkipSpace(p);
      if (!At(p, "endraw")) continue;
      p = SkipSpace(p + 6);
      const size_t end = BlockEndAt(p, "%}");
      if (end == std::string::npos) continue;
      EmitText(std::string_view(src_).substr(pos_, q - pos_), sign, true);
      Advance(end);
      return Status::Ok();
    }
    return Error("Missing end of raw directive");
  }

  Status LexComment() {
    if (pos_ >= src_.size()) return Status::Ok();
    for (size_t j = pos_; j < src_.size(); ++j) {
      const size_t end = BlockEndAt(j, "#}");
      if (end != std::string::npos) {
        Advance(end);
        return Status::Ok();
      }
    }
    return Error("Missing end of comment tag");
  }

  // The end of the tag at pos_, or npos: -}}\s* | }} for variables, +%} | -%}\s* | %}\n? for
  // blocks.
  size_t MatchTagEnd(bool variable) const {
    if (variable) {
      if (At(pos_, "-}}")) return SkipSpace(pos_ + 3);
      if (At(pos_, "}}")) return pos_ + 2;
      return std::string::npos;
    }
    return BlockEndAt(pos_, "%}");
  }

  Status LexTag(bool variable) {
    Push(variable ? TokenType::kVariableBegin : TokenType::kBlockBegin, "");
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) {
        return Error(variable ? "unexpected end of template, expected '}}'"
                              : "unexpected end of template, expected '%}'");
      }
      if (balance.empty()) {
        const size_t end = MatchTagEnd(variable);
        if (end != std::string::npos) {
          Push(variable ? TokenType::kVariableEnd : TokenType::kBlockEnd, "");
          Advance(end);
          return Status::Ok();
        }
      }
      if (size_t len = SpaceLenAt(src_, pos_)) {
        size_t end = pos_ + len;
        while (size_t more = SpaceLenAt(src_, end)) end += more;
        Advance(end);
        continue;
      }
      size_t end;
      if ((end = MatchFloat()) != std::string::npos) {
        std::string text;
        for (size_t i = pos_; i < end; ++i) {
          if (src_[i] != '_') text.push_back(src_[i]);
        }
        Push(TokenType::kFloat, text);
        tokens_.back().float_value = std::strtod(text.c_str(), nullptr);
      } else if ((end = MatchInteger()) != std::string::npos) {
        RETURN_IF_ERROR(PushInteger(end));
      } else if (IsNameStart(src_[pos_])) {
        end = pos_ + 1;
        while (end < src_.size() && IsNameChar(src_[end])) ++end;
        if (end < src_.size() && static_cast<unsigned char>(src_[end]) >= 0x80) {
          return UnimplementedError("line " + std::to_string(line_) +
                                    ": non-ASCII identifiers are not supported");
        }
        Push(TokenType::kName, src_.substr(pos_, end - pos_));
      } else if (src_[pos_] == '\'' || src_[pos_] == '"') {
        end = MatchString();
        if (end == std::string::npos) {
          return Error(std::string("unexpected char '") + src_[pos_] + "' (unterminated string)");
        }
        std::string value;
        RETURN_IF_ERROR(Unescape(std::string_view(src_).substr(pos_ + 1, end - pos_ - 2), &value));
        Push(TokenType::kString, std::move(value));
      } else {
        end = MatchOperator();
        if (end == std::string::npos) {
          if (static_cast<unsigned char>(src_[pos_]) >= 0x80) {
            return UnimplementedError("line " + std::to_string(line_) +
                                      ": non-ASCII identifiers are not supported");
          }
          return Error(std::string("unexpected char '") + src_[pos_] + "'");
        }
        const std::string op = src_.substr(pos_, end - pos_);
        RETURN_IF_ERROR(Balance(op, &balance));
        Push(TokenType::kOperator, op);
      }
      Advance(end);
    }
  }

  // (\d+_)*\d+ at p; npos when there is no digit.
  size_t MatchDigits(size_t p) const {
    if (p >= src_.size() || !IsDigit(src_[p])) return std::string::npos;
    while (p < src_.size() && IsDigit(src_[p])) ++p;
    while (p + 1 < src_.size() && src_[p] == '_' && IsDigit(src_[p + 1])) {
      ++p;
      while (p < src_.size() && IsDigit(src_[p])) ++p;
    }
    return p;
  }

  size_t MatchExponent(size_t p) const {
    if (p >= src_.size() || (src_[p] != 'e' && src_[p] != 'E')) return std::string::npos;
    ++p;
    if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
    return MatchDigits(p);
  }

  size_t MatchFloat() const {
    if (pos_ > 0 && src_[pos_ - 1] == '.') return std::string::npos;
    const size_t d = MatchDigits(pos_);
    if (d == std::string::npos) return d;
    const size_t frac = (At(d, ".")) ? MatchDigits(d + 1) : std::string::npos;
    if (frac != std::string::npos) {
      const size_t e = MatchExponent(frac);
      if (e != std::string::npos) return e;
    }
    const size_t e = MatchExponent(d);
    if (e != std::string::npos) return e;
    return frac;
  }

  size_t MatchInteger() const {
    const size_t p = pos_;
    if (p >= src_.size() || !IsDigit(src_[p])) return std::string::npos;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      const char b = static_cast<char>(src_[p + 1] | 0x20);
      auto digit_ok = [b](char c) {
        if (b == 'b') return c == '0' || c == '1';
        if (b == 'o') return c >= '0' && c <= '7';
        return HexDigitValue(c) >= 0;
      };
      if (b == 'b' || b == 'o' || b == 'x') {
        size_t q = p + 2, end = std::string::npos;
        while (true) {
          size_t r = q;
          if (r < src_.size() && src_[r] == '_') ++r;
          if (r >= src_.size() || !digit_ok(src_[r])) break;
          q = end = r + 1;
        }
        if (end != std::string::npos) return end;
      }
    }
    if (src_[p] == '0') {  // 0(_?0)*
      size_t q = p + 1;
      while (true) {
        size_t r = q;
        if (r < src_.size() && src_[r] == '_') ++r;
        if (r >= src_.size() || src_[r] != '0') break;
        q = r + 1;
      }
      return q;
    }
    size_t q = p + 1;  // [1-9](_?\d)*
    while (true) {
      size_t r = q;
      if (r < src_.size() && src_[r] == '_') ++r;
      if (r >= src_.size() || !IsDigit(src_[r])) break;
      q = r + 1;
    }
    return q;
  }

  Status PushInteger(size_t end) {
    std::string text;
    for (size_t i = pos_; i < end; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    int base = 10;
    std::string digits = text;
    if (text.size() > 1 && text[0] == '0' && (text[1] | 0x20) != '0') {
      const char b = static_cast<char>(text[1] | 0x20);
      base = b == 'b' ? 2 : (b == 'o' ? 8 : 16);
      digits = text.substr(2);
    }
    errno = 0;
    char* stop = nullptr;
    const unsigned long long v = std::strtoull(digits.c_str(), &stop, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) {
      return UnimplementedError("line " + std::to_string(line_) + ": integer literal " + text +
                                " does not fit in 64 bits");
    }
    Push(TokenType::kInteger, text);
    tokens_.back().int_value = static_cast<int64_t>(v);
    return Status::Ok();
  }

  size_t MatchString() const {
    const char quote = src_[pos_];
    size_t p = pos_ + 1;
    while (p < src_.size()) {
      if (src_[p] == '\\') {
        p += 2;
      } else if (src_[p] == quote) {
        return p + 1;
      } else {
        ++p;
      }
    }
    return std::string::npos;
  }

  // Python's "unicode-escape" decoding, as Jinja applies it to string literals.
  Status Unescape(std::string_view s, std::string* out) const {
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out->push_back(s[i]);
        continue;
      }
      const char c = s[++i];
      switch (c) {
        case '\n':
          break;  // line continuation
        case '\\':
          out->push_back('\\');
          break;
        case '\'':
          out->push_back('\'');
          break;
        case '"':
          out->push_back('"');
          break;
        case 'a':
          out->push_back('\a');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'v':
          out->push_back('\v');
          break;
        case 'x':
        case 'u':
        case 'U': {
          const int len = c == 'x' ? 2 : (c == 'u' ? 4 : 8);
          size_t end = i + 1;
          const std::optional<uint64_t> hex = ReadHexDigits(s, &end, len);
          if (!hex) return Error(std::string("truncated \\") + c + " escape");
          i += len;
          if (*hex > 0x10FFFF) return Error("illegal Unicode character in string literal");
          const uint32_t cp = static_cast<uint32_t>(*hex);
          if (cp >= 0xD800 && cp <= 0xDFFF) {
            return UnimplementedError("line " + std::to_string(line_) +
                                      ": surrogate code points in string literals");
          }
          AppendUtf8(cp, out);
          break;
        }
        case 'N':
          return UnimplementedError("line " + std::to_string(line_) +
                                    ": \\N{...} escapes in string literals");
        default:
          if (c >= '0' && c <= '7') {
            uint32_t cp = static_cast<uint32_t>(c - '0');
            for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k) {
              cp = cp * 8 + static_cast<uint32_t>(s[++i] - '0');
            }
            AppendUtf8(cp, out);
          } else {
            out->push_back('\\');
            out->push_back(c);
          }
      }
    }
    return Status::Ok();
  }

  size_t MatchOperator() const {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (At(pos_, op)) return pos_ + 2;
    }
    static constexpr std::string_view kOne = "+-/*%~[](){}><=.:|,;";
    if (kOne.find(src_[pos_]) != std::string_view::npos) return pos_ + 1;
    return std::string::npos;
  }

  Status Balance(const std::string& op, std::vector<char>* stack) const {
    if (op == "(" || op == "[" || op == "{") {
      stack->push_back(op == "(" ? ')' : (op == "[" ? ']' : '}'));
    } else if (op == ")" || op == "]" || op == "}") {
      if (stack->empty()) return Error("unexpected '" + op + "'");
      const char expected = stack->back();
      stack->pop_back();
      if (expected != op[0]) {
        return Error("unexpected '" + op + "', expected '" + std::string(1, expected) + "'");
      }
    }
    return Status::Ok();
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

// \r\n and \r become \n, and one trailing newline is dropped (keep_trailing_newline=False).
std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

StatusOr<std::vector<Token>> Tokenize(std::string_view source) {
  return Lexer(NormalizeNewlines(source)).Run();
}

std::string DescribeToken(const Token& token) {
  switch (token.type) {
    case TokenType::kEof:
      return "end of template";
    case TokenType::kData:
      return "template data";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    case TokenType::kName:
    case TokenType::kOperator:
      return "'" + token.value + "'";
  }
  return "token";
}

}  // namespace forge::jinja
