// OCI lifecycle hooks (runtime-spec config.md, "POSIX-platform Hooks"): programs the
// runtime runs at fixed points, each given the container's state JSON on stdin.
//
//   create:  prestart, createRuntime  - by the launcher, in the runtime's namespaces,
//                                       after the container's namespaces exist and its
//                                       mounts are made, before pivot_root
//            createContainer          - by the container's setup process, in its
//                                       namespaces, right after, still before pivot_root
//   start:   startContainer           - by the container's process, in the container,
//                                       after `start` released it, before its exec
//            poststart                - by `mrun start` once the process runs
//   delete:  poststop                 - by `mrun delete` once the container is gone
//
// A failing (or timed-out) hook before the process runs fails the verb; poststart and
// poststop failures are warnings (the spec: "the runtime MUST log a warning").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"

namespace mrun::runtime {

struct Hook {
  std::string path;               // absolute
  std::vector<std::string> args;  // argv, argv[0] included; empty: {path}
  std::vector<std::string> env;   // the hook's whole environment
  std::optional<int> timeout;     // seconds; none: no limit
};

struct Hooks {
  std::vector<Hook> prestart, create_runtime, create_container, start_container, poststart,
      poststop;
  bool any_before_start() const {
    return !prestart.empty() || !create_runtime.empty() || !create_container.empty() ||
           !start_container.empty();
  }
  bool empty() const { return !any_before_start() && poststart.empty() && poststop.empty(); }
};

// The stages in the order the spec runs them, with their config.json names.
const std::vector<std::string>& hook_stage_names();
std::vector<Hook>& hooks_of(Hooks& hooks, const std::string& stage);
const std::vector<Hook>& hooks_of(const Hooks& hooks, const std::string& stage);

// Persisted in the state dir (start and delete run poststart/poststop from it).
std::string hooks_to_json(const Hooks& hooks);
Hooks hooks_from_json(const std::string& text);

// Runs one stage's hooks in order, each with `state_json` on stdin; throws mrun::Error
// ("hook createRuntime[1] /bin/x: exited with status 3") on the first failure.
void run_hooks(const std::vector<Hook>& hooks, const std::string& stage,
               const std::string& state_json);
// poststart and poststop: every hook runs, a failing one is a warning on LOG (the spec:
// "the runtime MUST log a warning", and the remaining hooks and the lifecycle go on).
void run_hooks_warning_on_failure(const std::vector<Hook>& hooks, const std::string& stage,
                                  const std::string& state_json, const Logger& log);

}  // namespace mrun::runtime
