#include "flowtrain/graph/node.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"

namespace flowtrain {

const AttrValue* Node::FindAttr(std::string_view name) const {
  auto it = attrs_.find(std::string(name));
  return it == attrs_.end() ? nullptr : &it->second;
}

const AttrValue& Node::GetAttrValue(std::string_view name) const {
  const AttrValue* value = FindAttr(name);
  if (value == nullptr) NotFound("No attr named '", name, "' in node ", DebugName());
  return *value;
}

std::string Node::assigned_device() const {
  absl::MutexLock lock(&device_mu_);
  return assigned_device_;
}

void Node::set_assigned_device(std::string device) const {
  absl::MutexLock lock(&device_mu_);
  assigned_device_ = std::move(device);
}

const Tensor* Node::constant_value() const {
  return constant_value_.has_value() ? &*constant_value_ : nullptr;
}

std::string Node::DebugName() const { return StrCat("'", name_, "' (op: '", type(), "')"); }

}  // namespace flowtrain
