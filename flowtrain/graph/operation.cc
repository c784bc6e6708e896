#include "flowtrain/graph/operation.h"

#include <charconv>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

void Operation::ThrowNullOperation() {
  InvalidArgument("Operation is null (default-constructed); it names no node of any graph");
}

Output Operation::input(int i) const {
  if (i < 0 || i >= num_inputs()) {
    InvalidArgument("Operation ", name(), " has ", num_inputs(), " inputs, asked for input ", i);
  }
  const Endpoint& e = checked_node().input(i);
  return Output(e.node, e.index);
}

Output Operation::output(int i) const {
  if (i < 0 || i >= num_outputs()) {
    InvalidArgument("Operation ", name(), " has ", num_outputs(), " outputs, asked for output ", i);
  }
  return Output(node_, i);
}

std::vector<Operation> Operation::control_inputs() const {
  std::vector<Operation> ops;
  for (Node* n : checked_node().control_inputs()) ops.emplace_back(n);
  return ops;
}

std::string Output::name() const {
  checked_node(true);
  return StrCat(node_->name(), ":", index_);
}

void Output::CheckValid(std::string_view role) const {
  if (node_ == nullptr) {
    InvalidArgument(role, " is a null Output (default-constructed); it names no tensor of any graph");
  }
  const int n = node_->num_outputs();
  if (index_ >= 0 && index_ < n) return;
  if (n == 0) {
    InvalidArgument(role, " '", node_->name(), ":", index_, "' names an output of operation '", node_->name(),
                    "' (op: \"", node_->type(),
                    "\"), which has no outputs; to run an operation, fetch the Operation itself "
                    "(not an Output of it) or pass it as a target: session.Run(feeds, {}, {op})");
  }
  InvalidArgument(role, " '", node_->name(), ":", index_, "' is out of range: operation '", node_->name(),
                  "' (op: \"", node_->type(), "\") has ", n, n == 1 ? " output" : " outputs");
}

namespace {

// TF's Python dtype names ("float32"), used in tensor reprs.
std::string PythonDTypeName(DataType dtype) {
  switch (BaseType(dtype)) {
    case DT_FLOAT:
      return "float32";
    case DT_DOUBLE:
      return "float64";
    case DT_HALF:
      return "float16";
    default:
      return DataTypeString(BaseType(dtype));
  }
}

std::string PythonShape(const PartialTensorShape& shape) {
  if (shape.unknown_rank()) return "<unknown>";
  std::string out = "(";
  for (int i = 0; i < shape.dims(); ++i) {
    if (i > 0) out += ", ";
    if (shape.dim_size(i) < 0) {
      out += "?";
    } else {
      StrAppend(&out, shape.dim_size(i));
    }
  }
  if (shape.dims() == 1) out += ",";
  return out + ")";
}

}  // namespace

std::string Output::DebugString() const {
  checked_node(true);
  return StrCat("Tensor(\"", name(), "\", shape=", PythonShape(shape()),
                ", dtype=", PythonDTypeName(node_->output_type(index_)), ")");
}

std::pair<std::string, int> ParseTensorName(std::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon == std::string_view::npos) return {std::string(name), 0};
  int index = 0;
  const std::string_view digits = name.substr(colon + 1);
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size() || digits.empty()) {
    return {std::string(name), 0};
  }
  return {std::string(name.substr(0, colon)), index};
}

}  // namespace flowtrain
