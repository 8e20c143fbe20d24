// What `mrun exec` starts from: the container's own process (args and terminal
// cleared), kept as <state dir>/exec.json when the container is made, so that exec never
// reads the bundle again (it may have changed, or be gone).
#pragma once

#include <string>

#include "runtime/config.hpp"
#include "runtime/privilege.hpp"
#include "runtime/process_spec.hpp"
#include "state/state.hpp"

namespace mrun::runtime {

// What the container's own process got, for exec's defaults (its args are the
// container's command, which exec never uses).
struct ExecDefaults {
  ProcessSpec process;
  bool host_capabilities = false;  // see PrivilegeModel
};
ExecDefaults exec_defaults_of(const ContainerConfig& config, const PrivilegeModel& privilege);
std::string exec_defaults_to_json(const ExecDefaults& defaults);
ExecDefaults exec_defaults_from_json(const std::string& text);

ExecDefaults read_exec_defaults(const StateStore& store, const std::string& id);

}  // namespace mrun::runtime
