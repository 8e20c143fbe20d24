// A rootful container's cgroup v1 group on a v1 or hybrid host, as runc's
// libcontainer/cgroups/fs makes it: one directory at the same path below the root of
// every mounted hierarchy (named ones such as name=systemd too), the limits of
// plan_v1_files written into the hierarchy each file belongs to, the container moved
// into all of them, every directory removed at the end. The devices hierarchy is left
// to devices_v1.hpp, which restricts the container there, in a group at the same path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "cgroup/resources.hpp"
#include "cgroup/v1_limits.hpp"

namespace mrun::cgroup {

struct V1Plan {
  std::vector<V1Hierarchy> hierarchies;  // where the group goes (devices left out)
  std::string relative;                  // "/mrun/mrun-<name>": below each root
  std::vector<FileWrite> writes;         // plan_v1_files
  bool engine_named = false;             // an engine's cgroupsPath: an empty group by it is taken
};

// Controller -> the group's directory in its hierarchy ("memory" ->
// /sys/fs/cgroup/memory/mrun/mrun-c1); co-mounted controllers share one directory.
// What the state records, so that every later verb (and a delete after a killed mrun)
// finds the same directories.
using V1Dirs = std::map<std::string, std::string>;

// The directory of `controller`, "" when the group has none there.
std::string v1_dir(const V1Dirs& dirs, const std::string& controller);
// Each directory once.
std::vector<std::string> v1_unique_dirs(const V1Dirs& dirs);

// Writes each of `writes` into the directory of its file's controller (apply_writes).
void write_into(const V1Dirs& dirs, const std::vector<FileWrite>& writes, const Logger& log);

// Checks, before anything is made, that a hierarchy carries every write; throws naming
// the field otherwise.
void check_v1_plan(const V1Plan& plan);

class V1Group {
 public:
  V1Group() = default;
  V1Group(const V1Group&) = delete;
  V1Group& operator=(const V1Group&) = delete;
  V1Group(V1Group&& other) noexcept
      : dirs_(std::move(other.dirs_)), relative_(std::move(other.relative_)) {
    other.dirs_.clear();
  }
  ~V1Group();

  // Makes the directories (parents too; cpuset ones filled from their parent), writes
  // the limits. Throws with the file and the fix, leaving no directory it made.
  static V1Group create(const V1Plan& plan, const Logger& log);

  const V1Dirs& dirs() const noexcept { return dirs_; }
  // The group's path below each hierarchy's root ("/mrun/mrun-c1", an engine's
  // cgroupsPath): where the devices hierarchy's group goes too (devices_v1.hpp).
  const std::string& relative() const noexcept { return relative_; }
  // Moves `pid` into the group in every hierarchy.
  void add_process(pid_t pid) const;
  // Processes the kernel's OOM killer killed in the group (memory.oom_control).
  std::uint64_t oom_kills() const;
  // Removes every directory (the processes must be gone); false if one stayed.
  bool remove() noexcept;
  // Gives the directories up without removing them: they stay, recorded in the state,
  // for `delete` to remove (remove_v1_dirs).
  void keep() noexcept { dirs_.clear(); }

 private:
  V1Dirs dirs_;
  std::string relative_;
};

// Removes a group's directories (a killed mrun's too); quiet when they are gone.
// Returns false when one stayed (processes still in it).
bool remove_v1_dirs(const V1Dirs& dirs) noexcept;

// `mrun update` of a v1 group: `asked` completed from today's values, written.
void update_v1_group(const V1Dirs& dirs, const Resources& asked, const Logger& log);

}  // namespace mrun::cgroup
