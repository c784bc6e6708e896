#include "flowtrain/ops/rnn.h"

#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/node_builder.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/control_flow.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/tensor_array_ops.h"
#include "flowtrain/ops/variable_scope.h"

namespace flowtrain::ops {
namespace {

// Dimension `d` of `x`: a constant when the static shape knows it, else read at run time.
Output Dim(const Output& x, int d, std::string_view name) {
  const int64_t known = x.shape().dim_size(d);
  if (known >= 0) return Const(static_cast<int32_t>(known), name);
  return StridedSlice(Shape(x), {d}, {d + 1}, {1}, {.shrink_axis_mask = 1}, name);
}

// [batch, time, ...] <-> [time, batch, ...] (TF's _transpose_batch_time).
Output TransposeBatchTime(const Output& x, std::string_view name) { return Transpose(x, {1, 0, 2}, name); }

// dynamic_rnn in the current variable scope (TF's dynamic_rnn given a scope object).
RnnOutputs DynamicRnnInScope(const std::shared_ptr<RnnCell>& cell, Output inputs,
                             const DynamicRnnOptions& options) {
  if (!cell) InvalidArgument("dynamic_rnn: the cell is null");
  if (!inputs) InvalidArgument("dynamic_rnn: the inputs are empty");
  const PartialTensorShape& in_shape = inputs.shape();
  if (in_shape.dims() != 3 || in_shape.dim_size(2) < 0) {
    InvalidArgument("dynamic_rnn: inputs must have rank 3 (",
                    options.time_major ? "[time, batch, depth]" : "[batch, time, depth]",
                    ") with a known depth, got ", in_shape.DebugString());
  }
  if (!options.initial_state && !options.dtype) {
    InvalidArgument("dynamic_rnn: If there is no initial_state, you must give a dtype.");
  }
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();

  Output time_major_inputs = options.time_major ? inputs : TransposeBatchTime(inputs, "transpose");
  Output sequence_length;
  if (options.sequence_length) {
    const PartialTensorShape& s = options.sequence_length.shape();
    if (!s.unknown_rank() && s.dims() != 1) {
      InvalidArgument("dynamic_rnn: sequence_length must be a vector of length batch_size, but saw shape: ",
                      s.DebugString());
    }
    const DataType dt = options.sequence_length.dtype();
    if (dt != DT_INT32 && dt != DT_INT64) {
      InvalidArgument("dynamic_rnn: sequence_length must be int32 or int64, got ", DataTypeString(dt));
    }
    const int64_t batch = time_major_inputs.shape().dim_size(1);
    if (!s.unknown_rank() && s.dim_size(0) >= 0 && batch >= 0 && s.dim_size(0) != batch) {
      InvalidArgument("dynamic_rnn: sequence_length has ", s.dim_size(0), " entries for a batch of ", batch);
    }
    sequence_length = Identity(Cast(options.sequence_length, DT_INT32), "sequence_length");
  }
  Output batch_size = Dim(time_major_inputs, 1, "batch_size");
  RnnState state =
      options.initial_state ? *options.initial_state : cell->ZeroState(batch_size, *options.dtype);
  const std::vector<Output> flat_state = state.Flatten();
  // The size first: StateStructure reads as many tensors as the cell's state has.
  if (flat_state.empty() || flat_state.size() != cell->flat_state_size().size() ||
      !cell->StateStructure(flat_state).SameStructure(state)) {
    InvalidArgument("dynamic_rnn: the initial state does not have the ", cell->class_name(), "'s structure");
  }
  const DataType dtype = flat_state[0].dtype();

  const PartialTensorShape& tm_shape = time_major_inputs.shape();
  const int64_t const_time = tm_shape.dim_size(0);
  const int64_t const_batch = tm_shape.dim_size(1);
  const int64_t depth = tm_shape.dim_size(2);
  const int64_t out_size = cell->output_size();
  Output time_steps = Dim(time_major_inputs, 0, "time_steps");
  Output zero_output =
      Fill(Concat({ExpandDims(batch_size, 0), Const({static_cast<int32_t>(out_size)})}, 0, "concat_1"),
           Cast(Const(0.0f, "zeros/Const"), dtype), "zeros");
  graph.SetOutputShape(zero_output.op(), 0, PartialTensorShape({const_batch, out_size}));
  Output max_sequence_length = time_steps;
  if (sequence_length) max_sequence_length = Max(sequence_length, Const({0}), false, "Max");
  Output time = Const(0, "time");

  const std::string base_name = StrCat(graph.CurrentNameScope(), "dynamic_rnn/");
  TensorArray output_ta(dtype, {.size_tensor = time_steps,
                                .element_shape = PartialTensorShape({const_batch, out_size}),
                                .tensor_array_name = base_name + "output_0",
                                .name = "TensorArray"});
  TensorArray input_ta(inputs.dtype(), {.size_tensor = time_steps,
                                        .element_shape = PartialTensorShape({const_batch, depth}),
                                        .tensor_array_name = base_name + "input_0",
                                        .name = "TensorArray_1"});
  input_ta = input_ta.Unstack(time_major_inputs);
  // At least one step, at most the inputs' length (TF's loop_bound).
  Output loop_bound =
      Minimum(time_steps, Maximum(Const(1, "Maximum/x"), max_sequence_length, "Maximum"), "Minimum");

  std::vector<Output> loop_vars = {time, output_ta.flow()};
  for (const Output& t : flat_state) loop_vars.push_back(t);
  const PartialTensorShape input_t_shape({const_batch, depth});
  std::vector<Output> exits = WhileLoop(
      [&](const std::vector<Output>& v) { return Less(v[0], loop_bound, "Less"); },
      [&](const std::vector<Output>& v) {
        const Output& t = v[0];
        Output input_t = input_ta.Read(t);
        graph.SetOutputShape(input_t.op(), 0, input_t_shape);
        const RnnState state_t = state.PackLike(std::vector<Output>(v.begin() + 2, v.end()));
        auto [output, new_state] = (*cell)(input_t, state_t);
        std::vector<Output> flat_new = new_state.Flatten();
        if (!new_state.SameStructure(state_t)) {
          InvalidArgument("dynamic_rnn: the ", cell->class_name(), " returned a state of another structure");
        }
        if (sequence_length) {
          // Past its end an entry's output is zeros and its state is copied through.
          Output copy_cond = GreaterEqual(t, sequence_length, "GreaterEqual");
          output = Select(copy_cond, zero_output, output, "Select");
          for (size_t i = 0; i < flat_new.size(); ++i) {
            flat_new[i] = Select(copy_cond, v[2 + i], flat_new[i], StrCat("Select_", i + 1));
          }
        }
        TensorArray out_ta = TensorArray::FromHandle(dtype, output_ta.handle(), v[1]);
        std::vector<Output> next = {AddV2(t, Const(1, "add/y"), "add"), out_ta.Write(t, output).flow()};
        for (Output& s : flat_new) next.push_back(std::move(s));
        return next;
      },
      loop_vars, {.parallel_iterations = options.parallel_iterations, .maximum_iterations = time_steps});

  Output outputs = TensorArray::FromHandle(dtype, output_ta.handle(), exits[1]).Stack();
  graph.SetOutputShape(outputs.op(), 0, PartialTensorShape({const_time, const_batch, out_size}));
  if (!options.time_major) outputs = TransposeBatchTime(outputs, "transpose_1");
  return {outputs, state.PackLike(std::vector<Output>(exits.begin() + 2, exits.end()))};
}

// Each entry's first `lengths` steps along the time axis reversed (int32 lengths).
Output ReverseSteps(const Output& x, const Output& lengths, bool time_major) {
  return NodeBuilder("ReverseSequence", "ReverseSequence")
      .Input(x)
      .Input(lengths)
      .Attr("seq_dim", int64_t{time_major ? 0 : 1})
      .Attr("batch_dim", int64_t{time_major ? 1 : 0})
      .Finalize();
}

}  // namespace

RnnOutputs DynamicRnn(std::shared_ptr<RnnCell> cell, Output inputs, const DynamicRnnOptions& options) {
  if (!inputs) InvalidArgument("dynamic_rnn: the inputs are empty");
  auto as_default = inputs.graph()->AsDefault();
  VariableScope var_scope(options.scope.empty() ? "rnn" : options.scope);
  return DynamicRnnInScope(cell, inputs, options);
}

BidirectionalRnnOutputs BidirectionalDynamicRnn(std::shared_ptr<RnnCell> cell_fw,
                                                std::shared_ptr<RnnCell> cell_bw, Output inputs,
                                                const BidirectionalRnnOptions& options) {
  if (!cell_fw || !cell_bw) InvalidArgument("bidirectional_dynamic_rnn: a cell is null");
  if (!inputs) InvalidArgument("bidirectional_dynamic_rnn: the inputs are empty");
  if (inputs.shape().dims() != 3) {
    InvalidArgument("bidirectional_dynamic_rnn: inputs must have rank 3, got ", inputs.shape().DebugString());
  }
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  VariableScope outer(options.scope.empty() ? "bidirectional_rnn" : options.scope);
  auto rnn_options = [&](const std::optional<RnnState>& initial_state) {
    return DynamicRnnOptions{.sequence_length = options.sequence_length,
                             .initial_state = initial_state,
                             .dtype = options.dtype,
                             .time_major = options.time_major,
                             .parallel_iterations = options.parallel_iterations};
  };
  BidirectionalRnnOutputs result;
  {
    VariableScope fw("fw");
    auto name_scope = graph.NameScope("fw");
    RnnOutputs out = DynamicRnnInScope(cell_fw, inputs, rnn_options(options.initial_state_fw));
    result.output_fw = out.outputs;
    result.state_fw = out.state;
  }
  Output lengths;
  {
    VariableScope bw("bw");
    if (options.sequence_length) {
      lengths = options.sequence_length.dtype() == DT_INT32 ? options.sequence_length
                                                            : Cast(options.sequence_length, DT_INT32);
    } else {
      // The whole time dimension for every entry.
      Output tm = options.time_major ? inputs : TransposeBatchTime(inputs, "transpose");
      lengths = Fill(ExpandDims(Dim(tm, 1, "batch_size"), 0), Dim(tm, 0, "time_steps"), "full_lengths");
    }
    Output reversed = ReverseSteps(inputs, lengths, options.time_major);
    auto name_scope = graph.NameScope("bw");
    RnnOutputs out = DynamicRnnInScope(cell_bw, reversed, rnn_options(options.initial_state_bw));
    result.state_bw = out.state;
    result.output_bw = out.outputs;
  }
  result.output_bw = ReverseSteps(result.output_bw, lengths, options.time_major);
  return result;
}

}  // namespace flowtrain::ops
