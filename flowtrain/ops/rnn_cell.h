// Recurrent cells as TF 1.15's tf.nn.rnn_cell builds them: BasicRNNCell, GRUCell,
// BasicLSTMCell, LSTMCell (peepholes, projection, clipping), MultiRNNCell and DropoutWrapper.
// A cell computes one time step, (output, new_state) = cell(inputs, state); ops::DynamicRnn
// (rnn.h) runs it over a sequence. Cells create their variables on their first call, with
// TF's names, shapes, layouts and initializers, under a variable scope named after the cell
// ("basic_lstm_cell", made unique in the enclosing variable scope as TF's default_name does):
//
//   auto cell = std::make_shared<ops::BasicLSTMCell>(64);
//   ops::RnnState state = cell->ZeroState(batch_size, DT_FLOAT);    // LSTMStateTuple (c, h)
//   auto [output, next] = (*cell)(x_t, state);   // "basic_lstm_cell/kernel" [in + 64, 256]
//
// Kernels are [input_depth + h_depth, gates * units] over concat([inputs, h], 1); the LSTM
// gates are in TF's order i, j, f, o and the GRU's r, u. Later calls reuse the variables of
// the first (a cell is one set of weights, as a TF layer is), whatever scope they are made
// in. Variables are created outside any cond or loop (TF's init_scope), so a cell may first
// be called inside a while loop's body. Bad input (a non-positive size, inputs that are not
// rank 2 with a known depth, a state of the wrong structure, a keep probability outside
// (0, 1]) throws InvalidArgument naming the cell. Not thread safe: build from one thread.
#ifndef FLOWTRAIN_OPS_RNN_CELL_H_
#define FLOWTRAIN_OPS_RNN_CELL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flowtrain/graph/graph.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/layers.h"
#include "flowtrain/ops/variables.h"

namespace flowtrain::ops {

// A cell's state, nested as TF's: one tensor (BasicRNNCell, GRUCell), an LSTMStateTuple
// (c, h), or a tuple of states (MultiRNNCell, one per layer). A small value to copy.
class RnnState {
 public:
  RnnState() = default;
  RnnState(Output tensor);  // NOLINT: a single tensor is a state, as in TF
  // TF's LSTMStateTuple(c, h).
  static RnnState LstmTuple(Output c, Output h);
  static RnnState Tuple(std::vector<RnnState> parts);

  enum class Kind { kTensor, kLstmTuple, kTuple };
  Kind kind() const { return kind_; }
  // The tensor of a kTensor state.
  const Output& tensor() const;
  // c and h of a kLstmTuple state.
  const Output& c() const;
  const Output& h() const;
  // The parts of a kTuple (or, c then h, of a kLstmTuple) state.
  const std::vector<RnnState>& parts() const { return parts_; }

  // The tensors in TF's nest.flatten order (depth first, c before h).
  std::vector<Output> Flatten() const;
  // A state of this one's structure holding `flat` (as many tensors as Flatten() gives).
  RnnState PackLike(const std::vector<Output>& flat) const;
  // True if `other` has this state's structure (TF's nest.assert_same_structure).
  bool SameStructure(const RnnState& other) const;

 private:
  RnnState PackFrom(const std::vector<Output>& flat, size_t& next) const;
  Kind kind_ = Kind::kTensor;
  Output tensor_;
  std::vector<RnnState> parts_;
};

// A recurrent cell (TF's RNNCell). Call it as a function; ZeroState gives its initial state.
class RnnCell {
 public:
  virtual ~RnnCell() = default;
  // The depth of the output (TF's output_size).
  virtual int64_t output_size() const = 0;
  // The depths of the state's tensors in Flatten() order (TF's nest.flatten(state_size)).
  virtual std::vector<int64_t> flat_state_size() const = 0;
  // TF's zero_state: zeros of [batch_size, size] per state tensor, built in name scope
  // "<ClassName>ZeroState" ("BasicLSTMCellZeroState/zeros"). `batch_size` is a scalar int32.
  RnnState ZeroState(Output batch_size, DataType dtype) const;

  // One step: `inputs` [batch, depth] and `state` of ZeroState's structure. Builds the
  // variables on the first call (in the current variable scope) and the step's ops in a
  // name scope named after the cell.
  std::pair<Output, RnnState> operator()(Output inputs, const RnnState& state);

  // TF's class name ("BasicLSTMCell") and layer base name ("basic_lstm_cell").
  virtual std::string_view class_name() const = 0;
  virtual std::string_view base_name() const = 0;
  // A state of ZeroState's structure holding `flat` (as many tensors as flat_state_size()).
  virtual RnnState StateStructure(const std::vector<Output>& flat) const = 0;

