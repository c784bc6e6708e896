// `flowtrain saved-model show|run`: TF's saved_model_cli for SavedModels, with its flags and
// its output layout, on flowtrain's reader and loader (flowtrain/saved_model/).
//
//   $ flowtrain saved-model show --dir export/1                         # the tag-sets
//   $ flowtrain saved-model show --dir export/1 --tag_set serve         # their signature keys
//   $ flowtrain saved-model show --dir export/1 --tag_set serve --signature_def serving_default
//   $ flowtrain saved-model show --dir export/1 --all                   # everything
//   $ flowtrain saved-model run --dir export/1 --tag_set serve --signature_def serving_default \
//         --inputs 'x=batch.npy' --outdir out/        # out/y.npy, as saved_model_cli writes it
//
// `run` checks what it is given against the signature before loading the model: each --inputs
// key must be one of the signature's inputs, each input must be given, and each .npy file must
// hold the dtype of its TensorInfo and a shape compatible with it. Every error is one line
// naming what is wrong (the tag-sets or keys there are, the file); nothing is written before
// every output path is known to be free (or --overwrite is given).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/io/npy_file.h"
#include "flowtrain/proto/tensor_proto_util.h"
#include "flowtrain/saved_model/loader.h"
#include "flowtrain/saved_model/reader.h"
#include "tools/commands.h"
#include "tools/numpy_print.h"

