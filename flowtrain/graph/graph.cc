#include "flowtrain/graph/graph.h"

#include <algorithm>
#include <atomic>
#include <cctype>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {

// ---- ScopeGuard ----

ScopeGuard& ScopeGuard::operator=(ScopeGuard&& other) noexcept {
  if (this != &other) {
    Exit();
    on_exit_ = std::move(other.on_exit_);
    other.on_exit_ = nullptr;
  }
  return *this;
}

ScopeGuard::~ScopeGuard() { Exit(); }

void ScopeGuard::Exit() {
  if (on_exit_) {
    auto fn = std::move(on_exit_);
    on_exit_ = nullptr;
    fn();
  }
}

// ---- Default graph ----

namespace {

ABSL_CONST_INIT absl::Mutex default_graph_mu(absl::kConstInit);

std::unique_ptr<Graph>& ProcessDefaultGraph() ABSL_EXCLUSIVE_LOCKS_REQUIRED(default_graph_mu) {
  static auto* graph = new std::unique_ptr<Graph>(new Graph());
  return *graph;
}

std::atomic<int>& ThreadsWithDefaultGraphs() {
  static std::atomic<int> count{0};
  return count;
}

thread_local std::vector<Graph*> default_graph_stack;

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Graph& GetDefaultGraph() {
  if (!default_graph_stack.empty()) return *default_graph_stack.back();
  absl::MutexLock lock(&default_graph_mu);
  return *ProcessDefaultGraph();
}

void ResetDefaultGraph() {
  if (!default_graph_stack.empty() || ThreadsWithDefaultGraphs().load() > 0) {
    FailedPrecondition(
        "Do not use ResetDefaultGraph() to clear nested graphs. If you need a cleared graph, "
        "exit the nesting and create a new graph.");
  }
  absl::MutexLock lock(&default_graph_mu);
  ProcessDefaultGraph() = std::make_unique<Graph>();
}

Graph::Graph() = default;
Graph::~Graph() = default;

ScopeGuard Graph::AsDefault() {
  default_graph_stack.push_back(this);
  if (default_graph_stack.size() == 1) ThreadsWithDefaultGraphs().fetch_add(1);
  return ScopeGuard([this] {
    // Guards must nest; a guard closed out of order is removed where it is.
    auto it = std::find(default_graph_stack.rbegin(), default_graph_stack.rend(), this);
    if (it != default_graph_stack.rend()) default_graph_stack.erase(std::next(it).base());
    if (default_graph_stack.empty()) ThreadsWithDefaultGraphs().fetch_sub(1);
  });
}

// ---- Building context ----

std::string Graph::UniqueName(std::string_view name) {
  absl::MutexLock lock(&mu_);
  // TF compares names case-insensitively when uniquifying, so "Add" and "add" do not
  // collide on case-insensitive filesystems when graphs are written out.
  std::string key = Lowercase(name);
  int& count = names_in_use_[key];
  const int previous = count++;
  if (previous == 0) return std::string(name);
  int i = previous;
  std::string candidate;
  while (true) {
    candidate = StrCat(name, "_", i);
    key = Lowercase(candidate);
    if (names_in_use_.find(key) == names_in_use_.end()) break;
    ++i;
  }
  names_in_use_[key] = 1;
  return candidate;
}

std::string Graph::CurrentNameScope() const {
  absl::MutexLock lock(&mu_);
  return name_stack_.empty() ? std::string() : name_stack_.back();
}

ScopeGuard Graph::NameScope(std::string_view name) {
  std::string scope;
  if (name.empty()) {
    scope = "";
  } else if (name.back() == '/') {
    scope = std::string(name);
  } else {
    scope = UniqueName(StrCat(CurrentNameScope(), name)) + "/";
  }
  absl::MutexLock lock(&mu_);
  name_stack_.push_back(scope);
  const size_t depth = name_stack_.size();
  return ScopeGuard([this, depth] {
    absl::MutexLock l(&mu_);
    name_stack_.resize(depth - 1);
  });
}

ScopeGuard Graph::ControlDependencies(const std::vector<Operation>& ops) {
  ControlFrame frame;
  for (const Operation& op : ops) {
    if (!op) InvalidArgument("ControlDependencies: an operation is empty");
    if (op.graph() != this) {
      InvalidArgument("Control dependency ", op.name(), " is not an element of this graph.");
    }
    frame.ops.push_back(op.node());
  }
  absl::MutexLock lock(&mu_);
  control_frames_.push_back(std::move(frame));
  const size_t depth = control_frames_.size();
  return ScopeGuard([this, depth] {
    absl::MutexLock l(&mu_);
    control_frames_.resize(depth - 1);
  });
}

ScopeGuard Graph::ClearControlDependencies() {
  absl::MutexLock lock(&mu_);
  control_frames_.push_back(ControlFrame{true, {}});
  const size_t depth = control_frames_.size();
  return ScopeGuard([this, depth] {
    absl::MutexLock l(&mu_);
    control_frames_.resize(depth - 1);
  });
}

ScopeGuard Graph::Device(std::string device) {
  absl::MutexLock lock(&mu_);
  device_stack_.push_back(std::move(device));
  const size_t depth = device_stack_.size();
  return ScopeGuard([this, depth] {
    absl::MutexLock l(&mu_);
    device_stack_.resize(depth - 1);
  });
}

ScopeGuard Graph::Device(DeviceFunction fn) {
  absl::MutexLock lock(&mu_);
  device_functions_.push_back(std::move(fn));
  const size_t depth = device_functions_.size();
  return ScopeGuard([this, depth] {
    absl::MutexLock l(&mu_);
    device_functions_.resize(depth - 1);
  });
}

ScopeGuard Graph::ColocateWith(Operation op) {
  if (!op || op.graph() != this) {
    InvalidArgument("ColocateWith: operation is not an element of this graph.");
  }
  absl::MutexLock lock(&mu_);
  colocation_stack_.push_back(op.node());
  const size_t depth = colocation_stack_.size();
  return ScopeGuard([this, depth] {
    absl::MutexLock l(&mu_);
    colocation_stack_.resize(depth - 1);
  });
}

Graph::BuildContext Graph::CurrentBuildContext(std::string_view op_type, std::string_view node_name) const {
  absl::MutexLock lock(&mu_);
  BuildContext context;
  size_t first = 0;
  for (size_t i = 0; i < control_frames_.size(); ++i) {
    if (control_frames_[i].clears) first = i + 1;
  }
  for (size_t i = first; i < control_frames_.size(); ++i) {
    for (Node* n : control_frames_[i].ops) {
      if (std::find(context.control_dependencies.begin(), context.control_dependencies.end(), n) ==
          context.control_dependencies.end()) {
        context.control_dependencies.push_back(n);
      }
    }
  }
  if (!device_stack_.empty()) context.device = device_stack_.back();
  if (!device_functions_.empty()) {
    context.device = device_functions_.back()(op_type, node_name, context.device);
  }
  if (!colocation_stack_.empty()) {
    Node* target = colocation_stack_.back();
    // Colocating with a node that is itself colocated follows its group, as TF does.
    if (const AttrValue* cls = target->FindAttr("_class")) {
      for (const std::string& s : cls->list().s()) context.colocation.push_back(s);
    } else {
      context.colocation.push_back(StrCat("loc:@", target->name()));
    }
    if (!target->requested_device().empty()) context.device = target->requested_device();
  }
  return context;
}

OpNameScope::OpNameScope(Graph& graph, std::string_view name) {
  guard_ = graph.NameScope(name);
  op_name_ = graph.CurrentNameScope();
  op_name_.pop_back();  // the scope ends in "/"
}

// ---- Nodes ----

void Graph::CheckNotFinalized() const {
  absl::MutexLock lock(&mu_);
  if (finalized_) FailedPrecondition("Graph is finalized and cannot be modified.");
}

Node* Graph::AddNode(std::unique_ptr<Node> node) {
  absl::MutexLock lock(&mu_);
  if (finalized_) FailedPrecondition("Graph is finalized and cannot be modified.");
  if (nodes_by_name_.count(node->name()) != 0) {
    InvalidArgument("Duplicate node name in graph: '", node->name(), "'");
  }
  node->id_ = static_cast<int>(nodes_.size());
  node->graph_ = this;
  Node* raw = node.get();
  nodes_.push_back(std::move(node));
  nodes_by_name_.emplace(raw->name(), raw);
  // Explicitly named nodes (imports) also reserve their name for UniqueName.
  names_in_use_.try_emplace(Lowercase(raw->name()), 1);
  return raw;
}

void Graph::NotifyNodeAdded(Node* node) {
  std::shared_ptr<std::function<void(Operation)>> callback;
  {
    absl::MutexLock lock(&mu_);
    if (node_added_callbacks_.empty()) return;
    callback = node_added_callbacks_.back();
  }
  // Without the lock: the callback builds and rewires nodes.
  (*callback)(Operation(node));
}

ScopeGuard Graph::OnNodeAdded(std::function<void(Operation)> fn) {
  absl::MutexLock lock(&mu_);
  node_added_callbacks_.push_back(std::make_shared<std::function<void(Operation)>>(std::move(fn)));
  const size_t depth = node_added_callbacks_.size();
  return ScopeGuard([this, depth] {
    absl::MutexLock l(&mu_);
    node_added_callbacks_.resize(depth - 1);
  });
}

void Graph::AddControlInput(Operation op, Operation control) {
  if (!op || op.graph() != this || !control || control.graph() != this) {
    InvalidArgument("AddControlInput: the ops are not in this graph");
  }
  absl::MutexLock lock(&mu_);
  if (finalized_) FailedPrecondition("Graph is finalized and cannot be modified.");
  std::vector<Node*>& controls = op.node()->control_inputs_;
  if (std::find(controls.begin(), controls.end(), control.node()) != controls.end()) return;
  controls.push_back(control.node());
  ++input_updates_;
}

void Graph::SetOutputShape(Operation op, int index, const PartialTensorShape& shape) {
  if (!op || op.graph() != this) InvalidArgument("SetOutputShape: the op is not in this graph");
  Node* node = op.node();
  if (index < 0 || index >= node->num_outputs()) {
    InvalidArgument("SetOutputShape: ", node->name(), " has no output ", index);
  }
  absl::MutexLock lock(&mu_);
  if (!node->output_shapes_[index].IsCompatibleWith(shape)) {
    InvalidArgument("SetOutputShape: shape ", shape.DebugString(), " is not compatible with ",
                    node->output_shapes_[index].DebugString(), " of ", node->name(), ":", index);
  }
  node->output_shapes_[index] = shape;
}

int Graph::num_nodes() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(nodes_.size());
}

