#include "flowtrain/distributed/internal/partition.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/attr_value_util.h"
#include "flowtrain/runtime/device_spec.h"
#include "flowtrain/runtime/internal/control_flow_info.h"

namespace flowtrain::distributed {
namespace {

using EndpointId = std::pair<int, int>;  // node id, output index

EndpointId IdOf(const Endpoint& e) { return {e.node->id(), e.index}; }

// Input i of `n` is a variable's reference or a resource handle: state that exists only on
// the producer's task, so `n` must run there (TF's placer colocates both kinds of edge).
bool TakesStateOf(const Node* n, int i) {
  return IsRefType(n->input_type(i)) || n->input_type(i) == DT_RESOURCE;
}

// Input i of `n` is a loop's back edge (a NextIteration into its Merge), the one edge that
// goes against the graph's topological order of node ids.
bool IsBackEdge(const Node* n, int i) {
  return CfKindOf(*n) == CfKind::kMerge && CfKindOf(*n->input(i).node) == CfKind::kNextIteration;
}

class Partitioner {
 public:
  Partitioner(const Graph& graph, const std::vector<Endpoint>& feeds, const std::vector<Endpoint>& fetches,
              const std::vector<const Node*>& targets, const PartitionOptions& options)
      : graph_(graph), fetches_(fetches), targets_(targets), options_(options) {
    for (size_t i = 0; i < feeds.size(); ++i) feed_index_.emplace(IdOf(feeds[i]), static_cast<int>(i));
  }

  PartitionPlan Build() {
    FindNeededNodes();
    FindLoops();
    Place();
    CheckLoopsStayInOneTask();
    FindNodesThatMayBeDead();
    AssignStages();
    return Emit();
  }

 private:
  int FeedIndex(const Endpoint& e) const {
    auto it = feed_index_.find(IdOf(e));
    return it == feed_index_.end() ? -1 : it->second;
  }

  // The nodes the fetches and targets need, stopping at fed tensors, in node-id order.
  void FindNeededNodes() {
    std::vector<const Node*> stack;
    auto need = [&](const Node* n) {
      if (needed_set_.insert(n).second) stack.push_back(n);
    };
    for (const Endpoint& e : fetches_) {
      if (FeedIndex(e) < 0) need(e.node);
    }
    for (const Node* n : targets_) need(n);
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      for (const Endpoint& e : n->inputs()) {
        if (FeedIndex(e) < 0) need(e.node);
      }
      for (const Node* c : n->control_inputs()) need(c);
    }
    SortTopologically();
  }

  // Orders needed_ so that every node follows its inputs but loops' back edges, the oldest
  // ready node first (control flow builders add a Switch or Enter after its consumer).
  void SortTopologically() {
    std::unordered_map<const Node*, int> pending;
    std::unordered_map<const Node*, std::vector<const Node*>> consumers;
    for (const Node* n : needed_set_) {
      int& count = pending[n];
      for (int i = 0; i < n->num_inputs(); ++i) {
        if (FeedIndex(n->input(i)) >= 0 || IsBackEdge(n, i)) continue;
        consumers[n->input(i).node].push_back(n);
        ++count;
      }
      for (const Node* c : n->control_inputs()) {
        consumers[c].push_back(n);
        ++count;
      }
    }
    auto later = [](const Node* a, const Node* b) { return a->id() > b->id(); };
    std::priority_queue<const Node*, std::vector<const Node*>, decltype(later)> ready(later);
    for (const auto& [n, count] : pending) {
      if (count == 0) ready.push(n);
    }
    while (!ready.empty()) {
      const Node* n = ready.top();
      ready.pop();
      needed_.push_back(n);
      for (const Node* c : consumers[n]) {
        if (--pending.at(c) == 0) ready.push(c);
      }
    }
    if (needed_.size() == needed_set_.size()) return;
    const Node* stuck = nullptr;
    for (const auto& [n, count] : pending) {
      if (count != 0 && (stuck == nullptr || n->id() < stuck->id())) stuck = n;
    }
    InvalidArgument("The graph has a cycle that is not a while loop's: ", stuck->DebugName(),
                    " depends on its own output");
  }

