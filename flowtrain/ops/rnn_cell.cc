#include "flowtrain/ops/rnn_cell.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/internal/control_flow_context.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/nn_ops.h"
#include "flowtrain/ops/variable_scope.h"

namespace flowtrain::ops {
namespace {

Output Activate(const layers::Activation& activation, Output x) {
  return activation ? activation(x, {}) : Tanh(x);
}

// A scalar constant of `dtype` (float and double exactly; other types through a Cast).
Output ScalarConst(double value, DataType dtype, std::string_view name) {
  if (dtype == DT_DOUBLE) return Const(Tensor::Scalar<double>(value), name);
  Output c = Const(Tensor::Scalar<float>(static_cast<float>(value)), name);
  return dtype == DT_FLOAT ? c : Cast(c, dtype);
}

// TF's clip_by_value: Minimum then Maximum.
Output ClipSymmetric(Output x, double clip, std::string_view name) {
  Graph& graph = *x.graph();
  auto scope = graph.NameScope(name);
  Output hi = ScalarConst(clip, x.dtype(), "clip_value_max");
  Output lo = ScalarConst(-clip, x.dtype(), "clip_value_min");
  return Maximum(Minimum(x, hi, "Minimum"), lo, name);
}

void CheckUnits(int64_t units, std::string_view cell) {
  if (units <= 0) InvalidArgument(cell, ": num_units must be positive, got ", units);
}

}  // namespace

// ---- RnnState ----

RnnState::RnnState(Output tensor) : tensor_(std::move(tensor)) {}

RnnState RnnState::LstmTuple(Output c, Output h) {
  RnnState state;
  state.kind_ = Kind::kLstmTuple;
  state.parts_ = {RnnState(std::move(c)), RnnState(std::move(h))};
  return state;
}

RnnState RnnState::Tuple(std::vector<RnnState> parts) {
  RnnState state;
  state.kind_ = Kind::kTuple;
  state.parts_ = std::move(parts);
  return state;
}

const Output& RnnState::tensor() const {
  if (kind_ != Kind::kTensor) InvalidArgument("RnnState: a tuple state has no single tensor");
  return tensor_;
}

const Output& RnnState::c() const {
  if (kind_ != Kind::kLstmTuple) InvalidArgument("RnnState: c of a state that is not an LSTMStateTuple");
  return parts_[0].tensor_;
}

const Output& RnnState::h() const {
  if (kind_ != Kind::kLstmTuple) InvalidArgument("RnnState: h of a state that is not an LSTMStateTuple");
  return parts_[1].tensor_;
}

std::vector<Output> RnnState::Flatten() const {
  if (kind_ == Kind::kTensor) return {tensor_};
  std::vector<Output> flat;
  for (const RnnState& part : parts_) {
    for (Output& t : part.Flatten()) flat.push_back(std::move(t));
  }
  return flat;
}

RnnState RnnState::PackFrom(const std::vector<Output>& flat, size_t& next) const {
  if (kind_ == Kind::kTensor) {
    if (next >= flat.size()) InvalidArgument("RnnState: too few tensors to pack, got ", flat.size());
    return RnnState(flat[next++]);
  }
  RnnState packed;
  packed.kind_ = kind_;
  for (const RnnState& part : parts_) packed.parts_.push_back(part.PackFrom(flat, next));
  return packed;
}

RnnState RnnState::PackLike(const std::vector<Output>& flat) const {
  size_t next = 0;
  RnnState packed = PackFrom(flat, next);
  if (next != flat.size()) InvalidArgument("RnnState: ", flat.size(), " tensors for a state of ", next);
  return packed;
}

bool RnnState::SameStructure(const RnnState& other) const {
  if (kind_ != other.kind_ || parts_.size() != other.parts_.size()) return false;
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (!parts_[i].SameStructure(other.parts_[i])) return false;
  }
  return true;
}

// ---- RnnCell ----

