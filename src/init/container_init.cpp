#include "init/container_init.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "base/error.hpp"
#include "base/phase_trace.hpp"
#include "base/strings.hpp"
#include "init/become_command.hpp"
#include "init/exec_fifo.hpp"
#include "init/reaper.hpp"
#include "mount/console.hpp"
#include "mount/mount_apply.hpp"
#include "runtime/hooks.hpp"
#include "sys/fs.hpp"
#include "sys/mount_fd.hpp"
#include "sys/mounts.hpp"
#include "sys/namespaces.hpp"
#include "sys/processes.hpp"
#include "sys/procfs.hpp"

namespace mrun::runtime {

namespace {

// Once the maps are written, root of the container's user namespace, as runc's init
// becomes: with mrun's own maps the caller already is (container 0 is the caller), with
// a config's own maps (linux.uidMappings) the ids this process was cloned with may map
// to nothing there, and a file it made would have no owner (EOVERFLOW). A map without
// container 0 leaves it as it is.
void wait_for_id_maps(const LaunchSpec& spec, const ContainerEnd& sync) {
  sync.expect(ToContainer::ids_mapped);
  if (!spec.privilege.new_user_namespace) return;
  if (::setresgid(0, 0, 0) != 0 && errno != EINVAL) throw_errno("become gid 0 in the container");
  if (::setresuid(0, 0, 0) != 0 && errno != EINVAL) throw_errno("become uid 0 in the container");
  // A change of ids made the process non-dumpable, and its /proc files the host root's,
  // whom this user namespace does not map: as dumpable as it is with mrun's own maps
  // (where these calls change nothing), so that it can still write /proc/self/... .
  sys::set_dumpable(true);
}

// Whether setgroups(2) is allowed here: mrun knows for the maps it writes; a user
// namespace joined by path says so in its own setgroups file ("deny" where an
// unprivileged writer mapped it, as `unshare --map-root-user` does).
bool setgroups_allowed(const LaunchSpec& spec) {
  if (!spec.joined_user_namespace) return spec.may_setgroups;
  UniqueFd file = sys::open_own_proc_file("setgroups", O_RDONLY);
  char text[16] = {};
  ssize_t n = ::read(file.get(), text, sizeof text - 1);
  return n <= 0 ||
         std::string_view(text, static_cast<std::size_t>(n)).find("deny") == std::string_view::npos;
}

void drop_host_groups(const LaunchSpec& spec, bool may_setgroups) {
  // The caller's supplementary groups are unmapped in the namespace (they show as
  // nogroup); drop them, as podman does. With a single-ID map setgroups is denied by the
  // kernel (a user namespace made without newgidmap has setgroups "deny") and the
  // groups stay, so a group-owned node stays reachable through them.
  // --keep-groups keeps them (podman's --group-add keep-groups): the kernel checks a
  // node's group against the real kgid, so a root:fakegpu 0660 node stays usable.
  if (spec.config.process.keep_groups) return;
  if (may_setgroups && ::setgroups(0, nullptr) != 0) throw_errno("drop supplementary groups");
}

// linux.namespaces (mount, time) joined by path, and a new time namespace with
// linux.timeOffsets. The new one is made with unshare, not at clone: offsets can only be
// written while no process is in it, and the command enters it at execve (the kernel
// moves a process into its time_for_children namespace there), as --init's forked
// command does at fork.
void set_up_mount_and_time_namespaces(const LaunchSpec& spec) {
  if (spec.join_mount_fd >= 0) {
    if (int err = sys::setns_fd(spec.join_mount_fd, CLONE_NEWNS); err != 0) {
      throw_errno(
          err, "config.json: linux.namespaces (mount): join " + spec.config.namespaces.mount.path,
          "the container must hold CAP_SYS_ADMIN in the user namespace owning it");
    }
    ::close(spec.join_mount_fd);
  }
  if (spec.join_time_fd >= 0) {
    if (int err = sys::setns_fd(spec.join_time_fd, CLONE_NEWTIME); err != 0) {
      throw_errno(err,
                  "config.json: linux.namespaces (time): join " + spec.config.namespaces.time.path,
                  "the container must hold CAP_SYS_ADMIN in the user namespace owning it");
    }
    ::close(spec.join_time_fd);
  }
  if (spec.config.namespaces.time.source != NamespaceSource::fresh) return;
  sys::unshare_namespaces(CLONE_NEWTIME,
                          "config.json: linux.namespaces (time): make a time namespace",
                          "the kernel needs time namespaces (Linux 5.6, CONFIG_TIME_NS)");
  std::string offsets;
  auto line = [&](const char* clock, const std::optional<TimeOffset>& offset) {
    if (offset) {
      offsets += std::string(clock) + " " + std::to_string(offset->secs) + " " +
                 std::to_string(offset->nanosecs) + "\n";
    }
  };
  line("monotonic", spec.config.monotonic_offset);
  line("boottime", spec.config.boottime_offset);
  if (offsets.empty()) return;
  UniqueFd file = sys::open_own_proc_file("timens_offsets", O_WRONLY);
  if (::write(file.get(), offsets.data(), offsets.size()) != static_cast<ssize_t>(offsets.size())) {
    throw_errno("config.json: linux.timeOffsets: write /proc/self/timens_offsets",
                "the offsets must keep the clocks within the kernel's limits");
  }
}

// Through the host's /proc, before pivot_root (the container's /proc/sys is read-only):
// a namespaced sysctl file shows the writer's own network or IPC namespace.
void write_sysctls(const LaunchSpec& spec) {
  for (const auto& [key, value] : spec.config.sysctl) {
    std::string relative = key;
    std::replace(relative.begin(), relative.end(), '.', '/');
    try {
      sys::write_proc_sys(relative, value);
    } catch (const Error& e) {
      throw e.wrap("sysctl " + key + "=" + value);
    }
  }
}

void mount_rootfs(const LaunchSpec& spec, const ContainerEnd& sync) {
  const auto& layers = spec.layers;
  const bool in_userns = spec.privilege.new_user_namespace || spec.privilege.nested;
  switch (spec.overlay) {
    case OverlayMode::none:
      sys::bind_mount(layers.lower, layers.merged, true);
      spec.log.debug("overlay: none (writes go to " + layers.lower + ")");
      return;
    case OverlayMode::native:
    case OverlayMode::automatic: {
      std::string failure = mount::try_native_overlay(layers, in_userns, spec.volatile_upper);
      if (failure.empty()) {
        spec.log.debug("overlay: native");
        return;
      }
      if (spec.overlay == OverlayMode::native) {
        throw Error(failure, 0, "the kernel refused overlayfs here; retry with --overlay=fuse");
      }
      spec.log.debug("native overlay failed (" + failure + "); using fuse-overlayfs");
      sync.send(ToMonitor::need_fuse, 0, failure);
      break;
    }
    case OverlayMode::fuse:
      sync.send(ToMonitor::need_fuse, 0, "requested with --overlay=fuse");
      break;
  }
  auto reply = sync.receive();
  if (!reply || reply->type != ToContainer::fuse_ready) ::_exit(exit_code::runtime_error);
  // fuse-overlayfs serves the rootfs from this mount namespace using host paths. Our
  // pivot_root would move its root too (pivot_root re-roots every process of the
  // namespace whose root is the old one), so the container moves on to a copy of the
  // namespace and leaves the daemon behind in the original, as podman's pause
  // namespace does.
  sys::unshare_namespaces(CLONE_NEWNS, "enter a mount namespace of the container's own");
  spec.log.debug("overlay: fuse");
}

// linux.namespaces without a mount entry: the container shares the caller's mount
// namespace, as runc's does, but its rootfs and config.mounts were made in a namespace of
// its own, which it now leaves keeping (a copy of) that root. Nothing is ever mounted in
// the caller's namespace, so nothing is left there however mrun ends; the mounts go with
// the last process whose root they are. After the last mount (the console's): the root
// lies in no namespace from here on, and mount(2) refuses paths there.
void enter_callers_mount_namespace(const LaunchSpec& spec) {
  if (spec.callers_mount_fd < 0) return;
  if (int err = sys::enter_mount_namespace_keeping_root(spec.callers_mount_fd); err != 0) {
    throw_errno(err, "config.json: linux.namespaces: enter the caller's mount namespace",
                "add {\"type\": \"mount\"} to linux.namespaces");
  }
  ::close(spec.callers_mount_fd);
}

void prepare_workdir(const std::string& workdir) {
  try {
    sys::make_dirs(workdir, 0755);
  } catch (const Error& e) {
    throw Error("working directory " + workdir + " cannot be made in the container",
                e.errno_value(),
                "give a directory of the image with -w (process.cwd), or a path that can be one");
  }
  if (::chdir(workdir.c_str()) != 0) throw_errno("change to working directory " + workdir);
  // CVE-2024-21626: a cwd such as /proc/self/fd/N reaches whatever that descriptor is.
  // None of mrun's should be a directory outside the root by now, but the check is what
  // makes that sure: getcwd fails (ENOENT) for a directory the root cannot reach.
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr || cwd[0] != '/') {
    throw Error("working directory " + workdir + " is outside the container", EPERM,
                "give a path inside the container with -w (process.cwd)");
  }
}

// After the last credential change (which clears it): die with mrun. If mrun died
// already, the signal was never armed, so check through its pidfd. A sibling of the
// monitor (OCI create) arms no signal: its parent is `mrun create`, which exits.
void die_with_parent(const LaunchSpec& spec, const UniqueFd& parent_pidfd) {
  if (!spec.sibling_of_monitor) sys::set_parent_death_signal(SIGKILL);
  struct pollfd p {
    parent_pidfd.get(), POLLIN, 0
  };
  if (::poll(&p, 1, 0) > 0) ::_exit(exit_code::runtime_error);
}

// OCI create: opened O_PATH while the host's state dir is still reachable and ours (before
// the id maps and pivot_root); reopened for writing through /proc/self/fd in
// wait_for_start.
UniqueFd open_exec_fifo(const LaunchSpec& spec) {
  if (spec.exec_fifo.empty()) return {};
  UniqueFd fd(::open(spec.exec_fifo.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) throw_errno("open exec fifo " + spec.exec_fifo);
  return fd;
}

// Tells the parent we are set up, then blocks until `mrun start` opens the fifo for
// reading. After the credential and capability steps (so `start` releases exactly the
// process that will exec), before seccomp (which judges only the command).
// startContainer hooks run between the open and the go byte: a failing hook makes `mrun
// start` fail, as the spec asks, with the hook's error, which only `start` is left to
// report (init/exec_fifo.hpp).
void wait_for_start(const LaunchSpec& spec, const ContainerEnd& sync, const UniqueFd& exec_fifo,
                    const std::string& state_json) {
  if (!exec_fifo) {
    run_hooks(spec.config.hooks.start_container, "startContainer", state_json);
    return;
  }
  sync.send(ToMonitor::created);
  std::string path = "/proc/self/fd/" + std::to_string(exec_fifo.get());
  UniqueFd writer;
  do {
    writer.reset(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  } while (!writer && errno == EINTR);
  if (!writer) throw_errno("open exec fifo for writing");
  try {
    run_hooks(spec.config.hooks.start_container, "startContainer", state_json);
  } catch (const Error& e) {
    std::string record = start_failure_record(e.what());
    [[maybe_unused]] ssize_t n = ::write(writer.get(), record.data(), record.size());
    throw;
  }
  if (::write(writer.get(), &exec_fifo_go, 1) != 1) throw_errno("write exec fifo");
}

// create: the caller's stdio (an engine's pipes) become the command's 0, 1, 2.
void attach_stdio(const LaunchSpec& spec) {
  for (int i = 0; i < 3; ++i) {
    int fd = spec.config.stdio_fds[static_cast<std::size_t>(i)];
    if (fd >= 0 && ::dup2(fd, i) < 0) throw_errno("attach the caller's fd " + std::to_string(i));
  }
}

// prestart/createRuntime by mrun (runtime namespaces), then createContainer here (the
// container's namespaces, before pivot_root so that host paths resolve). Returns the
// state JSON for startContainer; empty when there are no hooks before start.
std::string run_create_hooks(const LaunchSpec& spec, const ContainerEnd& sync) {
  if (!spec.config.hooks.any_before_start()) return {};
  sync.send(ToMonitor::create_hooks);
  auto reply = sync.expect(ToContainer::hooks_done);
  run_hooks(spec.config.hooks.create_container, "createContainer", reply.text);
  return reply.text;
}

void join_new_keyring(const LaunchSpec& spec) {
  if (!spec.config.new_keyring) return;
  int err = sys::join_session_keyring(session_keyring_name(spec.config.name));
  // As runc: a kernel without keyrings, a seccomp filter outside denying keyctl, or the
  // caller's key quota (kernel.keys.maxkeys) used up is not an error; the container then shares the
  // session keyring it inherited.
  if (err == ENOSYS || err == EPERM || err == EACCES || err == EDQUOT) {
    spec.log.debug(std::string("no new session keyring: ") + std::strerror(err));
  } else if (err != 0) {
    throw_errno(err, "join a new session keyring", "use --no-new-keyring");
  }
}

// The shared sequence of run and exec (init/become_command.hpp: user, groups,
// rlimits, capabilities, seccomp last), with the container's own steps before the
// filter: die with mrun once the credentials are final, and (OCI create) wait for start.
[[noreturn]] void exec_command(const LaunchSpec& spec, const ContainerEnd& sync,
                               const UniqueFd& parent_pidfd, const UniqueFd& exec_fifo,
                               const std::string& state_json, bool may_setgroups) {
  const CommandProcess process{spec.config.process, may_setgroups, spec.config.preserve_fds};
  become_command(process, spec.security, sync, [&] {
    die_with_parent(spec, parent_pidfd);
    wait_for_start(spec, sync, exec_fifo, state_json);
  });
}

// --init: PID 1 becomes mrun's reaper and the command runs as its child (PID 2). The
// command goes on only once PID 1 is confined (non-dumpable, CAP_KILL alone, the
// command's seccomp filter): never is there a moment when the command runs beside an
// unconfined, ptraceable PID 1. Non-dumpable is set before the fork, so that PID 1 is
// never dumpable at all; the command's exec makes it dumpable again, as for any program.
void become_reaper_and_fork_command(const LaunchSpec& spec, const ContainerEnd& sync,
                                    const UniqueFd& parent_pidfd) {
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) throw_errno("pipe for --init");
  UniqueFd gate_read(gate[0]), gate_write(gate[1]);
  sys::set_dumpable(false);
  const pid_t reaper = ::getpid();
  pid_t command = ::fork();
  if (command < 0) sys::throw_process_creation_error(errno, "fork the command under --init");
  if (command > 0) {
    gate_read.reset();
    security::confine_reaper(spec.security);
    gate_write.reset();  // end-of-file: the command may go on
    run_reaper(command, sync, parent_pidfd, !spec.sibling_of_monitor);
  }
  gate_write.reset();
  char byte = 0;
  ssize_t n;
  do {
    n = ::read(gate_read.get(), &byte, 1);
  } while (n < 0 && errno == EINTR);
  // PID 1 died while confining itself (it reported why): the command must not run.
  if (::getppid() != reaper) ::_exit(exit_code::runtime_error);
}

[[noreturn]] void report_and_exit(const ContainerEnd& sync, const Error& e) {
  try {
    sync.send(ToMonitor::error, e.exit_status(), e.what());
  } catch (...) {
    // The parent is gone; nobody to tell.
  }
  ::_exit(e.exit_status());
}

}  // namespace

std::string session_keyring_name(const std::string& id) {
  return "_ses." + id;
}

void container_main(const LaunchSpec& spec, const ContainerEnd& sync, const UniqueFd& parent_pidfd,
                    const NamespaceJoin* join) {
  try {
    MRUN_PHASE("init:start");
    // Its own session: terminal signals reach mrun, which forwards them once.
    ::setsid();
    // Before the maps: until then this process acts on files with mrun's own ids, which
    // own the state dir. A config may map container root to another host id (0 -> 1000
    // while mrun is root), which could not even traverse that dir; nor could a process
    // that joined another mount namespace find it.
    UniqueFd exec_fifo = open_exec_fifo(spec);
    wait_for_id_maps(spec, sync);
    MRUN_PHASE("init:mapped");
    if (join) join->enter_for_good();
    set_up_mount_and_time_namespaces(spec);
    // Now inside the leaf (the parent moved us before ids_mapped): a cgroup namespace
    // made here has the leaf as its root. Needs CAP_SYS_ADMIN in our user namespace,
    // which we hold as its root once the maps are written.
    if (spec.own_cgroup && spec.config.namespaces.cgroup.source == NamespaceSource::fresh) {
      sys::unshare_namespaces(CLONE_NEWCGROUP,
                              "enter a cgroup namespace rooted at the container's cgroup");
    }
    const bool may_setgroups = setgroups_allowed(spec);
    drop_host_groups(spec, may_setgroups);
    sys::make_rprivate("/");
    write_sysctls(spec);
    mount_rootfs(spec, sync);
    MRUN_PHASE("init:rootfs");
    mount::apply_mount_plan(spec.layers.merged, spec.mounts, spec.log);
    MRUN_PHASE("init:mounts");
    std::string state_json = run_create_hooks(spec, sync);
    if (spec.config.no_pivot) {
      sys::move_root_into(spec.layers.merged);
    } else {
      sys::pivot_into(spec.layers.merged);
    }
    mount::apply_root_propagation(spec.mounts);
    MRUN_PHASE("init:pivoted");
    if (spec.device_grants) {
      sync.send(ToMonitor::need_device_grant);
      sync.expect(ToContainer::device_grants_done);
    }
    // Only when given (runc's rule: an engine's empty hostname leaves the UTS
    // namespace's, which a joined pod namespace has set already).
    if (!spec.config.hostname.empty()) sys::set_hostname(spec.config.hostname);
    if (!spec.config.domainname.empty()) sys::set_domainname(spec.config.domainname);
    // A new network namespace's loopback is down; a joined one is its owner's.
    if (spec.config.network != NetworkMode::host &&
        spec.config.namespaces.network.source == NamespaceSource::fresh) {
      sys::bring_loopback_up();
    }
    join_new_keyring(spec);
    if (spec.config.process.terminal) {
      attach_new_pty(sync, true, true);
    } else {
      attach_stdio(spec);
    }
    enter_callers_mount_namespace(spec);
    prepare_workdir(spec.config.process.cwd);
    // While still dumpable (--init's PID 1 is not, and then cannot open its own file):
    // the reaper and the command share it (init/become_command.hpp).
    if (spec.config.process.oom_score_adj) set_oom_score_adj(*spec.config.process.oom_score_adj);
    if (spec.config.run.init) become_reaper_and_fork_command(spec, sync, parent_pidfd);
    exec_command(spec, sync, parent_pidfd, exec_fifo, state_json, may_setgroups);
  } catch (const Error& e) {
    report_and_exit(sync, e);
  } catch (const std::exception& e) {
    report_and_exit(sync, Error(e.what()));
  }
}

void attach_new_pty(const ContainerEnd& sync, bool wait_until_ready, bool console) {
  UniqueFd master(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master) throw_errno("open /dev/ptmx in the container");
  if (::unlockpt(master.get()) != 0) throw_errno("unlock pty");
  int slave = ::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY);
  if (slave < 0) throw_errno("open pty slave");
  if (console) {
    try {
      mount::bind_console(slave);
    } catch (...) {
      ::close(slave);
      throw;
    }
  }
  sync.send(ToMonitor::pty_master, 0, "", master.get());
  master.reset();
  if (wait_until_ready) sync.expect(ToContainer::pty_ready);
  if (::ioctl(slave, TIOCSCTTY, 0) != 0) throw_errno("make the pty the controlling terminal");
  for (int fd = 0; fd < 3; ++fd) {
    if (::dup2(slave, fd) < 0) throw_errno("attach pty to fd " + std::to_string(fd));
  }
  if (slave > 2) ::close(slave);
}

}  // namespace mrun::runtime