  // The outermost loop (frame) of each needed node inside one, by the frame analysis
  // the executor does too (malformed loops throw InvalidArgument here, as they would there).
  void FindLoops() {
    const bool has_loops = std::any_of(needed_.begin(), needed_.end(),
                                       [](const Node* n) { return CfKindOf(*n) == CfKind::kEnter; });
    if (!has_loops) return;
    std::unordered_map<const Node*, int> item;
    for (size_t i = 0; i < needed_.size(); ++i) item.emplace(needed_[i], static_cast<int>(i));
    std::vector<CfNode> nodes(needed_.size());
    for (size_t i = 0; i < needed_.size(); ++i) {
      const Node* n = needed_[i];
      nodes[i].node = n;
      for (const Endpoint& e : n->inputs()) {
        nodes[i].inputs.push_back(FeedIndex(e) >= 0 ? CfNode::Input{-1, FeedIndex(e)}
                                                    : CfNode::Input{item.at(e.node), e.index});
      }
      for (const Node* c : n->control_inputs()) nodes[i].control_inputs.push_back(item.at(c));
    }
    const ControlFlowInfo info = AnalyzeControlFlow(nodes);
    std::unordered_map<std::string, int> outermost;  // loops in the root frame, by name
    for (size_t f = 1; f < info.frames.size(); ++f) {
      if (info.frames[f].parent == 0) outermost.emplace(info.frames[f].name, static_cast<int>(f));
    }
    for (size_t i = 0; i < needed_.size(); ++i) {
      int frame = info.frame_of[i];
      // An Enter runs in the frame around its loop but hands its value to the loop's
      // executor run, so it belongs with the loop.
      if (frame == 0 && CfKindOf(*needed_[i]) == CfKind::kEnter) {
        auto it = outermost.find(needed_[i]->GetAttr<std::string>("frame_name"));
        if (it != outermost.end()) frame = it->second;
      }
      if (frame == 0) continue;
      while (info.frames[frame].parent != 0) frame = info.frames[frame].parent;
      loop_of_.emplace(needed_[i], frame);
    }
    for (const FrameInfo& frame : info.frames) loop_names_.push_back(frame.name);
  }

  int LoopOf(const Node* n) const {
    auto it = loop_of_.find(n);
    return it == loop_of_.end() ? -1 : it->second;
  }

  // A loop runs in one task's partition: its frame and iterations exist only there. TF keeps
  // a spanning loop going with a control-loop state machine per partition, which flowtrain
  // does not build, so such a loop is refused here, before any task runs it.
  void CheckLoopsStayInOneTask() {
    std::map<int, std::map<TaskId, const Node*>> tasks_of_loop;
    for (const Node* n : needed_) {
      const int loop = LoopOf(n);
      if (loop >= 0) tasks_of_loop[loop].emplace(task_.at(n), n);
    }
    for (const auto& [loop, tasks] : tasks_of_loop) {
      if (tasks.size() < 2) continue;
      std::string where;
      for (const auto& [task, n] : tasks) {
        where += StrCat(where.empty() ? "" : ", ", task.name(), " (", n->name(), ")");
      }
      InvalidArgument("The while loop '", loop_names_[loop], "' spans ", tasks.size(), " tasks: ", where,
                      ". The distributed runtime runs a loop within one task: place all of its nodes on "
                      "one task (values from other tasks can enter it)");
    }
  }