namespace flowtrain::tools {
namespace {

// The tags of --tag_set "serve,gpu", blanks trimmed and empty ones dropped (as saved_model_cli).
std::vector<std::string> ParseTagSet(const std::string& tag_set) {
  std::vector<std::string> tags;
  for (absl::string_view piece : absl::StrSplit(tag_set, ',')) {
    std::string tag(piece.data(), piece.size());
    tag.erase(0, tag.find_first_not_of(" \t"));
    tag.erase(tag.find_last_not_of(" \t") + 1);
    if (!tag.empty()) tags.push_back(tag);
  }
  if (tags.empty()) InvalidArgument("--tag_set '", tag_set, "' names no tag");
  return tags;
}

// Python's repr of a str: what saved_model_cli's %r prints.
std::string PyRepr(const std::string& s) {
  const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  return StrCat(quote, s, quote);
}

// The signature `key` of `meta_graph`; NotFound listing the keys there are.
const tensorflow::SignatureDef& FindSignature(const tensorflow::MetaGraphDef& meta_graph,
                                              const std::string& key, const std::string& tag_set) {
  auto found = meta_graph.signature_def().find(key);
  if (found != meta_graph.signature_def().end()) return found->second;
  std::set<std::string> keys;
  for (const auto& [name, signature] : meta_graph.signature_def()) keys.insert(name);
  NotFound("The MetaGraphDef of tag-set '", tag_set, "' has no SignatureDef '", key,
           "'; its keys: ", keys.empty() ? "none" : StrCat("\"", absl::StrJoin(keys, "\", \""), "\""));
}

// "(-1, 2)" as saved_model_cli shows a TensorInfo's shape, "unknown_rank" when it has none.
std::string ShapeText(const tensorflow::TensorShapeProto& shape) {
  if (shape.unknown_rank()) return "unknown_rank";
  std::vector<std::string> dims;
  for (const auto& dim : shape.dim()) dims.push_back(std::to_string(dim.size()));
  return StrCat("(", absl::StrJoin(dims, ", "), ")");
}

// saved_model_cli's _print_tensor_info.
void PrintTensorInfo(const tensorflow::TensorInfo& info, const std::string& indent) {
  std::printf("%s    dtype: %s\n", indent.c_str(),
              DataTypeEnumName(static_cast<DataType>(info.dtype())).c_str());
  std::printf("%s    shape: %s\n", indent.c_str(), ShapeText(info.tensor_shape()).c_str());
  std::printf("%s    name: %s\n", indent.c_str(), info.name().c_str());
}

template <typename Map>
std::vector<std::string> SortedKeys(const Map& map) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : map) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// saved_model_cli's _show_inputs_outputs_mgd.
void PrintSignature(const tensorflow::SignatureDef& signature, const std::string& indent) {
  std::printf("%sThe given SavedModel SignatureDef contains the following input(s):\n", indent.c_str());
  for (const std::string& key : SortedKeys(signature.inputs())) {
    std::printf("%s  inputs['%s'] tensor_info:\n", indent.c_str(), key.c_str());
    PrintTensorInfo(signature.inputs().at(key), indent + "  ");
  }
  std::printf("%sThe given SavedModel SignatureDef contains the following output(s):\n", indent.c_str());
  for (const std::string& key : SortedKeys(signature.outputs())) {
    std::printf("%s  outputs['%s'] tensor_info:\n", indent.c_str(), key.c_str());
    PrintTensorInfo(signature.outputs().at(key), indent + "  ");
  }
  std::printf("%sMethod name is: %s\n", indent.c_str(), signature.method_name().c_str());
}

// The ops a MetaGraph's graph and functions use (function calls left out), as a Python set
// literal; sorted here, where Python's order is its hash's.
std::string OpsUsed(const tensorflow::MetaGraphDef& meta_graph) {
  std::set<std::string> ops, functions;
  for (const auto& node : meta_graph.graph_def().node()) ops.insert(node.op());
  for (const auto& function : meta_graph.graph_def().library().function()) {
    functions.insert(function.signature().name());
    for (const auto& node : function.node_def()) ops.insert(node.op());
  }
  std::vector<std::string> shown;
  for (const std::string& op : ops) {
    if (!functions.contains(op)) shown.push_back(PyRepr(op));
  }
  return shown.empty() ? "set()" : StrCat("{", absl::StrJoin(shown, ", "), "}");
}

void ShowAll(const tensorflow::SavedModel& saved_model) {
  std::vector<const tensorflow::MetaGraphDef*> meta_graphs;
  for (const auto& meta_graph : saved_model.meta_graphs()) meta_graphs.push_back(&meta_graph);
  auto tags_of = [](const tensorflow::MetaGraphDef* m) {
    return std::vector<std::string>(m->meta_info_def().tags().begin(), m->meta_info_def().tags().end());
  };
  std::stable_sort(meta_graphs.begin(), meta_graphs.end(),
                   [&](auto* a, auto* b) { return tags_of(a) < tags_of(b); });
  for (const tensorflow::MetaGraphDef* meta_graph : meta_graphs) {
    const std::vector<std::string> tags = tags_of(meta_graph);
    std::printf("\nMetaGraphDef with tag-set: '%s' contains the following SignatureDefs:\n",
                absl::StrJoin(tags, ", ").c_str());
    for (const std::string& key : SortedKeys(meta_graph->signature_def())) {
      std::printf("\nsignature_def['%s']:\n", key.c_str());
      PrintSignature(meta_graph->signature_def().at(key), "  ");
    }
    std::vector<std::string> quoted;
    for (const std::string& tag : tags) quoted.push_back(PyRepr(tag));
    std::printf("The MetaGraph with tag set [%s] contains the following ops: %s\n",
                absl::StrJoin(quoted, ", ").c_str(), OpsUsed(*meta_graph).c_str());
  }
}

void Show(const std::string& dir, const std::string& tag_set, const std::string& signature_key, bool all) {
  const tensorflow::SavedModel saved_model = saved_model::ReadSavedModel(dir);
  if (all) return ShowAll(saved_model);
  if (tag_set.empty()) {
    if (!signature_key.empty()) InvalidArgument("--signature_def needs --tag_set");
    std::vector<std::string> sets;
    for (const std::set<std::string>& tags : saved_model::GetTagSets(saved_model)) {
      sets.push_back(absl::StrJoin(tags, ", "));  // a std::set: sorted, as saved_model_cli sorts
    }
    std::sort(sets.begin(), sets.end());
    std::printf("The given SavedModel contains the following tag-sets:\n");
    for (const std::string& set : sets) std::printf("%s\n", PyRepr(set).c_str());
    return;
  }
  const tensorflow::MetaGraphDef& meta_graph =
      saved_model::FindMetaGraphDef(saved_model, ParseTagSet(tag_set), dir);
  if (signature_key.empty()) {
    std::printf("The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:\n");
    for (const std::string& key : SortedKeys(meta_graph.signature_def())) {
      std::printf("SignatureDef key: \"%s\"\n", key.c_str());
    }
    return;
  }
  PrintSignature(FindSignature(meta_graph, signature_key, tag_set), "");
}

// --inputs "x=a.npy;y=b.npy" as input key -> file. InvalidArgument for a piece not of the form
// key=file, a repeated key, or saved_model_cli's key=file[variable] (which picks an array out
// of an .npz or pickle file: flowtrain reads .npy files only).
std::map<std::string, std::string> ParseInputs(const std::string& inputs) {
  std::map<std::string, std::string> files;
  for (absl::string_view piece_view : absl::StrSplit(inputs, ';', absl::SkipEmpty())) {
    const std::string piece(piece_view.data(), piece_view.size());
    const size_t eq = piece.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == piece.size()) {
      InvalidArgument("--inputs \"", piece, "\" is not of the form <input_key>=<filename.npy>");
    }
    const std::string key = piece.substr(0, eq), file = piece.substr(eq + 1);
    if (file.find('[') != std::string::npos) {
      InvalidArgument("--inputs \"", piece,
                      "\": flowtrain reads whole .npy files only, not <file>[<variable>]");
    }
    if (!files.emplace(key, file).second) InvalidArgument("--inputs names input '", key, "' twice");
  }
  return files;
}

