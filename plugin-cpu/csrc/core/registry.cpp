// The kernel registry: filled while the module loads by the OPFORGE_KERNEL registrar of each
// kernels/<op>.cpp; it holds no op names of its own.
#include "core/kernel.hpp"

namespace opforge_cpu {

namespace {
// Function-local statics: constructed on first use, so a registrar in any object file, run in
// whatever order the static initialisers go, finds them ready (no static-init-order fiasco).
std::map<std::string, KernelEntry>& registry() {
  static std::map<std::string, KernelEntry> r;
  return r;
}
std::vector<std::string>& errors() {
  static std::vector<std::string> e;
  return e;
}
}  // namespace

KernelRegistrar::KernelRegistrar(const KernelSpec& spec) {
  const KernelEntry& e = spec.entry();
  // A throw here would escape a static initialiser and abort the process while Python imports
  // the module; the mistake is recorded instead and the import fails with it (module.cpp).
  if (e.make == nullptr) {
    errors().push_back("kernel " + e.type + " is registered without a factory");
    return;
  }
  if (!registry().emplace(e.type, e).second) errors().push_back("kernel " + e.type + " is registered twice");
}

const std::map<std::string, KernelEntry>& kernel_registry() { return registry(); }

const std::vector<std::string>& kernel_registry_errors() { return errors(); }

const KernelEntry* find_kernel(const std::string& type) {
  const auto& r = registry();
  auto it = r.find(type);
  return it == r.end() ? nullptr : &it->second;
}

}  // namespace opforge_cpu
