// `mrun events`: a container's figures and events as runc prints them (one JSON object a
// line: {"type": "stats", "id": ID, "data": {...}}, {"type": "oom", "id": ID}), from its
// cgroup v2 leaf (cgroup/runc_stats.hpp).
#pragma once

#include <chrono>
#include <ostream>
#include <string>

#include "runtime/context.hpp"

namespace mrun::runtime {

// `stats_once`: one stats event, then return (runc events --stats). Otherwise a stats
// event every `interval` and an oom event whenever the leaf's oom_kill count grows,
// until the container stops. Throws (125) for a container that is not running or has
// no cgroup of its own.
void container_events(const Context& ctx, const std::string& id, bool stats_once,
                      std::chrono::milliseconds interval, std::ostream& out);

}  // namespace mrun::runtime
