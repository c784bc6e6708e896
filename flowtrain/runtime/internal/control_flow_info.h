// The static frame analysis of a run's plan (TF1 control flow): which frame (loop) each
// node runs in, each frame's parent and parallel_iterations, and the checks that make a
// malformed loop an InvalidArgument at compile time instead of a hang at run time.
//
//   std::vector<CfNode> nodes = ...;  // one per plan item, edges by item index
//   ControlFlowInfo info = AnalyzeControlFlow(nodes);
//   int frame = info.frame_of[item];  // 0: the root frame
#ifndef FLOWTRAIN_RUNTIME_INTERNAL_CONTROL_FLOW_INFO_H_
#define FLOWTRAIN_RUNTIME_INTERNAL_CONTROL_FLOW_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "flowtrain/graph/node.h"

namespace flowtrain {

// The kinds of node the frame-aware executor treats specially.
enum class CfKind { kOther, kSwitch, kMerge, kEnter, kExit, kNextIteration, kControlTrigger };
CfKind CfKindOf(const Node& node);
// True for the ops that need the frame-aware executor (all but NoOp-like ordering ops).
bool IsControlFlowOp(const Node& node);

// One plan item as the analysis sees it.
struct CfNode {
  struct Input {
    int item;    // the producing item, -1 for a fed tensor
    int output;  // its output index (the feed's number when fed)
  };
  const Node* node = nullptr;
  std::vector<Input> inputs;
  std::vector<int> control_inputs;  // producing items
};

struct FrameInfo {
  std::string name;  // "" for the root frame
  int parent = -1;   // -1 for the root frame
  int64_t parallel_iterations = 1;
  int num_enters = 0;  // Enter nodes of the plan that feed the frame
};

struct ControlFlowInfo {
  std::vector<int> frame_of;      // per item
  std::vector<FrameInfo> frames;  // [0] is the root frame
};

// Throws InvalidArgument naming the node for: a node whose inputs come from different
// frames, an Exit in the root frame, an Enter into a frame from another parent frame than
// the frame's other Enters, Enters of one frame disagreeing on parallel_iterations (or one
// below 1), a NextIteration whose output feeds anything but Merges (or nothing), a fed
// tensor read inside a loop, and nodes no source reaches (a cycle with no way in).
ControlFlowInfo AnalyzeControlFlow(const std::vector<CfNode>& nodes);

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_INTERNAL_CONTROL_FLOW_INFO_H_
