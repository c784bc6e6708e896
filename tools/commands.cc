#include "tools/commands.h"

#include <cstdio>

#include <CLI/CLI.hpp>

namespace flowtrain::tools {

void AddVersionCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("version", "Print the flowtrain version");
  cmd->callback([] { std::printf("flowtrain 0.1.0\n"); });
}

std::vector<AddCommand> AllCommands() {
  return {
      AddVersionCommand,            //
      AddInspectCheckpointCommand,  //
      AddEventsCommand,             //
      AddServerCommand,             //
      AddSavedModelCommand,
  };
}

}  // namespace flowtrain::tools
