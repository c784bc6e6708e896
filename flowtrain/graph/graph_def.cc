#include "flowtrain/graph/graph_def.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/op_registry.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain {
namespace {

// Attrs that TF added after 1.15 (flowtrain accepts them because TF 2.x writes them). At their
// default they are left out of the GraphDefs we write, so that TF 1.15, which rejects attrs
// its op defs lack, still imports our graphs; a non-default value is kept.
bool IsNewerThanTf115AtDefault(const Node& node, const std::string& attr,
                               const tensorflow::AttrValue& value) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kNewer = {
      {"MatMul", {"grad_a", "grad_b"}},
      {"BatchMatMulV2", {"grad_x", "grad_y"}},
      {"FusedBatchNormV3", {"exponential_avg_factor"}},
      {"MaxPool", {"explicit_paddings"}},
      {"MaxPoolGrad", {"explicit_paddings"}},
      {"MergeV2Checkpoints", {"allow_missing_files"}},
      {"VarHandleOp", {"debug_name", "allowed_devices"}},
      {"AssignVariableOp", {"validate_shape"}},
      {"TensorSliceDataset", {"metadata", "is_files", "replicate_on_split"}},
      {"RangeDataset", {"metadata", "replicate_on_split"}},
      {"TensorDataset", {"metadata"}},
      {"TFRecordDataset", {"metadata"}},
      {"TextLineDataset", {"metadata"}},
      {"FixedLengthRecordDatasetV2", {"metadata"}},
      {"MapDataset", {"metadata"}},
      {"ParallelMapDataset", {"metadata"}},
      {"FilterDataset", {"metadata"}},
      {"ShuffleDataset", {"metadata"}},
      {"RepeatDataset", {"metadata"}},
      {"BatchDatasetV2", {"metadata"}},
      {"PrefetchDataset", {"metadata"}},
      {"FlatMapDataset", {"metadata"}},
      {"TakeDataset", {"metadata"}},
      {"SkipDataset", {"metadata"}},
      {"ZipDataset", {"metadata"}},
      {"ConcatenateDataset", {"metadata"}},
      {"PaddedBatchDatasetV2", {"metadata"}},
      {"UnbatchDataset", {"metadata"}},
      {"ShardDataset", {"metadata"}},
  };
  // The attrs TF 2.x gave its dataset ops (metadata on all of them).
  static const std::vector<std::string> kNewerDatasetAttrs = {"metadata",        "force_synchronous",
                                                              "legacy_autotune", "buffer_size_min",
                                                              "is_files",        "replicate_on_split"};
  const bool newer_dataset_attr =
      node.type().ends_with("Dataset") &&
      std::find(kNewerDatasetAttrs.begin(), kNewerDatasetAttrs.end(), attr) != kNewerDatasetAttrs.end();
  auto it = kNewer.find(node.type());
  if (!newer_dataset_attr &&
      (it == kNewer.end() || std::find(it->second.begin(), it->second.end(), attr) == it->second.end())) {
    return false;
  }
  const OpRegistration* reg = OpRegistry::Global()->LookUp(node.type());
  if (reg == nullptr) return false;
  for (const auto& a : reg->def.attr()) {
    if (a.name() == attr) {
      return a.has_default_value() && a.default_value().SerializeAsString() == value.SerializeAsString();
    }
  }
  return false;
}

}  // namespace

tensorflow::GraphDef Graph::ToGraphDef(bool add_shapes) const {
  tensorflow::GraphDef def;
  for (const Operation& op : operations()) {
    const Node& node = *op.node();
    tensorflow::NodeDef* nd = def.add_node();
    nd->set_name(node.name());
    nd->set_op(node.type());
    for (const Endpoint& e : node.inputs()) {
      nd->add_input(e.index == 0 ? e.node->name() : StrCat(e.node->name(), ":", e.index));
    }
    for (const Node* c : node.control_inputs()) nd->add_input(StrCat("^", c->name()));
    nd->set_device(node.requested_device());
    auto* attrs = nd->mutable_attr();
    for (const auto& [name, value] : node.attrs()) {
      if (!IsNewerThanTf115AtDefault(node, name, value)) (*attrs)[name] = value;
    }
    if (add_shapes && node.num_outputs() > 0) {
      std::vector<PartialTensorShape> shapes;
      for (int i = 0; i < node.num_outputs(); ++i) shapes.push_back(node.output_shape(i));
      (*attrs)["_output_shapes"] = MakeAttrValue(shapes);
    }
  }
  if (!library_.empty()) *def.mutable_library() = library_.ToProto();
  def.mutable_versions()->set_producer(kGraphDefProducer);
  def.mutable_versions()->set_min_consumer(kGraphDefMinConsumer);
  return def;
}

