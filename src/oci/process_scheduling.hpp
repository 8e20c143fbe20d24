// process.ioPriority and process.scheduler (runtime-spec 1.2) as the runtime's types,
// checked as runc 1.2 checks them: the names the kernel knows, the ranges it takes, the
// deadline fields only for SCHED_DEADLINE. The container's process applies them
// (init/become_command.hpp); what the kernel refuses (a real-time class without
// CAP_SYS_NICE) fails there, naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/process_spec.hpp"

namespace mrun::oci {

// `value` is the field's JSON. Throw mrun::Error naming the field ("config.json:
// process.scheduler.nice: ...", EINVAL, exit 125); `mrun exec --process` says
// "process.json" instead.
runtime::IoPriority parse_io_priority(const nlohmann::json& value);
runtime::Scheduler parse_scheduler(const nlohmann::json& value);

}  // namespace mrun::oci
