// Runs the built forge binary as a user would, capturing exit status, stdout and stderr.
#pragma once

#include <string>

namespace forge::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// `forge <args>` (args are passed to the shell as written); files go in `dir`. stdin is `input`.
CliResult RunForge(const std::string& args, const std::string& dir, const std::string& input = "");

}  // namespace forge::testing