RnnState RnnCell::ZeroState(Output batch_size, DataType dtype) const {
  if (!batch_size) InvalidArgument(class_name(), ".zero_state: the batch size is empty");
  Graph& graph = *batch_size.graph();
  auto as_default = graph.AsDefault();
  auto scope = graph.NameScope(StrCat(class_name(), "ZeroState"));
  // The batch size when it is a constant, for the zeros' static shape (TF's constant_value).
  const Tensor* known_batch = batch_size.node()->constant_value();
  const int64_t static_batch = known_batch && known_batch->dtype() == DT_INT32 && known_batch->dims() == 0
                                   ? known_batch->scalar<int32_t>()
                                   : -1;
  std::vector<Output> zeros;
  int index = 0;
  for (int64_t size : flat_state_size()) {
    const std::string suffix = index == 0 ? "" : StrCat("_", index);
    ++index;
    Output shape =
        Concat({ExpandDims(batch_size, 0), Const({static_cast<int32_t>(size)})}, 0, StrCat("concat", suffix));
    Output zero = ScalarConst(0.0, dtype, StrCat("zeros", suffix, "/Const"));
    Output z = Fill(shape, zero, StrCat("zeros", suffix));
    graph.SetOutputShape(z.op(), 0, PartialTensorShape({static_batch, size}));
    zeros.push_back(z);
  }
  return StateStructure(zeros);
}

std::string RnnCell::ScopeName(Graph& graph) const {
  if (!name_.empty()) return name_;
  const std::string outer = CurrentVariableScopeName(&graph);
  const std::string prefix = outer.empty() ? "" : outer + "/";
  // TF's variable_scope(default_name=...): unique among the scopes opened in `outer`.
  const std::string unique = layers::UniqueLayerName(graph, StrCat("__rnn_cell_scope:", prefix, base_name()));
  return unique.substr(std::string_view("__rnn_cell_scope:").size() + prefix.size());
}

std::pair<Output, RnnState> RnnCell::operator()(Output inputs, const RnnState& state) {
  if (!inputs) InvalidArgument(class_name(), ": the inputs are empty");
  const PartialTensorShape& shape = inputs.shape();
  if (shape.dims() != 2 || shape.dim_size(1) < 0) {
    InvalidArgument(class_name(), ": inputs must have rank 2 [batch, depth] with a known depth, got ",
                    shape.DebugString());
  }
  const std::vector<Output> flat = state.Flatten();
  const std::vector<int64_t> sizes = flat_state_size();
  if (flat.size() != sizes.size() || !StateStructure(flat).SameStructure(state)) {
    InvalidArgument(class_name(), ": the state does not have the cell's structure (", sizes.size(),
                    " tensors expected, got ", flat.size(), ")");
  }
  for (size_t i = 0; i < flat.size(); ++i) {
    const PartialTensorShape& s = flat[i].shape();
    if (!flat[i] || s.unknown_rank() || s.dims() != 2 || (s.dim_size(1) >= 0 && s.dim_size(1) != sizes[i])) {
      InvalidArgument(class_name(), ": state tensor ", i, " must be [batch, ", sizes[i], "], got ",
                      flat[i] ? s.DebugString() : "an empty tensor");
    }
    if (flat[i].dtype() != inputs.dtype()) {
      InvalidArgument(class_name(), ": state tensor ", i, " is ", DataTypeString(flat[i].dtype()),
                      " but the inputs are ", DataTypeString(inputs.dtype()));
    }
  }
  Graph& graph = *inputs.graph();
  auto as_default = graph.AsDefault();
  if (!OpensScope()) return Call(inputs, state);
  // The first call builds the variables, and those of the cells inside (MultiRNNCell's),
  // in the cell's variable scope; later calls use them wherever they are made.
  std::optional<VariableScope> var_scope;
  if (!built_) {
    scope_name_ = ScopeName(graph);
    var_scope.emplace(scope_name_, VariableScopeOptions{.auxiliary_name_scope = false});
    Build(shape.dim_size(1), inputs.dtype());
    built_ = true;
  }
  auto name_scope = graph.NameScope(scope_name_);
  return Call(inputs, state);
}

Variable RnnCell::AddVariable(std::string_view name, const TensorShape& shape, DataType dtype,
                              const Initializer& initializer) {
  Graph& graph = GetDefaultGraph();
  // TF's init_scope: a variable made in a loop body lives outside the loop.
  control_flow_internal::ContextScope outside(graph, nullptr);
  return GetVariable(name, shape, dtype, initializer);
}