  // The nodes whose outputs can be dead in a step: those a Switch output reaches, where a
  // Merge is dead only when all its inputs may be. A conservative analysis: it only decides
  // which transfers carry a deadness flag and which stages run frame-aware.
  void FindNodesThatMayBeDead() {
    for (const Node* n : needed_) {
      const CfKind kind = CfKindOf(*n);
      bool dead = kind == CfKind::kSwitch;
      if (kind == CfKind::kMerge) {
        dead = true;
        for (int i = 0; i < n->num_inputs(); ++i) {
          if (!IsBackEdge(n, i) && !MayBeDead(n->input(i))) dead = false;
        }
      } else if (kind != CfKind::kControlTrigger) {
        for (const Endpoint& e : n->inputs()) dead = dead || MayBeDead(e);
        for (const Node* c : n->control_inputs()) dead = dead || may_be_dead_.count(c) != 0;
      }
      if (dead) may_be_dead_.insert(n);
    }
  }
  std::string LoopNames(const std::map<int, int>& loops) const {
    std::string names;
    for (const auto& [loop, stage] : loops)
      names += StrCat(names.empty() ? "'" : ", '", loop_names_[loop], "'");
    return names;
  }

  bool MayBeDead(const Endpoint& e) const { return FeedIndex(e) < 0 && may_be_dead_.count(e.node) != 0; }

  // The node whose device `n` takes: its colocation target, or the producer of a reference
  // input (TF's placer keeps reference edges within a device), followed transitively.
  const Node* Anchor(const Node* n) {
    auto it = anchors_.find(n);
    if (it != anchors_.end()) return it->second;
    const Node* anchor = n;
    if (const AttrValue* cls = n->FindAttr("_class")) {
      for (const std::string& s : cls->list().s()) {
        if (!s.starts_with("loc:@")) continue;
        const Node* target = graph_.FindNode(std::string_view(s).substr(5));
        if (target != nullptr && target != n) {
          anchor = Anchor(target);
          break;
        }
      }
    }
    if (anchor == n) {
      for (int i = 0; i < n->num_inputs(); ++i) {
        if (TakesStateOf(n, i) && FeedIndex(n->input(i)) < 0) {
          anchor = Anchor(n->input(i).node);
          break;
        }
      }
    }
    anchors_.emplace(n, anchor);
    return anchor;
  }

  TaskId TaskOf(const Node* n) {
    const Node* anchor = Anchor(n);
    const std::string& requested = anchor->requested_device();
    const DeviceSpec spec = requested.empty() ? DeviceSpec{} : DeviceSpec::Parse(requested);
    TaskId task = options_.default_task;
    if (!spec.job.empty()) task = TaskId{spec.job, 0};
    if (spec.task) task.index = *spec.task;
    auto fail = [&](std::string_view why) {
      InvalidArgument(
          "Cannot assign a device for operation ", n->name(), ": ",
          anchor == n ? std::string("it") : StrCat("its colocation group (with ", anchor->name(), ")"),
          " was explicitly assigned to ", requested, " but ", why);
    };
    if (task.index >= options_.cluster.num_tasks(task.job)) {
      fail(StrCat("the cluster has no task ", task.name(), " (cluster: ", options_.cluster.ToString(), ")"));
    }
    if (spec.replica && *spec.replica != 0) fail("replicas other than 0 do not exist");
    const bool cpu = spec.device_type.empty() || spec.device_type == "CPU";
    if (!cpu && !options_.allow_soft_placement) {
      fail("tasks have only CPU devices (set allow_soft_placement)");
    }
    return task;
  }

  void Place() {
    for (const Node* n : needed_) task_.emplace(n, TaskOf(n));
    for (const Node* n : needed_) {
      for (int i = 0; i < n->num_inputs(); ++i) {
        const Endpoint& e = n->input(i);
        if (!TakesStateOf(n, i) || FeedIndex(e) >= 0) continue;
        if (task_.at(e.node) != task_.at(n)) {
          InvalidArgument("Node ", n->name(), " on ", task_.at(n).name(), " takes a reference or handle to ",
                          e.node->name(), " on ", task_.at(e.node).name(), ": colocate it with ",
                          e.node->name());
        }
      }
    }
  }