 protected:
  explicit RnnCell(std::string name) : name_(std::move(name)) {}
  // Builds the variables (in the cell's variable scope) for inputs of `input_depth`.
  virtual void Build(int64_t input_depth, DataType dtype) = 0;
  // The step's ops (in the cell's name scope), the variables built.
  virtual std::pair<Output, RnnState> Call(Output inputs, const RnnState& state) = 0;
  // Whether operator() opens a variable and name scope of the cell's own (wrappers do not).
  virtual bool OpensScope() const { return true; }

  // A variable of the cell (outside any control-flow context, named by the current scope).
  static Variable AddVariable(std::string_view name, const TensorShape& shape, DataType dtype,
                              const Initializer& initializer);

 private:
  // The given name, else base_name() made unique in the current variable scope.
  std::string ScopeName(Graph& graph) const;
  std::string name_;
  bool built_ = false;
  std::string scope_name_;  // the variable scope's name in its enclosing scope, once built
};

// tf.nn.rnn_cell.BasicRNNCell: output = new_state = activation(W [x, h] + b).
struct BasicRNNCellOptions {
  layers::Activation activation;  // default tanh
  std::string name;               // default a unique "basic_rnn_cell"
};
class BasicRNNCell : public RnnCell {
 public:
  explicit BasicRNNCell(int64_t num_units, BasicRNNCellOptions options = {});
  int64_t output_size() const override { return num_units_; }
  std::vector<int64_t> flat_state_size() const override { return {num_units_}; }
  std::string_view class_name() const override { return "BasicRNNCell"; }
  std::string_view base_name() const override { return "basic_rnn_cell"; }

 protected:
  void Build(int64_t input_depth, DataType dtype) override;
  std::pair<Output, RnnState> Call(Output inputs, const RnnState& state) override;
  RnnState StateStructure(const std::vector<Output>& flat) const override { return flat[0]; }

 private:
  int64_t num_units_;
  layers::Activation activation_;
  Variable kernel_, bias_;
};

// tf.nn.rnn_cell.GRUCell: gates r, u = sigmoid(W_g [x, h] + b_g) (b_g default ones),
// c = activation(W_c [x, r * h] + b_c), new h = u * h + (1 - u) * c.
struct GRUCellOptions {
  layers::Activation activation;   // default tanh
  Initializer kernel_initializer;  // default the variable scope's (glorot_uniform)
  // Default: ones for the gates' bias, zeros for the candidate's.
  Initializer bias_initializer;
  std::string name;  // default a unique "gru_cell"
};
class GRUCell : public RnnCell {
 public:
  explicit GRUCell(int64_t num_units, GRUCellOptions options = {});
  int64_t output_size() const override { return num_units_; }
  std::vector<int64_t> flat_state_size() const override { return {num_units_}; }
  std::string_view class_name() const override { return "GRUCell"; }
  std::string_view base_name() const override { return "gru_cell"; }

 protected:
  void Build(int64_t input_depth, DataType dtype) override;
  std::pair<Output, RnnState> Call(Output inputs, const RnnState& state) override;
  RnnState StateStructure(const std::vector<Output>& flat) const override { return flat[0]; }

 private:
  int64_t num_units_;
  GRUCellOptions options_;
  Variable gate_kernel_, gate_bias_, candidate_kernel_, candidate_bias_;
};

// tf.nn.rnn_cell.BasicLSTMCell (state_is_tuple): i, j, f, o = split(W [x, h] + b),
// new c = c * sigmoid(f + forget_bias) + sigmoid(i) * activation(j),
// new h = activation(new c) * sigmoid(o). The state is LSTMStateTuple(c, h).
struct BasicLSTMCellOptions {
  double forget_bias = 1.0;
  layers::Activation activation;  // default tanh
  std::string name;               // default a unique "basic_lstm_cell"
};
class BasicLSTMCell : public RnnCell {
 public:
  explicit BasicLSTMCell(int64_t num_units, BasicLSTMCellOptions options = {});
  int64_t output_size() const override { return num_units_; }
  std::vector<int64_t> flat_state_size() const override { return {num_units_, num_units_}; }
  std::string_view class_name() const override { return "BasicLSTMCell"; }
  std::string_view base_name() const override { return "basic_lstm_cell"; }

 protected:
  void Build(int64_t input_depth, DataType dtype) override;
  std::pair<Output, RnnState> Call(Output inputs, const RnnState& state) override;
  RnnState StateStructure(const std::vector<Output>& flat) const override {
    return RnnState::LstmTuple(flat[0], flat[1]);
  }

