// What a process inherits from whoever started it, put back to what the kernel gives a
// fresh process before mrun relies on any of it.
//
// mrun is started by shells, daemons, job runners and engines, and each may leave state
// behind that changes what system calls mean: an ignored SIGCHLD makes the kernel reap
// children itself (wait then fails with ECHILD), a blocked signal never arrives, a
// closed fd 0/1/2 is taken by the next descriptor mrun opens (and then handed to the
// container as its stdio), a umask of 0000 makes mrun's state world-writable and one of
// 0777 makes it unusable. None of that is the caller's intent towards the container.
#pragma once

namespace mrun::sys {

// At the top of main, before anything else: every signal back to its default action and
// unblocked (as a fresh exec of a process whose parent changed nothing), each of fds
// 0, 1 and 2 that is closed opened on /dev/null, and the umask set to 0022. mrun's own
// files are created with explicit modes; the container's umask is process.user.umask, or
// 0022 as runc and crun give it.
void reset_inherited_state();

// Its first part, alone: every signal to its default action and none blocked. Also what
// the container's command starts with, once mrun's own handling of signals is done.
void reset_signals();

}  // namespace mrun::sys