// ---- BasicRNNCell ----

BasicRNNCell::BasicRNNCell(int64_t num_units, BasicRNNCellOptions options)
    : RnnCell(options.name), num_units_(num_units), activation_(std::move(options.activation)) {
  CheckUnits(num_units, "BasicRNNCell");
}

void BasicRNNCell::Build(int64_t input_depth, DataType dtype) {
  kernel_ = AddVariable("kernel", TensorShape({input_depth + num_units_, num_units_}), dtype, nullptr);
  bias_ = AddVariable("bias", TensorShape({num_units_}), dtype, ZerosInitializer());
}

std::pair<Output, RnnState> BasicRNNCell::Call(Output inputs, const RnnState& state) {
  Output gate_inputs = MatMul(Concat({inputs, state.tensor()}, 1), kernel_);
  Output output = Activate(activation_, BiasAdd(gate_inputs, bias_));
  return {output, output};
}

// ---- GRUCell ----

GRUCell::GRUCell(int64_t num_units, GRUCellOptions options)
    : RnnCell(options.name), num_units_(num_units), options_(std::move(options)) {
  CheckUnits(num_units, "GRUCell");
}

void GRUCell::Build(int64_t input_depth, DataType dtype) {
  const Initializer& bias_init = options_.bias_initializer;
  gate_kernel_ = AddVariable("gates/kernel", TensorShape({input_depth + num_units_, 2 * num_units_}), dtype,
                             options_.kernel_initializer);
  gate_bias_ = AddVariable("gates/bias", TensorShape({2 * num_units_}), dtype,
                           bias_init ? bias_init : ConstantInitializer(1.0));
  candidate_kernel_ = AddVariable("candidate/kernel", TensorShape({input_depth + num_units_, num_units_}),
                                  dtype, options_.kernel_initializer);
  candidate_bias_ = AddVariable("candidate/bias", TensorShape({num_units_}), dtype,
                                bias_init ? bias_init : ZerosInitializer());
}

std::pair<Output, RnnState> GRUCell::Call(Output inputs, const RnnState& state) {
  const Output& h = state.tensor();
  Output gate_inputs = BiasAdd(MatMul(Concat({inputs, h}, 1), gate_kernel_), gate_bias_);
  std::vector<Output> ru = Split(Sigmoid(gate_inputs), 2, 1);
  Output r_state = Mul(ru[0], h, "mul");
  Output candidate =
      BiasAdd(MatMul(Concat({inputs, r_state}, 1, "concat_1"), candidate_kernel_, false, false, "MatMul_1"),
              candidate_bias_, "BiasAdd_1");
  Output c = Activate(options_.activation, candidate);
  Output one = ScalarConst(1.0, inputs.dtype(), "sub/x");
  Output new_h = AddV2(Mul(ru[1], h, "mul_1"), Mul(Sub(one, ru[1], "sub"), c, "mul_2"), "add");
  return {new_h, new_h};
}

// ---- BasicLSTMCell ----

BasicLSTMCell::BasicLSTMCell(int64_t num_units, BasicLSTMCellOptions options)
    : RnnCell(options.name), num_units_(num_units), options_(std::move(options)) {
  CheckUnits(num_units, "BasicLSTMCell");
}

void BasicLSTMCell::Build(int64_t input_depth, DataType dtype) {
  kernel_ = AddVariable("kernel", TensorShape({input_depth + num_units_, 4 * num_units_}), dtype, nullptr);
  bias_ = AddVariable("bias", TensorShape({4 * num_units_}), dtype, ZerosInitializer());
}

