// The user-facing API of flowtrain in one include.
//
//   #include <flowtrain/flowtrain.h>
//   namespace ft = flowtrain;
#ifndef FLOWTRAIN_FLOWTRAIN_H_
#define FLOWTRAIN_FLOWTRAIN_H_

#include "flowtrain/core/error.h"
#include "flowtrain/core/logging.h"
#include "flowtrain/core/tensor.h"
#include "flowtrain/core/tensor_shape.h"
#include "flowtrain/core/types.h"
#include "flowtrain/graph/graph.h"
#include "flowtrain/graph/graph_def.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/io/idx_file.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow_ops.h"
#include "flowtrain/ops/data_flow_ops.h"
#include "flowtrain/ops/dataset_ops.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/parsing_ops.h"
#include "flowtrain/ops/reader_ops.h"
#include "flowtrain/ops/state_ops.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/checkpoint_management.h"
#include "flowtrain/train/coordinator.h"
#include "flowtrain/train/input.h"
#include "flowtrain/train/meta_graph.h"
#include "flowtrain/train/queue_runner.h"
#include "flowtrain/train/saver.h"

#endif  // FLOWTRAIN_FLOWTRAIN_H_
