// sys::reset_inherited_state, in a forked child so that the test runner's own state is
// never touched: what a careless caller leaves is undone, as for a fresh process.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "sys/inherited_state.hpp"

namespace {

// The child's verdict as its exit status: 0 when every check held, else the failed one.
int in_child(int (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

int hostile_then_reset() {
  ::signal(SIGCHLD, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::close(1);
  ::umask(0777);

  mrun::sys::reset_inherited_state();

  struct sigaction sa {};
  for (int sig : {SIGCHLD, SIGPIPE, SIGTERM}) {
    ::sigaction(sig, nullptr, &sa);
    if (sa.sa_handler != SIG_DFL) return 1;
  }
  sigset_t blocked;
  ::sigprocmask(SIG_SETMASK, nullptr, &blocked);
  if (sigismember(&blocked, SIGTERM) || sigismember(&blocked, SIGCHLD)) return 2;
  if (::fcntl(1, F_GETFD) < 0) return 3;  // fd 1 held again (by /dev/null)
  if (::umask(0) != 022) return 4;
  // With SIGCHLD back to default the kernel keeps a zombie for us to wait for.
  pid_t child = ::fork();
  if (child == 0) ::_exit(7);
  int status = 0;
  if (::waitpid(child, &status, 0) != child || WEXITSTATUS(status) != 7) return 5;
  return 0;
}

}  // namespace

TEST_CASE("reset_inherited_state undoes ignored and blocked signals, closed stdio, umask") {
  REQUIRE(in_child(hostile_then_reset) == 0);
}
