// Parser: tokens to a Template tree, following jinja2/parser.py's grammar and precedence
// (filters bind tighter than unary minus, `not` looser than comparisons, ...).
#pragma once

#include <string_view>

#include "base/status.h"
#include "jinja/ast.h"

namespace forge::jinja {

// Lexes and parses a template. Syntax errors are InvalidArgument and tags Forge does not
// implement (include, extends, block, import, ...) are Unimplemented, each naming the line.
StatusOr<Template> ParseTemplate(std::string_view source);

}  // namespace forge::jinja
