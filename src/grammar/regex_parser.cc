// The regex parser: recursive descent over the pattern's code points. Each escape class is kept
// as a narrow set (what both ECMA-262 and Python match) and a wide one (what either may match),
// so negation stays on the safe side: [^...] = not(wide), and its wide = not(narrow).
#include <algorithm>

#include "base/escapes.h"
#include "base/utf8.h"
#include "grammar/codepoint_set.h"
#include "grammar/regex_ast.h"

namespace forge {
namespace {

using Set = std::vector<CodepointRange>;

struct CharSet {
  Set narrow;
  Set wide;
};

CharSet Single(uint32_t cp) { return {{{cp, cp}}, {{cp, cp}}}; }

CharSet Negate(const CharSet& s) {
  return {codepoints::Complement(s.wide), codepoints::Complement(s.narrow)};
}

// \d, \w, \s: ECMA-262's ASCII sets; Python also matches other (non-ASCII, and for \s the
// separators \x1C-\x1F) characters, which the wide sets take in whole.
CharSet EscapeClass(char c) {
  const Set non_ascii = {{0x80, kMaxCodepoint}};
  CharSet s;
  switch (c) {
    case 'd':
    case 'D':
      s.narrow = {{'0', '9'}};
      break;
    case 'w':
    case 'W':
      s.narrow = codepoints::Normalize({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
      break;
    default:  // s, S
      s.narrow = {{'\t', '\r'}, {' ', ' '}};
      s.wide = {{0x1C, 0x1F}};
      break;
  }
  s.wide = codepoints::Union(codepoints::Union(s.narrow, s.wide), non_ascii);
  return (c == 'D' || c == 'W' || c == 'S') ? Negate(s) : s;
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, int max_repetition, int max_nesting)
      : pattern_(pattern), max_repetition_(max_repetition), max_nesting_(max_nesting) {}

  // The pattern as code points; strict UTF-8 (no overlong forms, surrogates or values past
  // U+10FFFF), as the GBNF parser reads its literals.
  Status Decode() {
    if (!utf8::IsValid(pattern_)) return Fail("invalid UTF-8");
    for (size_t i = 0; i < pattern_.size();) cps_.push_back(utf8::DecodeAt(pattern_, &i));
    return Status::Ok();
  }

  StatusOr<std::vector<RegexAlternative>> ParseTop() {
    std::vector<RegexAlternative> alts;
    while (true) {
      RegexAlternative alt;
      if (Peek() == '^') {
        alt.anchored_start = true;
        ++pos_;
      }
      ASSIGN_OR_RETURN(alt.node, ParseAlternative(0, &alt.anchored_end));
      alts.push_back(std::move(alt));
      if (AtEnd()) return alts;
      if (Peek() == ')') return Fail("unbalanced ')'");
      ++pos_;  // '|'
    }
  }

 private:
  bool AtEnd() const { return pos_ >= cps_.size(); }
  uint32_t Peek(size_t ahead = 0) const {
    return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0xFFFFFFFF;
  }
  Status Fail(const std::string& what) const {
    return InvalidArgumentError("pattern '" + std::string(pattern_) + "': " + what +
                                " (at character " + std::to_string(pos_ + 1) + ")");
  }

  // Terms up to '|', ')' or the end. At depth 0 a '$' is allowed just before those.
  StatusOr<RegexNode> ParseAlternative(int depth, bool* anchored_end) {
    RegexNode seq;
    seq.kind = RegexNode::Kind::kSeq;
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      if (Peek() == '$') {
        ++pos_;
        if (depth == 0 && (AtEnd() || Peek() == '|')) {
          *anchored_end = true;
          break;
        }
        --pos_;
        return Fail(
            "'$' is supported only at the end of the pattern or of a top-level alternative");
      }
      if (Peek() == '^') {
        return Fail(
            "'^' is supported only at the start of the pattern or of a top-level alternative");
      }
      ASSIGN_OR_RETURN(RegexNode atom, ParseAtom(depth));
      ASSIGN_OR_RETURN(atom, ParseQuantifier(std::move(atom)));
      seq.children.push_back(std::move(atom));
    }
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    if (seq.children.empty()) return RegexNode();
    return seq;
  }

  StatusOr<RegexNode> ParseDisjunction(int depth) {
    RegexNode alt;
    alt.kind = RegexNode::Kind::kAlt;
    while (true) {
      bool unused = false;
      ASSIGN_OR_RETURN(RegexNode a, ParseAlternative(depth, &unused));
      alt.children.push_back(std::move(a));
      if (Peek() != '|') break;
      ++pos_;
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  // A {n}, {n,} or {n,m} quantifier at pos_ (which is at '{'), or false when the brace is a
  // literal (as ECMA-262's Annex B and Python read "a{", "{x}", ...).
  bool ParseBraces(int* min, int* max, size_t* end) const {
    size_t p = pos_ + 1;
    auto number = [&](int* out) {
      const size_t start = p;
      int64_t v = 0;
      while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
        v = std::min<int64_t>(v * 10 + (cps_[p] - '0'), 1 << 30);
        ++p;
      }
      *out = static_cast<int>(v);
      return p > start;
    };
    if (!number(min)) return false;
    *max = *min;
    if (p < cps_.size() && cps_[p] == ',') {
      ++p;
      if (!number(max)) *max = -1;
    }
    if (p >= cps_.size() || cps_[p] != '}') return false;
    *end = p + 1;
    return true;
  }

  StatusOr<RegexNode> ParseQuantifier(RegexNode atom) {
    int min = 0, max = -1;
    const uint32_t c = Peek();
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      min = 1;
      ++pos_;
    } else if (c == '?') {
      max = 1;
      ++pos_;
    } else if (c == '{') {
      size_t end = 0;
      if (!ParseBraces(&min, &max, &end)) return atom;
      if (max >= 0 && max < min)
        return Fail("quantifier {" + std::to_string(min) + "," + std::to_string(max) +
                    "} is out of order");
      if (min > max_repetition_ || max > max_repetition_) {
        return Fail("quantifier count above " + std::to_string(max_repetition_));
      }
      pos_ = end;
    } else {
      return atom;
    }
    if (Peek() == '?') ++pos_;  // lazy: the same strings match
    if (Peek() == '*' || Peek() == '+' || Peek() == '?' || (Peek() == '{' && [&] {
          int a, b;
          size_t e;
          return ParseBraces(&a, &b, &e);
        }())) {
      return Fail("a quantifier cannot follow a quantifier");
    }
    RegexNode rep;
    rep.kind = RegexNode::Kind::kRepeat;
    rep.min = min;
    rep.max = max;
    rep.children.push_back(std::move(atom));
    return rep;
  }

  StatusOr<RegexNode> ParseAtom(int depth) {
    const uint32_t c = Peek();
    RegexNode node;
    node.kind = RegexNode::Kind::kChars;
    if (c == '(') {
      if (depth + 1 > max_nesting_) {
        return Fail("groups nested deeper than " + std::to_string(max_nesting_));
      }
      ++pos_;
      if (Peek() == '?') {
        if (Peek(1) == ':') {
          pos_ += 2;
        } else if (Peek(1) == '<' && Peek(2) != '=' && Peek(2) != '!') {
          pos_ += 2;  // named group (?<name>...)
          while (!AtEnd() && Peek() != '>') ++pos_;
          if (AtEnd()) return Fail("unterminated group name");
          ++pos_;
        } else if (Peek(1) == '=' || Peek(1) == '!' || Peek(1) == '<') {
          return Fail("lookaround assertions are not supported");
        } else {
          return Fail("unsupported group syntax '(?'");
        }
      }
      ASSIGN_OR_RETURN(RegexNode inner, ParseDisjunction(depth + 1));
      if (Peek() != ')') return Fail("missing ')'");
      ++pos_;
      return inner;
    }
    if (c == '*' || c == '+' || c == '?') return Fail("nothing to repeat");
    if (c == '{') {
      int a, b;
      size_t e;
      if (ParseBraces(&a, &b, &e)) return Fail("nothing to repeat");
    }
    if (c == '.') {
      ++pos_;
      node.chars = codepoints::Complement(
          codepoints::Normalize({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
      return node;
    }
    if (c == '[') {
      ASSIGN_OR_RETURN(CharSet set, ParseClass());
      node.chars = std::move(set.narrow);
      return node;
    }
    if (c == '\\') {
      ASSIGN_OR_RETURN(CharSet set, ParseEscape(false));
      node.chars = std::move(set.narrow);
      return node;
    }
    ++pos_;
    node.chars = {{c, c}};
    return node;
  }

  StatusOr<uint32_t> ParseHexDigits(int n) {
    const std::optional<uint64_t> v = ReadHexDigits(cps_, &pos_, n);
    if (!v) return Fail("expected " + std::to_string(n) + " hex digits");
    return static_cast<uint32_t>(*v);
  }

  // At '\\'. in_class: \b is a backspace there, and \- a hyphen.
  StatusOr<CharSet> ParseEscape(bool in_class) {
    ++pos_;
    if (AtEnd()) return Fail("escape at the end of the pattern");
    const uint32_t e = Peek();
    ++pos_;
    switch (e) {
      case 'd':
      case 'D':
      case 'w':
      case 'W':
      case 's':
      case 'S':
        return EscapeClass(static_cast<char>(e));
      case 't':
        return Single('\t');
      case 'n':
        return Single('\n');
      case 'r':
        return Single('\r');
      case 'f':
        return Single('\f');
      case 'v':
        return Single('\v');
      case '0':
        if (Peek() >= '0' && Peek() <= '9') return Fail("octal escapes are not supported");
        return Single(0);
      case 'x': {
        ASSIGN_OR_RETURN(const uint32_t v, ParseHexDigits(2));
        return Single(v);
      }
      case 'u': {
        if (Peek() == '{') return Fail("\\u{...} escapes are not supported");
        ASSIGN_OR_RETURN(const uint32_t v, ParseHexDigits(4));
        if (v >= 0xD800 && v <= 0xDFFF) return Fail("surrogate escapes are not supported");
        return Single(v);
      }
      case 'b':
        if (in_class) return Single(0x08);
        return Fail("word boundaries (\\b) are not supported");
      case 'B':
        return Fail("word boundaries (\\B) are not supported");
      case 'p':
      case 'P':
        return Fail("Unicode property escapes are not supported");
      case 'k':
        return Fail("named backreferences are not supported");
      case 'c':
        return Fail("control escapes (\\c) are not supported");
      default:
        break;
    }
    if (e >= '1' && e <= '9') return Fail("backreferences are not supported");
    const bool alnum = (e >= '0' && e <= '9') || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z');
    if (alnum || e == '_') {
      return Fail(std::string("unsupported escape '\\") + static_cast<char>(e) + "'");
    }
    return Single(e);  // \. \* \\ \/ \- ... stand for themselves
  }

  StatusOr<CharSet> ParseClass() {
    ++pos_;  // '['
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    if (Peek() == ']') {
      return Fail(
          "an empty class (or ']' first in a class) reads differently in ECMA-262 and "
          "Python; escape it as \\]");
    }
    CharSet set;
    while (true) {
      if (AtEnd()) return Fail("unterminated character class");
      if (Peek() == ']') break;
      CharSet lo;
      bool lo_single = true;
      if (Peek() == '\\') {
        const uint32_t e = Peek(1);
        lo_single = !(e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S');
        ASSIGN_OR_RETURN(lo, ParseEscape(true));
      } else {
        if (Peek() == '[' && (Peek(1) == ':' || Peek(1) == '=' || Peek(1) == '.')) {
          return Fail("POSIX classes ([:alpha:]) are not supported");
        }
        lo = Single(Peek());
        ++pos_;
      }
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != 0xFFFFFFFF) {
        if (!lo_single) return Fail("a range cannot start at a class escape");
        ++pos_;
        CharSet hi;
        if (Peek() == '\\') {
          const uint32_t e = Peek(1);
          if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S') {
            return Fail("a range cannot end at a class escape");
          }
          ASSIGN_OR_RETURN(hi, ParseEscape(true));
        } else {
          hi = Single(Peek());
          ++pos_;
        }
        const uint32_t a = lo.narrow[0].lo, b = hi.narrow[0].lo;
        if (b < a) return Fail("class range out of order");
        lo = {{{a, b}}, {{a, b}}};
        lo.narrow = codepoints::Normalize(lo.narrow);
        lo.wide = lo.narrow;
      }
      set.narrow = codepoints::Union(set.narrow, lo.narrow);
      set.wide = codepoints::Union(set.wide, lo.wide);
    }
    ++pos_;  // ']'
    return negated ? Negate(set) : set;
  }

  std::string_view pattern_;
  int max_repetition_;
  int max_nesting_;
  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<std::vector<RegexAlternative>> ParseRegex(std::string_view pattern, int max_repetition,
                                                   int max_nesting) {
  RegexParser parser(pattern, max_repetition, max_nesting);
  RETURN_IF_ERROR(parser.Decode());
  return parser.ParseTop();
}

bool RegexNullable(const RegexNode& n) {
  switch (n.kind) {
    case RegexNode::Kind::kEmpty:
      return true;
    case RegexNode::Kind::kChars:
      return false;
    case RegexNode::Kind::kSeq:
      for (const RegexNode& c : n.children) {
        if (!RegexNullable(c)) return false;
      }
      return true;
    case RegexNode::Kind::kAlt:
      for (const RegexNode& c : n.children) {
        if (RegexNullable(c)) return true;
      }
      return false;
    case RegexNode::Kind::kRepeat:
      return n.min == 0 || RegexNullable(n.children[0]);
  }
  return false;
}

}  // namespace forge
