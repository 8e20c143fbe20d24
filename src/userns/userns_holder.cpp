#include "userns/userns_holder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "sys/fs.hpp"
#include "userns/spare_netns.hpp"

namespace mrun::userns {

namespace {

constexpr int kGoFd = 3;
constexpr int kListenFd = 4;

// FD (a close-on-exec copy above TARGET) duplicated onto TARGET, which dup2 leaves open
// across the exec; TARGET closed when FD is negative.
bool place_fd(int fd, int target) {
  if (fd < 0) return ::close(target) == 0 || errno == EBADF;
  return ::dup2(fd, target) == target;
}

// The go line of FD, up to its newline; empty when mrun closed the pipe instead.
std::string read_go_line(int fd) {
  std::string line;
  char c = 0;
  while (line.size() < 8192) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return {};
    if (c == '\n') return line;
    line.push_back(c);
  }
  return {};
}

// The record changed identity (replaced by another holder's, or removed with the
// state root), read off the inotify events; stat, not open: an open is an event too.
bool record_replaced(int watch, const std::string& record, const struct stat& own) {
  alignas(struct inotify_event) char events[4096];
  ssize_t len = ::read(watch, events, sizeof events);
  bool changed = len <= 0;
  for (ssize_t at = 0; at < len;) {
    const auto* event = reinterpret_cast<const struct inotify_event*>(events + at);
    if ((event->mask & IN_OPEN) == 0) changed = true;
    at += static_cast<ssize_t>(sizeof(struct inotify_event) + event->len);
  }
  struct stat now {};
  return changed && (::stat(record.c_str(), &now) != 0 || !sys::same_inode(now, own));
}

// Until idle for LINGER seconds (no mrun opened the record) or the record is not ours.
int hold(int listen_fd, const std::string& record, int linger_seconds) {
  struct stat own {};
  int watch = ::inotify_init1(IN_CLOEXEC);
  if (::stat(record.c_str(), &own) != 0 || watch < 0 ||
      ::inotify_add_watch(watch, record.c_str(),
                          IN_OPEN | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
    return 0;
  }
  // No socket to serve on (a build without spares, or none could be made): no spares.
  std::optional<SpareNetworkNamespaces> spares;
  if (listen_fd >= 0) spares.emplace();
  for (;;) {
    struct pollfd p[2] = {{watch, POLLIN, 0}, {listen_fd, POLLIN, 0}};
    int ready = ::poll(p, listen_fd >= 0 ? 2 : 1, linger_seconds * 1000);
    if (ready == 0) return 0;  // idle: the next mrun starts another
    if (ready < 0) {
      if (errno == EINTR) continue;
      return 0;
    }
    if (spares && (p[1].revents & POLLIN) != 0) spares->serve(listen_fd);
    if ((p[0].revents & POLLIN) != 0 && record_replaced(watch, record, own)) return 0;
  }
}

// The go line passed on to the exec'd holder: a pipe holding just that line.
int pipe_with_line(const std::string& line) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  const std::string text = line + "\n";
  const bool written =
      ::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fds[1]);
  if (written) return fds[0];
  ::close(fds[0]);
  return -1;
}

}  // namespace

void exec_holder(int self_exe_fd, int go_fd, int listen_fd, uid_t caller_uid) {
  // Only once mrun has mapped our ids: an exec as the unmapped overflow uid would drop
  // every capability, and the holder needs CAP_SYS_ADMIN in its namespace to make the
  // spare network namespaces. An exec as its root (mapped by now) keeps them all.
  const std::string line = read_go_line(go_fd);
  if (line.empty()) ::_exit(0);  // mrun gave up
  const int passed_line = pipe_with_line(line);
  int null = ::open("/dev/null", O_RDWR);
  bool placed = null >= 0;
  for (int fd = 0; fd < 3 && placed; ++fd) placed = null == fd || ::dup2(null, fd) == fd;
  if (null > 2) ::close(null);
  // Both above 4 first, so that placing one never overwrites the other.
  const int exe = ::fcntl(self_exe_fd, F_DUPFD_CLOEXEC, 10);
  const int go = passed_line < 0 ? -1 : ::fcntl(passed_line, F_DUPFD_CLOEXEC, 10);
  const int listen = listen_fd < 0 ? -1 : ::fcntl(listen_fd, F_DUPFD_CLOEXEC, 10);
  placed = placed && exe >= 0 && go >= 0 && (listen_fd < 0 || listen >= 0) && place_fd(go, kGoFd) &&
           place_fd(listen, kListenFd);
  if (!placed) ::_exit(1);
  // Nothing else of the caller's: every other descriptor is closed at the exec.
  ::syscall(SYS_close_range, static_cast<unsigned>(kListenFd + 1), ~0U,
            static_cast<unsigned>(CLOSE_RANGE_CLOEXEC));
  char uid[16];
  std::snprintf(uid, sizeof uid, "%u", static_cast<unsigned>(caller_uid));
  char name[] = "mrun-userns";
  char* argv[] = {name, uid, nullptr};
  char* envp[] = {nullptr};
  ::syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
  ::_exit(1);
}

std::string holder_go_line(int linger_seconds, const std::string& record) {
  return "go " + std::to_string(linger_seconds) + " " + record + "\n";
}

bool parse_holder_go_line(const std::string& line, int* linger_seconds, std::string* record) {
  int consumed = 0;
  if (std::sscanf(line.c_str(), "go %d %n", linger_seconds, &consumed) != 1 || consumed == 0 ||
      *linger_seconds < 1 || *linger_seconds > 86400) {
    return false;
  }
  *record = line.substr(static_cast<std::size_t>(consumed));
  return !record->empty() && record->front() == '/' && record->find('\n') == std::string::npos;
}

int holder_program_main(int argc, char** /*argv*/) {
  // Started by hand (a link named mrun-userns), nothing here is mrun's go pipe.
  struct stat go {};
  if (argc != 2 || ::fstat(kGoFd, &go) != 0 || !S_ISFIFO(go.st_mode)) {
    std::fputs(
        "mrun-userns: started by mrun only, as the holder of a shared user namespace "
        "(see mrun-userns in mrun(1))\n",
        stderr);
    return 125;
  }
  // The exec named it after its descriptor; ps's COMMAND column shows argv, this comm.
  ::prctl(PR_SET_NAME, kHolderProgramName);
  ::prctl(PR_SET_PDEATHSIG, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // A terminal's signals and a closed peer never end it; SIGTERM (mrun userns --stop) does.
  for (int sig : {SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE}) {
    ::signal(sig, SIG_IGN);
  }
  ::setsid();  // a child, never a process group leader: this cannot fail
  if (::chdir("/") != 0) return 0;
  int linger = 0;
  std::string record;
  if (!parse_holder_go_line(read_go_line(kGoFd), &linger, &record)) return 0;
  ::close(kGoFd);
  struct stat listen {};
  const bool serving = ::fstat(kListenFd, &listen) == 0 && S_ISSOCK(listen.st_mode);
  return hold(serving ? kListenFd : -1, record, linger);
}

}  // namespace mrun::userns