int RemoveNewDefaultAttrs(const tensorflow::OpList& producer_ops, tensorflow::GraphDef* graph_def) {
  std::map<std::string, const tensorflow::OpDef*, std::less<>> producer;
  for (const tensorflow::OpDef& def : producer_ops.op()) producer.emplace(def.name(), &def);
  auto serialized = [](const tensorflow::AttrValue& value) {
    std::string bytes;
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    value.SerializeToCodedStream(&coded);
    coded.Trim();
    return bytes;
  };
  int removed = 0;
  auto strip = [&](tensorflow::NodeDef& node) {
    const OpRegistration* ours = OpRegistry::Global()->LookUp(node.op());
    auto theirs = producer.find(node.op());
    if (ours == nullptr || theirs == producer.end()) return;
    std::vector<std::string> remove;
    for (const auto& [name, value] : node.attr()) {
      if (name.starts_with("_")) continue;
      bool known = false;
      for (const auto& attr_def : ours->def.attr()) known = known || attr_def.name() == name;
      if (known) continue;
      for (const auto& attr_def : theirs->second->attr()) {
        if (attr_def.name() == name && attr_def.has_default_value() &&
            serialized(attr_def.default_value()) == serialized(value)) {
          remove.push_back(name);
        }
      }
    }
    for (const std::string& name : remove) node.mutable_attr()->erase(name);
    removed += static_cast<int>(remove.size());
  };
  for (tensorflow::NodeDef& node : *graph_def->mutable_node()) strip(node);
  // The bodies of the library's functions too: TF's tf.data functions hold dataset ops with
  // the newer attrs (metadata, replicate_on_split...).
  for (tensorflow::FunctionDef& function : *graph_def->mutable_library()->mutable_function()) {
    for (tensorflow::NodeDef& node : *function.mutable_node_def()) strip(node);
  }
  return removed;
}

