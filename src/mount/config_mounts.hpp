// A container's mount table (config.json `mounts`, linux.maskedPaths,
// linux.readonlyPaths, rootfsPropagation; an engine's, or the one `mrun run` builds,
// oci/run_config.hpp) as mrun's mount plan, in the config's order: the config decides
// what the container sees, mrun adds only what runc and crun add (the default /dev
// nodes and links). Pure: unit tested without privilege.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mount/mount_plan.hpp"
#include "userns/idmap.hpp"

namespace mrun::mount {

struct ConfigMount {
  std::string destination;  // absolute, in the container
  std::string type;         // "bind", "tmpfs", "proc", ...; empty: from the options
  std::string source;       // absolute host path (bind), or the filesystem's source name
  std::vector<std::string> options;
  // An idmapped bind's own mappings (the mount's uidMappings, gidMappings); empty: the
  // container's user namespace's.
  std::vector<userns::IdMapEntry> uid_mappings, gid_mappings;
};

// What mount(8) options mean, split as mount_setattr and fsconfig take them.
struct MountOptions {
  bool bind = false;
  bool recursive = false;                                            // rbind
  std::uint64_t attrs_set = 0, attrs_clear = 0;                      // ro, nosuid, ...
  std::uint64_t recursive_attrs_set = 0, recursive_attrs_clear = 0;  // rro, rnosuid, ...
  std::uint64_t propagation = 0;                                     // MS_SHARED ...; 0: none asked
  bool propagation_recursive = false;
  std::string data;  // the filesystem's own options ("mode=755,size=65536k")
  // tmpcopyup (crun's, podman's --read-only tmpfs): the image's files at the target
  // are copied into the fresh tmpfs before it covers them.
  bool copy_up = false;
  // idmap / ridmap: an idmapped bind (the recursive form for the mounts below it too).
  bool idmap = false;
  bool idmap_recursive = false;
  // A filesystem's own options on a bind, which means nothing to it (as under runc).
  std::vector<std::string> ignored_on_bind;
};

// Throws mrun::Error naming the mount (`what`) and the option for one mrun cannot honour
// (crun's "idmap=uids=...;gids=..." form) or one that means nothing there (tmpcopyup on
// a bind, idmap elsewhere). A filesystem's own option on a bind is ignored, as by runc.
MountOptions parse_mount_options(const std::vector<std::string>& options, const std::string& what);

// Every option name parse_mount_options takes (`mrun features`' mountOptions), besides a
// fresh filesystem's own ("mode=755"), which go to it as they are.
std::vector<std::string> known_mount_options();

// rootfsPropagation's value as MS_* propagation plus recursion; throws for another value.
std::pair<std::uint64_t, bool> parse_propagation(const std::string& value);

struct ConfigMountInput {
  std::vector<ConfigMount> mounts;
  std::vector<std::string> masked_paths;    // as given; absent ones are skipped
  std::vector<std::string> readonly_paths;  // likewise
  bool read_only_root = false;
  // Empty: mrun's rprivate. Set on "/" after pivot_root (which refuses a shared root):
  // see apply_root_propagation.
  std::string rootfs_propagation;
  // Rootful in the host's user namespace: the default /dev nodes by mknod, else binds.
  bool mknod_default_devices = false;
  // A fresh proc needs a PID namespace of the container's user namespace: without a new
  // one it falls back to a bind of the host's /proc (as podman does for --pid=host).
  bool own_pid_namespace = true;
  // Likewise mqueue and the IPC namespace (a bind of the host's /dev/mqueue then).
  bool own_ipc_namespace = true;
  std::vector<MountStep> devices;  // linux.devices, after the default nodes
  // Files bound in after the config's mounts (mrun run --gpu's user-space driver).
  std::vector<MountStep> injected;
};

std::vector<MountStep> plan_config_mounts(const ConfigMountInput& input);

// devpts' gid= names a group of the container's user namespace: where `mapped` says the
// id map does not cover it (a single-ID rootless map holds gid 0 alone), the kernel
// would refuse the mount, so the option is taken out and a pty's group is then its
// creator's (crun does the same).
void drop_unmapped_devpts_gid(std::vector<MountStep>& plan,
                              const std::function<bool(std::uint32_t gid)>& mapped);

}  // namespace mrun::mount
