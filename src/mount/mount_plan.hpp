// The container's mount table as data: the steps, and the pieces every plan shares.
// `plan_config_mounts` (config_mounts.hpp) makes the plan from a config, purely (unit
// tested without privilege); `apply_mount_plan` (mount_apply.hpp) carries it out inside
// the new root. Targets are container paths, resolved under the new root at apply time.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "userns/idmap.hpp"

namespace mrun::mount {

enum class StepKind {
  filesystem,        // mount a fresh filesystem (proc, tmpfs, devpts, mqueue, sysfs)
  bind,              // bind a host path (device node, volume) into the container
  mask,              // hide: /dev/null over a file, an empty read-only tmpfs over a dir
  read_only,         // bind the path onto itself and remount it read-only
  symlink,           // create a symlink (e.g. /dev/fd -> /proc/self/fd)
  root_read_only,    // remount the root read-only (--read-only), last
  device_node,       // mknod a device node (rootful only: CAP_MKNOD in the host userns) or a FIFO
  root_propagation,  // linux.rootfsPropagation on the root mount, after everything else
};

struct MountStep {
  StepKind kind = StepKind::filesystem;
  std::string target;           // container path
  std::string source;           // host path (bind) or fs source name
  std::string fstype;           // filesystem
  unsigned long flags = 0;      // MS_* for filesystem mounts
  std::string data;             // mount options
  bool recursive = false;       // bind: rbind
  bool read_only = false;       // bind: remount read-only afterwards
  bool target_is_file = false;  // bind: create an empty file as the mount point
  bool optional = false;        // skip silently when the target does not exist
  // A fresh sysfs needs a network namespace of our own; without it, fall back to a
  // read-only rbind of the host's /sys.
  std::string fallback_bind;
  bool fallback_read_only = true;
  // An OCI config's own mount options (mount/config_mounts.hpp), set with mount_setattr
  // once the mount is made: MOUNT_ATTR_* set and cleared on the mount itself, then on
  // every mount below it ("rro", "rnosuid": the recursive attributes), and the
  // propagation (MS_SHARED, MS_SLAVE, MS_PRIVATE, MS_UNBINDABLE).
  std::uint64_t attrs_set = 0;
  std::uint64_t attrs_clear = 0;
  std::uint64_t recursive_attrs_set = 0;
  std::uint64_t recursive_attrs_clear = 0;
  std::uint64_t propagation = 0;
  bool propagation_recursive = false;
  // filesystem (tmpfs): copy what the target directory holds into it first (tmpcopyup).
  bool copy_up = false;
  // bind: idmapped (mount_setattr MOUNT_ATTR_IDMAP) through a user namespace with these
  // maps (empty: the container's), the mounts below it too when recursive. The monitor
  // makes such a tree before clone (it needs CAP_SYS_ADMIN over the host's filesystem)
  // and passes its descriptor: `premade_fd`, attached instead of a fresh copy.
  bool idmap = false;
  bool idmap_recursive = false;
  std::vector<userns::IdMapEntry> idmap_uids, idmap_gids;
  int premade_fd = -1;
  // device_node: the node's type (S_IFCHR, S_IFBLK, S_IFIFO), device number,
  // permission bits and owner.
  mode_t node_type = S_IFCHR;
  dev_t device = 0;
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const MountStep&) const = default;
};

struct VolumeSpec {
  std::string source;
  std::string destination;
  bool read_only = false;
  bool source_is_file = false;
};

// The device nodes every container gets: bound from the host's /dev rootless (mknod
// needs CAP_MKNOD in the initial user namespace), made by mknod rootful.
const std::vector<std::string>& default_device_nodes();
// A default node as the kernel numbers it (null 1:3 ... tty 5:0), mode 0666 root:root.
MountStep default_device_node(const std::string& name);
// The default nodes, each a step: mknod when `mknod` (rootful), else a read-only bind
// of the host's node onto an empty file.
void add_default_device_nodes(std::vector<MountStep>& plan, bool mknod);
// A mask step for each of `masked`, then a read-only step for each of `read_only`; both
// skipped at apply time where the path does not exist.
void add_masked_and_read_only(std::vector<MountStep>& plan, const std::vector<std::string>& masked,
                              const std::vector<std::string>& read_only);
// A symlink step: `target` made a link to `points_to`.
MountStep symlink_step(std::string target, std::string points_to);
// The OCI defaults (runc spec / podman) for masked and read-only paths.
const std::vector<std::string>& default_masked_paths();
const std::vector<std::string>& default_read_only_paths();

// Throws mrun::Error (with the fix) for a bind the plan refuses: one over /proc.
void check_volume_destination(const VolumeSpec& volume);

// "SRC:DST[:ro|rw]" -> VolumeSpec; throws mrun::Error naming the spec and the fix.
VolumeSpec parse_volume(const std::string& spec);

}  // namespace mrun::mount
