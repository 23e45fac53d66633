// Python str semantics over UTF-8 strings: see text.h.
#include "jinja/text.h"

#include "base/utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace forge::jinja {
namespace {

// Decodes one code point at s[*pos] and advances *pos; invalid bytes map to U+DC00+byte.
char32_t DecodeOne(std::string_view s, size_t* pos) {
  const auto b0 = static_cast<unsigned char>(s[*pos]);
  if (b0 < 0x80) {
    ++*pos;
    return b0;
  }
  int len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  }
  if (len == 0 || *pos + len > s.size()) {
    ++*pos;
    return 0xDC00 + b0;
  }
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[*pos + i]);
    if ((b & 0xC0) != 0x80) {
      ++*pos;
      return 0xDC00 + b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*pos;
    return 0xDC00 + b0;
  }
  *pos += len;
  return cp;
}

bool IsPrintable(char32_t c) {
  if (c < 0x20 || c == 0x7F) return false;
  if (c < 0x7F) return true;
  if (c <= 0xA0 || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF) return false;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E) {
    return false;
  }
  if ((c >= 0xD800 && c <= 0xF8FF) || (c >= 0xFFF0 && c <= 0xFFFB) || c >= 0xF0000) return false;
  if (c == 0xFFFE || c == 0xFFFF) return false;
  return true;
}

bool IsLineBreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

}  // namespace

std::u32string DecodeUtf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) out.push_back(DecodeOne(s, &pos));
  return out;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {  // a surrogate-escaped byte
    out->push_back(static_cast<char>(cp - 0xDC00));
  } else {
    utf8::Append(static_cast<uint32_t>(cp), out);
  }
}

std::string EncodeUtf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) AppendUtf8(c, &out);
  return out;
}

size_t CodePointCount(std::string_view s) {
  size_t pos = 0, n = 0;
  while (pos < s.size()) DecodeOne(s, &pos), ++n;
  return n;
}

bool IsPySpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

size_t SpaceLenAt(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  size_t next = pos;
  const char32_t c = DecodeOne(s, &next);
  return IsPySpace(c) ? next - pos : 0;
}

std::string_view RStripSpace(std::string_view s) {
  size_t pos = 0, keep = 0;
  while (pos < s.size()) {
    const char32_t c = DecodeOne(s, &pos);
    if (!IsPySpace(c)) keep = pos;
  }
  return s.substr(0, keep);
}

std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left,
                    bool right) {
  const std::u32string text = DecodeUtf8(s);
  const std::u32string set = chars ? DecodeUtf8(*chars) : std::u32string();
  auto strip = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : IsPySpace(c);
  };
  size_t b = 0, e = text.size();
  if (left) {
    while (b < e && strip(text[b])) ++b;
  }
  if (right) {
    while (e > b && strip(text[e - 1])) --e;
  }
  return EncodeUtf8(std::u32string_view(text).substr(b, e - b));
}

std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit, bool from_right, size_t max_parts) {
  std::vector<std::string> parts;
  if (max_parts != SIZE_MAX && (maxsplit < 0 || maxsplit > static_cast<int64_t>(max_parts))) {
    maxsplit = static_cast<int64_t>(max_parts);
  }
  if (sep) {
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        const size_t hit = s.find(*sep, pos);
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(s.substr(pos));
      return parts;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    parts.emplace_back(s.substr(0, end));
    return {parts.rbegin(), parts.rend()};
  }
  std::u32string text = DecodeUtf8(s);
  if (from_right) text = std::u32string(text.rbegin(), text.rend());
  size_t i = 0;
  const size_t n = text.size();
  std::vector<std::u32string> words;
  while (true) {
    while (i < n && IsPySpace(text[i])) ++i;
    if (i == n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
      words.push_back(text.substr(i));  // the rest, trailing whitespace included
      break;
    }
    const size_t start = i;
    while (i < n && !IsPySpace(text[i])) ++i;
    words.push_back(text.substr(start, i - start));
  }
  for (auto& w : words) {
    if (from_right) w = std::u32string(w.rbegin(), w.rend());
    parts.push_back(EncodeUtf8(w));
  }
  if (from_right) return {parts.rbegin(), parts.rend()};
  return parts;
}

