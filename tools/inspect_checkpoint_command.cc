// `flowtrain inspect-checkpoint PREFIX [--tensor NAME] [--all]`: what a checkpoint holds, as
// TF's inspect_checkpoint tool prints it. Works on any V2 checkpoint, TF's or flowtrain's.
//
//   $ flowtrain inspect-checkpoint runs/x/model.ckpt-2000
//   dense/bias (DT_FLOAT) [4]
//   global_step (DT_INT64) []
//   $ flowtrain inspect-checkpoint runs/x/model.ckpt-2000 --tensor global_step
//   tensor_name:  global_step
//   2000
//
// A partitioned variable is listed and printed once, as its full tensor.
// A damaged checkpoint is reported (DataLoss naming the file and tensor), never printed wrong.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "flowtrain/core/error.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "tools/commands.h"

namespace flowtrain::tools {
namespace {

void PrintTensor(const io::CheckpointReader& reader, const std::string& name) {
  const Tensor value = reader.GetTensor(name);
  std::printf("tensor_name:  %s\n", name.c_str());
  std::printf("%s\n", value.SummarizeValue(value.NumElements()).c_str());
}

}  // namespace

void AddInspectCheckpointCommand(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("inspect-checkpoint",
                         "List the tensors of a V2 checkpoint (name, dtype, shape), or print their values");
  auto prefix = std::make_shared<std::string>();
  auto tensor = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  cmd->add_option("prefix", *prefix, "Checkpoint prefix, e.g. runs/x/model.ckpt-2000 (without .index)")
      ->required();
  cmd->add_option("--tensor", *tensor, "Print the value of this tensor");
  cmd->add_flag("--all", *all, "Print the value of every tensor");
  cmd->callback([=] {
    io::CheckpointReader reader(*prefix);
    if (*all) {
      // Each variable whole: a partitioned one put together from its slices.
      for (const auto& [name, shape] : reader.GetVariableToShapeMap()) PrintTensor(reader, name);
    } else if (!tensor->empty()) {
      PrintTensor(reader, *tensor);
    } else {
      std::fputs(reader.DebugString().c_str(), stdout);
    }
  });
}

}  // namespace flowtrain::tools
