// A container as the launcher runs it: the runtime-spec config (config.json's
// structure), typed and resolved (src/oci/spec.hpp's to_container_config), plus what
// `mrun run` adds that the spec has no field for (RunAdditions). There is one way in:
// an OCI bundle's config.json, or the config `mrun run` builds from its flags
// (src/oci/run_config.hpp), both converted by the same code: one model of a container, whichever
// way it came in.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/device_rules.hpp"
#include "cgroup/resources.hpp"
#include "mount/config_mounts.hpp"
#include "mount/devices.hpp"
#include "net/publish_spec.hpp"
#include "runtime/hooks.hpp"
#include "runtime/process_spec.hpp"
#include "security/security_options.hpp"
#include "userns/idmap.hpp"

namespace mrun::runtime {

enum class OverlayMode { automatic, native, fuse, none };
// automatic: rootless with subordinate ids, the state root's shared user namespace
// (userns/shared_userns.hpp), else single; private: a namespace of the container's own
// mapped through newuidmap/newgidmap; single: one of its own mapping only root.
enum class UsernsMode { automatic, private_namespace, single };
// none: a private netns with only lo; host: the caller's; slirp4netns/pasta: a private
// netns connected to the host by that user-mode network helper, run by mrun.
enum class NetworkMode { none, host, slirp4netns, pasta, bridge };
// enabled: a cgroup v2 leaf when one can be made (required for limits); disabled: none.
enum class CgroupsMode { enabled, disabled };
// The cgroup v2 device filter (--device-filter): automatic attaches it when it can and
// warns when --device/--gpu nodes stay unfiltered; required fails the run (125) when
// it cannot be attached; off never attaches one.
enum class DeviceFilterMode { automatic, required, off };

struct Volume {
  std::string source;       // host path, absolute
  std::string destination;  // container path, absolute
  bool read_only = false;
};

// One of the container's namespaces as an OCI config asks for it (linux.namespaces):
// new (mrun run's only choice), the caller's own (the kind absent from the config), or
// an existing one joined by path (an engine's pod or network namespace).
enum class NamespaceSource { fresh, callers, joined };
struct NamespaceRequest {
  NamespaceSource source = NamespaceSource::fresh;
  std::string path;  // joined: /proc/PID/ns/net, /run/netns/NAME, ...
};
// Every kind a config may list. The mount namespace is new or joined (never the
// caller's: the rootfs is set up in it); the user namespace, where the config has none,
// is the privilege model's (runtime/privilege.hpp: rootful the host's, rootless one of
// mrun's); the network namespace is NetworkMode (host: the caller's) plus
// `network.path` when one is joined.
struct NamespaceRequests {
  NamespaceRequest pid, ipc, uts, network, cgroup;
  NamespaceRequest user{NamespaceSource::callers, {}};
  NamespaceRequest mount;
  NamespaceRequest time{NamespaceSource::callers, {}};
};

// linux.uidMappings and gidMappings of a new user namespace, as the config gives them
// (mrun plans its own where a config has none).
struct IdMappings {
  std::vector<userns::IdMapEntry> uids, gids;
  // Container root is the caller and nothing else is mapped (`runc spec --rootless`):
  // a map any process may write for its own child, no newuidmap needed.
  bool callers_own = false;
};

// linux.timeOffsets: a clock's offset in the container's new time namespace.
struct TimeOffset {
  std::int64_t secs = 0;
  std::uint32_t nanosecs = 0;
  bool operator==(const TimeOffset&) const = default;
};

// What `mrun run` adds to the runtime-spec config it builds from its flags: everything
// the spec has no field for. An OCI bundle has none of it (RunAdditions{}, the
// defaults below): the engine owns the rootfs, the network and the storage, and its
// config.json says all the rest.
struct RunAdditions {
  // The image directory (root.path) as the lower layer of an overlay whose upper lives
  // in mrun's storage; none: root.path itself takes the writes (an engine's rootfs).
  OverlayMode overlay = OverlayMode::none;
  UsernsMode userns = UsernsMode::automatic;
  // slirp4netns or pasta (a helper process), or bridge (a veth into a host bridge,
  // rootful, through the CNI plugins), connected by mrun to the container's own network
  // namespace; none: the config's network namespace as it is.
  NetworkMode connected_network = NetworkMode::none;
  std::vector<net::PublishSpec> publish;  // -p; needs slirp4netns, pasta or bridge
  bool allow_host_loopback = false;       // 10.0.2.2 reaches the host's 127.0.0.1
  bool init = false;                      // --init: mrun's reaper as PID 1
  bool detach = false;
  bool remove_on_exit = false;  // --rm
  CgroupsMode cgroups = CgroupsMode::enabled;
  std::string cgroup_parent;  // --cgroup-parent, relative to the cgroup2 root
  // linux.cgroupsPath's own name for the leaf (rootful); empty: mrun-<id>.
  std::string cgroup_leaf;
  // --device HOST[:CTR][:rwm] and CDI device nodes: a host node each (joined to
  // linux.devices' in ContainerConfig::devices).
  std::vector<mount::DeviceSpec> devices;
  std::optional<mount::GpuRequest> gpu;  // --gpu: the fakegpu nodes and user-space driver
  DeviceFilterMode device_filter = DeviceFilterMode::automatic;  // --device-filter
  // -u UID without a GID (UserSpec::gid_from_image).
  bool gid_from_image = false;
  // Without linux.seccomp in the config: mrun run's default profile (automatic), the
  // file of --security-opt seccomp=PATH (file: compiled from it, so messages name it),
  // or no filter (unconfined: what an OCI config without the field means).
  security::SeccompMode seccomp = security::SeccompMode::unconfined;
  std::string seccomp_profile;
  // --privileged: the config lists every capability; those the setup process does not
  // hold itself are left out instead of failing, and every device is allowed.
  bool privileged = false;
  // linux.resources came from --memory and friends: messages name the flags, and the
  // swap --memory implies is left out where the kernel has no swap accounting.
  bool resources_from_flags = false;
  bool swap_implied = false;
};

struct ContainerConfig {
  std::string name;    // the container's id
  std::string rootfs;  // root.path, absolute
  // process, and linux.personality, memoryPolicy and seccomp: the container's command.
  ProcessSpec process;
  std::string hostname;                   // empty: left as the UTS namespace has it (runc's rule)
  std::string domainname;                 // empty: likewise
  NamespaceRequests namespaces;           // linux.namespaces
  std::optional<IdMappings> id_mappings;  // linux.uidMappings, linux.gidMappings
  // linux.timeOffsets (a new time namespace's), written before the command enters it.
  std::optional<TimeOffset> monotonic_offset, boottime_offset;
  // mounts, linux.maskedPaths, linux.readonlyPaths, linux.rootfsPropagation and
  // root.readonly, honoured as given (mount/config_mounts.hpp); the launcher fills in
  // the host's side (mknod or binds, linux.devices).
  mount::ConfigMountInput mounts;
  bool read_only = false;  // root.readonly
  // none: a network namespace without a helper (new, or joined by path); host: the
  // caller's (no network entry in linux.namespaces); slirp4netns/pasta/bridge: a new
  // one that mrun connects (RunAdditions::connected_network).
  NetworkMode network = NetworkMode::none;
  // linux.resources (cgroup/resources.hpp).
  cgroup::Resources resources;
  // linux.devices, made or bound (mount::ConfigDevice).
  std::vector<mount::ConfigDevice> linux_devices;
  // mrun run's --device nodes and CDI's: a host node each, mknod'ed rootful with the
  // host's numbers, bound rootless.
  std::vector<mount::DeviceSpec> devices;
  // Allow rules beyond the default set and the device nodes (linux.resources.devices).
  std::vector<cgroup::DeviceRule> device_rules;
  // linux.sysctl: namespaced sysctls only (net.* with a network namespace of its own;
  // kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*), written by the container's
  // init once its namespaces exist.
  std::map<std::string, std::string> sysctl;
  // linux.mountLabel: the SELinux context of the container's mounts; applied nowhere,
  // so refused where SELinux is enabled (launch/host_support.hpp).
  std::string mount_label;
  std::string bundle;  // absolute; empty: built by mrun run from its flags
  std::map<std::string, std::string> annotations;
  Hooks hooks;       // config.json's hooks (runtime/hooks.hpp says when each stage runs)
  RunAdditions run;  // mrun run's own; an OCI bundle's are the defaults