std::vector<std::string> PySplitLines(std::string_view s, size_t max_parts) {
  const std::u32string text = DecodeUtf8(s);
  std::vector<std::string> lines;
  size_t start = 0, i = 0;
  while (i < text.size() && lines.size() <= max_parts) {
    if (IsLineBreak(text[i])) {
      lines.push_back(EncodeUtf8(std::u32string_view(text).substr(start, i - start)));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      start = ++i;
    } else {
      ++i;
    }
  }
  if (start < text.size()) lines.push_back(EncodeUtf8(std::u32string_view(text).substr(start)));
  return lines;
}

size_t PyReplaceSize(std::string_view s, std::string_view old_text, std::string_view new_text,
                     int64_t count) {
  int64_t hits = 0;
  if (old_text.empty()) {
    hits = static_cast<int64_t>(CodePointCount(s)) + 1;
  } else {
    for (size_t p = s.find(old_text); p != std::string_view::npos && (count < 0 || hits < count);
         p = s.find(old_text, p + old_text.size())) {
      ++hits;
    }
  }
  if (count >= 0) hits = std::min(hits, count);
  return s.size() + static_cast<size_t>(hits) * new_text.size() -
         (old_text.empty() ? 0 : static_cast<size_t>(hits) * old_text.size());
}

std::string PyReplace(std::string_view s, std::string_view old_text, std::string_view new_text,
                      int64_t count) {
  std::string out;
  if (old_text.empty()) {  // Python inserts `new` around every code point
    const std::u32string text = DecodeUtf8(s);
    int64_t done = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
      if (count < 0 || done < count) out.append(new_text), ++done;
      if (i < text.size()) AppendUtf8(text[i], &out);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old_text, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos)).append(new_text);
    pos = hit + old_text.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

std::string PyRepr(std::string_view s) {
  const std::u32string text = DecodeUtf8(s);
  const bool has_single = text.find(U'\'') != std::u32string::npos;
  const bool has_double = text.find(U'"') != std::u32string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t c : text) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out.append("\\t");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (IsPrintable(c)) {
      AppendUtf8(c, &out);
    } else {
      const char* fmt = c <= 0xFF ? "\\x%02x" : (c <= 0xFFFF ? "\\u%04x" : "\\U%08x");
      std::snprintf(buf, sizeof(buf), fmt, static_cast<unsigned>(c));
      out.append(buf);
    }
  }
  out.push_back(quote);
  return out;
}

void AppendJsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  char buf[16];
  for (char32_t c : DecodeUtf8(s)) {
    switch (c) {
      case '"':
        out->append("\\\"");
        continue;
      case '\\':
        out->append("\\\\");
        continue;
      case '\n':
        out->append("\\n");
        continue;
      case '\r':
        out->append("\\r");
        continue;
      case '\t':
        out->append("\\t");
        continue;
      case '\b':
        out->append("\\b");
        continue;
      case '\f':
        out->append("\\f");
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
      if (c >= 0x10000 && !(c >= 0xDC80 && c <= 0xDCFF)) {
        const char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      }
      out->append(buf);
    } else {
      AppendUtf8(c, out);
    }
  }
  out->push_back('"');
}

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string_view sci(buf, res.ptr - buf);  // like "-1.2345e+16"
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') out.push_back('-'), i = 1;
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e_pos; ++k) {
    if (sci[k] != '.') digits.push_back(sci[k]);
  }
  const int exp = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  const int decpt = exp + 1;  // value = 0.digits * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out.append("0.").append(-decpt, '0').append(digits);
    } else if (decpt >= n) {
      out.append(digits).append(decpt - n, '0').append(".0");
    } else {
      out.append(digits.substr(0, decpt)).append(".").append(digits.substr(decpt));
    }
    return out;
  }
  out.push_back(digits[0]);
  if (n > 1) out.append(".").append(digits.substr(1));
  std::snprintf(buf, sizeof(buf), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  out.append(buf);
  return out;
}

}  // namespace forge::jinja