int64_t Graph::version() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(nodes_.size()) + input_updates_;
}

void Graph::UpdateInput(Operation op, int index, Output new_input) {
  Node* node = op.node();
  if (node == nullptr || node->graph() != this) InvalidArgument("UpdateInput: the op is not in this graph");
  if (index < 0 || index >= node->num_inputs()) {
    InvalidArgument("UpdateInput: ", node->name(), " has ", node->num_inputs(), " inputs, not input ", index);
  }
  if (!new_input.valid() || new_input.graph() != this) {
    InvalidArgument("UpdateInput: the new input of ", node->name(), " is not an output of this graph");
  }
  const DataType want = node->input_type(index);
  const DataType have = new_input.node()->output_type(new_input.index());
  if (BaseType(want) != BaseType(have) || (IsRefType(want) && !IsRefType(have))) {
    InvalidArgument("UpdateInput: input ", index, " of ", node->name(), " is ", DataTypeString(want),
                    ", not ", DataTypeString(have), " (", new_input.name(), ")");
  }
  Endpoint old_input;
  {
    absl::MutexLock lock(&mu_);
    if (finalized_) FailedPrecondition("Graph is finalized and cannot be modified.");
    old_input = node->inputs_[index];
    node->inputs_[index] = Endpoint{new_input.node(), new_input.index()};
    ++input_updates_;
  }
  // Shape functions may look at the graph (constant inputs), so they run without the lock.
  const OpRegistration& registration = node->registration();
  if (!registration.shape_fn) return;
  InferenceContext context(*node);
  try {
    registration.shape_fn(context);
  } catch (const Error& e) {
    {
      absl::MutexLock lock(&mu_);
      node->inputs_[index] = old_input;  // the graph stays as it was
    }
    ThrowError(e.code(), StrCat(e.what(), " for '", node->name(), "' with input ", index, " set to ",
                                new_input.name()));
  }
  std::vector<PartialTensorShape> inferred = context.TakeOutputs();
  for (size_t i = 0; i < inferred.size() && i < node->output_shapes_.size(); ++i) {
    node->output_shapes_[i] = node->output_shapes_[i].MostSpecificCompatibleShape(inferred[i]);
  }
}

