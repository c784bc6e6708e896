#include "flowtrain/runtime/internal/control_flow_info.h"

#include <deque>
#include <unordered_map>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

CfKind CfKindOf(const Node& node) {
  const std::string& t = node.type();
  if (t == "Switch" || t == "RefSwitch") return CfKind::kSwitch;
  if (t == "Merge" || t == "RefMerge") return CfKind::kMerge;
  if (t == "Enter" || t == "RefEnter") return CfKind::kEnter;
  if (t == "Exit" || t == "RefExit") return CfKind::kExit;
  if (t == "NextIteration" || t == "RefNextIteration") return CfKind::kNextIteration;
  if (t == "ControlTrigger") return CfKind::kControlTrigger;
  return CfKind::kOther;
}

bool IsControlFlowOp(const Node& node) {
  return CfKindOf(node) != CfKind::kOther || node.type() == "LoopCond";
}

namespace {

std::string FrameName(const ControlFlowInfo& info, int frame) {
  return frame == 0 ? std::string("the root frame") : StrCat("frame '", info.frames[frame].name, "'");
}

}  // namespace

ControlFlowInfo AnalyzeControlFlow(const std::vector<CfNode>& nodes) {
  ControlFlowInfo info;
  info.frames.push_back(FrameInfo{});
  info.frame_of.assign(nodes.size(), -1);
  std::unordered_map<std::string, int> frame_by_name;

  std::vector<std::vector<int>> consumers(nodes.size());
  std::vector<int> first_input(nodes.size(), -1);  // the item that gave a node its frame
  std::deque<int> queue;
  for (size_t i = 0; i < nodes.size(); ++i) {
    bool has_source = false;
    for (const CfNode::Input& in : nodes[i].inputs) {
      if (in.item >= 0) {
        consumers[in.item].push_back(static_cast<int>(i));
        has_source = true;
      }
    }
    for (int c : nodes[i].control_inputs) {
      consumers[c].push_back(static_cast<int>(i));
      has_source = true;
    }
    if (!has_source) {
      info.frame_of[i] = 0;
      queue.push_back(static_cast<int>(i));
    }
  }

  // The frame a node's consumers run in.
  auto output_frame = [&](int i) {
    const Node& n = *nodes[i].node;
    const int frame = info.frame_of[i];
    switch (CfKindOf(n)) {
      case CfKind::kEnter: {
        const std::string name = n.GetAttr<std::string>("frame_name");
        const int64_t parallel = n.GetAttr<int64_t>("parallel_iterations");
        if (parallel < 1) {
          InvalidArgument("Enter ", n.name(), " has parallel_iterations ", parallel,
                          ", it must be at least 1");
        }
        auto [it, inserted] = frame_by_name.emplace(name, static_cast<int>(info.frames.size()));
        if (inserted) info.frames.push_back(FrameInfo{name, frame, parallel, 0});
        FrameInfo& child = info.frames[it->second];
        if (child.parent != frame) {
          InvalidArgument("Enter ", n.name(), " enters frame '", name, "' from ", FrameName(info, frame),
                          ", but the frame's other Enters come from ", FrameName(info, child.parent),
                          " (mismatched parent frames)");
        }
        if (child.parallel_iterations != parallel) {
          InvalidArgument("Enter ", n.name(), " gives frame '", name, "' parallel_iterations ", parallel,
                          ", but another of its Enters gives it ", child.parallel_iterations);
        }
        ++child.num_enters;
        return it->second;
      }
      case CfKind::kExit:
        if (frame == 0) InvalidArgument("Exit ", n.name(), " is not inside any loop frame");
        return info.frames[frame].parent;
      default:
        return frame;
    }
  };

  while (!queue.empty()) {
    const int i = queue.front();
    queue.pop_front();
    const int out = output_frame(i);
    for (int c : consumers[i]) {
      if (info.frame_of[c] == -1) {
        info.frame_of[c] = out;
        first_input[c] = i;
        queue.push_back(c);
      } else if (info.frame_of[c] != out) {
        InvalidArgument(nodes[c].node->name(), " has inputs from different frames. The input ",
                        nodes[i].node->name(), " feeds it from ", FrameName(info, out), ". The input ",
                        nodes[first_input[c]].node->name(), " feeds it from ",
                        FrameName(info, info.frame_of[c]), ".");
      }
    }
  }

  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i].node;
    if (info.frame_of[i] == -1) {
      InvalidArgument("Node ", n.name(), " is on a cycle that nothing enters (a Merge fed only by its own ",
                      "NextIteration?)");
    }
    for (const CfNode::Input& in : nodes[i].inputs) {
      if (in.item < 0 && info.frame_of[i] != 0) {
        InvalidArgument("Node ", n.name(), " in ", FrameName(info, info.frame_of[i]),
                        " reads a fed tensor: only nodes outside loops can read feeds");
      }
    }
    if (CfKindOf(n) == CfKind::kNextIteration) {
      bool to_merge = !consumers[i].empty();
      for (int c : consumers[i]) {
        bool data = false;
        for (const CfNode::Input& in : nodes[c].inputs) data = data || in.item == static_cast<int>(i);
        to_merge = to_merge && data && CfKindOf(*nodes[c].node) == CfKind::kMerge;
      }
      if (!to_merge) {
        InvalidArgument("NextIteration ", n.name(), " must feed the Merge of its loop, but its output ",
                        consumers[i].empty() ? "feeds nothing" : "feeds a node other than a Merge");
      }
    }
  }
  return info;
}

}  // namespace flowtrain
