#include "flowtrain/train/slot_creator.h"

#include <optional>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/ops/init_ops.h"
#include "flowtrain/ops/partitioned_variables.h"

namespace flowtrain::train {
namespace {

// "<primary op>/<name>", then "_1", "_2", ... while a node of that name exists.
std::string UniqueSlotName(Graph& graph, const std::string& primary_op, std::string_view name) {
  const std::string base = StrCat(primary_op, "/", name);
  std::string unique = base;
  for (int i = 1; graph.FindNode(unique) != nullptr; ++i) unique = StrCat(base, "_", i);
  return unique;
}

TensorShape FullShape(const PartialTensorShape& shape, const std::string& primary_op, std::string_view name) {
  if (!shape.IsFullyDefined()) {
    InvalidArgument("Slot '", name, "' of ", primary_op, " needs a fully defined shape, got ",
                    shape.DebugString());
  }
  return shape.AsTensorShape();
}

// Builds the slot variable at the root name scope of `graph`, with no control dependencies of
// the caller's, colocated with `colocate_with` when given.
template <typename Init>
Variable MakeSlot(Graph& graph, const std::optional<Operation>& colocate_with, const Init& initial_value,
                  const VariableOptions& options) {
  auto as_default = graph.AsDefault();
  auto root = graph.NameScope("");
  auto no_deps = graph.ClearControlDependencies();
  if (colocate_with) {
    auto colocate = graph.ColocateWith(*colocate_with);
    return Variable(initial_value, options);
  }
  return Variable(initial_value, options);
}

// A slot of a part of a partitioned variable is itself a part, of the full variable's slot:
// "w/part_0/Adam" is the slice of "w/Adam" that "w/part_0" is of "w" (as TF's slot_creator).
Variable WithSliceInfo(const Variable& primary, Variable slot) {
  if (std::optional<ops::SaveSliceInfo> info = ops::GetSaveSliceInfo(primary)) {
    const std::string slot_name = slot.op().name().substr(primary.op().name().size() + 1);
    info->full_name = StrCat(info->full_name, "/", slot_name);
    ops::SetSaveSliceInfo(slot, std::move(*info));
  }
  return slot;
}

}  // namespace

Variable CreateSlot(const Variable& primary, const std::function<Output()>& initial_value,
                    std::string_view name) {
  Graph& graph = *primary.graph();
  const std::string op = primary.op().name();
  FullShape(primary.shape(), op, name);
  return WithSliceInfo(primary, MakeSlot(graph, primary.op(), initial_value,
                                         {.name = UniqueSlotName(graph, op, name),
                                          .trainable = false,
                                          .use_resource = primary.is_resource()}));
}

Variable CreateSlotFromValue(const Variable& primary, const Output& initial_value, std::string_view name) {
  Graph& graph = *primary.graph();
  const std::string op = primary.op().name();
  FullShape(primary.shape(), op, name);
  return WithSliceInfo(primary, MakeSlot(graph, primary.op(), initial_value,
                                         {.name = UniqueSlotName(graph, op, name),
                                          .trainable = false,
                                          .use_resource = primary.is_resource()}));
}

Variable CreateZerosSlot(const Output& primary, std::string_view name) {
  Graph& graph = *primary.graph();
  const std::string op = primary.op().name();
  const TensorShape shape = FullShape(primary.shape(), op, name);
  const DataType dtype = primary.dtype();
  return MakeSlot(
      graph, std::nullopt, [&] { return ops::ZerosInitializer()(shape, dtype); },
      VariableOptions{.name = UniqueSlotName(graph, op, name), .trainable = false});
}

}  // namespace flowtrain::train
