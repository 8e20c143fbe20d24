// cgroup v2 for one container: where its leaf goes (a root-owned mrun parent when
// rootful; the caller's delegated subtree when rootless), creating it with its limits,
// moving the container in, reading its counters, removing it.
//
// Rootless rule of the kernel (cgroup-v2.rst, "Delegation Containment"): an
// unprivileged process may move a process between two cgroups only if it can write
// cgroup.procs of their common ancestor. mrun's child starts in mrun's own cgroup, so
// the leaf must be made under an ancestor of that cgroup which the caller owns: exactly
// what systemd's Delegate=yes (or a chown by root) gives.
//
// Planning reads files only through the paths in `Paths`, so unit tests run it on a
// temporary directory that looks like /sys/fs/cgroup.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "cgroup/resources.hpp"
#include "cgroup/v1_group.hpp"

namespace mrun::cgroup {

struct Paths {
  std::string mountinfo = "/proc/self/mountinfo";
  std::string self_cgroup = "/proc/self/cgroup";
  // The cgroup2 mount point; empty: found in `mountinfo`.
  std::string mount;
};

// The mount point of the (first) cgroup2 filesystem in a mountinfo text.
std::optional<std::string> cgroup2_mount_from(const std::string& mountinfo_text);
// Whether any cgroup v1 hierarchy is mounted (a hybrid or legacy layout).
bool hybrid_layout_from(const std::string& mountinfo_text);
// The unified-hierarchy path ("0::/a/b") of a /proc/PID/cgroup text.
std::optional<std::string> own_cgroup_from(const std::string& proc_cgroup_text);
// A cgroup directory delegated to `uid`: it and its cgroup.procs and
// cgroup.subtree_control are owned by uid and writable by their owner (what systemd's
// Delegate=yes and `chown` by root produce).
bool delegated_to(const std::string& dir, uid_t uid);

struct Request {
  std::string name;  // container name: the leaf is mrun-<name> unless leaf_name is set
  // The leaf's own name, as an engine gave it (linux.cgroupsPath's last part, rootful):
  // the container's cgroup is then exactly the path the engine, and the kubelet's
  // cadvisor after it, look for. Empty: mrun-<name>.
  std::string leaf_name;
  Resources resources;  // linux.resources (mrun run's flags become these too)
  bool enabled = true;  // --cgroups=disabled: never a cgroup
  bool rootful = false;
  uid_t uid = 0;
  // Relative to the cgroup2 root. Rootful: created if missing (default: the privilege
  // model's parent). Rootless: must be delegated and hold mrun's own cgroup; empty:
  // the nearest delegated ancestor of mrun's cgroup.
  std::string parent;
};

struct Plan {
  bool use = false;               // false: run without a cgroup (why_not says why)
  std::string mount;              // cgroup2 mount point
  std::string parent;             // absolute directory the leaf goes in
  std::string leaf;               // absolute directory of the leaf
  std::string why_not;            // for --debug when use == false
  std::vector<FileWrite> writes;  // the resources' files (plan_resource_files)
  // use == false with writes that only ask for a fresh cgroup's defaults (ctr's and
  // CRI's cpu.shares 1024): which ones, accepted without a cgroup, for --debug.
  std::string defaults_note;
  // Rootful on a host whose controllers are on cgroup v1 (legacy or hybrid): a v1 group
  // instead of a v2 leaf (use stays false: there is no v2 leaf).
  std::optional<V1Plan> v1;
};

// Decides where the leaf goes (rootful on a v1 or hybrid host: the v1 group). Field by field: a
// write that asks for something (not a fresh cgroup's default) where no cgroup can carry it throws
// mrun::Error (exit 125) naming the field and saying how to delegate a subtree; default-only writes
// are then accepted, and `defaults_note` says so.
Plan plan_cgroup(const Request& request, const Paths& paths = {});

// The container's cgroup, created by `create` and removed by `remove` (or the
// destructor on an error path).
class Leaf {
 public:
  Leaf() = default;
  Leaf(const Leaf&) = delete;
  Leaf& operator=(const Leaf&) = delete;
  Leaf(Leaf&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ~Leaf();

  // Enables the controllers plan.writes need on the way down to plan.parent (rootful:
  // from the root; rootless: in the delegated parent only), makes the leaf, writes the
  // files. Throws with the file and the fix on failure, leaving nothing behind.
  static Leaf create(const Plan& plan, const Request& request, const Logger& log);

  const std::string& path() const noexcept { return path_; }
  explicit operator bool() const noexcept { return !path_.empty(); }
  // Moves `pid` in (writes cgroup.procs).
  void add_process(pid_t pid) const;
  // memory.events oom_kill: processes the kernel's OOM killer killed in the leaf.
  std::uint64_t oom_kills() const;
  // Kills what is left (cgroup.kill) and removes the directory; false if it stayed.
  bool remove() noexcept;
  // Gives the directory up without removing it: it stays, recorded in the state, for
  // `delete` to remove (remove_leaf).
  void keep() noexcept { path_.clear(); }

 private:
  std::string path_;
};

// Removes a leaf left by a killed mrun; quiet when it is already gone.
void remove_leaf(const std::string& path) noexcept;

// Enables the controllers `writes` need in the cgroup.subtree_control of every level
// from `mount` down to `parent` (rootful, creating the levels) or of `parent` alone
// (rootless). A controller that is not available there fails, unless all its writes are
// defaults: those are dropped from `writes`, with a debug line.
void enable_controllers(const std::string& mount, const std::string& parent, bool rootful,
                        std::vector<FileWrite>& writes, const Logger& log);
// Writes each file of `leaf` in order: the fallback file when the file is absent, left
// out when absent and skip_if_absent. A write the kernel refuses with EINVAL is retried
// once after the others (a lower cpu.max before a lower cpu.max.burst, and the reverse).
// Throws naming the field, the file and the value.
void apply_writes(const std::string& leaf, const std::vector<FileWrite>& writes, const Logger& log);
// The files complete_update reads.
LeafValues read_leaf_values(const std::string& leaf);
// `mrun update`: `asked` completed from the leaf's values (complete_update), planned,
// its controllers enabled (rootful: from the cgroup2 root down), written.
void update_leaf(const std::string& leaf, bool rootful, const Resources& asked, const Logger& log,
                 const Paths& paths = {});

struct Stats {
  std::optional<std::uint64_t> memory_current;
  std::optional<std::uint64_t> memory_max;  // nullopt: "max" or no memory controller
  std::optional<std::uint64_t> pids_current;
  std::optional<std::uint64_t> pids_max;
  std::optional<std::uint64_t> cpu_usage_usec;  // cpu.stat usage_usec
  std::optional<std::string> cpu_max;
  std::optional<std::uint64_t> oom_kills;
};
Stats read_stats(const std::string& leaf);

}  // namespace mrun::cgroup