Node* Graph::node(int id) const {
  absl::MutexLock lock(&mu_);
  if (id < 0 || id >= static_cast<int>(nodes_.size())) return nullptr;
  return nodes_[id].get();
}

Node* Graph::FindNode(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = nodes_by_name_.find(name);
  return it == nodes_by_name_.end() ? nullptr : it->second;
}

Operation Graph::GetOperationByName(std::string_view name) const {
  Node* n = FindNode(name);
  if (n == nullptr) {
    InvalidArgument("The name '", name, "' refers to an Operation not in the graph.");
  }
  return Operation(n);
}

Output Graph::GetTensorByName(std::string_view name) const {
  auto [op_name, index] = ParseTensorName(name);
  if (name.find(':') == std::string_view::npos) {
    InvalidArgument("The name '", name,
                    "' looks like an (invalid) Operation name, not a Tensor. Tensor names must "
                    "be of the form \"<op_name>:<output_index>\".");
  }
  Node* n = FindNode(op_name);
  if (n == nullptr) {
    InvalidArgument("The name '", name,
                    "' refers to a Tensor which does not exist. The "
                    "operation, '",
                    op_name, "', does not exist in the graph.");
  }
  if (index < 0 || index >= n->num_outputs()) {
    InvalidArgument("The name '", name,
                    "' refers to a Tensor which does not exist. The "
                    "operation, '",
                    op_name, "', exists but only has ", n->num_outputs(), " outputs.");
  }
  return Output(n, index);
}