std::pair<Output, RnnState> BasicLSTMCell::Call(Output inputs, const RnnState& state) {
  Output gate_inputs = BiasAdd(MatMul(Concat({inputs, state.h()}, 1), kernel_), bias_);
  std::vector<Output> ijfo = Split(gate_inputs, 4, 1);
  Output forget_bias = ScalarConst(options_.forget_bias, inputs.dtype(), "Const_1");
  Output new_c =
      AddV2(Mul(state.c(), Sigmoid(AddV2(ijfo[2], forget_bias, "Add")), "Mul"),
            Mul(Sigmoid(ijfo[0], "Sigmoid_1"), Activate(options_.activation, ijfo[1]), "Mul_1"), "Add_1");
  Output new_h = Mul(Activate(options_.activation, new_c), Sigmoid(ijfo[3], "Sigmoid_2"), "Mul_2");
  return {new_h, RnnState::LstmTuple(new_c, new_h)};
}

// ---- LSTMCell ----

LSTMCell::LSTMCell(int64_t num_units, LSTMCellOptions options)
    : RnnCell(options.name), num_units_(num_units), options_(std::move(options)) {
  CheckUnits(num_units, "LSTMCell");
  if (options_.num_proj && *options_.num_proj <= 0) {
    InvalidArgument("LSTMCell: num_proj must be positive, got ", *options_.num_proj);
  }
  if (options_.cell_clip && !(*options_.cell_clip > 0)) {
    InvalidArgument("LSTMCell: cell_clip must be positive, got ", *options_.cell_clip);
  }
  if (options_.proj_clip && !(*options_.proj_clip > 0)) {
    InvalidArgument("LSTMCell: proj_clip must be positive, got ", *options_.proj_clip);
  }
}

void LSTMCell::Build(int64_t input_depth, DataType dtype) {
  const Initializer& init = options_.initializer;
  kernel_ = AddVariable("kernel", TensorShape({input_depth + h_depth(), 4 * num_units_}), dtype, init);
  bias_ = AddVariable("bias", TensorShape({4 * num_units_}), dtype, ZerosInitializer());
  if (options_.use_peepholes) {
    w_f_diag_ = AddVariable("w_f_diag", TensorShape({num_units_}), dtype, init);
    w_i_diag_ = AddVariable("w_i_diag", TensorShape({num_units_}), dtype, init);
    w_o_diag_ = AddVariable("w_o_diag", TensorShape({num_units_}), dtype, init);
  }
  if (options_.num_proj) {
    proj_kernel_ =
        AddVariable("projection/kernel", TensorShape({num_units_, *options_.num_proj}), dtype, init);
  }
}

std::pair<Output, RnnState> LSTMCell::Call(Output inputs, const RnnState& state) {
  const Output& c_prev = state.c();
  Output lstm_matrix = BiasAdd(MatMul(Concat({inputs, state.h()}, 1), kernel_), bias_);
  std::vector<Output> ijfo = Split(lstm_matrix, 4, 1);
  Output forget_bias = ScalarConst(options_.forget_bias, inputs.dtype(), "add/y");
  Output f = AddV2(ijfo[2], forget_bias, "add");
  Output i = ijfo[0];
  if (options_.use_peepholes) {
    f = AddV2(f, Mul(w_f_diag_, c_prev, "mul"), "add_1");
    i = AddV2(i, Mul(w_i_diag_, c_prev, "mul_1"), "add_2");
  }
  Output c = AddV2(Mul(Sigmoid(f), c_prev, "mul_2"),
                   Mul(Sigmoid(i), Activate(options_.activation, ijfo[1]), "mul_3"), "add_3");
  if (options_.cell_clip) c = ClipSymmetric(c, *options_.cell_clip, "clip_by_value");
  Output o = ijfo[3];
  if (options_.use_peepholes) o = AddV2(o, Mul(w_o_diag_, c, "mul_4"), "add_4");
  Output m = Mul(Sigmoid(o), Activate(options_.activation, c), "mul_5");
  if (options_.num_proj) {
    {
      auto scope = inputs.graph()->NameScope("projection");
      m = MatMul(m, proj_kernel_);
    }
    if (options_.proj_clip) m = ClipSymmetric(m, *options_.proj_clip, "clip_by_value_1");
  }
  return {m, RnnState::LstmTuple(c, m)};
}

// ---- MultiRNNCell ----

