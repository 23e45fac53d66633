// Subcommands of the forge tool; each adds itself to the CLI and runs through library calls.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace forge::cli {

// Registers a subcommand; the returned callback runs it and gives the exit status.
using CommandRunner = std::function<int()>;
void AddInspectCommand(CLI::App& app, CommandRunner* runner);
void AddBenchCommand(CLI::App& app, CommandRunner* runner);
void AddMakeModelCommand(CLI::App& app, CommandRunner* runner);
void AddTokenizeCommand(CLI::App& app, CommandRunner* runner);
void AddLogitsCommand(CLI::App& app, CommandRunner* runner);
void AddRunCommand(CLI::App& app, CommandRunner* runner);
void AddChatCommand(CLI::App& app, CommandRunner* runner);
void AddServeCommand(CLI::App& app, CommandRunner* runner);
void AddEmbedCommand(CLI::App& app, CommandRunner* runner);

}  // namespace forge::cli
