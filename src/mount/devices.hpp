// Device injection (--device, --gpu) as data. The parsing and the plan are pure (unit
// tested without privilege); `inspect_device`, `list_fakegpu_nodes` and
// `find_gpu_userspace` look at the host and are the only impure parts.
//
// How a node reaches the container differs by privilege (PrivilegeModel::can_mknod):
//  - rootful (host user namespace): mknod in the container's /dev tmpfs with the host
//    node's major:minor, mode and owner, as runc and crun do;
//  - rootless: bind-mount the host node onto an empty file. mknod is refused (CAP_MKNOD
//    counts only in the initial user namespace), and a node made on a filesystem
//    mounted in a user namespace could not be opened anyway (SB_I_NODEV).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mount/mount_plan.hpp"

namespace mrun::mount {

// --device HOSTPATH[:CTRPATH][:rwm]
struct DeviceSpec {
  std::string host_path;
  std::string container_path;  // defaults to host_path
  std::string access = "rwm";  // enforced by the device cgroup filter (cgroup/device_rules.hpp)
  bool operator==(const DeviceSpec&) const = default;
};

// Throws mrun::Error (exit 125) naming the spec and the fix.
DeviceSpec parse_device(const std::string& spec);

// A host character device, as stat(2) saw it.
struct HostDevice {
  DeviceSpec spec;
  unsigned major = 0;
  unsigned minor = 0;
  mode_t mode = 0;  // permission bits only
  uid_t uid = 0;
  gid_t gid = 0;
};

// stat()s the host path: a character device or an Error (block device, not a device,
// missing), each with the fix.
HostDevice inspect_device(const DeviceSpec& spec);

// Rootful: mknod steps; rootless: binds onto empty files. Targets are container paths.
std::vector<MountStep> plan_device_mounts(const std::vector<HostDevice>& devices, bool can_mknod);

// One linux.devices entry of a config: a node the container gets at `path`. Rootful it
// is made (mknod) with these numbers, mode and owner, as runc does; rootless the kernel
// refuses mknod, so the host's node at the same path is bound instead (it must exist
// and match). A FIFO is made either way (mkfifo needs no privilege).
struct ConfigDevice {
  std::string path;  // absolute, in the container
  char type = 'c';   // c (the spec's u too), b, p
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  mode_t file_mode = 0666;  // runc's default
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const ConfigDevice&) const = default;
};

// What the host has at a path: its file type (S_IFCHR, ...) and device number.
struct HostNode {
  mode_t type = 0;
  dev_t rdev = 0;
};
// lstat of a host path; nullopt when there is nothing.
std::optional<HostNode> host_node(const std::string& path);

// linux.devices as plan steps: mknod steps when `can_mknod` (and for FIFOs always), else
// read-only binds of the host's node at the same path, which `host` must show with the
// same type and numbers: otherwise an Error naming the entry and the fix.
std::vector<MountStep> plan_config_devices(
    const std::vector<ConfigDevice>& devices, bool can_mknod,
    const std::function<std::optional<HostNode>(const std::string&)>& host);

// --gpu all|N[,N...]
struct GpuRequest {
  bool all = false;
  std::vector<unsigned> indices;
  bool operator==(const GpuRequest&) const = default;
};
GpuRequest parse_gpu(const std::string& text);

// The names of the fakegpu nodes in the host's /dev ("fakegpu0", "fakegpuctl", ...).
std::vector<std::string> list_fakegpu_nodes(const std::string& dev_dir = "/dev");
// The device specs --gpu stands for, given the nodes present: the requested
// /dev/fakegpuN plus /dev/fakegpuctl. Throws when a requested node is absent.
std::vector<DeviceSpec> gpu_device_specs(const GpuRequest& request,
                                         const std::vector<std::string>& present);

// The user-space driver injected with --gpu, the way a CDI spec lists the host's
// driver libraries: host files bound read-only under /opt/fakegpu.
inline constexpr const char* gpu_container_dir = "/opt/fakegpu";
struct GpuUserspace {
  std::vector<std::string> libraries;      // host paths of libfakegpu.so*, symlinks resolved
  std::vector<std::string> library_names;  // the names they are bound as (libfakegpu.so.1)
  std::vector<std::string> programs;       // fakegpu-client, fakegpu-client-static
};
// Looks in $MRUN_FAKEGPU_LIBDIR (when given), else next to the mrun binary: the build
// tree (src/gpu/) or the install prefix (../lib*, and the binary's own directory).
GpuUserspace find_gpu_userspace(const std::string& mrun_binary, const char* override_dir);
std::vector<MountStep> plan_gpu_userspace(const GpuUserspace& userspace);
// PATH and LD_LIBRARY_PATH for the injected files (the CDI spec's env edits).
void add_gpu_environment(std::vector<std::string>& env);

// Everything --device and --gpu add to the mount plan.
struct DeviceMounts {
  std::vector<MountStep> nodes;      // after the default /dev nodes
  std::vector<MountStep> userspace;  // after the volumes
  std::vector<HostDevice> devices;   // the nodes, as the host has them (for the filter)
};
DeviceMounts resolve_device_mounts(const std::vector<DeviceSpec>& devices,
                                   const std::optional<GpuRequest>& gpu, bool can_mknod);

// Whether a process with the caller's kuid UID, its gid and GROUPS can open a bound
// host node for the r/w of its access: the owner bits when UID owns it, else the
// group bits when its group is among GROUPS (supplementary groups count only when
// kept: --keep-groups), else the other bits. Rootless, capabilities in the container
// do not help (the inode's owner is not mapped there). Nodes asked for with neither
// r nor w need nothing.
bool caller_can_open(const HostDevice& device, uid_t uid, const std::vector<gid_t>& groups);

}  // namespace mrun::mount
