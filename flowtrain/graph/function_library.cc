#include "flowtrain/graph/function_library.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <google/protobuf/util/message_differencer.h>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/graph/op_registry.h"

namespace flowtrain {
namespace {

bool IsValidFunctionName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '/' ||
           c == '>';
  });
}

// The names a body may refer to: arguments, and for every body node the outputs "node:arg:i".
// Output args are not expanded per index (their counts depend on attrs resolved only when the
// function is instantiated), so "node:arg:<any index>" is accepted for a known node.
class BodyNames {
 public:
  explicit BodyNames(const tensorflow::FunctionDef& def) {
    for (const auto& arg : def.signature().input_arg()) args_.insert(arg.name());
    for (const auto& node : def.node_def()) nodes_.insert(node.name());
  }

  bool HasNode(const std::string& name) const { return nodes_.count(name) != 0; }

  // Whether `ref` ("arg", or "node:output_arg:index") names something of the function.
  bool Resolves(const std::string& ref) const {
    const size_t colon = ref.find(':');
    if (colon == std::string::npos) return args_.count(ref) != 0;
    return nodes_.count(ref.substr(0, colon)) != 0;
  }

 private:
  std::set<std::string> args_;
  std::set<std::string> nodes_;
};

void Validate(const tensorflow::FunctionDef& def) {
  const std::string& name = def.signature().name();
  if (!IsValidFunctionName(name)) InvalidArgument("'", name, "' is not a valid function name");
  if (OpRegistry::Global()->LookUp(name) != nullptr) {
    InvalidArgument("Cannot add function '", name, "' because an op with the same name already exists");
  }
  auto fail = [&](auto&&... parts) { InvalidArgument("Function '", name, "': ", parts...); };
  std::set<std::string> seen;
  for (const auto& arg : def.signature().input_arg()) {
    if (arg.name().empty() || !seen.insert(arg.name()).second)
      fail("argument name '", arg.name(), "' repeats");
  }
  for (const auto& node : def.node_def()) {
    if (node.name().empty() || !seen.insert(node.name()).second) {
      fail("body node name '", node.name(), "' is empty or repeats an argument or node name");
    }
  }
  const BodyNames names(def);
  for (const auto& node : def.node_def()) {
    for (const std::string& input : node.input()) {
      const bool control = !input.empty() && input[0] == '^';
      const bool ok = control ? names.HasNode(input.substr(1)) : names.Resolves(input);
      if (!ok) fail("node '", node.name(), "' has input '", input, "', which names no argument or body node");
    }
  }
  std::set<std::string> results;
  for (const auto& arg : def.signature().output_arg()) {
    results.insert(arg.name());
    auto ret = def.ret().find(arg.name());
    if (ret == def.ret().end()) fail("result '", arg.name(), "' has no ret entry");
    if (!names.Resolves(ret->second)) {
      fail("result '", arg.name(), "' is '", ret->second, "', which names no argument or body output");
    }
  }
  for (const auto& [key, value] : def.ret()) {
    if (results.count(key) == 0) fail("ret entry '", key, "' is not a result of the signature");
  }
  for (const auto& [key, node] : def.control_ret()) {
    if (!names.HasNode(node)) fail("control result '", key, "' names '", node, "', which is not a body node");
  }
}

}  // namespace

void FunctionLibrary::AddFunction(const tensorflow::FunctionDef& def) {
  Validate(def);
  absl::MutexLock lock(&mu_);
  auto [it, added] = functions_.try_emplace(def.signature().name(), def);
  if (!added && !google::protobuf::util::MessageDifferencer::Equals(it->second, def)) {
    InvalidArgument("Cannot add function '", def.signature().name(),
                    "' because a different function with the same name already exists");
  }
}

void FunctionLibrary::AddGradient(std::string_view function, std::string_view gradient_function) {
  if (function.empty() || gradient_function.empty()) {
    InvalidArgument("A GradientDef needs a function name and a gradient function name, got '", function,
                    "' and '", gradient_function, "'");
  }
  absl::MutexLock lock(&mu_);
  auto [it, added] = gradients_.try_emplace(std::string(function), std::string(gradient_function));
  if (!added && it->second != gradient_function) {
    InvalidArgument("Cannot assign gradient function '", gradient_function, "' to '", function,
                    "' because it already has gradient function '", it->second, "'");
  }
}

void FunctionLibrary::AddLibrary(const tensorflow::FunctionDefLibrary& library) {
  // Check everything first, so that a bad library leaves this one as it was.
  std::map<std::string, const tensorflow::FunctionDef*, std::less<>> incoming;
  for (const auto& def : library.function()) {
    Validate(def);
    auto [it, added] = incoming.emplace(def.signature().name(), &def);
    if (!added && !google::protobuf::util::MessageDifferencer::Equals(*it->second, def)) {
      InvalidArgument("The function library defines '", def.signature().name(), "' twice, differently");
    }
  }
  std::map<std::string, std::string, std::less<>> incoming_gradients;
  for (const auto& gradient : library.gradient()) {
    if (gradient.function_name().empty() || gradient.gradient_func().empty()) {
      InvalidArgument("A GradientDef of the function library lacks a function name or gradient function");
    }
    auto [it, added] = incoming_gradients.emplace(gradient.function_name(), gradient.gradient_func());
    if (!added && it->second != gradient.gradient_func()) {
      InvalidArgument("The function library gives '", gradient.function_name(), "' two gradient functions");
    }
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [name, def] : incoming) {
    auto existing = functions_.find(name);
    if (existing != functions_.end() &&
        !google::protobuf::util::MessageDifferencer::Equals(existing->second, *def)) {
      InvalidArgument("Cannot add function '", name,
                      "' because a different function with the same name already exists");
    }
  }
  for (const auto& [name, gradient] : incoming_gradients) {
    auto existing = gradients_.find(name);
    if (existing != gradients_.end() && existing->second != gradient) {
      InvalidArgument("Cannot assign gradient function '", gradient, "' to '", name,
                      "' because it already has gradient function '", existing->second, "'");
    }
  }
  for (const auto& [name, def] : incoming) functions_.try_emplace(name, *def);
  for (const auto& [name, gradient] : incoming_gradients) gradients_.try_emplace(name, gradient);
}

const tensorflow::FunctionDef* FunctionLibrary::Find(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : &it->second;
}

std::string FunctionLibrary::FindGradient(std::string_view function) const {
  absl::MutexLock lock(&mu_);
  auto it = gradients_.find(function);
  return it == gradients_.end() ? std::string() : it->second;
}

std::vector<std::string> FunctionLibrary::ListFunctions() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  names.reserve(functions_.size());
  for (const auto& [name, def] : functions_) names.push_back(name);
  return names;
}

bool FunctionLibrary::empty() const {
  absl::MutexLock lock(&mu_);
  return functions_.empty() && gradients_.empty();
}

tensorflow::FunctionDefLibrary FunctionLibrary::ToProto() const {
  absl::MutexLock lock(&mu_);
  tensorflow::FunctionDefLibrary library;
  for (const auto& [name, def] : functions_) *library.add_function() = def;
  for (const auto& [name, gradient] : gradients_) {
    auto* g = library.add_gradient();
    g->set_function_name(name);
    g->set_gradient_func(gradient);
  }
  return library;
}

}  // namespace flowtrain
