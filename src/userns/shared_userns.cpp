#include "userns/shared_userns.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"
#include "userns/apply_idmap.hpp"
#include "userns/spare_netns.hpp"
#include "userns/userns_holder.hpp"

namespace mrun::userns {

namespace {

std::string record_path(const std::string& state_root) {
  return state_root + "/.userns";
}

// A small file of a process directory, read by fd (the directory pinned first).
std::string read_at(int dirfd, const char* name) {
  UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  std::string content;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) content.append(buf, static_cast<size_t>(n));
  return content;
}

// /proc/PID/uid_map's triples, however the kernel pads them.
std::vector<IdMapEntry> parse_map(const std::string& text) {
  std::vector<IdMapEntry> entries;
  for (const auto& line : split(text, '\n')) {
    unsigned long inside = 0, outside = 0, count = 0;
    if (std::sscanf(line.c_str(), "%lu %lu %lu", &inside, &outside, &count) == 3) {
      entries.push_back({static_cast<std::uint32_t>(inside), static_cast<std::uint32_t>(outside),
                         static_cast<std::uint32_t>(count)});
    }
  }
  return entries;
}

// The process the record names, checked to be a living holder of the caller's: its
// user namespace, pidfd and maps; an invalid ns and *why say what did not hold.
struct RecordedHolder {
  pid_t pid = -1;
  UniqueFd pidfd;
  UniqueFd ns;
  std::string uid_map, gid_map, setgroups;
};

RecordedHolder recorded_holder(const std::string& record, std::string* why) {
  RecordedHolder h;
  auto text = sys::read_file(record);
  if (!text) {
    *why = "none is running";
    return h;
  }
  long long pid = 0;
  unsigned long long start = 0;
  if (std::sscanf(text->c_str(), "%lld %llu", &pid, &start) != 2 || pid <= 1) {
    *why = "its record " + record + " is unreadable";
    return h;
  }
  h.pid = static_cast<pid_t>(pid);
  const std::string gone = "the one recorded (pid " + std::to_string(pid) + ") is gone";
  // The pidfd first: if that process is still alive once everything below was read,
  // the pid was never reused in between, so all of it was the holder's.
  h.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, h.pid, 0)));
  const std::string proc = "/proc/" + std::to_string(pid);
  UniqueFd procdir(::open(proc.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!h.pidfd || !procdir) {
    *why = gone;
    return h;
  }
  UniqueFd ns(::openat(procdir.get(), "ns/user", O_RDONLY | O_CLOEXEC));
  h.uid_map = read_at(procdir.get(), "uid_map");
  h.gid_map = read_at(procdir.get(), "gid_map");
  h.setgroups = read_at(procdir.get(), "setgroups");
  // A zombie still answers signal 0 and shows its namespace: a holder that exited
  // under a parent that has not reaped it yet is gone all the same.
  const sys::ProcessStat stat = sys::process_stat(h.pid);
  if (!ns || stat.start_time != start || stat.state == 'Z' || stat.state == 'X' ||
      ::syscall(SYS_pidfd_send_signal, h.pidfd.get(), 0, nullptr, 0) != 0) {
    *why = gone;
    return h;
  }
  uid_t owner = static_cast<uid_t>(-1);
  UniqueFd parent(::ioctl(ns.get(), NS_GET_PARENT));
  if (::ioctl(ns.get(), NS_GET_OWNER_UID, &owner) != 0 || owner != ::getuid() || !parent ||
      !sys::same_inode(parent.get(), "/proc/self/ns/user")) {
    *why = "pid " + std::to_string(pid) + " is not in a user namespace the caller made";
    return h;
  }
  h.ns = std::move(ns);
  return h;
}

// The holder's namespace if the record names a living holder that maps IDS; else an
// invalid fd and *why says what did not hold.
UniqueFd open_holder_namespace(const std::string& record, const IdMapPlan& ids, std::string* why) {
  RecordedHolder h = recorded_holder(record, why);
  if (!h.ns) return {};
  if (parse_map(h.uid_map) != ids.uids || parse_map(h.gid_map) != ids.gids ||
      trim(h.setgroups) != "allow") {
    *why = "the running one (pid " + std::to_string(h.pid) + ") maps other ids";
    return {};
  }
  return std::move(h.ns);
}