  // Input-less nodes that can run once in each stage that needs them: stateless ones, and
  // resources found by shared name (variables, queues).
  bool IsCopyable(const Node* n) const {
    return n->num_inputs() == 0 && n->control_inputs().empty() &&
           (!n->is_stateful() || n->FindAttr("shared_name") != nullptr);
  }

  void AssignStages() {
    for (const Node* n : needed_) {
      if (IsCopyable(n)) copyable_.insert(n);
    }
    std::unordered_set<const Node*> fetched_or_targeted(targets_.begin(), targets_.end());
    for (const Endpoint& e : fetches_) {
      if (FeedIndex(e) < 0) fetched_or_targeted.insert(e.node);
    }
    std::unordered_map<const Node*, std::vector<const Node*>> consumers;
    for (const Node* n : needed_) {
      if (copyable_.count(n) != 0) continue;
      for (int i = 0; i < n->num_inputs(); ++i) {
        if (FeedIndex(n->input(i)) < 0 && !IsBackEdge(n, i)) consumers[n->input(i).node].push_back(n);
      }
      for (const Node* c : n->control_inputs()) consumers[c].push_back(n);
    }
    // A loop's nodes share one stage, the latest any of them needs, since its frame lives in
    // one executor run; a rising loop stage moves what follows it, so repeat until none rises.
    std::map<int, int> loop_stage;  // ordered, for a deterministic message
    for (size_t round = 0;; ++round) {
      bool risen = false;
      for (const Node* n : needed_) {
        if (copyable_.count(n) != 0) continue;
        int stage = 0;
        auto consider = [&](const Node* src) {
          const bool cross = task_.at(src) != task_.at(n);
          if (copyable_.count(src) != 0) {
            stage = std::max(stage, cross ? 1 : 0);
          } else {
            stage = std::max(stage, stage_.at(src) + (cross ? 1 : 0));
          }
        };
        for (int i = 0; i < n->num_inputs(); ++i) {
          if (FeedIndex(n->input(i)) < 0 && !IsBackEdge(n, i)) consider(n->input(i).node);
        }
        for (const Node* c : n->control_inputs()) consider(c);
        const int loop = LoopOf(n);
        if (loop >= 0) {
          int& shared = loop_stage[loop];
          risen = risen || stage > shared;
          shared = std::max(shared, stage);
          stage = shared;
        }
        stage_[n] = stage;
      }
      if (!risen) break;
      if (round > needed_.size()) {
        InvalidArgument("A while loop's inputs depend on its own results through another task (loops: ",
                        LoopNames(loop_stage), ")");
      }
    }
    for (const auto& [n, stage] : stage_) instances_[n].insert(stage);
    for (const Node* n : copyable_) {
      std::set<int>& stages = instances_[n];
      bool stage0 = fetched_or_targeted.count(n) != 0 || consumers[n].empty();
      for (const Node* c : consumers[n]) {
        if (task_.at(c) == task_.at(n)) {
          stages.insert(stage_.at(c));
        } else {
          stage0 = true;
        }
      }
      if (stage0) stages.insert(0);
    }
    // A fetched variable is read when its task's step ends, as the local executor reads
    // fetched references after the run (the monitored session reads the global step so).
    std::map<TaskId, int> last_stage;
    for (const auto& [n, stages] : instances_) {
      int& last = last_stage[task_.at(n)];
      last = std::max(last, *stages.rbegin());
    }
    for (const Endpoint& e : fetches_) {
      if (FeedIndex(e) >= 0 || copyable_.count(e.node) == 0 || !IsRefType(e.node->output_type(e.index)))
        continue;
      const int stage = last_stage.at(task_.at(e.node));
      instances_[e.node].insert(stage);
      ref_fetch_stage_[e.node] = stage;
    }
  }