void ImportGraphDef(const tensorflow::GraphDef& graph_def, Graph* graph, std::string_view prefix) {
  // Functions first: they are checked as a whole, and the nodes that call them come after.
  graph->library().AddLibrary(graph_def.library());
  const std::string name_prefix = prefix.empty() ? std::string() : StrCat(prefix, "/");
  std::map<std::string, const tensorflow::NodeDef*, std::less<>> by_name;
  for (const auto& nd : graph_def.node()) {
    if (!by_name.emplace(nd.name(), &nd).second) {
      InvalidArgument("GraphDef has two nodes named '", nd.name(), "'");
    }
  }
  std::map<std::string, Node*, std::less<>> imported;
  // A loop's back edges, NextIteration -> Merge, are the only cycles a GraphDef may have. The
  // Merge is built with a stand-in for that input (another of its inputs) and the edge is
  // set once the NextIteration exists, as TF's own import does.
  struct BackEdge {
    Node* merge;
    int input_index;
    std::string producer;
    int producer_index;
  };
  std::vector<BackEdge> back_edges;
  auto is_next_iteration = [&](const std::string& producer) {
    auto it = by_name.find(producer);
    return it != by_name.end() &&
           (it->second->op() == "NextIteration" || it->second->op() == "RefNextIteration");
  };

  // Builds `nd` once all its producers (but a Merge's NextIteration inputs) are imported.
  auto build_node = [&](const tensorflow::NodeDef& nd) {
    const tensorflow::OpDef& op_def = OpRegistry::Global()->Get(nd.op()).def;
    const bool is_merge = nd.op() == "Merge" || nd.op() == "RefMerge";
    std::vector<Output> data_inputs;
    std::vector<Operation> control_inputs;
    std::vector<BackEdge> own_back_edges;
    for (const std::string& input : nd.input()) {
      if (!input.empty() && input[0] == '^') {
        control_inputs.emplace_back(imported.find(std::string_view(input).substr(1))->second);
      } else {
        auto [producer, index] = ParseTensorName(input);
        if (is_merge && is_next_iteration(producer)) {
          own_back_edges.push_back({nullptr, static_cast<int>(data_inputs.size()), producer, index});
          data_inputs.emplace_back();  // the stand-in is chosen below
          continue;
        }
        Node* p = imported.find(producer)->second;
        if (index >= p->num_outputs()) {
          InvalidArgument("Node '", nd.name(), "' input '", input, "' refers to output ", index,
                          " of a node with ", p->num_outputs(), " outputs");
        }
        data_inputs.emplace_back(p, index);
      }
    }
    if (!own_back_edges.empty()) {
      auto forward =
          std::find_if(data_inputs.begin(), data_inputs.end(), [](const Output& o) { return o.valid(); });
      if (forward == data_inputs.end()) {
        InvalidArgument("Node '", nd.name(), "' (op: '", nd.op(),
                        "') merges only NextIteration outputs: a loop needs an input from outside it");
      }
      const Output stand_in = *forward;
      for (const BackEdge& edge : own_back_edges) data_inputs[edge.input_index] = stand_in;
    }
    NodeBuilder builder(nd.op(), StrCat(name_prefix, nd.name()));
    builder.Graph(graph).ExactName().IgnoreControlScopes().Device(nd.device());
    for (const auto& [attr_name, value] : nd.attr()) {
      if (attr_name == "_output_shapes") continue;  // recomputed by shape inference
      builder.SetAttr(attr_name, value);
    }
    // Split the flat input list along the signature's arguments.
    size_t next = 0;
    for (const auto& arg : op_def.input_arg()) {
      int64_t count = 1;
      bool is_list = false;
      if (!arg.number_attr().empty()) {
        is_list = true;
        auto it = nd.attr().find(arg.number_attr());
        count = it == nd.attr().end() ? 0 : it->second.i();
      } else if (!arg.type_list_attr().empty()) {
        is_list = true;
        auto it = nd.attr().find(arg.type_list_attr());
        count = it == nd.attr().end() ? 0 : it->second.list().type_size();
      }
      if (next + count > data_inputs.size()) {
        InvalidArgument("Node '", nd.name(), "' (op: '", nd.op(), "') has too few inputs");
      }
      if (is_list) {
        builder.Input(std::vector<Output>(data_inputs.begin() + next, data_inputs.begin() + next + count));
      } else {
        builder.Input(data_inputs[next]);
      }
      next += count;
    }
    if (next != data_inputs.size()) {
      InvalidArgument("Node '", nd.name(), "' (op: '", nd.op(), "') has ", data_inputs.size(),
                      " inputs, its op takes ", next);
    }
    builder.ControlInputs(control_inputs);
    Node* node = builder.Finalize().node();
    imported[nd.name()] = node;
    for (BackEdge& edge : own_back_edges) {
      edge.merge = node;
      back_edges.push_back(std::move(edge));
    }
  };

  // Depth first from each node to its producers, on a stack of our own: a GraphDef listing a
  // chain of 100k nodes consumer first would overflow the thread's stack by recursion.
  struct Frame {
    const tensorflow::NodeDef* nd;
    int next_input;
  };
  std::vector<Frame> stack;
  // Nodes visited: one reached again before it is imported is on the stack, hence a cycle.
  std::set<std::string, std::less<>> visited;
  auto visit = [&](std::string_view name) {
    if (imported.find(name) != imported.end()) return false;
    auto def_it = by_name.find(name);
    if (def_it == by_name.end()) {
      InvalidArgument("Node '", name, "' is used as an input but not defined in the GraphDef");
    }
    if (!visited.emplace(name).second) InvalidArgument("GraphDef has a cycle through node '", name, "'");
    const tensorflow::NodeDef& nd = *def_it->second;
    if (OpRegistry::Global()->LookUp(nd.op()) == nullptr) {
      NotFound("Op type not registered '", nd.op(), "' (node '", nd.name(), "')");
    }
    stack.push_back({&nd, 0});
    return true;
  };
  for (const auto& root : graph_def.node()) {
    visit(root.name());
    while (!stack.empty()) {
      Frame& frame = stack.back();
      const tensorflow::NodeDef& nd = *frame.nd;
      const bool is_merge = nd.op() == "Merge" || nd.op() == "RefMerge";
      bool pushed = false;
      // `frame` is not used once visit() has pushed: the push may move the stack.
      while (!pushed && frame.next_input < nd.input_size()) {
        const std::string& input = nd.input(frame.next_input++);
        if (!input.empty() && input[0] == '^') {
          pushed = visit(std::string_view(input).substr(1));
          continue;
        }
        const std::string producer = ParseTensorName(input).first;
        if (is_merge && is_next_iteration(producer)) continue;
        pushed = visit(producer);
      }
      if (!pushed) {
        build_node(nd);
        stack.pop_back();
      }
    }
  }
  for (const BackEdge& edge : back_edges) {
    Node* producer = imported.at(edge.producer);
    if (edge.producer_index >= producer->num_outputs()) {
      InvalidArgument("Node '", edge.merge->name(), "' input refers to output ", edge.producer_index, " of '",
                      edge.producer, "', which has ", producer->num_outputs(), " outputs");
    }
    graph->UpdateInput(Operation(edge.merge), edge.input_index, Output(producer, edge.producer_index));
  }
}

}  // namespace flowtrain
