#include "flowtrain/train/session_run_hook.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

namespace flowtrain::train {

std::string SessionRunHook::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                   std::free);
  std::string full = status == 0 && demangled ? demangled.get() : mangled;
  const size_t colon = full.rfind("::");
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

}  // namespace flowtrain::train
