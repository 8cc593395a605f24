#pragma once

// The readers of the plugin's OPFORGE_CPU_* environment variables (the off switches every new
// path gets for same-build A/B runs, and the knobs that override a tuned constant for measuring).
// One definition of each rule, so a switch cannot drift from the documented "unset or anything
// but 0: on" (kernels.md "How the C++ switches are read").
//
// These functions read the environment each time they are called. The call sites keep the
// caching: each stores the answer in a function-local `static const`, so a process reads a
// variable once, at its first use (thread-safe), and every program it compiles afterwards sees
// the same setting even if the environment changes. A test that flips a switch therefore runs
// the engine in a child process.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace opforge_cpu {

// A default-on switch: on when `name` is unset, empty or anything but exactly "0".
inline bool env_switch_on(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr || std::strcmp(env, "0") != 0;
}

// An integer knob: `fallback` when `name` is unset; when set, what std::atoll reads from it (a
// set but empty or non-numeric value reads 0, as the std::atoi of the earlier per-site readers
// did). Clamping (at least 1 chunk, ...) stays at the call site, which knows the valid range.
inline int64_t env_int(const char* name, int64_t fallback) {
  const char* env = std::getenv(name);
  return env ? static_cast<int64_t>(std::atoll(env)) : fallback;
}

// A floating-point knob: `fallback` when `name` is unset; when set, what std::atof reads from it
// (0 for an empty or non-numeric value).
inline double env_double(const char* name, double fallback) {
  const char* env = std::getenv(name);
  return env ? std::atof(env) : fallback;
}

// A string knob: `fallback` when `name` is unset; when set, its value (an empty one included).
// The call site validates it (which words it accepts, what an unknown one means).
inline std::string env_string(const char* name, const char* fallback) {
  const char* env = std::getenv(name);
  return env ? std::string(env) : std::string(fallback);
}

}  // namespace opforge_cpu
