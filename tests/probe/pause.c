/* pause: the pod sandbox's one process (tests/cri). A CRI pod's sandbox container
 * holds the pod's namespaces for its containers to join; it must do nothing, cost
 * nothing, and stop when asked. As PID 1 of a pod with shareProcessNamespace it is
 * also the reaper of every container process that exits, so it reaps.
 *
 * SIGINT and SIGTERM end it with status 0 (what StopPodSandbox sends first);
 * SIGCHLD makes it collect every exited child. Static, so it runs in an image that
 * holds nothing else. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  /* Blocked and taken with sigwait: no handler runs, so nothing can race. */
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
    perror("pause: sigprocmask");
    return 1;
  }
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGCHLD) {
      while (waitpid(-1, NULL, WNOHANG) > 0) {
      }
      continue;
    }
    return 0;
  }
}
