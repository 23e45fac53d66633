// Lexer: template text to tokens, with Jinja2's whitespace control exactly as HF configures it
// (trim_blocks, lstrip_blocks, `-`/`+` markers, one trailing newline dropped, \r\n -> \n).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace forge::jinja {

enum class TokenType {
  kData,           // template text to copy to the output
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // value holds the unescaped text
  kInteger,
  kFloat,
  kOperator,  // value holds the operator text: "+", "//", "==", "(", ...
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// Tokenizes a whole template; the last token is kEof. Errors name the line:
// "line 3: unexpected char '$'".
StatusOr<std::vector<Token>> Tokenize(std::string_view source);

// A readable name for a token in error messages: "'for'", "end of print statement", ...
std::string DescribeToken(const Token& token);

}  // namespace forge::jinja
