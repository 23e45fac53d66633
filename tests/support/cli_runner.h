// Runs the built forge binary as a user would, capturing exit status, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace forge::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// `forge <args>` (args are passed to the shell as written); files go in `dir`. stdin is `input`.
CliResult RunForge(const std::string& args, const std::string& dir, const std::string& input = "");

// A fixture for tests of the forge tool: a fresh temporary directory, the binary checked to exist
// (a failure naming where it was looked for otherwise), and Forge(args) running it there.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override;
  CliResult Forge(const std::string& args) { return RunForge(args, dir_); }
  std::string dir_;
};

}  // namespace forge::testing
