// RunForge: std::system with the streams redirected into files of the test's directory.
#include "support/cli_runner.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/test_env.h"

namespace forge::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

CliResult RunForge(const std::string& args, const std::string& dir, const std::string& input) {
  const std::string out = dir + "/cli.stdout", err = dir + "/cli.stderr", in = dir + "/cli.stdin";
  std::ofstream(in, std::ios::binary) << input;
  std::string cmd = "'";
  cmd.append(ForgeBinary()).append("' ").append(args);
  cmd.append(" <'").append(in).append("' >'").append(out).append("' 2>'").append(err).append("'");
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

void CliTest::SetUp() {
  dir_ = TempDir();
  ASSERT_TRUE(FileExists(ForgeBinary())) << "forge binary not found at " << ForgeBinary()
                                         << " (build the forge_cli target, or set FORGE_BIN)";
}

}  // namespace forge::testing