 private:
  int64_t num_units_;
  BasicLSTMCellOptions options_;
  Variable kernel_, bias_;
};

// tf.nn.rnn_cell.LSTMCell (state_is_tuple): BasicLSTMCell's step with optional peepholes
// (w_f_diag, w_i_diag, w_o_diag), the cell state clipped to [-cell_clip, cell_clip], and the
// output projected to num_proj ("projection/kernel" [num_units, num_proj]) and clipped to
// [-proj_clip, proj_clip]. The state is LSTMStateTuple(c [num_units], h [num_proj or num_units]).
struct LSTMCellOptions {
  bool use_peepholes = false;
  std::optional<double> cell_clip;
  // Default: the variable scope's (glorot_uniform), for the kernels and peepholes.
  Initializer initializer;
  std::optional<int64_t> num_proj;
  std::optional<double> proj_clip;
  double forget_bias = 1.0;
  layers::Activation activation;  // default tanh
  std::string name;               // default a unique "lstm_cell"
};
class LSTMCell : public RnnCell {
 public:
  explicit LSTMCell(int64_t num_units, LSTMCellOptions options = {});
  int64_t output_size() const override { return h_depth(); }
  std::vector<int64_t> flat_state_size() const override { return {num_units_, h_depth()}; }
  std::string_view class_name() const override { return "LSTMCell"; }
  std::string_view base_name() const override { return "lstm_cell"; }

 protected:
  void Build(int64_t input_depth, DataType dtype) override;
  std::pair<Output, RnnState> Call(Output inputs, const RnnState& state) override;
  RnnState StateStructure(const std::vector<Output>& flat) const override {
    return RnnState::LstmTuple(flat[0], flat[1]);
  }

 private:
  int64_t h_depth() const { return options_.num_proj.value_or(num_units_); }
  int64_t num_units_;
  LSTMCellOptions options_;
  Variable kernel_, bias_, w_f_diag_, w_i_diag_, w_o_diag_, proj_kernel_;
};

// tf.nn.rnn_cell.MultiRNNCell (state_is_tuple): the cells stacked, each one's output the next
// one's input, cell i's variables in scope "multi_rnn_cell/cell_<i>/"; the state is the tuple
// of the cells' states and the output the last cell's.
class MultiRNNCell : public RnnCell {
 public:
  explicit MultiRNNCell(std::vector<std::shared_ptr<RnnCell>> cells, std::string name = {});
  int64_t output_size() const override { return cells_.back()->output_size(); }
  std::vector<int64_t> flat_state_size() const override;
  std::string_view class_name() const override { return "MultiRNNCell"; }
  std::string_view base_name() const override { return "multi_rnn_cell"; }

 protected:
  void Build(int64_t, DataType) override {}
  std::pair<Output, RnnState> Call(Output inputs, const RnnState& state) override;
  RnnState StateStructure(const std::vector<Output>& flat) const override;

 private:
  std::vector<std::shared_ptr<RnnCell>> cells_;
};

// tf.nn.rnn_cell.DropoutWrapper (non-variational): dropout (tf.nn.dropout, keep probability
// p, scaling by 1 / p) on the cell's inputs, outputs and new state; of an LSTMStateTuple only
// h is dropped, never c (TF's default dropout_state_filter_visitor). A keep probability of 1
// builds no dropout, as in TF. The wrapped cell's variables keep their names (the wrapper
// opens no scope). With `seed`, the k-th dropout built has op seed seed + k (TF derives its
// seeds by hashing, so masks never match TF's).
struct DropoutWrapperOptions {
  double input_keep_prob = 1.0;
  double output_keep_prob = 1.0;
  double state_keep_prob = 1.0;
  std::optional<int64_t> seed;
};
class DropoutWrapper : public RnnCell {
 public:
  DropoutWrapper(std::shared_ptr<RnnCell> cell, DropoutWrapperOptions options);
  int64_t output_size() const override { return cell_->output_size(); }
  std::vector<int64_t> flat_state_size() const override { return cell_->flat_state_size(); }
  std::string_view class_name() const override { return "DropoutWrapper"; }
  std::string_view base_name() const override { return "dropout_wrapper"; }

 protected:
  void Build(int64_t, DataType) override {}
  std::pair<Output, RnnState> Call(Output inputs, const RnnState& state) override;
  RnnState StateStructure(const std::vector<Output>& flat) const override;
  bool OpensScope() const override { return false; }

 private:
  std::shared_ptr<RnnCell> cell_;
  DropoutWrapperOptions options_;
};

}  // namespace flowtrain::ops

#endif  // FLOWTRAIN_OPS_RNN_CELL_H_