MultiRNNCell::MultiRNNCell(std::vector<std::shared_ptr<RnnCell>> cells, std::string name)
    : RnnCell(std::move(name)), cells_(std::move(cells)) {
  if (cells_.empty()) InvalidArgument("MultiRNNCell: must specify at least one cell");
  for (const auto& cell : cells_) {
    if (!cell) InvalidArgument("MultiRNNCell: a cell is null");
  }
}

std::vector<int64_t> MultiRNNCell::flat_state_size() const {
  std::vector<int64_t> sizes;
  for (const auto& cell : cells_) {
    for (int64_t s : cell->flat_state_size()) sizes.push_back(s);
  }
  return sizes;
}

RnnState MultiRNNCell::StateStructure(const std::vector<Output>& flat) const {
  std::vector<RnnState> parts;
  size_t next = 0;
  for (const auto& cell : cells_) {
    const size_t n = cell->flat_state_size().size();
    if (next + n > flat.size()) InvalidArgument("MultiRNNCell: too few state tensors, got ", flat.size());
    parts.push_back(cell->StateStructure(std::vector<Output>(flat.begin() + next, flat.begin() + next + n)));
    next += n;
  }
  return RnnState::Tuple(std::move(parts));
}

std::pair<Output, RnnState> MultiRNNCell::Call(Output inputs, const RnnState& state) {
  Output current = inputs;
  std::vector<RnnState> new_states;
  for (size_t i = 0; i < cells_.size(); ++i) {
    VariableScope cell_scope(StrCat("cell_", i));
    auto [output, new_state] = (*cells_[i])(current, state.parts()[i]);
    current = output;
    new_states.push_back(std::move(new_state));
  }
  return {current, RnnState::Tuple(std::move(new_states))};
}

// ---- DropoutWrapper ----

DropoutWrapper::DropoutWrapper(std::shared_ptr<RnnCell> cell, DropoutWrapperOptions options)
    : RnnCell(""), cell_(std::move(cell)), options_(options) {
  if (!cell_) InvalidArgument("DropoutWrapper: the cell is null");
  for (auto [what, p] : {std::pair{"input_keep_prob", options_.input_keep_prob},
                         std::pair{"output_keep_prob", options_.output_keep_prob},
                         std::pair{"state_keep_prob", options_.state_keep_prob}}) {
    if (!(p > 0.0 && p <= 1.0))
      InvalidArgument("DropoutWrapper: Parameter ", what, " must be in (0, 1], got ", p);
  }
}

RnnState DropoutWrapper::StateStructure(const std::vector<Output>& flat) const {
  return cell_->StateStructure(flat);
}

std::pair<Output, RnnState> DropoutWrapper::Call(Output inputs, const RnnState& state) {
  int64_t next_seed = 0;
  auto dropout = [&](Output x, double keep_prob, std::string_view name) {
    if (keep_prob == 1.0) return x;
    std::optional<int64_t> seed;
    if (options_.seed) seed = *options_.seed + next_seed++;
    return Dropout(x, static_cast<float>(1.0 - keep_prob), seed, name);
  };
  inputs = dropout(inputs, options_.input_keep_prob, "input_dropout");
  auto [output, new_state] = (*cell_)(inputs, state);
  if (options_.state_keep_prob != 1.0) {
    // Only the h of each LSTMStateTuple, never its c (TF's dropout_state_filter_visitor).
    std::function<RnnState(const RnnState&)> drop = [&](const RnnState& s) -> RnnState {
      switch (s.kind()) {
        case RnnState::Kind::kTensor:
          return dropout(s.tensor(), options_.state_keep_prob, "state_dropout");
        case RnnState::Kind::kLstmTuple:
          return RnnState::LstmTuple(s.c(), dropout(s.h(), options_.state_keep_prob, "state_dropout"));
        case RnnState::Kind::kTuple: {
          std::vector<RnnState> parts;
          for (const RnnState& p : s.parts()) parts.push_back(drop(p));
          return RnnState::Tuple(std::move(parts));
        }
      }
      return s;
    };
    new_state = drop(new_state);
  }
  output = dropout(output, options_.output_keep_prob, "output_dropout");
  return {output, new_state};
}

}  // namespace flowtrain::ops
