// tf.nn.dynamic_rnn (TF 1.15): runs a recurrent cell (rnn_cell.h) over a sequence in a while
// loop, as TF builds it: in variable scope "rnn" the inputs go into a TensorArray, the loop
// "rnn/while" reads one time step per iteration, calls the cell and writes its output to
// another TensorArray, which is stacked at the end. With `sequence_length`, a batch entry's
// outputs past its length are zeros and its state is copied through unchanged, so the final
// state is the state at the entry's last step (TF's _rnn_step with skip_conditionals).
//
//   Output x = ops::Placeholder(DT_FLOAT, {32, 20, 8});          // [batch, time, depth]
//   auto cell = std::make_shared<ops::BasicLSTMCell>(64);
//   ops::RnnOutputs rnn = ops::DynamicRnn(cell, x, {.sequence_length = lengths, .dtype = DT_FLOAT});
//   // rnn.outputs [32, 20, 64]; rnn.state.c(), rnn.state.h() [32, 64];
//   // variables "rnn/basic_lstm_cell/kernel" and "rnn/basic_lstm_cell/bias"
//
// bidirectional_dynamic_rnn runs a second cell over the reversed sequences. Gradients flow through the loop
// (ops::Gradients). Bad input (inputs not of rank 3 with a known depth, a sequence_length that is not a
// vector, no initial state and no dtype, an initial state not of the cell's structure) throws InvalidArgument
// naming dynamic_rnn. Not thread safe: build one graph from one thread.
#ifndef FLOWTRAIN_OPS_RNN_H_
#define FLOWTRAIN_OPS_RNN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/rnn_cell.h"

namespace flowtrain::ops {

struct DynamicRnnOptions {
  // int32 or int64 [batch]: each entry's length (default: the full time dimension).
  Output sequence_length;
  // Default: the cell's ZeroState of `dtype`.
  std::optional<RnnState> initial_state;
  // The state's dtype when there is no initial_state (required then, as in TF).
  std::optional<DataType> dtype;
  // Inputs and outputs [time, batch, depth] instead of [batch, time, depth].
  bool time_major = false;
  int64_t parallel_iterations = 32;
  // TF's swap_memory (moving loop tensors to host memory) has nothing to do on a CPU: ignored.
  bool swap_memory = false;
  // The variable scope; default "rnn".
  std::string scope;
};

// What dynamic_rnn returns: the outputs [batch, time, output_size] (or time major) and the
// final state, of the cell's structure.
struct RnnOutputs {
  Output outputs;
  RnnState state;
};

// tf.nn.dynamic_rnn(cell, inputs, ...) for one input tensor [batch, time, depth].
RnnOutputs DynamicRnn(std::shared_ptr<RnnCell> cell, Output inputs, const DynamicRnnOptions& options = {});

struct BidirectionalRnnOptions {
  // As DynamicRnnOptions' (int32 or int64 [batch]).
  Output sequence_length;
  std::optional<RnnState> initial_state_fw;
  std::optional<RnnState> initial_state_bw;
  std::optional<DataType> dtype;
  bool time_major = false;
  int64_t parallel_iterations = 32;
  bool swap_memory = false;  // ignored, as DynamicRnnOptions'
  // The variable scope; default "bidirectional_rnn".
  std::string scope;
};

// What bidirectional_dynamic_rnn returns: the forward and backward outputs (the backward ones
// reversed back into input order) and the two final states.
struct BidirectionalRnnOutputs {
  Output output_fw;
  Output output_bw;
  RnnState state_fw;
  RnnState state_bw;
};

// tf.nn.bidirectional_dynamic_rnn: `cell_fw` runs over the inputs in variable scope
// "bidirectional_rnn/fw", `cell_bw` over each entry's first sequence_length steps reversed
// (ReverseSequence) in "bidirectional_rnn/bw". Without a sequence_length the whole time
// dimension is reversed (TF reverses with ReverseV2 then; flowtrain with ReverseSequence over
// full lengths, the same values).
BidirectionalRnnOutputs BidirectionalDynamicRnn(std::shared_ptr<RnnCell> cell_fw,
                                                std::shared_ptr<RnnCell> cell_bw, Output inputs,
                                                const BidirectionalRnnOptions& options = {});

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_RNN_H_
