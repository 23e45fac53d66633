// forge: the command-line entry point. Each subcommand lives in its own file.
#include <cstdio>

#include "base/logging.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Forge: serve large language models from GGUF files"};
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log-level", log_level, "debug|info|warning|error");
  forge::cli::CommandRunner runner;
  forge::cli::AddInspectCommand(app, &runner);
  forge::cli::AddBenchCommand(app, &runner);
  forge::cli::AddMakeModelCommand(app, &runner);
  forge::cli::AddTokenizeCommand(app, &runner);
  forge::cli::AddLogitsCommand(app, &runner);
  forge::cli::AddRunCommand(app, &runner);
  forge::cli::AddChatCommand(app, &runner);
  forge::cli::AddServeCommand(app, &runner);
  forge::cli::AddEmbedCommand(app, &runner);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!log_level.empty()) {
    forge::LogLevel level;
    if (!forge::ParseLogLevel(log_level, &level)) {
      std::fprintf(stderr, "forge: unknown --log-level '%s'\n", log_level.c_str());
      return 2;
    }
    forge::SetLogLevel(level);
  }
  return runner ? runner() : 2;
}