  std::string InstanceName(const Node* n, int stage) const {
    const std::set<int>& stages = instances_.at(n);
    return stage == *stages.begin() ? n->name() : StrCat(n->name(), "/flowtrain_stage_", stage);
  }
  // The stage whose instance of `n` produces what other tasks, later stages and fetches see.
  int ProducingStage(const Node* n) const { return copyable_.count(n) != 0 ? 0 : stage_.at(n); }

  Stage& StageOf(const TaskId& task, int stage) { return stages_[task][stage]; }

  StageOutput& OutputOf(const Node* n, int index, int stage = -1) {
    if (stage < 0) stage = ProducingStage(n);
    return OutputAt(task_.at(n), stage, StrCat(InstanceName(n, stage), ":", index));
  }
  StageOutput& OutputAt(const TaskId& task, int stage, const std::string& tensor) {
    auto& by_tensor = output_index_[{task, stage}];
    auto it = by_tensor.find(tensor);
    Stage& s = StageOf(task, stage);
    if (it != by_tensor.end()) return *s.mutable_outputs(it->second);
    by_tensor.emplace(tensor, s.outputs_size());
    StageOutput* out = s.add_outputs();
    out->set_tensor(tensor);
    return *out;
  }

  // The name of the partition node that gives `consumer`'s instance in `stage` the value of
  // `e`: a node of the same stage, or a Placeholder fed from a feed, an earlier stage or
  // another task.
  std::string InputFor(const Node* consumer, int stage, const Endpoint& e) {
    const TaskId& task = task_.at(consumer);
    const std::string key = StrCat(e.node->name(), ":", e.index);
    StageInput input;
    const int feed = FeedIndex(e);
    if (feed >= 0) {
      input.set_client_feed(feed);
      feeds_used_[task].insert(feed);
    } else if (task_.at(e.node) == task) {
      if (copyable_.count(e.node) != 0) return StrCat(InstanceName(e.node, stage), ":", e.index);
      if (stage_.at(e.node) == stage) return key;
      OutputOf(e.node, e.index).set_local_key(key);
      input.set_local_key(key);
    } else {
      PushTo(OutputOf(e.node, e.index), task, key);
      input.set_transfer_key(key);
    }
    input.set_may_be_dead(MayBeDead(e));
    return PlaceholderFor(task, stage, key, StrCat(e.node->name(), "_", e.index), input,
                          BaseType(e.node->output_type(e.index)), e.node->output_shape(e.index)) +
           ":0";
  }

  static void PushTo(StageOutput& out, const TaskId& task, const std::string& key) {
    const bool pushed = std::any_of(out.pushes().begin(), out.pushes().end(), [&](const PushTarget& p) {
      return p.job() == task.job && p.task() == task.index;
    });
    if (pushed) return;
    PushTarget* push = out.add_pushes();
    push->set_job(task.job);
    push->set_task(task.index);
    push->set_key(key);
  }

  // The Placeholder (one per key and stage) through which a stage of `task` reads `input`:
  // its name.
  std::string PlaceholderFor(const TaskId& task, int stage, const std::string& key, const std::string& base,
                             StageInput input, DataType dtype, const PartialTensorShape& shape) {
    auto& placeholders = placeholders_[{task, stage}];
    auto it = placeholders.find(key);
    if (it != placeholders.end()) return it->second;
    const std::string name = StrCat("flowtrain_input/s", stage, "/", base);
    placeholders.emplace(key, name);
    input.set_placeholder(name);
    *StageOf(task, stage).add_inputs() = input;
    tensorflow::NodeDef* def = graph_defs_[task].add_node();
    def->set_name(name);
    def->set_op("Placeholder");
    (*def->mutable_attr())["dtype"] = MakeAttrValue(dtype);
    (*def->mutable_attr())["shape"] = MakeAttrValue(shape);
    return name;
  }

