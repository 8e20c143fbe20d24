#include "userns/shared_userns.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
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
#include "sys/syscalls.hpp"
#include "userns/apply_idmap.hpp"
#include "userns/spare_netns.hpp"

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

bool same_inode(int fd, const char* path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path, &b) == 0 && a.st_ino == b.st_ino &&
         a.st_dev == b.st_dev;
}

// The holder's namespace if the record names a living holder that maps IDS; else an
// invalid fd and *why says what did not hold.
UniqueFd open_holder_namespace(const std::string& record, const IdMapPlan& ids, std::string* why) {
  auto text = sys::read_file(record);
  if (!text) {
    *why = "none is running";
    return {};
  }
  long long pid = 0;
  unsigned long long start = 0;
  if (std::sscanf(text->c_str(), "%lld %llu", &pid, &start) != 2 || pid <= 1) {
    *why = "its record " + record + " is unreadable";
    return {};
  }
  // The pidfd first: if that process is still alive once everything below was read,
  // the pid was never reused in between, so all of it was the holder's.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0)));
  const std::string proc = "/proc/" + std::to_string(pid);
  UniqueFd procdir(::open(proc.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!pidfd || !procdir) {
    *why = "the one recorded (pid " + std::to_string(pid) + ") is gone";
    return {};
  }
  UniqueFd ns(::openat(procdir.get(), "ns/user", O_RDONLY | O_CLOEXEC));
  const std::string uid_map = read_at(procdir.get(), "uid_map");
  const std::string gid_map = read_at(procdir.get(), "gid_map");
  const std::string setgroups = read_at(procdir.get(), "setgroups");
  // A zombie still answers signal 0 and shows its namespace: a holder that exited
  // under a parent that has not reaped it yet is gone all the same.
  const sys::ProcessStat stat = sys::process_stat(static_cast<pid_t>(pid));
  if (!ns || stat.start_time != start || stat.state == 'Z' || stat.state == 'X' ||
      ::syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) != 0) {
    *why = "the one recorded (pid " + std::to_string(pid) + ") is gone";
    return {};
  }
  uid_t owner = static_cast<uid_t>(-1);
  UniqueFd parent(::ioctl(ns.get(), NS_GET_PARENT));
  if (::ioctl(ns.get(), NS_GET_OWNER_UID, &owner) != 0 || owner != ::getuid() || !parent ||
      !same_inode(parent.get(), "/proc/self/ns/user")) {
    *why = "pid " + std::to_string(pid) + " is not in a user namespace the caller made";
    return {};
  }
  if (parse_map(uid_map) != ids.uids || parse_map(gid_map) != ids.gids ||
      trim(setgroups) != "allow") {
    *why = "the running one (pid " + std::to_string(pid) + ") maps other ids";
    return {};
  }
  return ns;
}

// The holder: nothing of mrun's caller (no fd but /dev/null, cwd /, its own session, no
// terminal signals), waiting for the monitor to map its ids, then for nothing. Exits
// once LINGER seconds pass without an mrun opening its record, or once the record is
// no longer the one it was started with. Never returns, never throws.
[[noreturn]] void holder_main(int go_fd, int listen_fd, const std::string& record,
                              int linger_seconds) {
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; ++fd) {
    if (null >= 0 && null != fd) ::dup2(null, fd);
  }
  // Nothing of the caller's but the descriptors it is given (LISTEN_FD may be -1).
  int keep[2] = {std::min(go_fd, listen_fd), std::max(go_fd, listen_fd)};
  unsigned from = 3;
  for (int fd : keep) {
    if (fd < 3) continue;
    if (static_cast<unsigned>(fd) > from) {
      ::syscall(SYS_close_range, from, static_cast<unsigned>(fd - 1), 0U);
    }
    from = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, from, ~0U, 0U);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE}) {
    ::signal(sig, SIG_IGN);
  }
  ::prctl(PR_SET_PDEATHSIG, 0);
  ::prctl(PR_SET_NAME, "mrun-userns");
  ::setsid();  // a child, never a process group leader: this cannot fail
  if (::chdir("/") != 0) ::_exit(0);
  char go = 0;
  if (::read(go_fd, &go, 1) != 1 || go != 'g') ::_exit(0);  // the monitor gave up
  ::close(go_fd);
  struct stat own {};
  int watch = ::inotify_init1(IN_CLOEXEC);
  if (::stat(record.c_str(), &own) != 0 || watch < 0 ||
      ::inotify_add_watch(watch, record.c_str(),
                          IN_OPEN | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
    ::_exit(0);
  }
  SpareNetworkNamespaces spares;
  alignas(struct inotify_event) char events[4096];
  for (;;) {
    struct pollfd p[2] = {{watch, POLLIN, 0}, {listen_fd, POLLIN, 0}};
    int ready = ::poll(p, listen_fd >= 0 ? 2 : 1, linger_seconds * 1000);
    if (ready == 0) ::_exit(0);  // idle: the next mrun starts another
    if (ready < 0) {
      if (errno == EINTR) continue;
      ::_exit(0);
    }
    if (p[1].revents & POLLIN) spares.serve(listen_fd);
    if ((p[0].revents & POLLIN) == 0) continue;
    ssize_t len = ::read(watch, events, sizeof events);
    bool replaced = len <= 0;
    for (ssize_t at = 0; at < len;) {
      const auto* event = reinterpret_cast<const struct inotify_event*>(events + at);
      if ((event->mask & IN_OPEN) == 0) replaced = true;
      at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
    }
    // stat, not open: an open would be an event of its own.
    struct stat now {};
    if (replaced && (::stat(record.c_str(), &now) != 0 || now.st_ino != own.st_ino ||
                     now.st_dev != own.st_dev)) {
      ::_exit(0);
    }
  }
}

UniqueFd start_holder(const SharedUsernsRequest& request, const std::string& record) {
  int ready_pipe[2], go_pipe[2];
  if (::pipe2(ready_pipe, O_CLOEXEC) != 0) throw_errno("create a pipe");
  UniqueFd ready_read(ready_pipe[0]), ready_write(ready_pipe[1]);
  if (::pipe2(go_pipe, O_CLOEXEC) != 0) throw_errno("create a pipe");
  UniqueFd go_read(go_pipe[0]), go_write(go_pipe[1]);
  // Made here, in the caller's private state root, for the holder to serve on.
  UniqueFd spare_requests = listen_for_spare_requests(request.state_root);
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
        holder_main(go_read.get(), spare_requests.get(), record, request.linger_seconds);
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
  if (::write(go_write.get(), "g", 1) != 1) throw_errno("start the user namespace holder");
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
