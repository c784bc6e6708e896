// Registration of the `flowtrain` subcommands. A subcommand file defines
//
//   void AddInspectCheckpointCommand(CLI::App& app) {
//     CLI::App* cmd = app.add_subcommand("inspect-checkpoint", "...");
//     ...
//     cmd->callback([=] { ... });   // throws flowtrain errors on failure
//   }
//
// and commands.cc lists it in AllCommands().
#ifndef FLOWTRAIN_TOOLS_COMMANDS_H_
#define FLOWTRAIN_TOOLS_COMMANDS_H_

#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace flowtrain::tools {

using AddCommand = std::function<void(CLI::App&)>;
std::vector<AddCommand> AllCommands();

void AddVersionCommand(CLI::App& app);
void AddInspectCheckpointCommand(CLI::App& app);
void AddEventsCommand(CLI::App& app);
void AddServerCommand(CLI::App& app);
void AddSavedModelCommand(CLI::App& app);

}  // namespace flowtrain::tools

#endif  // FLOWTRAIN_TOOLS_COMMANDS_H_
