#include "flowtrain/graph/op_registry.h"

#include <charconv>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/attr_value_util.h"

namespace flowtrain {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Splits "name: rest" at the first colon.
std::pair<std::string_view, std::string_view> SplitNameAndType(std::string_view spec, std::string_view op) {
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    InvalidArgument("Op '", op, "': spec '", spec, "' lacks 'name: type'");
  }
  return {Trim(spec.substr(0, colon)), Trim(spec.substr(colon + 1))};
}

const tensorflow::OpDef::AttrDef* FindAttr(const tensorflow::OpDef& def, std::string_view name) {
  for (const auto& attr : def.attr()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

// Parses "x: T", "x: N * T", "x: Ref(T)", "x: float", "x: Tlist" once all attrs are known.
tensorflow::OpDef::ArgDef ParseArg(std::string_view spec, const tensorflow::OpDef& def) {
  auto [name, type] = SplitNameAndType(spec, def.name());
  tensorflow::OpDef::ArgDef arg;
  arg.set_name(std::string(name));
  if (type.starts_with("Ref(") && type.ends_with(")")) {
    arg.set_is_ref(true);
    type = Trim(type.substr(4, type.size() - 5));
  }
  const size_t star = type.find('*');
  if (star != std::string_view::npos) {
    arg.set_number_attr(std::string(Trim(type.substr(0, star))));
    type = Trim(type.substr(star + 1));
    if (FindAttr(def, arg.number_attr()) == nullptr) {
      InvalidArgument("Op '", def.name(), "': arg '", name, "' uses undeclared attr '", arg.number_attr(),
                      "'");
    }
  }
  const DataType fixed = DataTypeFromString(type);
  if (fixed != DT_INVALID) {
    arg.set_type(static_cast<tensorflow::DataType>(fixed));
    return arg;
  }
  const auto* attr = FindAttr(def, type);
  if (attr == nullptr) {
    InvalidArgument("Op '", def.name(), "': arg '", name, "' has unknown type '", type, "'");
  }
  if (attr->type() == "type") {
    arg.set_type_attr(std::string(type));
  } else if (attr->type() == "list(type)") {
    arg.set_type_list_attr(std::string(type));
  } else {
    InvalidArgument("Op '", def.name(), "': attr '", type, "' used as a type has type ", attr->type());
  }
  return arg;
}

}  // namespace

OpDefBuilder::OpDefBuilder(std::string op_name) { registration_.def.set_name(std::move(op_name)); }

OpDefBuilder& OpDefBuilder::Input(std::string_view spec) {
  input_specs_.emplace_back(spec);
  return *this;
}

OpDefBuilder& OpDefBuilder::Output(std::string_view spec) {
  output_specs_.emplace_back(spec);
  return *this;
}

OpDefBuilder& OpDefBuilder::Attr(std::string_view spec) {
  auto& def = registration_.def;
  auto [name, rest] = SplitNameAndType(spec, def.name());
  std::string_view default_text;
  // The default follows the first "=" that is not part of a ">=" minimum.
  size_t eq = rest.find('=');
  while (eq != std::string_view::npos && eq > 0 && rest[eq - 1] == '>') eq = rest.find('=', eq + 1);
  if (eq != std::string_view::npos) {
    default_text = Trim(rest.substr(eq + 1));
    rest = Trim(rest.substr(0, eq));
  }
  auto* attr = def.add_attr();
  attr->set_name(std::string(name));
  if (rest.starts_with("{")) {
    // "{float, double}": a type restricted to a set.
    if (!rest.ends_with("}")) InvalidArgument("Op '", def.name(), "': bad attr spec '", spec, "'");
    attr->set_type("type");
    auto* allowed = attr->mutable_allowed_values()->mutable_list();
    std::string_view items = rest.substr(1, rest.size() - 2);
    size_t start = 0;
    while (start <= items.size()) {
      const size_t comma = items.find(',', start);
      std::string_view item = Trim(items.substr(start, comma - start));
      const DataType t = DataTypeFromString(item);
      if (t == DT_INVALID) InvalidArgument("Op '", def.name(), "': unknown type '", item, "'");
      allowed->add_type(static_cast<tensorflow::DataType>(t));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  } else {
    const size_t ge = rest.find(">=");
    if (ge != std::string_view::npos) {
      const std::string_view minimum = Trim(rest.substr(ge + 2));
      int64_t value = 0;
      const auto parsed = std::from_chars(minimum.data(), minimum.data() + minimum.size(), value);
      if (minimum.empty() || parsed.ec != std::errc() || parsed.ptr != minimum.data() + minimum.size()) {
        InvalidArgument("Op '", def.name(), "': bad minimum '", minimum, "' in attr spec '", spec, "'");
      }
      attr->set_has_minimum(true);
      attr->set_minimum(value);
      rest = Trim(rest.substr(0, ge));
    }
    attr->set_type(std::string(rest));
  }
  if (!default_text.empty()) {
    *attr->mutable_default_value() = ParseAttrValue(attr->type(), default_text);
  }
  return *this;
}

OpDefBuilder& OpDefBuilder::SetIsStateful() {
  registration_.def.set_is_stateful(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsCommutative() {
  registration_.def.set_is_commutative(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetIsAggregate() {
  registration_.def.set_is_aggregate(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetAllowsUninitializedInput() {
  registration_.def.set_allows_uninitialized_input(true);
  return *this;
}
OpDefBuilder& OpDefBuilder::SetShapeFn(ShapeFn fn) {
  registration_.shape_fn = std::move(fn);
  return *this;
}
OpDefBuilder& OpDefBuilder::Doc(std::string_view summary) {
  registration_.def.set_summary(std::string(summary));
  return *this;
}

OpRegistration OpDefBuilder::Build() const {
  OpRegistration out = registration_;
  for (const std::string& spec : input_specs_) *out.def.add_input_arg() = ParseArg(spec, out.def);
  for (const std::string& spec : output_specs_) *out.def.add_output_arg() = ParseArg(spec, out.def);
  return out;
}

struct OpRegistry::Impl {
  mutable absl::Mutex mu;
  std::map<std::string, OpRegistration, std::less<>> ops ABSL_GUARDED_BY(mu);
};

OpRegistry::OpRegistry() : impl_(std::make_unique<Impl>()) {}

OpRegistry* OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();
  return registry;
}

void OpRegistry::Register(OpRegistration registration) {
  absl::MutexLock lock(&impl_->mu);
  const std::string name = registration.def.name();
  if (!impl_->ops.emplace(name, std::move(registration)).second) {
    AlreadyExists("Op type '", name, "' is registered twice");
  }
}

const OpRegistration* OpRegistry::LookUp(std::string_view op_type) const {
  absl::MutexLock lock(&impl_->mu);
  auto it = impl_->ops.find(op_type);
  // Registrations are never removed, so the pointer stays valid after unlocking.
  return it == impl_->ops.end() ? nullptr : &it->second;
}

const OpRegistration& OpRegistry::Get(std::string_view op_type) const {
  const OpRegistration* reg = LookUp(op_type);
  if (reg == nullptr) {
    NotFound("Op type not registered '", op_type, "'");
  }
  return *reg;
}

std::vector<std::string> OpRegistry::ListOps() const {
  absl::MutexLock lock(&impl_->mu);
  std::vector<std::string> names;
  for (const auto& [name, reg] : impl_->ops) names.push_back(name);
  return names;
}

}  // namespace flowtrain
