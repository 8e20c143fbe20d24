#include "launch/launcher.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>

#include "base/error.hpp"
#include "base/phase_trace.hpp"
#include "base/scope_guard.hpp"
#include "base/strings.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/devices_v1.hpp"
#include "cgroup/v1_group.hpp"
#include "init/container_init.hpp"
#include "init/launch_spec.hpp"
#include "init/namespace_join.hpp"
#include "init/seccomp_agent.hpp"
#include "launch/device_access.hpp"
#include "launch/host_support.hpp"
#include "monitor/supervise.hpp"
#include "mount/devices.hpp"
#include "mount/overlay.hpp"
#include "net/cni_bridge.hpp"
#include "net/network.hpp"
#include "net/network_files.hpp"
#include "runtime/hooks.hpp"
#include "runtime/sync_channel.hpp"
#include "state/exec_defaults.hpp"
#include "state/state.hpp"
#include "state/storage.hpp"
#include "state/teardown.hpp"
#include "sys/fd_passing.hpp"
#include "sys/fs.hpp"
#include "sys/mount_fd.hpp"
#include "sys/namespaces.hpp"
#include "sys/processes.hpp"
#include "sys/spawn.hpp"
#include "sys/vfork_child.hpp"
#include "userns/apply_idmap.hpp"
#include "userns/caller.hpp"
#include "userns/idmap.hpp"
#include "userns/shared_userns.hpp"
#include "userns/spare_netns.hpp"
#include "userns/subid.hpp"

