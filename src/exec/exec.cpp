#include "exec/exec.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "base/phase_trace.hpp"
#include "base/strings.hpp"
#include "cgroup/v1_group.hpp"
#include "exec/cloned_binary.hpp"
#include "init/become_command.hpp"
#include "init/container_init.hpp"
#include "init/seccomp_agent.hpp"
#include "monitor/supervise.hpp"
#include "mount/devices.hpp"
#include "runtime/process_spec_json.hpp"
#include "runtime/sync_channel.hpp"
#include "security/security_plan.hpp"
#include "sys/fd_passing.hpp"
#include "sys/fs.hpp"
#include "sys/mounts.hpp"
#include "sys/namespaces.hpp"
#include "sys/processes.hpp"

namespace mrun::runtime {

using nlohmann::json;

std::vector<std::string> merge_env(std::vector<std::string> base,
                                   const std::vector<std::string>& extra) {
  for (const auto& entry : extra) {
    auto key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (auto& existing : base) {
      if (existing.substr(0, existing.find('=')) == key) {
        existing = entry;
        replaced = true;
        break;
      }
    }
    if (!replaced) base.push_back(entry);
  }
  return base;
}

UserSpec parse_exec_user(const std::string& text, const UserSpec& fallback) {
  auto parts = split(text, ':');
  auto bad = [&] {
    return Error("--user \"" + text + "\": expected UID[:GID], numeric", EINVAL,
                 "names are not looked up; give numbers as runc does");
  };
  if (parts.empty() || parts.size() > 2) throw bad();
  auto uid = parse_u64(parts[0]);
  if (!uid || *uid > 0xfffffffeULL) throw bad();
  // As runc: without a GID, the uid's primary group in the image (looked up inside).
  UserSpec user{static_cast<uid_t>(*uid), fallback.gid, true, fallback.additional_gids};
  if (parts.size() == 2) {
    user.gid_from_image = false;
    auto gid = parse_u64(parts[1]);
    if (!gid || *gid > 0xfffffffeULL) throw bad();
    user.gid = static_cast<gid_t>(*gid);
  }
  return user;
}

namespace {

struct Joined {
  int nstypes = 0;
  bool may_setgroups = true;
};

// The namespaces of `pid` this process is not in already (setns refuses to "join" one's
// own user namespace), and whether its user namespace allows setgroups.
Joined namespaces_to_join(pid_t pid) {
  static const std::pair<const char*, int> kinds[] = {
      {"user", CLONE_NEWUSER},    {"mnt", CLONE_NEWNS},  {"pid", CLONE_NEWPID},
      {"uts", CLONE_NEWUTS},      {"ipc", CLONE_NEWIPC}, {"net", CLONE_NEWNET},
      {"cgroup", CLONE_NEWCGROUP}};
  Joined joined;
  for (const auto& [name, flag] : kinds) {
    if (!sys::same_namespace(pid, name)) joined.nstypes |= flag;
  }
  auto setgroups = sys::read_file("/proc/" + std::to_string(pid) + "/setgroups");
  joined.may_setgroups = !setgroups || trim(*setgroups) != "deny";
  return joined;
}

// A container in its caller's mount namespace (no mount entry in its config) has a root
// that joining its namespaces does not give: the process takes its init's. runc's exec
// keeps the host's root there; the container's own files are what exec promises.
UniqueFd root_to_enter(pid_t pid, const Joined& joined) {
  if ((joined.nstypes & CLONE_NEWNS) != 0) return {};
  const std::string path = "/proc/" + std::to_string(pid) + "/root";
  UniqueFd root(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) throw_errno("open " + path + " (the container's root)");
  return root;
}

// The process itself, inside every namespace of the container (its mount namespace and
// root too: /etc/passwd is the container's own file).
[[noreturn]] void exec_process(const ExecRequest& request, const security::SecurityPlan& plan,
                               bool may_setgroups, const ContainerEnd& sync) {
  ::setsid();
  const ProcessSpec& process = request.process;
  if (process.terminal) attach_new_pty(sync, false);
  if (::chdir(process.cwd.c_str()) != 0) throw_errno("change to working directory " + process.cwd);
  become_command({process, may_setgroups, request.preserve_fds}, plan, sync);
}

[[noreturn]] void report(const ContainerEnd& sync, const Error& e) {
  try {
    sync.send(ToMonitor::error, e.exit_status(), e.what());
  } catch (...) {
  }
  ::_exit(e.exit_status());
}

void write_pid_file(const std::string& path, pid_t pid) {
  sys::write_file_atomic(path, std::to_string(pid), 0644);
}

}  // namespace

namespace {

// `mrun exec` in the order it runs; each stage's results are members, declared in
// stage order, so that a failure destroys (closes, unblocks) them in reverse.
//
//   check_request ─ plan ─ clone_joiner ─ serve_setup ─ hand_over_or_wait
//
// The joiner (a child of mrun exec) enters the container's cgroup and namespaces and
// clones the process with CLONE_PARENT; it exits at once, and the process, mrun exec's
// own child, reports through the sync channel.
class ExecLaunch {
 public:
  ExecLaunch(const ContainerState& state, const ExecRequest& request, const ExecDefaults& defaults,
             const Context& ctx)
      : state_(state), request_(request), defaults_(defaults), ctx_(ctx) {}

