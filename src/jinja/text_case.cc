// Python's case mapping (str.upper/lower/title/capitalize/islower/isupper) for ASCII, Latin-1,
// Latin Extended-A and Cyrillic letters; other code points have no case here.
#include "jinja/text.h"

namespace forge::jinja {
namespace {

// Simple one-to-one case pairs; 0 when `cp` has no mapping in that direction.
char32_t UpperOf(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return 0;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
    return (c & 1) ? c - 1 : 0;
  }
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? 0 : c - 1;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) {
    return (c & 1) ? c - 1 : 0;
  }
  if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? 0 : c - 1;
  if (c == 0x4CF) return 0x4C0;
  return 0;
}

char32_t LowerOf(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return 0;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if (c == 0x178) return 0xFF;
  if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
    return (c & 1) ? 0 : c + 1;
  }
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : 0;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) {
    return (c & 1) ? 0 : c + 1;
  }
  if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? c + 1 : 0;
  if (c == 0x4C0) return 0x4CF;
  return 0;
}

bool IsCased(char32_t c) { return UpperOf(c) != 0 || LowerOf(c) != 0 || c == 0xDF; }

bool IsUpperCp(char32_t c) { return LowerOf(c) != 0; }

bool IsLowerCp(char32_t c) { return UpperOf(c) != 0 || c == 0xDF; }

void AppendUpper(char32_t c, std::u32string* out) {
  if (c == 0xDF) {
    out->append(U"SS");
    return;
  }
  const char32_t u = UpperOf(c);
  out->push_back(u ? u : c);
}

void AppendTitle(char32_t c, std::u32string* out) {
  if (c == 0xDF) {
    out->append(U"Ss");
    return;
  }
  AppendUpper(c, out);
}

void AppendLower(char32_t c, std::u32string* out) {
  const char32_t l = LowerOf(c);
  out->push_back(l ? l : c);
}

// str.islower / str.isupper: some character is of this case and none of the other.
bool AllCasedAre(std::string_view s, bool (*this_case)(char32_t), bool (*other_case)(char32_t)) {
  bool cased = false;
  for (char32_t c : DecodeUtf8(s)) {
    if (other_case(c)) return false;
    cased = cased || this_case(c);
  }
  return cased;
}

// s with each character title-cased where title(first, previous) holds (first: it is the first
// character; previous: the one before it), lower-cased elsewhere.
template <typename Title>
std::string TitleOrLower(std::string_view s, Title title) {
  std::u32string out;
  char32_t previous = 0;
  bool first = true;
  for (char32_t c : DecodeUtf8(s)) {
    if (title(first, previous)) {
      AppendTitle(c, &out);
    } else {
      AppendLower(c, &out);
    }
    previous = c;
    first = false;
  }
  return EncodeUtf8(out);
}

}  // namespace

std::string PyUpper(std::string_view s) {
  std::u32string out;
  for (char32_t c : DecodeUtf8(s)) AppendUpper(c, &out);
  return EncodeUtf8(out);
}

std::string PyLower(std::string_view s) {
  std::u32string out;
  for (char32_t c : DecodeUtf8(s)) AppendLower(c, &out);
  return EncodeUtf8(out);
}

std::string PyCapitalize(std::string_view s) {
  return TitleOrLower(s, [](bool first, char32_t) { return first; });
}

std::string PyTitle(std::string_view s) {
  return TitleOrLower(s, [](bool first, char32_t previous) { return first || !IsCased(previous); });
}

bool PyIsLower(std::string_view s) { return AllCasedAre(s, IsLowerCp, IsUpperCp); }

bool PyIsUpper(std::string_view s) { return AllCasedAre(s, IsUpperCp, IsLowerCp); }

}  // namespace forge::jinja
