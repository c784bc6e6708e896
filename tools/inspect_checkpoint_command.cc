// `flowtrain inspect-checkpoint PATH [--tensor_name NAME] [--all_tensors] [--all_tensor_names]
// [--printoptions k=v...]`: what a checkpoint holds, as TF's inspect_checkpoint tool prints it
// (the same flags; --file_name may stand for PATH; --tensor and --all are flowtrain's older
// spellings of --tensor_name and --all_tensors). Works on any V2 checkpoint, TF's or flowtrain's.
//
//   $ flowtrain inspect-checkpoint runs/x                  # the latest checkpoint of a model dir
//   dense/bias (DT_FLOAT) [4]
//   global_step (DT_INT64) []
//   $ flowtrain inspect-checkpoint runs/x/model.ckpt-2000.index --tensor_name dense/bias
//   tensor_name:  dense/bias
//   [0.1 0.2 0.3 0.4]
//   $ flowtrain inspect-checkpoint export/1 --all_tensors --printoptions threshold=inf
//
// PATH is a checkpoint prefix, one of its files (.index or .data-*-of-*), a model directory
// (the newest checkpoint its `checkpoint` state file names, as tf.train.latest_checkpoint) or a
// SavedModel directory (its variables/variables). Values print as numpy prints the array TF's
// tool gets, so more than 1000 values are cut to their ends with "..." unless
// --printoptions threshold=N (or inf) says otherwise.
//
// A partitioned variable is listed and printed once, as its full tensor.
// A damaged checkpoint is reported (DataLoss naming the file and tensor), never printed wrong.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/io/checkpoint_reader.h"
#include "flowtrain/saved_model/constants.h"
#include "flowtrain/saved_model/reader.h"
#include "flowtrain/train/checkpoint_management.h"
#include "tools/commands.h"
#include "tools/numpy_print.h"

namespace flowtrain::tools {
namespace {

// The checkpoint prefix `path` stands for (see the file comment). NotFound naming the directory
// when it is one without a SavedModel or a checkpoint state naming an existing checkpoint.
std::string ResolveCheckpointPrefix(const std::string& path) {
  static const std::regex kDataFile(R"(\.data-[0-9]{5}-of-[0-9]{5}$)");
  std::smatch match;
  if (std::regex_search(path, match, kDataFile)) return path.substr(0, match.position(0));
  if (path.size() > 6 && path.ends_with(".index")) return path.substr(0, path.size() - 6);
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return path;
  if (saved_model::MaybeSavedModelDirectory(path)) {
    return JoinPath(JoinPath(path, saved_model::kSavedModelVariablesDirectory),
                    saved_model::kSavedModelVariablesFilename);
  }
  if (std::optional<std::string> latest = train::LatestCheckpoint(path)) return *latest;
  if (FileExists(JoinPath(path, train::kDefaultLatestFilename))) {
    NotFound("Directory ", path, ": its `", train::kDefaultLatestFilename,
             "` file names no checkpoint whose .index exists");
  }
  NotFound("Directory ", path, " holds neither a `", train::kDefaultLatestFilename, "` state file nor a ",
           saved_model::kSavedModelFilenamePb, "; pass a checkpoint prefix");
}

void PrintTensor(const io::CheckpointReader& reader, const std::string& name,
                 const NumpyPrintOptions& options) {
  Tensor value = reader.GetTensor(name);
  // TF's reader hands a 0-d tensor back as a Python scalar, so a float32 or half one prints as
  // the double it widens to (0.1f as 0.10000000149011612), not as numpy's float32 does.
  if (value.dims() == 0 && (value.dtype() == DT_FLOAT || value.dtype() == DT_HALF)) {
    value = Tensor::Scalar<double>(value.dtype() == DT_FLOAT ? value.scalar<float>()
                                                             : static_cast<double>(value.scalar<half>()));
  }
  std::printf("tensor_name:  %s\n%s\n", name.c_str(), NumpyString(value, options).c_str());
}

}  // namespace

void AddInspectCheckpointCommand(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("inspect-checkpoint",
                         "List the tensors of a V2 checkpoint (name, dtype, shape), or print their values");
  auto path = std::make_shared<std::string>();
  auto tensor = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  auto names = std::make_shared<bool>(false);
  auto printoptions = std::make_shared<std::vector<std::string>>();
  cmd->add_option("prefix,--file_name", *path,
                  "Checkpoint prefix (e.g. runs/x/model.ckpt-2000), one of its files, a model directory "
                  "(latest checkpoint) or a SavedModel directory")
      ->required();
  cmd->add_option("--tensor_name,--tensor", *tensor, "Print the value of this tensor");
  cmd->add_flag("--all_tensors,--all", *all, "Print the value of every tensor");
  cmd->add_flag("--all_tensor_names", *names, "Print the name of every tensor");
  cmd->add_option(
      "--printoptions", *printoptions,
      "numpy.set_printoptions() settings k=v: threshold (or inf), edgeitems, linewidth, precision");
  cmd->callback([=] {
    NumpyPrintOptions options;
    for (const std::string& spec : *printoptions) options = ParsePrintOptions(spec, options);
    io::CheckpointReader reader(ResolveCheckpointPrefix(*path));
    if (*all || *names) {
      // Each variable whole: a partitioned one put together from its slices.
      for (const auto& [name, shape] : reader.GetVariableToShapeMap()) {
        if (*all) {
          PrintTensor(reader, name, options);
        } else {
          std::printf("tensor_name:  %s\n", name.c_str());
        }
      }
    } else if (!tensor->empty()) {
      PrintTensor(reader, *tensor, options);
    } else {
      std::fputs(reader.DebugString().c_str(), stdout);
    }
  });
}

}  // namespace flowtrain::tools
