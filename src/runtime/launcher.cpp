#include "runtime/launcher.hpp"

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
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

#include "base/error.hpp"
#include "base/phase_trace.hpp"
#include "base/scope_guard.hpp"
#include "base/strings.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/devices_v1.hpp"
#include "cgroup/v1_group.hpp"
#include "mount/devices.hpp"
#include "mount/overlay.hpp"
#include "net/cni_bridge.hpp"
#include "net/network.hpp"
#include "net/network_files.hpp"
#include "runtime/container_init.hpp"
#include "runtime/device_access.hpp"
#include "runtime/exec.hpp"
#include "runtime/hooks.hpp"
#include "runtime/launch_spec.hpp"
#include "runtime/namespace_join.hpp"
#include "runtime/seccomp_agent.hpp"
#include "runtime/state.hpp"
#include "runtime/storage.hpp"
#include "runtime/supervise.hpp"
#include "runtime/sync_channel.hpp"
#include "sys/fd_passing.hpp"
#include "sys/fs.hpp"
#include "sys/mount_fd.hpp"
#include "sys/spawn.hpp"
#include "sys/syscalls.hpp"
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
  UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log) throw_errno("create " + log_path);
  sys::SpawnOptions options;
  options.stdout_fd = log.get();
  options.stderr_fd = log.get();
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
  spec.security =
      security::prepare_security_plan(config.security, config.user.uid, privilege.host_capabilities,
                                      ctx.log, ctx.data_root + "/cache/seccomp");
  if (config.run.gpu) mount::add_gpu_environment(spec.config.env);
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

void remove_container(const Context& ctx, const std::string& name) {
  StateStore store(ctx.state_root);
  auto state = store.read(name);
  // A bridge's lease and port rules, where the monitor was killed before its DEL.
  net::release_leftover_bridge(store.dir_of(name) + "/cni.json", ctx.log);
  if (state) remove_storage(ctx, state->storage_dir, state->subordinate_ids);
  if (state && !state->cgroup.empty()) cgroup::remove_leaf(state->cgroup);  // mrun was killed
  if (state && !state->devices_v1.empty()) cgroup::remove_devices_v1_group(state->devices_v1);
  if (state && !cgroup::remove_v1_dirs(state->cgroup_v1)) {
    ctx.log.warn("could not remove every cgroup v1 directory of " + name +
                 " (processes still in them?)");
  }
  store.remove(name);
}

void sweep_leftovers(const Context& ctx, Sweep scope) {
  StateStore store(ctx.state_root);
  if (!sys::is_dir(store.root())) return;
  StateLock lock(store.root());
  store.sweep_scratch();
  std::vector<ContainerState> states;
  if (scope == Sweep::every_state) {
    states = store.list();
  } else {
    for (const auto& name : store.remove_on_exit_names()) {
      if (auto state = store.read(name)) {
        states.push_back(std::move(*state));
      } else if (!sys::exists(store.dir_of(name))) {
        store.remove(name);  // an index entry of a container already gone
      }
    }
  }
  for (const auto& state : states) {
    if (state.status != Status::stopped && state.remove_on_exit &&
        effective_status(state) == Status::stopped) {
      ctx.log.debug("removing leftover of killed --rm container " + state.name);
      try {
        remove_container(ctx, state.name);
      } catch (const Error& e) {
        ctx.log.warn("could not remove leftover container " + state.name + ": " + e.what());
      }
    }
  }
}