  int run() {
    check_request();
    plan();
    clone_joiner();
    serve_setup();
    return hand_over_or_wait();
  }

 private:
  void check_request() const;
  void plan();
  void clone_joiner();
  [[noreturn]] void join_and_clone_process();
  void serve_setup();
  void handle(SyncMessage<ToMonitor>& message);
  void pass_listener(const SyncMessage<ToMonitor>& message);
  int hand_over_or_wait();

  const ContainerState& state_;
  const ExecRequest& request_;
  const ExecDefaults& defaults_;
  const Context& ctx_;

  // plan: compiled and looked up before anything runs (a bad profile fails with 125).
  security::SecurityPlan plan_;
  UniqueFd target_;
  Joined joined_;
  UniqueFd container_root_;

  // clone_joiner: signals blocked until the process runs (then forwarded, never lost).
  std::optional<SignalBlock> blocked_signals_;
  MonitorEnd parent_end_;
  ContainerEnd child_end_;

  // serve_setup: what the joiner and the process report, each once.
  std::set<ToMonitor> may_report_;
  UniqueFd process_pidfd_;
  pid_t process_pid_ = 0;
  UniqueFd pty_master_;
  std::optional<Error> failure_;
  // The process's listener may come before the joiner reported the process (two
  // senders, one socket): it waits until `created` gives the pidfd to kill it by.
  std::optional<SyncMessage<ToMonitor>> pending_listener_;
};

void ExecLaunch::check_request() const {
  switch (effective_status(state_)) {
    case Status::running: break;
    case Status::stopped: throw Error("cannot exec in a stopped container");
    case Status::created:
      throw Error("cannot exec in a created container", 0,
                  "start it first with `mrun start " + state_.name + "`");
    case Status::creating: throw Error("cannot exec in a container that is being created");
  }
  const ProcessSpec& process = request_.process;
  if (process.args.empty()) throw Error("exec: no command given", EINVAL, "give ID COMMAND...");
  if (process.terminal && request_.detach && request_.console_socket.empty()) {
    throw Error("cannot allocate a tty when detaching without --console-socket", EINVAL);
  }
  if (!request_.console_socket.empty() && !process.terminal) {
    throw Error("--console-socket needs a terminal", EINVAL, "add --tty");
  }
}

void ExecLaunch::plan() {
  // Nothing of the host's mrun binary the container could write may be reachable from
  // it while we are in it (CVE-2019-5736, see cloned_binary.hpp). `mrun exec` did this
  // first thing; this returns at once then, and protects any other caller.
  protect_binary_before_joining(state_.pid);
  MRUN_PHASE("exec:protected");
  plan_ = security::prepare_security_plan(request_.process.security, request_.process.user.uid,
                                          defaults_.host_capabilities, ctx_.log,
                                          ctx_.data_root + "/cache/seccomp");
  MRUN_PHASE("exec:planned");
  target_ = sys::pidfd_open(state_.pid);
  if (!process_alive(state_.pid, state_.pid_start)) {
    throw Error("cannot exec in a stopped container");
  }
  joined_ = namespaces_to_join(state_.pid);
  container_root_ = root_to_enter(state_.pid, joined_);
  MRUN_PHASE("exec:looked-up");
}

void ExecLaunch::clone_joiner() {
  blocked_signals_.emplace();
  std::tie(parent_end_, child_end_) = make_sync_pair();
  auto joiner = sys::clone_with_pidfd(0, SIGCHLD);
  if (joiner.pid == 0) {
    parent_end_.close();
    try {
      join_and_clone_process();
    } catch (const Error& e) {
      report(child_end_, e);
    } catch (const std::exception& e) {
      report(child_end_, Error(e.what()));
    }
  }
  child_end_.close();
  sys::wait_pidfd(joiner.pidfd.get());
  MRUN_PHASE("exec:middle-done");
}

// In the joiner: into the container's cgroups and namespaces, then the process.
void ExecLaunch::join_and_clone_process() {
  // process.oomScoreAdj first: a non-dumpable process cannot open its own
  // /proc/self/oom_score_adj from inside a rootless container (become_command.hpp);
  // written here, on the host side, the process cloned below inherits it.
  if (request_.process.oom_score_adj) set_oom_score_adj(*request_.process.oom_score_adj);
  // Defence in depth, until the process execs (execve makes it dumpable again): a
  // non-dumpable process's /proc/PID files belong to root of the user namespace its
  // memory was made in (the host's, for mrun), and /proc/PID/exe, fd/, mem, environ
  // need ptrace access, which takes CAP_SYS_PTRACE there. The container's root does
  // not have it, so it cannot even open this process's exe, sealed copy or not.
  // (Inherited by the clone below: the flag belongs to the memory, which is copied.)
  sys::set_dumpable(false);
  const std::string self = std::to_string(::getpid());
  if (!state_.cgroup.empty()) sys::write_file(state_.cgroup + "/cgroup.procs", self);
  // On cgroup v1, every hierarchy of its group, and its devices group, as runc.
  for (const auto& dir : cgroup::v1_unique_dirs(state_.cgroup_v1)) {
    sys::write_file(dir + "/cgroup.procs", self);
  }
  if (!state_.devices_v1.empty()) sys::write_file(state_.devices_v1 + "/cgroup.procs", self);
  sys::setns_pidfd(target_.get(), joined_.nstypes, "container " + state_.name);
  if (container_root_) {
    sys::chroot_to(container_root_.get(), "container " + state_.name + "'s root");
  }
  // CLONE_PARENT: the process is mrun exec's child (waitable, its signals forwarded),
  // and the first in the container's pid namespace this process cannot enter itself.
  auto process = sys::clone_with_pidfd(CLONE_PARENT, 0);
  if (process.pid == 0) {
    try {
      exec_process(request_, plan_, joined_.may_setgroups, child_end_);
    } catch (const Error& e) {
      report(child_end_, e);
    } catch (const std::exception& e) {
      report(child_end_, Error(e.what()));
    }
  }
  child_end_.send(ToMonitor::created, process.pid, "", process.pidfd.get());
  ::_exit(0);
}

void ExecLaunch::serve_setup() {
  may_report_ = {ToMonitor::created, ToMonitor::error};
  if (request_.process.terminal) may_report_.insert(ToMonitor::pty_master);
  if (plan_.seccomp && plan_.seccomp->has_listener()) {
    may_report_.insert(ToMonitor::seccomp_listener);
  }
  while (auto message = parent_end_.receive()) {
    // Anything not asked for, or asked twice, is refused (it ran in the container's
    // namespaces).
    if (may_report_.erase(message->type) == 0) {
      throw Error(std::string("exec in container ") + state_.name + ": unexpected setup message " +
                      message_name(message->type),
                  EPROTO);
    }
    handle(*message);
  }
  // As in the launcher: a listener never handed over is a process that died first.
  if (may_report_.count(ToMonitor::seccomp_listener) != 0 && !failure_) {
    failure_ = listener_never_came(*plan_.seccomp);
  }
}

void ExecLaunch::handle(SyncMessage<ToMonitor>& message) {
  switch (message.type) {
    case ToMonitor::created:
      if (!message.fd) throw Error("exec: the process was reported without its pidfd", EPROTO);
      process_pid_ = message.value;
      process_pidfd_ = std::move(message.fd);
      if (pending_listener_) pass_listener(*std::exchange(pending_listener_, std::nullopt));
      break;
    case ToMonitor::seccomp_listener:
      if (process_pidfd_) {
        pass_listener(message);
      } else {
        pending_listener_ = std::move(message);
      }
      break;
    case ToMonitor::pty_master:
      if (!message.fd) throw Error("exec: pty_master without a pty", EPROTO);
      if (!request_.console_socket.empty()) {
        sys::send_fd_to_socket(request_.console_socket, message.fd.get(), "/dev/ptmx");
      } else {
        pty_master_ = std::move(message.fd);
        copy_window_size(pty_master_.get());
      }
      break;
    case ToMonitor::error: failure_ = Error(message.text, 0, {}, message.value); break;
    default: break;  // not in may_report_
  }
}

void ExecLaunch::pass_listener(const SyncMessage<ToMonitor>& message) {
  try {
    pass_listener_to_agent(parent_end_, message, *plan_.seccomp,
                           oci_state_json(state_, Status::running));
  } catch (const Error&) {
    // It waits for the agent, which will never hear of it: it must not go on.
    sys::pidfd_send_signal(process_pidfd_.get(), SIGKILL);
    sys::wait_pidfd(process_pidfd_.get());
    throw;
  }
}

int ExecLaunch::hand_over_or_wait() {
  if (failure_) {
    if (process_pidfd_) sys::wait_pidfd(process_pidfd_.get());
    throw *failure_;
  }
  if (!process_pidfd_) throw Error("exec: the process in container " + state_.name + " was lost");
  if (!request_.pid_file.empty()) write_pid_file(request_.pid_file, process_pid_);
  if (request_.detach) return 0;
  MRUN_PHASE("exec:exec-seen");
  int status = supervise(process_pidfd_.get(), std::move(pty_master_));
  MRUN_PHASE("exec:exited");
  return status;
}

}  // namespace

int exec_in_container(const ContainerState& state, const ExecRequest& request,
                      const ExecDefaults& defaults, const Context& ctx) {
  return ExecLaunch(state, request, defaults, ctx).run();
}

}  // namespace mrun::runtime
