// The `flowtrain` command line: one binary gathering the tools, each a subcommand with its
// own --help (`flowtrain inspect-checkpoint --help`).
//
// Each subcommand lives in its own <name>_command.cc and is added by its Add...Command
// function (declared in commands.h).
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "flowtrain/core/error.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"flowtrain: TensorFlow 1.x's training stack in C++ — tools"};
  app.require_subcommand(1);
  for (const auto& add : flowtrain::tools::AllCommands()) add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const flowtrain::Error& e) {
    std::fprintf(stderr, "flowtrain: %s\n", e.ToString().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flowtrain: %s\n", e.what());
    return 1;
  }
  return 0;
}