int run_container(const ContainerConfig& config, const Context& ctx, const LaunchHooks& hooks) {
  validate(config);
  const PrivilegeModel privilege =
      privilege_model_for(::getuid(), &config, userns::in_initial_user_namespace());
  check_inputs(config, privilege);
  StateStore store(ctx.state_root);
  store.ensure_root();
  MRUN_PHASE("run:checked");
  sweep_leftovers(ctx);
  MRUN_PHASE("run:swept");
  // Where its cgroup goes: decided before anything is made, so a limit that cannot be
  // honoured (no delegated subtree) fails with 125 and leaves nothing behind.
  const cgroup::Request cgroup_req = cgroup_request(config, privilege);
  const cgroup::Plan cgroup_plan = cgroup::plan_cgroup(cgroup_req);
  if (cgroup_plan.v1) {
    ctx.log.debug("cgroup: v1 group " + cgroup_plan.v1->relative + " (" + cgroup_plan.why_not +
                  ")");
  } else if (!cgroup_plan.use) {
    ctx.log.debug("no cgroup: " + cgroup_plan.why_not);
  }
  if (!cgroup_plan.defaults_note.empty()) ctx.log.debug(cgroup_plan.defaults_note);
  // mrun run --cgroup-parent asks for a place: not honouring it is an error, not a
  // silence (an engine's cgroupsPath without limits stays best effort, as before).
  if (!cgroup_plan.use && !cgroup_plan.v1 && !config.run.cgroup_parent.empty() &&
      config.bundle.empty() && config.run.cgroups == CgroupsMode::enabled) {
    throw Error("--cgroup-parent " + config.run.cgroup_parent +
                    ": the container can get no cgroup here (" + cgroup_plan.why_not + ")",
                0,
                "drop --cgroup-parent, or run where mrun can make a cgroup v2 leaf (see "
                "mrun-run(1), RESOURCE LIMITS)");
  }
  // --device and --gpu nodes, looked at once: a missing node fails here, and the device
  // filter needs their numbers. --device-filter=required that cannot be met fails here.
  mount::DeviceMounts device_mounts =
      mount::resolve_device_mounts(config.devices, config.run.gpu, privilege.can_mknod);
  const DeviceAccess device_access(config, privilege, device_mounts.devices, ctx.log);
  device_access.check_before_start(cgroup_plan);

  const auto ids = plan_ids(config, privilege, ctx);
  // The holder of the shared user namespace makes each container's network namespace
  // ahead (userns/spare_netns.hpp): asked now, read just before the clone, so that its
  // answer comes while the name is claimed and the rest planned. (Checked again there;
  // an answer not used is a spare the holder replaces.)
  UniqueFd spare_net_request;
  if (may_use_shared_user_namespace(config, privilege, ids, hooks) &&
      config.network != NetworkMode::host &&
      config.namespaces.network.source == NamespaceSource::fresh) {
    spare_net_request = userns::ask_for_spare_network_namespace(store.root());
  }

  // 1. Claim the name; from here on, any failure removes what was made. Without an
  // overlay there is no storage: nothing of the container outside the state root.
  const std::string storage =
      config.run.overlay == OverlayMode::none ? std::string() : storage_dir_for(ctx, config.name);
  ContainerState state;
  state.name = config.name;
  state.monitor_pid = ::getpid();
  state.monitor_start = sys::process_start_time(::getpid());
  state.rootfs = config.rootfs;
  state.command = config.args;
  state.created = now_rfc3339();
  state.storage_dir = storage;
  state.remove_on_exit = config.run.remove_on_exit;
  state.detached = config.run.detach;
  state.rootless = !privilege.rootful;
  state.bundle = config.bundle;
  state.annotations = config.annotations;
  // What `mrun exec` and the later verbs need of the config (they have no bundle to
  // reread: `mrun run -d` containers have none, and a bundle may change): written with
  // the claim, into its scratch directory.
  std::vector<StateStore::NamedFile> files{
      {"exec.json", exec_defaults_to_json(exec_defaults_of(config, privilege))}};
  if (!config.hooks.empty()) files.emplace_back("hooks.json", hooks_to_json(config.hooks));
  claim_name(store, ctx, state, files);
  bool subordinate = false;
  // With KEEP_SPARE (an --rm container that ran and exited), storage it left empty is
  // kept for the next container (runtime/storage.hpp).
  auto cleanup = [&](bool keep_spare) {
    StateLock lock(store.root());
    MRUN_PHASE("run:cleanup-locked");
    try {
      if (!keep_spare || storage.empty() || !keep_storage_as_spare(ctx, storage)) {
        remove_storage(ctx, storage, subordinate);
      }
    } catch (const Error& e) {
      ctx.log.warn(e.what());
    }
    MRUN_PHASE("run:storage-removed");
    store.remove(config.name, keep_spare);
  };
  ScopeGuard undo_claim([&] { cleanup(false); });
  if (hooks.on_claimed) hooks.on_claimed(store.dir_of(config.name));

  MRUN_PHASE("run:claimed");
  // 2. Plan: storage, mounts (the id maps are planned already).
  subordinate = ids.kind == userns::MapKind::subordinate;
  state.subordinate_ids = subordinate;
  if (!storage.empty()) make_storage(ctx, storage);
  std::optional<net::NetworkFiles> network_files;
  if (mrun_connects_network(config.network)) {
    net::NetworkFilesInput input{config.hostname, config.run.allow_host_loopback};
    if (config.network == NetworkMode::bridge) {
      input.host_resolv_conf = sys::read_file("/etc/resolv.conf").value_or("");
    }
    network_files = net::write_network_files(store.dir_of(config.name), input);
  }
  // The leaf, with its limits, before clone: the child must never run unlimited.
  std::optional<cgroup::Leaf> leaf;
  if (cgroup_plan.use) {
    leaf.emplace(cgroup::Leaf::create(cgroup_plan, cgroup_req, ctx.log));
    state.cgroup = leaf->path();
  }
  // Or, rootful on a v1 or hybrid host, its v1 group, the same way.
  std::optional<cgroup::V1Group> v1_group;
  if (cgroup_plan.v1) {
    v1_group.emplace(cgroup::V1Group::create(*cgroup_plan.v1, ctx.log));
    state.cgroup_v1 = v1_group->dirs();
  }
  LaunchSpec spec =
      make_launch_spec(config, privilege, ids, storage, network_files,
                       leaf.has_value() || v1_group.has_value(), std::move(device_mounts), ctx);
  MRUN_PHASE("run:planned");
  spec.device_grants = device_access.wants_node_grants();
  spec.sibling_of_monitor = hooks.container_to_callers_reaper;
  if (hooks.on_created) {
    // 0622 (as runc): the command's user, whoever it maps to, reopens it for writing.
    spec.exec_fifo = store.dir_of(config.name) + "/exec.fifo";
    if (::mkfifo(spec.exec_fifo.c_str(), 0600) != 0 || ::chmod(spec.exec_fifo.c_str(), 0622) != 0) {
      throw_errno("create exec fifo " + spec.exec_fifo);
    }
  }

  // Destroyed (removed) after undo_child below has killed and reaped the container.
  std::optional<cgroup::DevicesV1Group> devices_v1;
  // 3. Clone the container into its namespaces; it waits for us on the sync socket.
  SignalBlock blocked_signals;
  UniqueFd self_pidfd = sys::pidfd_open(::getpid());
  auto [parent_end, child_end] = make_sync_pair();
  // Joined namespaces (OCI linux.namespaces[].path): entered around the clone alone, or
  // by the container itself where the monitor could not come back (namespace_join.hpp).
  NamespaceJoin joined(config.namespaces);
  const bool join_in_container = privilege.nested;
  // Nested, a joined PID namespace is entered by a first child that clones the container
  // there (clone_in_namespace): setns moves only the children, and the monitor could
  // not come back to its own.
  const int nested_pid_fd = join_in_container ? joined.pid_namespace_fd() : -1;
  if (nested_pid_fd >= 0 && config.namespaces.user.source == NamespaceSource::joined) {
    throw Error(
        "config.json: linux.namespaces (pid, user): joining both a PID and a user "
        "namespace from a user namespace mrun did not make is not supported",
        ENOTSUP, "join one of them, or give the container a PID namespace of its own");
  }
  std::vector<UniqueFd> idmapped = premake_idmapped_binds(spec.mounts, privilege, ids);
  UniqueFd joined_userns = open_joined_user_namespace(config);
  UniqueFd joined_mount = open_joined(config.namespaces.mount, CLONE_NEWNS, "mount");
  UniqueFd joined_time = open_joined(config.namespaces.time, CLONE_NEWTIME, "time");
  spec.join_mount_fd = joined_mount.get();
  spec.join_time_fd = joined_time.get();
  UniqueFd callers_mount = open_callers_mount_namespace(config.namespaces.mount);
  spec.callers_mount_fd = callers_mount.get();
  UniqueFd shared_userns;
  if (uses_shared_user_namespace(config, privilege, ids, hooks, joined)) {
    shared_userns = userns::shared_user_namespace(
        {store.root(), ids, userns::shared_userns_linger_seconds()}, ctx.log);
  }
  MRUN_PHASE("run:userns");
  if (!join_in_container) joined.enter();
  // A sibling for OCI create (see LaunchHooks::container_to_callers_reaper). The kernel
  // refuses CLONE_PARENT only from a pid namespace's init, which the monitor never is.
  const bool reap = !spec.sibling_of_monitor;
  auto run_container_main = [&] {
    parent_end.close();
    container_main(spec, child_end, self_pidfd, join_in_container ? &joined : nullptr);
  };
  sys::CloneResult child;
  bool mapped = false;
  if (shared_userns) {
    UniqueFd spare_net;
    if ((namespace_flags(spec) & CLONE_NEWNET) != 0) {
      spare_net = userns::receive_spare_network_namespace(spare_net_request, shared_userns.get());
    }
    child = clone_in_namespace(shared_userns.get(), CLONE_NEWUSER, namespace_flags(spec), !reap,
                               "clone the container into the shared user namespace",
                               "retry with --userns private", run_container_main, spare_net.get());
    shared_userns.reset();
    mapped = true;
  } else if (joined_userns) {
    child = clone_in_namespace(
        joined_userns.get(), CLONE_NEWUSER, namespace_flags(spec), !reap,
        "config.json: linux.namespaces (user): join " + config.namespaces.user.path,
        "mrun must hold CAP_SYS_ADMIN in that user namespace (rootless: one made by you)",
        run_container_main);
    mapped = true;
  } else if (nested_pid_fd >= 0) {
    child = clone_in_namespace(
        nested_pid_fd, CLONE_NEWPID, namespace_flags(spec), !reap,
        "config.json: linux.namespaces (pid): join " + config.namespaces.pid.path,
        "mrun must hold CAP_SYS_ADMIN in the user namespace that owns it", run_container_main);
  } else {
    child = reap ? sys::clone_with_pidfd(namespace_flags(spec), SIGCHLD)
                 : sys::clone_with_pidfd(namespace_flags(spec) | CLONE_PARENT, 0);
    if (child.pid == 0) run_container_main();
  }
  joined.leave();
  joined_mount.reset();
  joined_time.reset();
  callers_mount.reset();
  idmapped.clear();  // the container has its copies
  MRUN_PHASE("run:cloned");
  child_end.close();
  close_handed_over_fds(config);
  std::optional<sys::SpawnedProcess> fuse;
  auto kill_child = [&] {
    sys::pidfd_send_signal(child.pidfd.get(), SIGKILL);
    if (reap) {
      sys::wait_pidfd(child.pidfd.get());
    } else {
      sys::wait_pidfd_exit(child.pidfd.get());  // the caller reaps it
    }
    stop_fuse_overlay(fuse);
  };
  ScopeGuard undo_child(kill_child);

  // 4. Into its cgroup, map its ids (rootless: newuidmap/newgidmap), and let it set
  // itself up. The move comes first: the child has not run anything yet.
  if (leaf) leaf->add_process(child.pid);
  if (v1_group) v1_group->add_process(child.pid);
  // The device filter, now that the child is in the leaf and before it runs anything:
  // the command never runs unfiltered.
  // Rootful on a v1 or hybrid host the v1 devices controller does it, as with runc.
  devices_v1 = device_access.devices_v1_group(
      leaf.has_value(), v1_group ? v1_group->relative() : std::string(),
      "mrun-" + std::to_string(::getpid()) + "-" + config.name);
  if (devices_v1) {
    devices_v1->add_process(child.pid);
    state.device_filter = "v1";
    state.devices_v1 = devices_v1->path();
  } else {
    state.device_filter =
        device_access.attach_filter(leaf ? leaf->path() : "", cgroup_plan.why_not, child.pid);
  }
  // (A container in the shared user namespace has its maps already.)
  if (privilege.new_user_namespace && !mapped) userns::apply_id_maps(child.pid, ids);
  // The network comes up now, before the container goes on, so the command never runs
  // without it. Destroyed (stopped) before undo_child kills the container on failure.
  auto network =
      start_network(config, privilege, child.pid, store.dir_of(config.name), network_files, ctx);
  MRUN_PHASE("run:mapped");
  parent_end.send(ToContainer::ids_mapped);

  // 5. Serve its requests until it execs the command (EOF) or reports an error.
  UniqueFd pty_master;
  std::optional<Error> setup_error;
  bool held = false;  // OCI create: reported created, so its state outlives a failed exec
  state.overlay = config.run.overlay == OverlayMode::none ? "none" : "native";
  // What the container's setup may ask of the monitor, each once, as its config says;
  // anything else is refused. That code runs in the container's namespaces, on the
  // image's files: the monitor does for it only what the config asked for.
  std::set<ToMonitor> may_ask{ToMonitor::error};
  if (config.run.overlay != OverlayMode::none) may_ask.insert(ToMonitor::need_fuse);
  if (spec.device_grants) may_ask.insert(ToMonitor::need_device_grant);
  if (config.tty) may_ask.insert(ToMonitor::pty_master);
  if (config.hooks.any_before_start()) may_ask.insert(ToMonitor::create_hooks);
  if (hooks.on_created) may_ask.insert(ToMonitor::created);
  if (spec.security.seccomp && spec.security.seccomp->has_listener()) {
    may_ask.insert(ToMonitor::seccomp_listener);
  }
  while (auto message = parent_end.receive()) {
    if (may_ask.erase(message->type) == 0) {
      throw Error(std::string("container ") + config.name + ": unexpected setup message " +
                      message_name(message->type) + " (its config asks for none, or it came twice)",
                  EPROTO);
    }
    switch (message->type) {
      case ToMonitor::need_fuse:
        try {
          fuse = start_fuse_overlay(spec, child.pid, child.pidfd.get(), store.dir_of(config.name));
          state.overlay = "fuse";
          parent_end.send(ToContainer::fuse_ready);
        } catch (const Error&) {
          parent_end.send(ToContainer::fuse_failed);
          throw;
        }
        break;
      case ToMonitor::need_device_grant:
        device_access.grant_nodes(child.pid);
        parent_end.send(ToContainer::device_grants_done);
        break;
      case ToMonitor::pty_master:
        if (!message->fd)
          throw Error("container " + config.name + ": pty_master without a pty", EPROTO);
        if (!config.console_socket.empty()) {
          // The engine's console: it owns the master from now on; mrun relays nothing.
          sys::send_fd_to_socket(config.console_socket, message->fd.get(), "/dev/ptmx");
        } else {
          pty_master = std::move(message->fd);
          copy_window_size(pty_master.get());
        }
        parent_end.send(ToContainer::pty_ready);
        break;
      case ToMonitor::create_hooks: {
        // The container's namespaces exist and its mounts are made; pivot_root comes after.
        std::string json = hook_state(state, Status::creating, child.pid);
        run_hooks(config.hooks.prestart, "prestart", json);
        run_hooks(config.hooks.create_runtime, "createRuntime", json);
        parent_end.send(ToContainer::hooks_done, 0, hook_state(state, Status::created, child.pid));
        break;
      }
      case ToMonitor::error: setup_error = Error(message->text, 0, {}, message->value); break;
      case ToMonitor::seccomp_listener:
        try {
          pass_listener_to_agent(parent_end, *message, *spec.security.seccomp,
                                 hook_state(state, Status::creating, child.pid));
        } catch (const Error& e) {
          // It waits for the agent, which will never hear of it: it must not go on.
          sys::pidfd_send_signal(child.pidfd.get(), SIGKILL);
          if (!held) throw;
          setup_error = e;
        }
        break;
      case ToMonitor::created:
        // Held on the exec fifo: from now on `mrun start`, `kill` and `delete` own its fate,
        // so the record stays whatever happens.
        state.status = Status::created;
        state.pid = child.pid;
        state.pid_start = sys::process_start_time(child.pid);
        {
          StateLock lock(store.root());
          store.write(state);
        }
        held = true;
        undo_child.dismiss();
        undo_claim.dismiss();
        hooks.on_created(child.pid);

        break;
    }
  }
  // A filter with a listener hands it over before execve: an end without it is a process
  // that died first, unable to say why (a profile that denies sendmsg).
  if (may_ask.count(ToMonitor::seccomp_listener) != 0 && !setup_error) {
    setup_error = listener_never_came(*spec.security.seccomp);
  }
  // After `created`, a failed exec is the container's exit (recorded below), as in runc.
  if (setup_error && held) ctx.log.error(setup_error->what());
  if (setup_error && !held) throw *setup_error;

  MRUN_PHASE("run:exec-seen");
  // 6. Running: record it, then supervise until it exits.
  state.status = Status::running;
  state.pid = child.pid;
  state.pid_start = sys::process_start_time(child.pid);
  {
    StateLock lock(store.root());
    store.write(state);
  }
  undo_child.dismiss();
  undo_claim.dismiss();
  if (!held) run_poststart(config, oci_state_json(state, Status::running), ctx);
  if (hooks.on_started) hooks.on_started();

  if (network) network->watch(ctx.log);
  // While the command runs (time in which the monitor only waits), ready a kept storage
  // for a later container (runtime/storage.hpp). Not while the container mounts its
  // root: the rmdirs' discards on the same filesystem slow its overlay mount down
  // (bench/README.md).
  if (!storage.empty()) {
    try {
      tidy_spare_storage(ctx);
    } catch (const Error& e) {
      ctx.log.debug(std::string("tidying a spare storage: ") + e.what());
    }
  }
  MRUN_PHASE("run:recorded");
  int status = supervise(child.pidfd.get(), std::move(pty_master), reap);
  MRUN_PHASE("run:exited");
  if (network) network->stop();
  stop_fuse_overlay(fuse);
  // The kernel's OOM killer sends SIGKILL; say why, as podman's OOMKilled does.
  const std::uint64_t kills = leaf ? leaf->oom_kills() : v1_group ? v1_group->oom_kills() : 0;
  if (kills > 0) {
    ctx.log.error("container " + config.name + ": the kernel's OOM killer killed " +
                  std::to_string(kills) + " process(es) at its memory limit (--memory)");
    if (reap) status = 128 + SIGKILL;
  }
  // An engine's container (OCI create) keeps its cgroup until `delete`, as runc's does:
  // the engine reads the OOM kills there after the exit (containerd's shim watches
  // memory.events and reads it when told of a change), so removing it here races that.
  if (held) {
    if (leaf) leaf->keep();
    if (v1_group) v1_group->keep();
  }
  if (leaf && !held) {
    if (!leaf->remove()) ctx.log.warn("could not remove cgroup " + state.cgroup);
    state.cgroup.clear();
  }
  if (v1_group && !held) {
    if (!v1_group->remove()) ctx.log.warn("could not remove the cgroup v1 group of " + config.name);
    state.cgroup_v1.clear();
  }

  // 7. Record the exit (or remove everything with --rm).
  if (config.run.remove_on_exit) {
    cleanup(true);
  } else {
    StateLock lock(store.root());
    state.status = Status::stopped;
    state.exit_code = status;
    state.reaped_by_caller = !reap;
    state.finished = now_rfc3339();
    store.write(state);
  }
  MRUN_PHASE("run:cleaned");
  return status;
}

}  // namespace mrun::runtime