  // A control edge to another task from a node that can be dead must carry that deadness,
  // which a bare token cannot: as TF's partitioner, a constant gated by the source goes over
  // instead (dead with it), and its received copy becomes the consumer's control input.
  std::string DeadnessCarrierFor(const Node* src, const TaskId& task, int stage) {
    const TaskId& src_task = task_.at(src);
    const int src_stage = ProducingStage(src);
    const std::string carrier = StrCat("flowtrain_control/", src->name());
    if (deadness_carriers_.insert(src).second) {
      tensorflow::NodeDef* def = graph_defs_[src_task].add_node();
      def->set_name(carrier);
      def->set_op("Const");
      def->add_input(StrCat("^", InstanceName(src, src_stage)));
      (*def->mutable_attr())["dtype"] = MakeAttrValue(DT_BOOL);
      (*def->mutable_attr())["value"] = MakeAttrValue(Tensor::Scalar<bool>(true));
      StageOf(src_task, src_stage).add_targets(carrier);
    }
    const std::string key = carrier + ":0";
    PushTo(OutputAt(src_task, src_stage, key), task, key);
    StageInput input;
    input.set_transfer_key(key);
    input.set_may_be_dead(true);
    const std::string placeholder =
        PlaceholderFor(task, stage, key, carrier, input, DT_BOOL, PartialTensorShape({}));
    // A fed Placeholder as a control input would run (and fail): an Identity of it gates.
    const std::string gate = placeholder + "/gate";
    if (gates_.insert(gate).second) {
      tensorflow::NodeDef* def = graph_defs_[task].add_node();
      def->set_name(gate);
      def->set_op("Identity");
      def->add_input(placeholder + ":0");
      (*def->mutable_attr())["T"] = MakeAttrValue(DT_BOOL);
      StageOf(task, stage).add_targets(gate);
    }
    return gate;
  }

  // Adds `src` as a control input of `consumer`'s instance, or orders them across tasks with
  // a control token; an earlier stage of the same task needs nothing.
  void AddControlInput(const Node* consumer, int stage, const Node* src, tensorflow::NodeDef* def) {
    const TaskId& task = task_.at(consumer);
    const TaskId& src_task = task_.at(src);
    if (src_task == task) {
      if (copyable_.count(src) != 0) {
        def->add_input(StrCat("^", InstanceName(src, stage)));
      } else if (stage_.at(src) == stage) {
        def->add_input(StrCat("^", src->name()));
      }
      return;
    }
    if (may_be_dead_.count(src) != 0) {
      def->add_input(StrCat("^", DeadnessCarrierFor(src, task, stage)));
      return;
    }
    const std::string key = StrCat("^", src->name());
    Stage& from = StageOf(src_task, ProducingStage(src));
    const bool sent = std::any_of(
        from.control_pushes().begin(), from.control_pushes().end(),
        [&](const PushTarget& p) { return p.key() == key && p.job() == task.job && p.task() == task.index; });
    if (!sent) {
      PushTarget* push = from.add_control_pushes();
      push->set_job(task.job);
      push->set_task(task.index);
      push->set_key(key);
    }
    Stage& to = StageOf(task, stage);
    if (std::find(to.awaited_controls().begin(), to.awaited_controls().end(), key) ==
        to.awaited_controls().end()) {
      to.add_awaited_controls(key);
    }
  }