UniqueFd start_holder(const SharedUsernsRequest& request, const std::string& record) {
  int ready_pipe[2], go_pipe[2];
  if (::pipe2(ready_pipe, O_CLOEXEC) != 0) throw_errno("create a pipe");
  UniqueFd ready_read(ready_pipe[0]), ready_write(ready_pipe[1]);
  if (::pipe2(go_pipe, O_CLOEXEC) != 0) throw_errno("create a pipe");
  UniqueFd go_read(go_pipe[0]), go_write(go_pipe[1]);
  // Made here, in the caller's private state root, for the holder to serve on.
  UniqueFd spare_requests = listen_for_spare_requests(request.state_root);
  // What the holder execs: this binary, as `mrun-userns UID` (userns_holder.hpp).
  UniqueFd self_exe(::open("/proc/self/exe", O_PATH | O_CLOEXEC));
  if (!self_exe) throw_errno("open /proc/self/exe for the user namespace holder", "mount /proc");
  const uid_t caller = ::getuid();  // in the new namespace, unmapped: the overflow uid
  // Started through a short-lived first child so that the holder is nobody's child
  // here (it is reparented to the caller's subreaper or init) and may make a session of
  // its own (a terminal's SIGHUP and ^C do not reach it).
  auto first = sys::clone_with_pidfd(0, SIGCHLD);
  if (first.pid == 0) {
    ready_read.reset();
    go_write.reset();
    pid_t holder = -1;
    try {
      auto child = sys::clone_with_pidfd(CLONE_NEWUSER, SIGCHLD);
      if (child.pid == 0) {
        ready_write.reset();
        exec_holder(self_exe.get(), go_read.get(), spare_requests.get(), caller);
      }
      holder = child.pid;
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(::write(ready_write.get(), &holder, sizeof holder) == sizeof holder ? 0 : 1);
  }
  ready_write.reset();
  go_read.reset();
  pid_t holder = -1;
  ssize_t n = ::read(ready_read.get(), &holder, sizeof holder);
  sys::wait_pidfd(first.pidfd.get());
  if (n != sizeof holder || holder <= 0) {
    throw Error("could not start the user namespace holder", EAGAIN,
                "retry, or run with --userns private");
  }
  // Until `go`, a failure here makes the holder read end-of-file and exit.
  apply_id_maps(holder, request.ids);
  sys::write_file_atomic(
      record, std::to_string(holder) + " " + std::to_string(sys::process_start_time(holder)) + "\n",
      0600);
  const std::string go = holder_go_line(request.linger_seconds, record);
  if (::write(go_write.get(), go.data(), go.size()) != static_cast<ssize_t>(go.size())) {
    throw_errno("start the user namespace holder");
  }
  go_write.reset();
  std::string why;
  UniqueFd ns = open_holder_namespace(record, request.ids, &why);
  if (!ns) {
    throw Error("the user namespace holder just started cannot be joined: " + why, EAGAIN,
                "retry, or run with --userns private");
  }
  return ns;
}

}  // namespace

UniqueFd existing_shared_user_namespace(const std::string& state_root, const IdMapPlan& ids) {
  std::string why;
  return open_holder_namespace(record_path(state_root), ids, &why);
}

UniqueFd shared_user_namespace(const SharedUsernsRequest& request, const Logger& log) {
  const std::string record = record_path(request.state_root);
  std::string why;
  if (UniqueFd ns = open_holder_namespace(record, request.ids, &why)) return ns;
  // One starter at a time: a second mrun waits here, then joins the first one's.
  const std::string lock_path = request.state_root + "/.userns.lock";
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) throw_errno("open " + lock_path);
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw_errno("lock " + lock_path);
  }
  if (UniqueFd ns = open_holder_namespace(record, request.ids, &why)) return ns;
  log.debug("starting a user namespace holder for " + request.state_root + " (" + why + ")");
  return start_holder(request, record);
}

std::optional<HolderView> find_shared_userns_holder(const std::string& state_root) {
  std::string why;
  RecordedHolder h = recorded_holder(record_path(state_root), &why);
  if (!h.ns) return std::nullopt;
  struct stat ns {};
  ::fstat(h.ns.get(), &ns);
  return HolderView{h.pid, "user:[" + std::to_string(ns.st_ino) + "]", parse_map(h.uid_map),
                    parse_map(h.gid_map)};
}

std::optional<pid_t> stop_shared_userns_holder(const std::string& state_root) {
  std::string why;
  const std::string record = record_path(state_root);
  RecordedHolder h = recorded_holder(record, &why);
  if (!h.ns) return std::nullopt;
  // The record first: no mrun joins a holder that is on its way out. Through the pidfd
  // taken before the checks, so the signal reaches that holder or nothing.
  ::unlink(record.c_str());
  ::syscall(SYS_pidfd_send_signal, h.pidfd.get(), SIGTERM, nullptr, 0);
  struct pollfd exited = {h.pidfd.get(), POLLIN, 0};
  while (::poll(&exited, 1, 5000) < 0 && errno == EINTR) {
  }
  return h.pid;
}

int shared_userns_linger_seconds() {
  const char* value = std::getenv("MRUN_USERNS_LINGER");
  if (value == nullptr || value[0] == '\0') return 60;
  char* end = nullptr;
  long seconds = std::strtol(value, &end, 10);
  if (*end != '\0' || seconds < 1 || seconds > 86400) {
    throw Error(std::string("MRUN_USERNS_LINGER=") + value + " is not a number of seconds", EINVAL,
                "set it to 1..86400, or unset it (default 60)");
  }
  return static_cast<int>(seconds);
}

}  // namespace mrun::userns