namespace mrun::runtime {

namespace {

userns::IdMapPlan plan_ids(const ContainerConfig& config, const PrivilegeModel& privilege,
                           const Context& ctx) {
  if (!privilege.new_user_namespace) return {};
  // A joined user namespace has its maps; the config's own maps are written as given:
  // directly where mrun may (rootful, or as root of the user namespace it runs in), by
  // the kernel's rule for a caller's own single map, else through newuidmap/newgidmap,
  // which check them against /etc/subuid and /etc/subgid.
  if (config.namespaces.user.source == NamespaceSource::joined) {
    return {userns::MapKind::joined, {}, {}};
  }
  if (config.id_mappings) {
    userns::IdMapPlan plan;
    plan.kind = privilege.rootful || privilege.nested ? userns::MapKind::direct
                : config.id_mappings->callers_own     ? userns::MapKind::single
                                                      : userns::MapKind::subordinate;
    plan.uids = config.id_mappings->uids;
    plan.gids = config.id_mappings->gids;
    return plan;
  }
  bool want_subordinate = config.run.userns != UsernsMode::single && !privilege.rootful;
  auto plan = userns::plan_caller_maps(ctx.subuid_file, ctx.subgid_file, want_subordinate);
  if (want_subordinate && plan.kind == userns::MapKind::single) {
    const std::string caller = userns::caller_name();
    ctx.log.warn("no subordinate ids for " + caller + " in " + ctx.subuid_file + " and " +
                 ctx.subgid_file + ": only container root is mapped (add a range with `" +
                 userns::add_subids_command(caller) + "`)");
  }
  return plan;
}

// Claims the name under the state lock. A leftover of a killed mrun with the same name
// is cleaned up first; a live or stopped container keeps its name.
void claim_name(const StateStore& store, const Context& ctx, const ContainerState& state,
                const std::vector<StateStore::NamedFile>& files) {
  const std::string& name = state.name;
  StateLock lock(store.root());
  if (store.claim(state, files)) return;
  auto existing = store.read(name);
  bool leftover = !existing || (existing->status != Status::stopped &&
                                effective_status(*existing) == Status::stopped);
  if (leftover) {
    ctx.log.debug("removing leftover of a killed mrun for container " + name);
    if (existing) remove_storage(ctx, existing->storage_dir, existing->subordinate_ids);
    store.remove(name);
    if (store.claim(state, files)) return;
  }
  throw Error("container name \"" + name + "\" is already in use", EEXIST,
              "choose another --name, or remove it with `mrun delete " + name + "`");
}

void wait_for_fuse_mount(pid_t container, const std::string& merged, int fuse_pidfd,
                         const std::string& log_path) {
  using namespace std::chrono;
  auto deadline = steady_clock::now() + seconds(10);
  const std::string mountinfo = "/proc/" + std::to_string(container) + "/mountinfo";
  while (steady_clock::now() < deadline) {
    if (auto text = sys::read_file(mountinfo)) {
      for (const auto& line : split(*text, '\n')) {
        auto fields = split(line, ' ');
        if (fields.size() > 4 && fields[4] == merged && line.find(" - fuse") != std::string::npos) {
          return;
        }
      }
    }
    if (sys::try_wait_pidfd(fuse_pidfd) >= 0) {
      std::string output(trim(sys::read_file(log_path).value_or("")));
      throw Error("fuse-overlayfs exited before mounting the rootfs: " + output, 0,
                  "check that /dev/fuse is usable, or retry with --overlay=native");
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  throw Error("fuse-overlayfs did not mount the rootfs within 10s", ETIMEDOUT);
}

// fuse-overlayfs runs outside the container's PID namespace (so it is not visible in
// it and does not become a child of the command), but inside its user and mount
// namespaces, where the rootfs must appear. It dies with mrun (parent-death signal).
sys::SpawnedProcess start_fuse_overlay(const LaunchSpec& spec, pid_t container, int container_pidfd,
                                       const std::string& state_dir) {
  std::string program = sys::find_program("fuse-overlayfs");
  if (program.empty()) {
    throw Error("fuse-overlayfs not found in PATH", ENOENT,
                "install it (apt-get install fuse-overlayfs) or use --overlay=native");
  }
  std::string log_path = state_dir + "/fuse-overlayfs.log";
  sys::SpawnOptions options;
  UniqueFd log = sys::log_output_to(log_path, options);
  options.death_signal = SIGKILL;
  int nstypes = CLONE_NEWNS | (spec.privilege.new_user_namespace ? CLONE_NEWUSER : 0);
  options.before_exec = [container_pidfd, nstypes] {
    sys::setns_pidfd(container_pidfd, nstypes, "the container");
  };
  auto fuse = sys::spawn_program(mount::fuse_overlayfs_argv(program, spec.layers), options);
  try {
    wait_for_fuse_mount(container, spec.layers.merged, fuse.pidfd.get(), log_path);
  } catch (...) {
    sys::pidfd_send_signal(fuse.pidfd.get(), SIGKILL);
    if (sys::try_wait_pidfd(fuse.pidfd.get()) < 0) sys::wait_pidfd(fuse.pidfd.get());
    throw;
  }
  return fuse;
}

void stop_fuse_overlay(std::optional<sys::SpawnedProcess>& fuse) {
  if (!fuse) return;
  sys::pidfd_send_signal(fuse->pidfd.get(), SIGTERM);
  for (int i = 0; i < 200; ++i) {
    if (sys::try_wait_pidfd(fuse->pidfd.get()) >= 0) {
      fuse.reset();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sys::pidfd_send_signal(fuse->pidfd.get(), SIGKILL);
  sys::wait_pidfd(fuse->pidfd.get());
  fuse.reset();
}

// The namespaces clone makes new: the mount namespace always, the user namespace as the
// privilege model says, the others unless the config shares or joins them.
unsigned long long namespace_flags(const LaunchSpec& spec) {
  const NamespaceRequests& ns = spec.config.namespaces;
  auto fresh = [](const NamespaceRequest& r) { return r.source == NamespaceSource::fresh; };
  unsigned long long flags = CLONE_NEWNS;
  if (fresh(ns.pid)) flags |= CLONE_NEWPID;
  if (fresh(ns.uts)) flags |= CLONE_NEWUTS;
  if (fresh(ns.ipc)) flags |= CLONE_NEWIPC;
  // With a leaf of its own the child unshares its cgroup namespace once moved in.
  if (fresh(ns.cgroup) && !spec.own_cgroup) flags |= CLONE_NEWCGROUP;
  if (spec.privilege.new_user_namespace) flags |= CLONE_NEWUSER;
  if (spec.config.network != NetworkMode::host && fresh(ns.network)) flags |= CLONE_NEWNET;
  return flags;
}

// The config's mount table with the host's side filled in: whether nodes are made or
// bound, which bind targets must be files (a pure plan cannot stat the host), mrun
// run's generated network files and --device/--gpu nodes and files.
std::vector<mount::MountStep> plan_mounts(const ContainerConfig& config,
                                          const PrivilegeModel& privilege,
                                          const userns::IdMapPlan& ids,
                                          const std::optional<net::NetworkFiles>& network_files,
                                          mount::DeviceMounts devices) {
  mount::ConfigMountInput input = config.mounts;
  input.mknod_default_devices = privilege.can_mknod;
  input.own_pid_namespace = config.namespaces.pid.source == NamespaceSource::fresh;
  input.own_ipc_namespace = config.namespaces.ipc.source == NamespaceSource::fresh;
  // Generated files bound over the image's (whose lower layer is never written); first,
  // so that a user's own -v ...:/etc/hosts wins.
  if (network_files) {
    input.mounts.insert(input.mounts.begin(),
                        {{"/etc/resolv.conf", "bind", network_files->resolv_conf, {"bind"}},
                         {"/etc/hosts", "bind", network_files->hosts, {"bind"}}});
  }
  // --device and --gpu: mknod when the kernel lets us (rootful), else bind the host node;
  // linux.devices likewise, with the config's own numbers.
  input.devices = std::move(devices.nodes);
  auto config_devices =
      mount::plan_config_devices(config.linux_devices, privilege.can_mknod, mount::host_node);
  input.devices.insert(input.devices.end(), config_devices.begin(), config_devices.end());
  input.injected = std::move(devices.userspace);
  auto plan = mount::plan_config_mounts(input);
  for (auto& step : plan) {
    if (step.kind == mount::StepKind::bind && !step.target_is_file) {
      step.target_is_file = sys::exists(step.source) && !sys::is_dir(step.source);
    }
  }
  if (privilege.new_user_namespace) {
    mount::drop_unmapped_devpts_gid(
        plan, [&](std::uint32_t gid) { return userns::map_to_host(ids.gids, gid) >= 0; });
  }
  return plan;
}

// Idmapped binds (mount/config_mounts.hpp): made here, in the monitor, which holds
// CAP_SYS_ADMIN over the host's filesystems (rootful), as detached trees whose
// descriptors the container's process inherits across clone and attaches. Rootless
// nothing of the kind is held over a host filesystem: a clear 125. The returned
// descriptors must live until the container is cloned.
std::vector<UniqueFd> premake_idmapped_binds(std::vector<mount::MountStep>& plan,
                                             const PrivilegeModel& privilege,
                                             const userns::IdMapPlan& ids) {
  std::vector<UniqueFd> trees;
  for (auto& step : plan) {
    if (step.kind != mount::StepKind::bind || !step.idmap) continue;
    const std::string field = "config.json: mounts (" + step.target + ")";
    if (!privilege.rootful) {
      throw Error(field +
                      ": an idmapped mount of a host directory needs CAP_SYS_ADMIN over its "
                      "filesystem, which rootless mrun does not hold",
                  EPERM, "run rootful, or drop the idmap option");
    }
    auto uids = step.idmap_uids, gids = step.idmap_gids;
    if (uids.empty()) {
      // No mappings of its own: the container's user namespace's (runc's rule).
      if (ids.uids.empty()) {
        throw Error(field +
                        ": idmap without uidMappings takes the container's, and it has no "
                        "user namespace mapped by mrun",
                    EINVAL, "give the mount uidMappings and gidMappings");
      }
      uids = ids.uids;
      gids = ids.gids;
    }
    UniqueFd ns = userns::user_namespace_with_maps(uids, gids, field);
    trees.push_back(sys::idmapped_tree(step.source, ns.get(), step.idmap_recursive, field));
    step.premade_fd = trees.back().get();
  }
  return trees;
}

LaunchSpec make_launch_spec(const ContainerConfig& config, const PrivilegeModel& privilege,
                            const userns::IdMapPlan& ids, const std::string& storage,
                            const std::optional<net::NetworkFiles>& network_files, bool own_cgroup,
                            mount::DeviceMounts devices, const Context& ctx) {
  LaunchSpec spec;
  spec.config = config;
  spec.privilege = privilege;
  spec.log = ctx.log;
  spec.overlay = config.run.overlay;
  spec.layers.lower = config.rootfs;
  if (config.run.overlay == OverlayMode::none) {
    // The rootfs as given, bound onto itself in the container's mount namespace (an
    // OCI bundle's root.path: the engine's snapshot takes the writes).
    spec.layers.merged = config.rootfs;
  } else {
    spec.layers.upper = storage + "/upper";
    spec.layers.work = storage + "/work";
    spec.layers.merged = storage + "/merged";
    spec.volatile_upper = config.run.remove_on_exit;
  }
  // setgroups is denied only where mrun wrote a single map without privilege.
  spec.may_setgroups = !privilege.new_user_namespace || ids.kind != userns::MapKind::single;
  spec.joined_user_namespace = ids.kind == userns::MapKind::joined;
  spec.own_cgroup = own_cgroup;
  // Parsed and compiled here, before clone: a bad profile or capability name fails with
  // 125 and nothing started; the child only applies the result.
  spec.security = security::prepare_security_plan(config.process.security, config.process.user.uid,
                                                  privilege.host_capabilities, ctx.log,
                                                  ctx.data_root + "/cache/seccomp");
  if (config.run.gpu) mount::add_gpu_environment(spec.config.process.env);
  spec.mounts = plan_mounts(config, privilege, ids, network_files, std::move(devices));
  return spec;
}

// slirp4netns or pasta for the container's network namespace (owned by its user
// namespace when rootless), or a veth into the host bridge; nullptr for none/host.
// Returns once the network is up. A bridge's lease lands in the container's hosts file
// (`network_files`), before the container binds it.
std::unique_ptr<net::AttachedNetwork> start_network(
    const ContainerConfig& config, const PrivilegeModel& privilege, pid_t container,
    const std::string& state_dir, const std::optional<net::NetworkFiles>& network_files,
    const Context& ctx) {
  if (!mrun_connects_network(config.network)) return nullptr;
  if (config.network == NetworkMode::bridge) {
    net::BridgeRequest bridge;
    bridge.container_pid = container;
    bridge.container_id = config.name;
    bridge.publish = config.run.publish;
    bridge.record_path = state_dir + "/cni.json";
    bridge.log = ctx.log;
    auto attached = net::BridgeAttachment::attach(bridge);
    if (network_files) {
      net::NetworkFilesInput input{config.hostname, false, attached->address(), std::nullopt};
      sys::write_file_atomic(network_files->hosts, net::render_hosts(input), 0644);
    }
    return attached;
  }
  net::NetworkRequest request;
  request.container_pid = container;
  request.rootless = !privilege.rootful;
  request.state_dir = state_dir;
  request.publish = config.run.publish;
  request.allow_host_loopback = config.run.allow_host_loopback;
  request.path_var = std::getenv("PATH") ? std::getenv("PATH") : "";
  request.log = ctx.log;
  if (config.network == NetworkMode::pasta) return net::start_pasta(request);
  return net::start_slirp4netns(request);
}

cgroup::Request cgroup_request(const ContainerConfig& config, const PrivilegeModel& privilege) {
  cgroup::Request request;
  request.name = config.name;
  request.leaf_name = config.run.cgroup_leaf;
  request.resources = config.resources;
  request.enabled = config.run.cgroups == CgroupsMode::enabled;
  request.rootful = privilege.rootful;
  request.uid = ::getuid();
  // A cgroupsPath names the whole path, so its empty parent is the cgroup2 root.
  request.parent = config.run.cgroup_parent.empty() && config.run.cgroup_leaf.empty()
                       ? privilege.default_cgroup_parent
                       : config.run.cgroup_parent;
  return request;
}

void check_inputs(const ContainerConfig& config, const PrivilegeModel& privilege) {
  check_host_supports(config);
  // A veth into a host bridge is made in the host's network namespace, which only a
  // process with CAP_NET_ADMIN there may change: rootless has user-mode networks.
  if (config.network == NetworkMode::bridge && !privilege.rootful) {
    throw Error(
        "--network bridge needs root: the veth pair and the bridge live in the host's "
        "network namespace",
        EPERM, "run it as root, or use --network slirp4netns or pasta rootless");
  }
  if (!sys::is_dir(config.rootfs)) {
    throw Error("rootfs " + config.rootfs + " is not a directory", ENOTDIR,
                "give an existing rootfs directory, or omit it to use the built-in busybox rootfs");
  }
  for (const auto& m : config.mounts.mounts) {
    bool bind = m.type == "bind" ||
                std::find(m.options.begin(), m.options.end(), "bind") != m.options.end() ||
                std::find(m.options.begin(), m.options.end(), "rbind") != m.options.end();
    if (bind && !sys::exists(m.source)) {
      throw Error((config.bundle.empty()
                       ? "volume source " + m.source
                       : "config.json: mounts (" + m.destination + "): bind source " + m.source) +
                      " does not exist",
                  ENOENT,
                  config.bundle.empty() ? "create it first"
                                        : "create it first, or remove the mount from config.json");
    }
  }
  // Only root of the caller's user namespace may enter its mount namespace (setns needs
  // CAP_SYS_ADMIN over the namespace's owner); runc fails here too, at its first mount.
  if (config.namespaces.mount.source == NamespaceSource::callers && privilege.new_user_namespace) {
    throw Error(
        "config.json: linux.namespaces: without a mount entry the container shares the "
        "caller's mount namespace, which a container in another user namespace may not enter",
        EPERM, "add {\"type\": \"mount\"}, or run it as root without a user namespace");
  }
  // Devices too, before anything is made: a missing node or a block device fails with
  // 125 and leaves nothing behind.
  for (const auto& d : config.devices) mount::inspect_device(d);
  mount::plan_config_devices(config.linux_devices, privilege.can_mknod, mount::host_node);
}

// The container's state for its hooks, as `mrun state` prints it.
std::string hook_state(ContainerState state, Status status, pid_t pid) {
  state.status = status;
  state.pid = pid;
  return oci_state_json(state, status);
}

// The launcher's copies of the fds handed to the container (the caller's stdio, the
// preserved ones): closed once the container has its own, so that an engine reading
// the container's stdout sees end-of-file when the container closes it, not when mrun
// exits.
void close_handed_over_fds(const ContainerConfig& config) {
  for (int fd : config.stdio_fds) {
    if (fd > 2) ::close(fd);
  }
  if (config.stdio_fds[0] < 0) return;  // not the monitor: the fds are the caller's own
  for (int fd = 3; fd < 3 + config.preserve_fds; ++fd) ::close(fd);
}

void run_poststart(const ContainerConfig& config, const std::string& state_json,
                   const Context& ctx) {
  run_hooks_warning_on_failure(config.hooks.poststart, "poststart", state_json, ctx.log);
}

// mrun run's rootless containers with subordinate ids join the state root's shared
// user namespace (userns/shared_userns.hpp); an engine's bundle, OCI create's sibling
// and joined namespaces keep a namespace of their own, as the runtime spec has it.
// (Before the namespaces to join are opened: whether it may, all but that.)
bool may_use_shared_user_namespace(const ContainerConfig& config, const PrivilegeModel& privilege,
                                   const userns::IdMapPlan& ids, const LaunchHooks& hooks) {
  return config.run.userns == UsernsMode::automatic && privilege.new_user_namespace &&
         !privilege.rootful && !privilege.nested && ids.kind == userns::MapKind::subordinate &&
         config.bundle.empty() && !hooks.container_to_callers_reaper;
}

bool uses_shared_user_namespace(const ContainerConfig& config, const PrivilegeModel& privilege,
                                const userns::IdMapPlan& ids, const LaunchHooks& hooks,
                                const NamespaceJoin& joined) {
  return may_use_shared_user_namespace(config, privilege, ids, hooks) && joined.empty();
}

// The container, born in a namespace the monitor does not enter (NSTYPE: the shared
// user namespace, or a user namespace a config joins by path; nested, a PID namespace it
// joins): a short-lived first child enters it and clones the container into its other
// new namespaces (which that user namespace then owns; in that PID namespace) with
// CLONE_PARENT. The monitor never enters it: it could not come back. With `sibling`
// (OCI create) the first child is itself the monitor's sibling, so the container is the
// caller's child, as a direct clone with CLONE_PARENT makes it. BODY runs in the
// container and does not return.
template <typename Body>
struct NamespaceEntry {
  int ns_fd;
  int nstype;
  unsigned long long flags;
  Body* body;
  int spare_net_fd = -1;  // a spare network namespace of the holder's, used for CLONE_NEWNET
  pid_t container = -1;   // written by the first child (shared memory)
  int error = 0;
};

// The first child: shares the monitor's memory (sys::run_in_vfork_child), so system
// calls and plain stores only. The container it clones has a private copy and may run
// anything; it gets the monitor's signal mask back before BODY.
template <typename Body>
int enter_and_clone(void* raw, const sigset_t& original_mask) {
  auto* entry = static_cast<NamespaceEntry<Body>*>(raw);
  if (int err = sys::setns_fd(entry->ns_fd, entry->nstype); err != 0) {
    entry->error = err;
    return 1;
  }
  unsigned long long flags = entry->flags & ~static_cast<unsigned long long>(entry->nstype);
  // Born in the spare instead of a network namespace made now; should the kernel refuse
  // it, the container gets a new one after all.
  if (entry->spare_net_fd >= 0 && (flags & CLONE_NEWNET) != 0 &&
      sys::setns_fd(entry->spare_net_fd, CLONE_NEWNET) == 0) {
    flags &= ~static_cast<unsigned long long>(CLONE_NEWNET);
  }
  long pid = sys::raw_clone3(flags | CLONE_PARENT);
  if (pid < 0) {
    entry->error = static_cast<int>(-pid);
    return 1;
  }
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    (*entry->body)();
    ::_exit(exit_code::runtime_error);  // BODY does not return
  }
  entry->container = static_cast<pid_t>(pid);
  return 0;
}

template <typename Body>
sys::CloneResult clone_in_namespace(int ns_fd, int nstype, unsigned long long flags, bool sibling,
                                    const std::string& what, const std::string& fix, Body&& body,
                                    int spare_net_fd = -1) {
  using BodyType = std::remove_reference_t<Body>;
  NamespaceEntry<BodyType> entry{ns_fd, nstype, flags, &body, spare_net_fd};
  sys::run_in_vfork_child({&enter_and_clone<BodyType>, &entry}, sibling);
  if (entry.container <= 0 && entry.error == EAGAIN) {
    sys::throw_process_creation_error(entry.error, what);
  }
  if (entry.container <= 0) {
    throw Error(entry.error == 0 ? what : what + ": " + std::string(std::strerror(entry.error)),
                entry.error, fix);
  }
  sys::CloneResult container;
  container.pid = entry.container;
  // Our child, or the caller's whose pid the first child just read: it stays its own.
  container.pidfd = sys::pidfd_open(container.pid);
  return container;
}

// linux.namespaces (user) with a path: a descriptor of it, checked to be a user
// namespace; none when the config joins none.
UniqueFd open_joined_user_namespace(const ContainerConfig& config) {
  if (config.namespaces.user.source != NamespaceSource::joined) return {};
  const std::string& path = config.namespaces.user.path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    throw_errno("config.json: linux.namespaces (user): open " + path,
                "give the path of an existing user namespace (/proc/PID/ns/user)");
  }
  if (sys::namespace_type(fd.get()) != CLONE_NEWUSER) {
    throw Error("config.json: linux.namespaces (user): " + path + " is not a user namespace",
                EINVAL, "give a /proc/PID/ns/user path");
  }
  return fd;
}

// linux.namespaces without a mount entry: this process's mount namespace, for the
// container to enter once its root is set up (container_init.cpp); -1 otherwise.
UniqueFd open_callers_mount_namespace(const NamespaceRequest& request) {
  if (request.source != NamespaceSource::callers) return {};
  UniqueFd fd(::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open /proc/self/ns/mnt (the caller's mount namespace)");
  return fd;
}

// linux.namespaces (mount or time) with a path: a descriptor the container's process
// joins it by (inherited across clone); -1 when the config joins none.
UniqueFd open_joined(const NamespaceRequest& request, int nstype, const char* kind) {
  if (request.source != NamespaceSource::joined) return {};
  const std::string field = std::string("config.json: linux.namespaces (") + kind + ")";
  UniqueFd fd(::open(request.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    throw_errno(field + ": open " + request.path,
                std::string("give the path of an existing ") + kind + " namespace");
  }
  if (sys::namespace_type(fd.get()) != nstype) {
    throw Error(
        field + ": " + request.path + " is not a " + kind + " namespace", EINVAL,
        std::string("give a /proc/PID/ns/") + (nstype == CLONE_NEWNS ? "mnt" : kind) + " path");
  }
  return fd;
}

}  // namespace

namespace {

// One container's launch, as named stages in the order they run (run()). What a stage
// makes, and must undo should a later stage fail, is a member declared after those of
// the stages before it: members are destroyed in reverse, so a failure anywhere undoes
// the earlier stages' work last-made-first, and no guard order is kept by hand. Once
// the container runs (or, for OCI create, is held) the undo is dismissed: from then on
// its exit, `delete` or `kill` decide what goes.
class Launch {
 public:
  Launch(const ContainerConfig& config, const Context& ctx, const LaunchHooks& hooks)
      : config_(config), ctx_(ctx), hooks_(hooks), store_(ctx.state_root) {}

  int run() {
    check_and_plan();
    claim_state();
    make_storage_and_cgroup();
    clone_child();
    place_child();
    serve_setup();
    record_running();
    const int status = wait_for_exit();
    record_exit(status);
    return status;
  }

 private:
  using Undo = std::optional<ScopeGuard<std::function<void()>>>;

  void check_and_plan();
  void claim_state();
  void remove_claim(bool keep_spare);
  void make_storage_and_cgroup();
  void clone_child();
  sys::CloneResult clone_into_namespaces();
  void kill_child();
  void place_child();
  void serve_setup();
  void handle(SyncMessage<ToMonitor>& message);
  void keep_as(Status status);
  void hold_created();
  void record_running();
  int wait_for_exit();
  void tidy_while_running();
  void release_cgroup();
  void record_exit(int status);

  const ContainerConfig& config_;
  const Context& ctx_;
  const LaunchHooks& hooks_;
  StateStore store_;

  // check_and_plan: decided before anything is made, so bad input leaves nothing.
  PrivilegeModel privilege_;
  cgroup::Request cgroup_req_;
  cgroup::Plan cgroup_plan_;
  std::optional<DeviceAccess> device_access_;
  mount::DeviceMounts device_mounts_;
  userns::IdMapPlan ids_;
  UniqueFd spare_net_request_;

  // claim_state: the name and its record, undone by remove_claim.
  std::string storage_;
  ContainerState state_;
  bool subordinate_ = false;
  Undo undo_claim_;

  // make_storage_and_cgroup: each removes itself when destroyed.
  std::optional<net::NetworkFiles> network_files_;
  std::optional<cgroup::Leaf> leaf_;
  std::optional<cgroup::V1Group> v1_group_;
  LaunchSpec spec_;

  // clone_child and place_child. The devices group is destroyed (removed) only after
  // undo_child_ below has killed and reaped the container.
  std::optional<cgroup::DevicesV1Group> devices_v1_;
  std::optional<SignalBlock> blocked_signals_;
  UniqueFd self_pidfd_;
  MonitorEnd parent_end_;
  ContainerEnd child_end_;
  std::optional<NamespaceJoin> joined_;
  bool join_in_container_ = false;
  sys::CloneResult child_;
  // A sibling for OCI create (see LaunchHooks::container_to_callers_reaper). The kernel
  // refuses CLONE_PARENT only from a pid namespace's init, which the monitor never is.
  bool reap_ = true;
  bool mapped_ = false;
  std::optional<sys::SpawnedProcess> fuse_;
  Undo undo_child_;
  // Destroyed (stopped) before undo_child_ kills the container on failure.
  std::unique_ptr<net::AttachedNetwork> network_;

  // serve_setup
  UniqueFd pty_master_;
  std::optional<Error> setup_error_;
  bool held_ = false;  // OCI create: reported created, so its state outlives a failed exec
  std::set<ToMonitor> may_ask_;
};

void Launch::check_and_plan() {
  validate(config_);
  privilege_ = privilege_model_for(::getuid(), &config_, userns::in_initial_user_namespace());
  check_inputs(config_, privilege_);
  store_.ensure_root();
  MRUN_PHASE("run:checked");
  // Where its cgroup goes: decided before anything is made, so a limit that cannot be
  // honoured (no delegated subtree) fails with 125 and leaves nothing behind.
  cgroup_req_ = cgroup_request(config_, privilege_);
  cgroup_plan_ = cgroup::plan_cgroup(cgroup_req_);
  if (cgroup_plan_.v1) {
    ctx_.log.debug("cgroup: v1 group " + cgroup_plan_.v1->relative + " (" + cgroup_plan_.why_not +
                   ")");
  } else if (!cgroup_plan_.use) {
    ctx_.log.debug("no cgroup: " + cgroup_plan_.why_not);
  }
  if (!cgroup_plan_.defaults_note.empty()) ctx_.log.debug(cgroup_plan_.defaults_note);
  // mrun run --cgroup-parent asks for a place: not honouring it is an error, not a
  // silence (an engine's cgroupsPath without limits stays best effort, as before).
  if (!cgroup_plan_.use && !cgroup_plan_.v1 && !config_.run.cgroup_parent.empty() &&
      config_.bundle.empty() && config_.run.cgroups == CgroupsMode::enabled) {
    throw Error("--cgroup-parent " + config_.run.cgroup_parent +
                    ": the container can get no cgroup here (" + cgroup_plan_.why_not + ")",
                0,
                "drop --cgroup-parent, or run where mrun can make a cgroup v2 leaf (see "
                "mrun-run(1), RESOURCE LIMITS)");
  }
  // --device and --gpu nodes, looked at once: a missing node fails here, and the device
  // filter needs their numbers. --device-filter=required that cannot be met fails here.
  device_mounts_ =
      mount::resolve_device_mounts(config_.devices, config_.run.gpu, privilege_.can_mknod);
  device_access_.emplace(config_, privilege_, device_mounts_.devices, ctx_.log);
  device_access_->check_before_start(cgroup_plan_);

  ids_ = plan_ids(config_, privilege_, ctx_);
  // The holder of the shared user namespace makes each container's network namespace
  // ahead (userns/spare_netns.hpp): asked now, read just before the clone, so that its
  // answer comes while the name is claimed and the rest planned. (Checked again there;
  // an answer not used is a spare the holder replaces.)
  if (may_use_shared_user_namespace(config_, privilege_, ids_, hooks_) &&
      config_.network != NetworkMode::host &&
      config_.namespaces.network.source == NamespaceSource::fresh) {
    spare_net_request_ = userns::ask_for_spare_network_namespace(store_.root());
  }
}

// Claims the name; from here on, any failure removes what was made. Without an overlay
// there is no storage: nothing of the container outside the state root.
void Launch::claim_state() {
  storage_ = config_.run.overlay == OverlayMode::none ? std::string()
                                                      : storage_dir_for(ctx_, config_.name);
  state_.name = config_.name;
  state_.monitor_pid = ::getpid();
  state_.monitor_start = sys::process_start_time(::getpid());
  state_.rootfs = config_.rootfs;
  state_.command = config_.process.args;
  state_.created = now_rfc3339();
  state_.storage_dir = storage_;
  state_.remove_on_exit = config_.run.remove_on_exit;
  state_.detached = config_.run.detach;
  state_.rootless = !privilege_.rootful;
  state_.bundle = config_.bundle;
  state_.annotations = config_.annotations;
  // What `mrun exec` and the later verbs need of the config (they have no bundle to
  // reread: `mrun run -d` containers have none, and a bundle may change): written with
  // the claim, into its scratch directory.
  std::vector<StateStore::NamedFile> files{
      {"exec.json", exec_defaults_to_json(exec_defaults_of(config_, privilege_))}};
  if (!config_.hooks.empty()) files.emplace_back("hooks.json", hooks_to_json(config_.hooks));
  claim_name(store_, ctx_, state_, files);
  undo_claim_.emplace([this] { remove_claim(false); });
  if (hooks_.on_claimed) hooks_.on_claimed(store_.dir_of(config_.name));
  MRUN_PHASE("run:claimed");
}

// With KEEP_SPARE (an --rm container that ran and exited), storage it left empty is
// kept for the next container (state/storage.hpp).
void Launch::remove_claim(bool keep_spare) {
  StateLock lock(store_.root());
  MRUN_PHASE("run:cleanup-locked");
  try {
    if (!keep_spare || storage_.empty() || !keep_storage_as_spare(ctx_, storage_)) {
      remove_storage(ctx_, storage_, subordinate_);
    }
  } catch (const Error& e) {
    ctx_.log.warn(e.what());
  }
  MRUN_PHASE("run:storage-removed");
  store_.remove(config_.name, keep_spare);
}

// Storage, network files, the cgroup with its limits, the mounts (the id maps are
// planned already).
void Launch::make_storage_and_cgroup() {
  subordinate_ = ids_.kind == userns::MapKind::subordinate;
  state_.subordinate_ids = subordinate_;
  if (!storage_.empty()) make_storage(ctx_, storage_);
  if (mrun_connects_network(config_.network)) {
    net::NetworkFilesInput input{config_.hostname, config_.run.allow_host_loopback};
    if (config_.network == NetworkMode::bridge) {
      input.host_resolv_conf = sys::read_file("/etc/resolv.conf").value_or("");
    }
    network_files_ = net::write_network_files(store_.dir_of(config_.name), input);
  }
  // The leaf, with its limits, before clone: the child must never run unlimited.
  if (cgroup_plan_.use) {
    leaf_.emplace(cgroup::Leaf::create(cgroup_plan_, cgroup_req_, ctx_.log));
    state_.cgroup = leaf_->path();
  }
  // Or, rootful on a v1 or hybrid host, its v1 group, the same way.
  if (cgroup_plan_.v1) {
    v1_group_.emplace(cgroup::V1Group::create(*cgroup_plan_.v1, ctx_.log));
    state_.cgroup_v1 = v1_group_->dirs();
  }
  spec_ =
      make_launch_spec(config_, privilege_, ids_, storage_, network_files_,
                       leaf_.has_value() || v1_group_.has_value(), std::move(device_mounts_), ctx_);
  MRUN_PHASE("run:planned");
  spec_.device_grants = device_access_->wants_node_grants();
  spec_.sibling_of_monitor = hooks_.container_to_callers_reaper;
  reap_ = !spec_.sibling_of_monitor;
  if (hooks_.on_created) {
    // 0622 (as runc): the command's user, whoever it maps to, reopens it for writing.
    spec_.exec_fifo = store_.dir_of(config_.name) + "/exec.fifo";
    if (::mkfifo(spec_.exec_fifo.c_str(), 0600) != 0 ||
        ::chmod(spec_.exec_fifo.c_str(), 0622) != 0) {
      throw_errno("create exec fifo " + spec_.exec_fifo);
    }
  }
}

// Clones the container into its namespaces; it waits for the monitor on the sync socket.
void Launch::clone_child() {
  blocked_signals_.emplace();
  self_pidfd_ = sys::pidfd_open(::getpid());
  std::tie(parent_end_, child_end_) = make_sync_pair();
  // Joined namespaces (OCI linux.namespaces[].path): entered around the clone alone, or
  // by the container itself where the monitor could not come back (namespace_join.hpp).
  joined_.emplace(config_.namespaces);
  join_in_container_ = privilege_.nested;
  child_ = clone_into_namespaces();
  undo_child_.emplace([this] { kill_child(); });
  joined_->leave();
  MRUN_PHASE("run:cloned");
  child_end_.close();
  close_handed_over_fds(config_);
}

// The clone itself, in one of four ways: into the shared user namespace, into a joined
// one, through a joined PID namespace (nested), or plain. The descriptors it opens for
// the container are closed once it has its copies.
sys::CloneResult Launch::clone_into_namespaces() {
  // Nested, a joined PID namespace is entered by a first child that clones the container
  // there (clone_in_namespace): setns moves only the children, and the monitor could
  // not come back to its own.
  const int nested_pid_fd = join_in_container_ ? joined_->pid_namespace_fd() : -1;
  if (nested_pid_fd >= 0 && config_.namespaces.user.source == NamespaceSource::joined) {
    throw Error(
        "config.json: linux.namespaces (pid, user): joining both a PID and a user "
        "namespace from a user namespace mrun did not make is not supported",
        ENOTSUP, "join one of them, or give the container a PID namespace of its own");
  }
  std::vector<UniqueFd> idmapped = premake_idmapped_binds(spec_.mounts, privilege_, ids_);
  UniqueFd joined_userns = open_joined_user_namespace(config_);
  UniqueFd joined_mount = open_joined(config_.namespaces.mount, CLONE_NEWNS, "mount");
  UniqueFd joined_time = open_joined(config_.namespaces.time, CLONE_NEWTIME, "time");
  spec_.join_mount_fd = joined_mount.get();
  spec_.join_time_fd = joined_time.get();
  UniqueFd callers_mount = open_callers_mount_namespace(config_.namespaces.mount);
  spec_.callers_mount_fd = callers_mount.get();
  UniqueFd shared_userns;
  if (uses_shared_user_namespace(config_, privilege_, ids_, hooks_, *joined_)) {
    shared_userns = userns::shared_user_namespace(
        {store_.root(), ids_, userns::shared_userns_linger_seconds()}, ctx_.log);
  }
  MRUN_PHASE("run:userns");
  if (!join_in_container_) joined_->enter();
  auto run_container_main = [this] {
    parent_end_.close();
    container_main(spec_, child_end_, self_pidfd_, join_in_container_ ? &*joined_ : nullptr);
  };
  const unsigned long long flags = namespace_flags(spec_);
  if (shared_userns) {
    UniqueFd spare_net;
    if ((flags & CLONE_NEWNET) != 0) {
      spare_net = userns::receive_spare_network_namespace(spare_net_request_, shared_userns.get());
    }
    mapped_ = true;
    return clone_in_namespace(shared_userns.get(), CLONE_NEWUSER, flags, !reap_,
                              "clone the container into the shared user namespace",
                              "retry with --userns private", run_container_main, spare_net.get());
  }
  if (joined_userns) {
    mapped_ = true;
    return clone_in_namespace(
        joined_userns.get(), CLONE_NEWUSER, flags, !reap_,
        "config.json: linux.namespaces (user): join " + config_.namespaces.user.path,
        "mrun must hold CAP_SYS_ADMIN in that user namespace (rootless: one made by you)",
        run_container_main);
  }
  if (nested_pid_fd >= 0) {
    return clone_in_namespace(
        nested_pid_fd, CLONE_NEWPID, flags, !reap_,
        "config.json: linux.namespaces (pid): join " + config_.namespaces.pid.path,
        "mrun must hold CAP_SYS_ADMIN in the user namespace that owns it", run_container_main);
  }
  sys::CloneResult child = reap_ ? sys::clone_with_pidfd(flags, SIGCHLD)
                                 : sys::clone_with_pidfd(flags | CLONE_PARENT, 0);
  if (child.pid == 0) run_container_main();
  return child;
}

void Launch::kill_child() {
  sys::pidfd_send_signal(child_.pidfd.get(), SIGKILL);
  if (reap_) {
    sys::wait_pidfd(child_.pidfd.get());
  } else {
    sys::wait_pidfd_exit(child_.pidfd.get());  // the caller reaps it
  }
  stop_fuse_overlay(fuse_);
}

// Into its cgroup, its device filter, its ids mapped (rootless: newuidmap/newgidmap) and
// its network up; then it may set itself up. The move comes first: the child has not
// run anything yet, and the command never runs unfiltered or without its network.
void Launch::place_child() {
  if (leaf_) leaf_->add_process(child_.pid);
  if (v1_group_) v1_group_->add_process(child_.pid);
  // Rootful on a v1 or hybrid host the v1 devices controller filters, as with runc.
  devices_v1_ = device_access_->devices_v1_group(
      leaf_.has_value(), v1_group_ ? v1_group_->relative() : std::string(),
      "mrun-" + std::to_string(::getpid()) + "-" + config_.name);
  if (devices_v1_) {
    devices_v1_->add_process(child_.pid);
    state_.device_filter = "v1";
    state_.devices_v1 = devices_v1_->path();
  } else {
    state_.device_filter =
        device_access_->attach_filter(leaf_ ? leaf_->path() : "", cgroup_plan_.why_not, child_.pid);
  }
  // (A container in the shared user namespace has its maps already.)
  if (privilege_.new_user_namespace && !mapped_) userns::apply_id_maps(child_.pid, ids_);
  network_ = start_network(config_, privilege_, child_.pid, store_.dir_of(config_.name),
                           network_files_, ctx_);
  MRUN_PHASE("run:mapped");
  parent_end_.send(ToContainer::ids_mapped);
}

// Serves the container's requests until it execs the command (end-of-file) or reports
// an error.
void Launch::serve_setup() {
  state_.overlay = config_.run.overlay == OverlayMode::none ? "none" : "native";
  // What the container's setup may ask of the monitor, each once, as its config says;
  // anything else is refused. That code runs in the container's namespaces, on the
  // image's files: the monitor does for it only what the config asked for.
  may_ask_ = {ToMonitor::error};
  if (config_.run.overlay != OverlayMode::none) may_ask_.insert(ToMonitor::need_fuse);
  if (spec_.device_grants) may_ask_.insert(ToMonitor::need_device_grant);
  if (config_.process.terminal) may_ask_.insert(ToMonitor::pty_master);
  if (config_.hooks.any_before_start()) may_ask_.insert(ToMonitor::create_hooks);
  if (hooks_.on_created) may_ask_.insert(ToMonitor::created);
  if (spec_.security.seccomp && spec_.security.seccomp->has_listener()) {
    may_ask_.insert(ToMonitor::seccomp_listener);
  }
  while (auto message = parent_end_.receive()) {
    if (may_ask_.erase(message->type) == 0) {
      throw Error(std::string("container ") + config_.name + ": unexpected setup message " +
                      message_name(message->type) + " (its config asks for none, or it came twice)",
                  EPROTO);
    }
    handle(*message);
  }
  // A filter with a listener hands it over before execve: an end without it is a process
  // that died first, unable to say why (a profile that denies sendmsg).
  if (may_ask_.count(ToMonitor::seccomp_listener) != 0 && !setup_error_) {
    setup_error_ = listener_never_came(*spec_.security.seccomp);
  }
  // After `created`, a failed exec is the container's exit (recorded later), as in runc.
  if (setup_error_ && held_) ctx_.log.error(setup_error_->what());
  if (setup_error_ && !held_) throw *setup_error_;
  MRUN_PHASE("run:exec-seen");
}

void Launch::handle(SyncMessage<ToMonitor>& message) {
  switch (message.type) {
    case ToMonitor::need_fuse:
      try {
        fuse_ =
            start_fuse_overlay(spec_, child_.pid, child_.pidfd.get(), store_.dir_of(config_.name));
        state_.overlay = "fuse";
        parent_end_.send(ToContainer::fuse_ready);
      } catch (const Error&) {
        parent_end_.send(ToContainer::fuse_failed);
        throw;
      }
      break;
    case ToMonitor::need_device_grant:
      device_access_->grant_nodes(child_.pid);
      parent_end_.send(ToContainer::device_grants_done);
      break;
    case ToMonitor::pty_master:
      if (!message.fd)
        throw Error("container " + config_.name + ": pty_master without a pty", EPROTO);
      if (!config_.console_socket.empty()) {
        // The engine's console: it owns the master from now on; mrun relays nothing.
        sys::send_fd_to_socket(config_.console_socket, message.fd.get(), "/dev/ptmx");
      } else {
        pty_master_ = std::move(message.fd);
        copy_window_size(pty_master_.get());
      }
      parent_end_.send(ToContainer::pty_ready);
      break;
    case ToMonitor::create_hooks: {
      // The container's namespaces exist and its mounts are made; pivot_root comes after.
      std::string json = hook_state(state_, Status::creating, child_.pid);
      run_hooks(config_.hooks.prestart, "prestart", json);
      run_hooks(config_.hooks.create_runtime, "createRuntime", json);
      parent_end_.send(ToContainer::hooks_done, 0, hook_state(state_, Status::created, child_.pid));
      break;
    }
    case ToMonitor::error: setup_error_ = Error(message.text, 0, {}, message.value); break;
    case ToMonitor::seccomp_listener:
      try {
        pass_listener_to_agent(parent_end_, message, *spec_.security.seccomp,
                               hook_state(state_, Status::creating, child_.pid));
      } catch (const Error& e) {
        // It waits for the agent, which will never hear of it: it must not go on.
        sys::pidfd_send_signal(child_.pidfd.get(), SIGKILL);
        if (!held_) throw;
        setup_error_ = e;
      }
      break;
    case ToMonitor::created: hold_created(); break;
  }
}

// Records the container with STATUS and its pid, and dismisses the undo: from here on
// the container is kept, whatever happens to this monitor.
void Launch::keep_as(Status status) {
  state_.status = status;
  state_.pid = child_.pid;
  state_.pid_start = sys::process_start_time(child_.pid);
  {
    StateLock lock(store_.root());
    store_.write(state_);
  }
  undo_child_->dismiss();
  undo_claim_->dismiss();
}

// Held on the exec fifo: from now on `mrun start`, `kill` and `delete` own its fate, so
// the record stays whatever happens.
void Launch::hold_created() {
  keep_as(Status::created);
  held_ = true;
  hooks_.on_created(child_.pid);
}

// Running: recorded, the undo dismissed, poststart hooks run.
void Launch::record_running() {
  keep_as(Status::running);
  if (!held_) run_poststart(config_, oci_state_json(state_, Status::running), ctx_);
  if (hooks_.on_started) hooks_.on_started();
}

// While the command runs (time in which the monitor only waits): leftovers of --rm
// containers whose mrun was killed are removed (a start never walks through removal
// code first), and a kept storage is readied for a later container
// (state/storage.hpp). Not while the container mounts its root: the rmdirs' discards
// on the same filesystem slow its overlay mount down (bench/README.md).
void Launch::tidy_while_running() {
  try {
    sweep_leftovers(ctx_);
  } catch (const Error& e) {
    ctx_.log.debug(std::string("removing leftovers: ") + e.what());
  }
  if (storage_.empty()) return;
  try {
    tidy_spare_storage(ctx_);
  } catch (const Error& e) {
    ctx_.log.debug(std::string("tidying a spare storage: ") + e.what());
  }
}

// Supervises the command until it exits; returns its status (the OOM killer's SIGKILL
// said as such).
int Launch::wait_for_exit() {
  if (network_) network_->watch(ctx_.log);
  tidy_while_running();
  MRUN_PHASE("run:recorded");
  int status = supervise(child_.pidfd.get(), std::move(pty_master_), reap_);
  MRUN_PHASE("run:exited");
  if (network_) network_->stop();
  stop_fuse_overlay(fuse_);
  // The kernel's OOM killer sends SIGKILL; say why, as podman's OOMKilled does.
  const std::uint64_t kills = leaf_ ? leaf_->oom_kills() : v1_group_ ? v1_group_->oom_kills() : 0;
  if (kills > 0) {
    ctx_.log.error("container " + config_.name + ": the kernel's OOM killer killed " +
                   std::to_string(kills) + " process(es) at its memory limit (--memory)");
    if (reap_) status = 128 + SIGKILL;
  }
  release_cgroup();
  return status;
}

// An engine's container (OCI create) keeps its cgroup until `delete`, as runc's does:
// the engine reads the OOM kills there after the exit (containerd's shim watches
// memory.events and reads it when told of a change), so removing it here races that.
void Launch::release_cgroup() {
  if (held_) {
    if (leaf_) leaf_->keep();
    if (v1_group_) v1_group_->keep();
    return;
  }
  if (leaf_) {
    if (!leaf_->remove()) ctx_.log.warn("could not remove cgroup " + state_.cgroup);
    state_.cgroup.clear();
  }
  if (v1_group_) {
    if (!v1_group_->remove()) {
      ctx_.log.warn("could not remove the cgroup v1 group of " + config_.name);
    }
    state_.cgroup_v1.clear();
  }
}

// The exit recorded, or everything removed with --rm.
void Launch::record_exit(int status) {
  if (config_.run.remove_on_exit) {
    remove_claim(true);
  } else {
    StateLock lock(store_.root());
    state_.status = Status::stopped;
    state_.exit_code = status;
    state_.reaped_by_caller = !reap_;
    state_.finished = now_rfc3339();
    store_.write(state_);
  }
  MRUN_PHASE("run:cleaned");
}

}  // namespace

int run_container(const ContainerConfig& config, const Context& ctx, const LaunchHooks& hooks) {
  return Launch(config, ctx, hooks).run();
}

}  // namespace mrun::runtime
