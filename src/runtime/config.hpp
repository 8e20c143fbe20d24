// What the user asked for, as typed data. The CLI fills it; the launcher consumes it.
// (The OCI config.json reader will produce the same struct: one path, not two.)
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
#include "security/security_options.hpp"

namespace mrun::runtime {

enum class OverlayMode { automatic, native, fuse, none };
// automatic: rootless with subordinate ids, the state root's shared user namespace
// (userns/shared_userns.hpp), else single; private: a namespace of the container's own
// mapped through newuidmap/newgidmap; single: one of its own mapping only root.
enum class UsernsMode { automatic, private_namespace, single };
// none: a private netns with only lo; host: the caller's; slirp4netns/pasta: a private
// netns connected to the host by that user-mode network helper, run by mrun.
enum class NetworkMode { none, host, slirp4netns, pasta };
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

struct UserSpec {
  uid_t uid = 0;
  gid_t gid = 0;
  // -u UID without a GID: the container's process takes the uid's primary group from
  // the image's /etc/passwd itself, after pivot_root (runtime/image_user.hpp); `gid`
  // (0) when the image does not list the uid.
  bool gid_from_image = false;
  // process.user.additionalGids: the supplementary groups, set with setgroups(2) once
  // the id maps are written. Empty: none (the caller's are dropped, see keep_groups).
  std::vector<gid_t> additional_gids;
};

// process.rlimits: one resource limit of the container's process (set in it before it
// execs the command; mrun itself and its helpers keep their own).
struct Rlimit {
  std::string type;  // "RLIMIT_NOFILE"
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
};
// The setrlimit(2) resource of "RLIMIT_NOFILE" and the rest; nullopt for a name Linux
// does not have.
std::optional<int> rlimit_resource(const std::string& type);

// One of the container's namespaces as an OCI config asks for it (linux.namespaces):
// new (mrun run's only choice), the caller's own (the kind absent from the config), or
// an existing one joined by path (an engine's pod or network namespace).
enum class NamespaceSource { fresh, callers, joined };
struct NamespaceRequest {
  NamespaceSource source = NamespaceSource::fresh;
  std::string path;  // joined: /proc/PID/ns/net, /run/netns/NAME, ...
};
// The kinds mrun lets a config choose. The mount namespace is always new and the user
// namespace is the privilege model's (runtime/privilege.hpp); the network namespace is
// NetworkMode (host: the caller's) plus `network.path` when one is joined.
struct NamespaceRequests {
  NamespaceRequest pid, ipc, uts, network, cgroup;
};

struct ContainerConfig {
  std::string name;
  std::string rootfs;             // absolute; the lower layer, never written (except overlay=none)
  std::vector<std::string> args;  // the command
  std::vector<std::string> env;   // KEY=VALUE, final
  std::string workdir = "/";
  UserSpec user;
  std::string hostname;    // empty: left as the UTS namespace has it (runc's rule)
  std::string domainname;  // empty: likewise
  NamespaceRequests namespaces;
  std::vector<Volume> volumes;
  // An OCI config's mount table (mounts, maskedPaths, readonlyPaths,
  // rootfsPropagation), honoured as given instead of mrun run's own /proc, /dev, /sys
  // and lists; the launcher fills in the host's side (mknod, linux.devices).
  std::optional<mount::ConfigMountInput> config_mounts;
  bool read_only = false;
  OverlayMode overlay = OverlayMode::automatic;
  UsernsMode userns = UsernsMode::automatic;
  NetworkMode network = NetworkMode::none;
  std::vector<net::PublishSpec> publish;  // -p; needs slirp4netns or pasta
  bool allow_host_loopback = false;       // 10.0.2.2 reaches the host's 127.0.0.1
  bool init = false;
  bool tty = false;
  bool detach = false;
  bool remove_on_exit = false;
  security::SecurityOptions security;  // --security-opt, --cap-add/--cap-drop, --privileged
  // linux.resources (cgroup/resources.hpp); mrun run's --memory, --memory-swap,
  // --pids-limit and --cpus become these too (cgroup::to_resources).
  cgroup::Resources resources;
  CgroupsMode cgroups = CgroupsMode::enabled;
  std::string cgroup_parent;  // --cgroup-parent, relative to the cgroup2 root; empty: default
  std::vector<mount::DeviceSpec> devices;  // --device
  std::optional<mount::GpuRequest> gpu;    // --gpu: the fakegpu nodes and user-space driver
  bool keep_groups = false;                // --keep-groups: no setgroups(0, NULL)
  // linux.sysctl of an OCI bundle: namespaced sysctls only (net.* with a network
  // namespace of its own; kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*), written
  // by the container's init once its namespaces exist.
  std::map<std::string, std::string> sysctl;
  std::optional<mode_t> umask;  // process.user.umask; unset: inherited from mrun
  std::vector<Rlimit> rlimits;  // process.rlimits, applied in the container's process
  // process.oomScoreAdj, written to /proc/self/oom_score_adj by the container's
  // process; unset: inherited from mrun.
  std::optional<int> oom_score_adj;
  DeviceFilterMode device_filter = DeviceFilterMode::automatic;  // --device-filter
  // Allow rules beyond the default set and the --device/--gpu nodes (OCI
  // linux.resources.devices).
  std::vector<cgroup::DeviceRule> device_rules;
  // From an OCI bundle (src/oci/): reported by `mrun state`, not acted on.
  std::string bundle;  // absolute; empty: not run from a bundle
  std::map<std::string, std::string> annotations;
  Hooks hooks;  // config.json's hooks (runtime/hooks.hpp says when each stage runs)

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
// A network of its own, run by a helper (slirp4netns, pasta): addresses, resolv.conf.
bool uses_network_helper(NetworkMode mode);

// Checks that do not touch the system: name syntax, absolute paths, ...
// Throws mrun::Error naming the field and the fix.
void validate(const ContainerConfig& config);
bool valid_container_name(const std::string& name);
// process.rlimits (known names, soft <= hard) and oomScoreAdj (-1000..1000), for the
// container's process and for `mrun exec`'s.
void validate_process_limits(const std::vector<Rlimit>& rlimits,
                             const std::optional<int>& oom_score_adj);

}  // namespace mrun::runtime
