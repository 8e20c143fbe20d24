// The processes of one container and its freezer, for `mrun ps`, `kill --all`,
// `pause` and `resume`.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "state/state.hpp"

namespace mrun::runtime {

// Host pids, sorted. With a cgroup leaf (or a v1 group): its cgroup.procs (exact, and what the
// kernel itself counts). Without one (this host's cgroup v2 has no controllers, or rootless without
// delegation): every process whose pid namespace is its init's, found through /proc/PID/ns/pid (a
// container always has a pid namespace of its own).
std::vector<pid_t> container_processes(const ContainerState& state);

// Pids of the processes in /proc whose pid namespace is `ns` (the stat of a
// /proc/PID/ns/pid); `proc` is the procfs root (tests pass /proc too).
std::vector<pid_t> processes_in_pid_namespace(const std::string& proc, const struct stat& ns);

// cgroup v2 cgroup.freeze of the container's leaf, or on cgroup v1 its group's
// freezer.state. Throws (125) saying why when it has neither: the freezer needs one.
void set_frozen(const ContainerState& state, bool frozen);
bool is_frozen(const ContainerState& state);
// After a SIGKILL: thaws a frozen v1 group, whose tasks could not die otherwise.
void thaw_after_kill(const ContainerState& state) noexcept;

}  // namespace mrun::runtime
