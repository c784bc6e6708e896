// Warm starts: TF1's tf.compat.v1.train.init_from_checkpoint and (without vocabularies)
// tf.compat.v1.train.warm_start. Both change what the variables' initializers assign: after
// them, running the init op (GlobalVariablesInitializer, a Scaffold's, a MonitoredSession's)
// loads the chosen variables from the checkpoint, while the other variables (new layers,
// optimizer slots) start from their own initial values.
//
//   // A model under "new/" starts from the variables a previous run saved under "old/":
//   train::InitFromCheckpoint("runs/old", {{"old/", "new/"}});
//   // Or every trainable variable of the same name, one renamed:
//   train::WarmStart("runs/old", {.var_name_to_prev_var_name = {{"dense/kernel", "fc/kernel"}}});
//   sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
//
// How: each chosen variable's own initializer op ("<name>/Assign", or AssignVariableOp for a
// resource variable) gets a RestoreV2 "checkpoint_initializer" on the CPU as its value input,
// so every handle of the variable, and its collections' copies, see the change. (TF instead
// builds a new Assign and makes it the variable's initializer; the init op does the same.)
// The variable's initial_value() still names its old initial value, so an
// ExponentialMovingAverage applied afterwards starts its shadows there (TF's: at the checkpoint's).
//
// Variables are found by op name among the graph's GLOBAL_VARIABLES and LOCAL_VARIABLES (TF
// looks only at the variables tf.get_variable made; flowtrain also finds those made by
// Variable directly). Partitioned variables are not handled.
//
// Errors, all thrown before any initializer changes: NotFound for a checkpoint that does not
// exist or a tensor the checkpoint lacks (naming both); InvalidArgument for a shape or dtype
// that differs from the checkpoint's (naming the variable, the tensor and both), or a map
// entry TF refuses. Not thread-safe with other builders of the same graph (as graph building).
#ifndef FLOWTRAIN_TRAIN_WARM_STARTING_H_
#define FLOWTRAIN_TRAIN_WARM_STARTING_H_

#include <map>
#include <string>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::train {

// tf.compat.v1.train.init_from_checkpoint. `ckpt_dir_or_file` is a checkpoint prefix or a
// directory (its latest checkpoint). `assignment_map` maps checkpoint names to the graph's,
// applied in key order:
//   {"old/scope/", "new/scope/"}  every variable under new/scope/ from old/scope/<same rest>;
//   {"old/var", "new/var"}        one variable;
//   {"/", "new/scope/"}           new/scope/<rest> from the checkpoint's top-level <rest>;
//   {"old/scope/", "/"}           every variable <name> from old/scope/<name>.
// A value naming no variable is taken as the scope before its last "/" (as TF does), and then
// its key must end in "/". `graph` defaults to the calling thread's default graph.
void InitFromCheckpoint(const std::string& ckpt_dir_or_file,
                        const std::map<std::string, std::string>& assignment_map, Graph* graph = nullptr);

// The same with the variables themselves as the map's values (checkpoint name -> variable).
void InitFromCheckpoint(const std::string& ckpt_dir_or_file,
                        const std::map<std::string, Variable>& assignment_map);

// tf.compat.v1.train.warm_start's arguments other than var_name_to_vocab_info.
struct WarmStartOptions {
  // A regular expression matched at the start of each TRAINABLE_VARIABLES variable's name
  // ("dense/kernel:0"), as TF's get_collection(scope=...). Default: every trainable variable.
  std::string vars_to_warm_start = ".*";
  // Variable op name -> its name in the checkpoint, for renamed variables; the others are
  // read under their own names. A key naming no warm-started variable is InvalidArgument.
  std::map<std::string, std::string> var_name_to_prev_var_name = {};
  // Default: the calling thread's default graph.
  Graph* graph = nullptr;
};

// tf.compat.v1.train.warm_start without vocabularies: InitFromCheckpoint for each trainable
// variable matching `options.vars_to_warm_start`. Variables it does not match, and every
// non-trainable one (optimizer slots, the global step), keep their initializers.
void WarmStart(const std::string& ckpt_to_initialize_from, const WarmStartOptions& options = {});

}  // namespace flowtrain::train

#endif  // FLOWTRAIN_TRAIN_WARM_STARTING_H_
