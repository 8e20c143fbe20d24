// The shared user namespace's record and the checks that stand between it and a join
// or a signal (userns/shared_userns.hpp): STATE_ROOT/.userns names a process, and only
// a living process in a user namespace the caller made, with that start time, is a
// holder. A record that names anything else (a process of the caller's outside such a
// namespace, a reused pid, a zombie, pid 1, garbage) is not joined, and `mrun userns
// --stop` never signals what it names. Also the holder's go line. The processes are
// real children of the test; a new user namespace needs no privilege where the kernel
// lets users make them, and mapping one to subordinate ids needs root.
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "base/unique_fd.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"
#include "temp_dir.hpp"
#include "userns/shared_userns.hpp"
#include "userns/userns_holder.hpp"

using namespace mrun;
using namespace mrun::userns;

namespace {

// A child of the test that waits until the test ends it: in the test's user namespace,
// or in a new one of its own (`in_own_user_namespace` says whether the kernel let it).
struct Waiting {
  pid_t pid = -1;
  bool in_own_user_namespace = false;
  explicit Waiting(bool new_user_namespace) {
    int ready[2], release[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(release) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::signal(SIGTERM, SIG_DFL);  // not Catch's handler, which would report a failure
      ::close(ready[0]);
      ::close(release[1]);
      const char made = new_user_namespace && ::unshare(CLONE_NEWUSER) == 0 ? 'u' : '-';
      (void)!::write(ready[1], &made, 1);
      char byte;
      (void)!::read(release[0], &byte, 1);
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(release[0]);
    release_ = UniqueFd(release[1]);
    char made = 0;
    REQUIRE(::read(ready[0], &made, 1) == 1);
    ::close(ready[0]);
    in_own_user_namespace = made == 'u';
  }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;
  ~Waiting() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  // Alive and not a zombie: never signalled by the code under test.
  bool running() const { return sys::process_stat(pid).state != 'Z' && ::kill(pid, 0) == 0; }
  // The exit status as waitpid gives it; the child is reaped.
  int reap() {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    pid = -1;
    return status;
  }

 private:
  UniqueFd release_;
};

void write_record(const std::string& root, const std::string& text) {
  std::ofstream(root + "/.userns") << text;
}
void record(const std::string& root, pid_t pid, unsigned long long start_time) {
  write_record(root, std::to_string(pid) + " " + std::to_string(start_time) + "\n");
}

IdMapPlan subordinate_plan() {
  IdMapPlan plan;
  plan.kind = MapKind::subordinate;
  plan.uids = {{0, 100000, 65536}};
  plan.gids = {{0, 100000, 65536}};
  return plan;
}

// Neither found, joined nor stopped.
void not_a_holder(const std::string& root) {
  REQUIRE_FALSE(find_shared_userns_holder(root).has_value());
  REQUIRE_FALSE(existing_shared_user_namespace(root, subordinate_plan()));
  REQUIRE_FALSE(stop_shared_userns_holder(root).has_value());
}

}  // namespace

TEST_CASE("no record, an unreadable one, or one naming pid 1 or 0: no holder") {
  test::TempDir t("userns");
  not_a_holder(t.path);
  for (const char* text : {"", "garbage\n", "1 1\n", "0 0\n", "-5 7\n", "12"}) {
    write_record(t.path, text);
    not_a_holder(t.path);
  }
}

TEST_CASE("a record naming a process in the caller's own user namespace is no holder") {
  test::TempDir t("userns");
  Waiting other(false);
  record(t.path, other.pid, sys::process_start_time(other.pid));
  not_a_holder(t.path);
  REQUIRE(other.running());                   // --stop sent it nothing
  REQUIRE(sys::exists(t.path + "/.userns"));  // nor removed the record
}

TEST_CASE("a record whose start time is not the process's (a reused pid) is no holder") {
  test::TempDir t("userns");
  Waiting other(true);
  if (!other.in_own_user_namespace) {
    WARN("this kernel lets no user make a user namespace: skipped");
    return;
  }
  record(t.path, other.pid, sys::process_start_time(other.pid) + 1);
  not_a_holder(t.path);
  REQUIRE(other.running());
}

TEST_CASE("a holder that exited and is not yet reaped is gone") {
  test::TempDir t("userns");
  Waiting other(true);
  if (!other.in_own_user_namespace) {
    WARN("this kernel lets no user make a user namespace: skipped");
    return;
  }
  record(t.path, other.pid, sys::process_start_time(other.pid));
  REQUIRE(find_shared_userns_holder(t.path).has_value());
  REQUIRE(::kill(other.pid, SIGKILL) == 0);
  while (sys::process_stat(other.pid).state != 'Z') ::usleep(1000);
  not_a_holder(t.path);
}

TEST_CASE("a holder of the caller's is found, joined only with the caller's map, and stopped") {
  test::TempDir t("userns");
  Waiting holder(true);
  if (!holder.in_own_user_namespace) {
    WARN("this kernel lets no user make a user namespace: skipped");
    return;
  }
  record(t.path, holder.pid, sys::process_start_time(holder.pid));
  auto view = find_shared_userns_holder(t.path);
  REQUIRE(view.has_value());
  REQUIRE(view->pid == holder.pid);
  struct stat ns {};
  REQUIRE(::stat(("/proc/" + std::to_string(holder.pid) + "/ns/user").c_str(), &ns) == 0);
  REQUIRE(view->user_namespace == "user:[" + std::to_string(ns.st_ino) + "]");
  // Nothing mapped yet: not the caller's plan, so not joined.
  REQUIRE(view->uids.empty());
  REQUIRE_FALSE(existing_shared_user_namespace(t.path, subordinate_plan()));
  if (::geteuid() == 0) {
    // Mapped as the plan says (root may write any map of a child's namespace).
    const std::string proc = "/proc/" + std::to_string(holder.pid);
    sys::write_file(proc + "/uid_map", "0 100000 65536\n");
    sys::write_file(proc + "/gid_map", "0 100000 65536\n");
    UniqueFd joined = existing_shared_user_namespace(t.path, subordinate_plan());
    REQUIRE(joined);
    struct stat joined_ns {};
    REQUIRE(::fstat(joined.get(), &joined_ns) == 0);
    REQUIRE(joined_ns.st_ino == ns.st_ino);
    IdMapPlan other = subordinate_plan();
    other.uids = {{0, 200000, 65536}};
    REQUIRE_FALSE(existing_shared_user_namespace(t.path, other));
  }
  // --stop: the record goes first, then SIGTERM to that very process.
  REQUIRE(stop_shared_userns_holder(t.path) == holder.pid);
  REQUIRE_FALSE(sys::exists(t.path + "/.userns"));
  const int status = holder.reap();
  REQUIRE((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM));
  not_a_holder(t.path);
}

TEST_CASE("the holder's go line carries its linger and record, and nothing else parses") {
  int linger = 0;
  std::string record_path;
  std::string line = holder_go_line(60, "/run/user/1000/mrun/.userns");
  REQUIRE(line.back() == '\n');
  line.pop_back();  // the holder reads up to the newline
  REQUIRE(parse_holder_go_line(line, &linger, &record_path));
  REQUIRE(linger == 60);
  REQUIRE(record_path == "/run/user/1000/mrun/.userns");
  for (const char* bad : {"", "go", "go 60", "go 60 relative/record", "go 0 /r", "go 86401 /r",
                          "go -1 /r", "stop 60 /r", "go x /r", "go 60 /r\n/other"}) {
    INFO(bad);
    REQUIRE_FALSE(parse_holder_go_line(bad, &linger, &record_path));
  }
}
