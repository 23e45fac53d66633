// JsonScanner: walks JSON text byte by byte outside string literals, keeping the nesting depth of
// '[' and '{' without parsing: what the bounds checks before a parse (depth, value count) and the
// search for the end of an embedded object share. Inside a string a backslash skips the byte
// after it; the text need not be valid JSON.
#pragma once

#include <cstddef>
#include <string_view>

namespace forge {

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text, size_t pos = 0) : text_(text), next_(pos) {}

  // Moves to the next byte outside string literals (their quotes count as inside); false at the
  // end of the text. Then byte() is that byte, pos() its offset and depth() the nesting depth
  // with it counted ('[' and '{' add one, ']' and '}' take one away).
  bool Next() {
    while (next_ < text_.size()) {
      const char c = text_[next_++];
      if (in_string_) {
        if (c == '\\') {
          ++next_;  // the escaped byte cannot end the string
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else {
        byte_ = c;
        if (opens()) {
          ++depth_;
        } else if (closes()) {
          --depth_;
        }
        return true;
      }
    }
    return false;
  }

  char byte() const { return byte_; }
  size_t pos() const { return next_ - 1; }
  int depth() const { return depth_; }
  bool opens() const { return byte_ == '[' || byte_ == '{'; }
  bool closes() const { return byte_ == ']' || byte_ == '}'; }

 private:
  std::string_view text_;
  size_t next_;
  bool in_string_ = false;
  char byte_ = 0;
  int depth_ = 0;
};

// The offset just past the JSON object or array that starts at text[pos] ('{' or '['), found by
// matching brackets outside strings; npos when it does not close or nests deeper than max_depth.
size_t JsonValueEnd(std::string_view text, size_t pos, int max_depth);

// The deepest nesting of '[' and '{' in JSON text (outside strings).
int JsonNestingDepth(std::string_view text);

}  // namespace forge