  // How the process is wired: the OCI verbs' options (mrun-oci(1)), not `mrun run` flags.
  // Inherited fds that become the command's 0, 1, 2 (create: the caller's own, so an
  // engine's pipes reach the container); -1: what the launcher has.
  std::array<int, 3> stdio_fds{-1, -1, -1};
  int preserve_fds = 0;        // --preserve-fds (+ LISTEN_FDS): fds 3..3+N-1 stay open
  std::string console_socket;  // --console-socket: the pty master is sent there, not relayed
  bool no_pivot = false;       // --no-pivot: MS_MOVE + chroot instead of pivot_root
  bool new_keyring = true;     // false with --no-new-keyring
};

std::string to_string(OverlayMode mode);
std::optional<OverlayMode> parse_overlay_mode(const std::string& text);
std::string to_string(NetworkMode mode);
std::optional<NetworkMode> parse_network_mode(const std::string& text);
std::optional<DeviceFilterMode> parse_device_filter_mode(const std::string& text);
// A network namespace of its own that mrun connects (slirp4netns, pasta, bridge):
// addresses, resolv.conf, published ports.
bool mrun_connects_network(NetworkMode mode);
// -p and --allow-host-loopback against --network: throws the one-line error.
void check_network_options(NetworkMode mode, bool publishes, bool allow_host_loopback);

// Checks that do not touch the system: name syntax, absolute paths, ...
// Throws mrun::Error naming the field and the fix.
void validate(const ContainerConfig& config);
bool valid_container_name(const std::string& name);
// A name for a container run without --name: mrun- and eight random hex digits.
std::string generated_container_name();

}  // namespace mrun::runtime