std::vector<Operation> Graph::operations() const {
  absl::MutexLock lock(&mu_);
  std::vector<Operation> ops;
  ops.reserve(nodes_.size());
  for (const auto& n : nodes_) ops.emplace_back(n.get());
  return ops;
}

// ---- Collections ----

void Graph::AddToCollection(std::string_view key, std::any value) {
  absl::MutexLock lock(&mu_);
  auto it = collections_.find(key);
  if (it == collections_.end()) it = collections_.emplace(std::string(key), std::vector<std::any>()).first;
  it->second.push_back(std::move(value));
}

std::vector<std::any> Graph::GetCollectionItems(std::string_view key) const {
  absl::MutexLock lock(&mu_);
  auto it = collections_.find(key);
  return it == collections_.end() ? std::vector<std::any>() : it->second;
}

void Graph::ClearCollection(std::string_view key) {
  absl::MutexLock lock(&mu_);
  auto it = collections_.find(key);
  if (it != collections_.end()) collections_.erase(it);
}

std::vector<std::string> Graph::CollectionKeys() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> keys;
  for (const auto& [key, items] : collections_) keys.push_back(key);
  return keys;
}

// ---- Lifecycle ----

void Graph::Finalize() {
  absl::MutexLock lock(&mu_);
  finalized_ = true;
}

bool Graph::finalized() const {
  absl::MutexLock lock(&mu_);
  return finalized_;
}

void Graph::Unfinalize() {
  absl::MutexLock lock(&mu_);
  finalized_ = false;
}

std::optional<int64_t> Graph::seed() const {
  absl::MutexLock lock(&mu_);
  return seed_;
}

void Graph::set_seed(int64_t seed) {
  absl::MutexLock lock(&mu_);
  seed_ = seed;
}

int64_t Graph::NextOpSeed() {
  absl::MutexLock lock(&mu_);
  // TF 2.x counts per graph (random_seed.py's _graph_to_seed_dict); TF 1.x took the id of the
  // last op built, which made the seed depend on unrelated ops.
  return next_op_seed_++;
}

}  // namespace flowtrain