// The input tensors of signature `key` read from `files`, checked against its TensorInfos.
std::map<std::string, Tensor> ReadInputs(const tensorflow::SignatureDef& signature, const std::string& key,
                                         const std::map<std::string, std::string>& files) {
  for (const auto& [input_key, file] : files) {
    if (!signature.inputs().contains(input_key)) {
      InvalidArgument("\"", input_key, "\" is not a valid input key of signature '", key, "'; its inputs: \"",
                      absl::StrJoin(SortedKeys(signature.inputs()), "\", \""), "\"");
    }
  }
  std::map<std::string, Tensor> tensors;
  for (const std::string& input_key : SortedKeys(signature.inputs())) {
    auto file = files.find(input_key);
    if (file == files.end()) {
      InvalidArgument("Signature '", key, "' needs input '", input_key, "': add ", input_key,
                      "=<file.npy> to --inputs");
    }
    const tensorflow::TensorInfo& info = signature.inputs().at(input_key);
    Tensor tensor = io::ReadNpyFile(file->second);
    const auto dtype = static_cast<DataType>(info.dtype());
    const PartialTensorShape shape = PartialShapeFromProto(info.tensor_shape());
    if (tensor.dtype() != dtype || !shape.IsCompatibleWith(tensor.shape())) {
      InvalidArgument("Input '", input_key, "' from ", file->second, " is ", DataTypeString(tensor.dtype()),
                      " ", tensor.shape().DebugString(), ", but signature '", key, "' takes ",
                      DataTypeString(dtype), " ", shape.DebugString());
    }
    tensors.emplace(input_key, std::move(tensor));
  }
  return tensors;
}

void Run(const std::string& dir, const std::string& tag_set, const std::string& key,
         const std::string& inputs, const std::string& outdir, bool overwrite) {
  const std::vector<std::string> tags = ParseTagSet(tag_set);
  const tensorflow::SavedModel saved_model = saved_model::ReadSavedModel(dir);
  const tensorflow::SignatureDef& signature =
      FindSignature(saved_model::FindMetaGraphDef(saved_model, tags, dir), key, tag_set);
  const std::map<std::string, Tensor> feeds = ReadInputs(signature, key, ParseInputs(inputs));
  if (!outdir.empty() && !overwrite) {
    for (const std::string& output_key : SortedKeys(signature.outputs())) {
      const std::string path = JoinPath(outdir, output_key + ".npy");
      if (FileExists(path)) {
        AlreadyExists("Output file ", path,
                      " already exists. Add \"--overwrite\" to overwrite the existing output files.");
      }
    }
  }
  const saved_model::SavedModelBundle bundle = saved_model::Load({}, tags, dir);
  const std::map<std::string, Tensor> outputs = bundle.RunSignature(key, feeds);
  if (!outdir.empty()) std::filesystem::create_directories(outdir);
  for (const auto& [output_key, tensor] : outputs) {
    std::printf("Result for output key %s (%s %s):\n%s\n", output_key.c_str(),
                DataTypeString(tensor.dtype()).c_str(), tensor.shape().DebugString().c_str(),
                NumpyString(tensor).c_str());
    if (!outdir.empty()) {
      const std::string path = JoinPath(outdir, output_key + ".npy");
      io::WriteNpyFile(path, tensor);
      std::printf("Output %s is saved to %s\n", output_key.c_str(), path.c_str());
    }
  }
}

// Runs `body`, turning a flowtrain error's message into one line (the loader's may quote a
// multi-line op error), so a script sees one line per failure.
template <typename Body>
void OneLineErrors(const Body& body) {
  try {
    body();
  } catch (const Error& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    ThrowError(e.code(), message);
  }
}

}  // namespace

void AddSavedModelCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("saved-model", "Show or run a SavedModel (TF's saved_model_cli)");
  cmd->require_subcommand(1);

  CLI::App* show = cmd->add_subcommand("show", "Show the tag-sets, signatures and tensors of a SavedModel");
  auto dir = std::make_shared<std::string>();
  auto tag_set = std::make_shared<std::string>();
  auto signature = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  show->add_option("--dir", *dir, "The SavedModel directory")->required();
  show->add_option("--tag_set", *tag_set, "Tags of the MetaGraph, comma-separated (e.g. serve)");
  show->add_option("--signature_def", *signature,
                   "Show this signature's inputs and outputs (needs --tag_set)");
  show->add_flag("--all", *all, "Show every MetaGraph, signature and tensor");
  show->callback([=] { OneLineErrors([&] { Show(*dir, *tag_set, *signature, *all); }); });

  CLI::App* run = cmd->add_subcommand("run", "Run a signature of a SavedModel on inputs from .npy files");
  auto inputs = std::make_shared<std::string>();
  auto outdir = std::make_shared<std::string>();
  auto overwrite = std::make_shared<bool>(false);
  run->add_option("--dir", *dir, "The SavedModel directory")->required();
  run->add_option("--tag_set", *tag_set, "Tags of the MetaGraph, comma-separated (e.g. serve)")->required();
  run->add_option("--signature_def", *signature, "The signature to run")->required();
  run->add_option("--inputs", *inputs, "Input files: '<input_key>=<file.npy>[;<input_key>=<file.npy>...]'");
  run->add_option("--outdir", *outdir, "Write each output to <outdir>/<output_key>.npy");
  run->add_flag("--overwrite", *overwrite, "Replace output files that exist");
  run->callback(
      [=] { OneLineErrors([&] { Run(*dir, *tag_set, *signature, *inputs, *outdir, *overwrite); }); });
}

}  // namespace flowtrain::tools
