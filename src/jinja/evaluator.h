// Evaluator: renders a parsed Template over a set of variables, with Jinja's scoping (a for
// loop body and a macro get their own scope; if does not), loop variables, macros, and limits
// that keep hostile templates bounded.
#pragma once

#include <ctime>
#include <string>

#include "base/status.h"
#include "jinja/ast.h"
#include "jinja/value.h"

namespace forge::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;
  int64_t max_steps = 20'000'000;  // statements run plus expressions evaluated
  int max_call_depth = 48;         // nested macro calls
};

// Renders `tmpl`. `variables` are the render context (messages, bos_token, ...); `now` is the
// time strftime_now formats. Errors name the template line; an error raised by the template's
// raise_exception() carries kRaisedPrefix followed by the template's message.
StatusOr<std::string> Render(const Template& tmpl, const ValueMap& variables, std::time_t now,
                             const RenderLimits& limits = {});

}  // namespace forge::jinja
