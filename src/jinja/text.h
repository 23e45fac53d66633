// String helpers for the Jinja interpreter that follow Python's str semantics: code points
// (UTF-8 decoded with surrogateescape), str.isspace, strip/split/splitlines, repr and JSON quoting.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace forge::jinja {

// The most items a string operation may produce (split, iteration) and the most bytes of any
// string the interpreter builds: results past them are ResourceExhausted errors.
inline constexpr size_t kMaxStringItems = size_t{1} << 21;
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;

// Decodes UTF-8. An invalid byte b becomes U+DC00+b (Python's surrogateescape), so that
// EncodeUtf8(DecodeUtf8(s)) == s for any bytes.
std::u32string DecodeUtf8(std::string_view s);
std::string EncodeUtf8(std::u32string_view s);
void AppendUtf8(char32_t cp, std::string* out);
size_t CodePointCount(std::string_view s);

// str.isspace() for one code point (also what Python's re \s matches).
bool IsPySpace(char32_t cp);
// Byte length of the whitespace code point at s[pos], or 0 when there is none.
size_t SpaceLenAt(std::string_view s, size_t pos);
// s.rstrip() with no argument.
std::string_view RStripSpace(std::string_view s);

// str.strip / lstrip / rstrip; `chars` unset strips whitespace.
std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left,
                    bool right);
// str.split(sep, maxsplit) and str.rsplit; `sep` unset splits on whitespace runs.
// Requires: sep, when set, is not empty (the caller reports "empty separator"). Stops after
// max_parts + 1 parts (the caller reports a result that large as an error).
std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit, bool from_right, size_t max_parts = SIZE_MAX);
// str.splitlines() (keepends=False); stops after max_parts + 1 lines.
std::vector<std::string> PySplitLines(std::string_view s, size_t max_parts = SIZE_MAX);
// The length in bytes of s.replace(old, new, count), without building it.
size_t PyReplaceSize(std::string_view s, std::string_view old_text, std::string_view new_text,
                     int64_t count);
// str.replace(old, new, count); count < 0 replaces all.
std::string PyReplace(std::string_view s, std::string_view old_text, std::string_view new_text,
                      int64_t count);

// Case mapping for ASCII, Latin-1, Latin Extended-A and Cyrillic letters (text_case.cc); other
// code points are left unchanged.
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
std::string PyCapitalize(std::string_view s);  // str.capitalize()
std::string PyTitle(std::string_view s);       // str.title()
bool PyIsLower(std::string_view s);            // str.islower()
bool PyIsUpper(std::string_view s);            // str.isupper()

// repr(s): quoted as Python does, choosing ' unless s holds ' and no ".
std::string PyRepr(std::string_view s);
// A JSON string literal as Python's json.dumps writes it.
void AppendJsonString(std::string_view s, bool ensure_ascii, std::string* out);
// repr(float) / str(float): the shortest text that reads back to the same double.
std::string PyFloatRepr(double d);

}  // namespace forge::jinja