  PartitionPlan Emit() {
    const tensorflow::GraphDef full = graph_.ToGraphDef();
    std::unordered_map<std::string_view, const tensorflow::NodeDef*> defs;
    for (const tensorflow::NodeDef& def : full.node()) defs.emplace(def.name(), &def);
    for (const Node* n : needed_) {
      const TaskId& task = task_.at(n);
      for (int stage : instances_.at(n)) {
        auto it = defs.find(n->name());
        if (it == defs.end()) Internal("Node ", n->name(), " is missing from its GraphDef");
        tensorflow::NodeDef def = *it->second;
        const std::string instance = InstanceName(n, stage);
        def.set_name(instance);
        def.clear_device();
        def.mutable_attr()->erase("_class");
        def.clear_input();
        for (const Endpoint& e : n->inputs()) def.add_input(InputFor(n, stage, e));
        for (const Node* c : n->control_inputs()) AddControlInput(n, stage, c, &def);
        auto shared = def.mutable_attr()->find("shared_name");
        if (instance != n->name() && shared != def.mutable_attr()->end() && shared->second.s().empty()) {
          shared->second.set_s(n->name());
        }
        *graph_defs_[task].add_node() = std::move(def);
        StageOf(task, stage).add_targets(instance);
      }
    }
    PartitionPlan plan;
    plan.fetch_is_feed.assign(fetches_.size(), -1);
    for (size_t i = 0; i < fetches_.size(); ++i) {
      const Endpoint& e = fetches_[i];
      const int feed = FeedIndex(e);
      if (feed >= 0) {
        plan.fetch_is_feed[i] = feed;
      } else {
        auto ref_fetch = ref_fetch_stage_.find(e.node);
        const int stage = ref_fetch == ref_fetch_stage_.end() ? -1 : ref_fetch->second;
        OutputOf(e.node, e.index, stage).add_client_fetches(static_cast<int>(i));
      }
    }
    for (auto& [task, stages] : stages_) {
      TaskPartition& partition = plan.partitions[task];
      tensorflow::GraphDef* def = partition.request.mutable_graph_def();
      *def = std::move(graph_defs_[task]);
      *def->mutable_versions() = full.versions();
      // The dataset kernels of a partition run the graph's tf.data functions.
      if (full.has_library()) *def->mutable_library() = full.library();
      for (auto& [number, stage] : stages) *partition.request.add_stages() = std::move(stage);
      const std::set<int>& feeds = feeds_used_[task];
      partition.feed_indices.assign(feeds.begin(), feeds.end());
    }
    return plan;
  }

  const Graph& graph_;
  const std::vector<Endpoint>& fetches_;
  const std::vector<const Node*>& targets_;
  const PartitionOptions& options_;
  std::map<EndpointId, int> feed_index_;

  std::unordered_set<const Node*> needed_set_;
  std::vector<const Node*> needed_;  // in topological order
  std::unordered_map<const Node*, const Node*> anchors_;
  std::unordered_map<const Node*, TaskId> task_;
  std::unordered_set<const Node*> copyable_;
  std::unordered_map<const Node*, int> stage_;  // nodes that are not copyable
  std::unordered_map<const Node*, std::set<int>> instances_;
  std::unordered_map<const Node*, int> ref_fetch_stage_;  // fetched variables: where to read
  std::unordered_map<const Node*, int> loop_of_;          // nodes in loops: the outermost one
  std::vector<std::string> loop_names_;                   // by frame number
  std::unordered_set<const Node*> may_be_dead_;
  std::unordered_set<const Node*> deadness_carriers_;  // sources of control edges to other tasks
  std::unordered_set<std::string> gates_;              // their received copies' Identities

  std::map<TaskId, std::map<int, Stage>> stages_;
  std::map<TaskId, tensorflow::GraphDef> graph_defs_;
  std::map<std::pair<TaskId, int>, std::map<std::string, int>> output_index_;
  std::map<std::pair<TaskId, int>, std::map<std::string, std::string>> placeholders_;
  std::map<TaskId, std::set<int>> feeds_used_;
};

}  // namespace

PartitionPlan PartitionGraph(const Graph& graph, const std::vector<Endpoint>& feeds,
                             const std::vector<Endpoint>& fetches, const std::vector<const Node*>& targets,
                             const PartitionOptions& options) {
  return Partitioner(graph, feeds, fetches, targets, options).Build();
}

}  // namespace flowtrain::distributed
