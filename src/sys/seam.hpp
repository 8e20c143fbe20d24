// The seam where a unit test stands in for the kernel. A piece whose logic lies in the
// order of its system calls and in what it undoes when one is refused (the namespaces
// a config joins, left again in reverse when one join fails; the pool of kept
// directories, whose every move is a rename that a racing mrun may win) makes those
// calls through a Syscalls, the real one unless a test passes its own. A test overrides
// the calls it wants to watch or refuse and leaves the rest to the kernel, so that
// each failure path runs on purpose instead of by luck (youki's Syscall trait is the
// model). Only the calls such a piece needs are here; each answers 0 or the errno,
// the piece names the object in its error.
#pragma once

namespace mrun::sys {

class Syscalls {
 public:
  Syscalls() = default;
  Syscalls(const Syscalls&) = delete;
  Syscalls& operator=(const Syscalls&) = delete;
  virtual ~Syscalls() = default;

  // setns(2) into the namespace file FD of kind NSTYPE (CLONE_NEW*, or 0).
  virtual int setns(int fd, int nstype) noexcept;
  // renameat(2): FROM in FROM_DIR to TO in TO_DIR (AT_FDCWD: the paths as given).
  virtual int renameat(int from_dir, const char* from, int to_dir, const char* to) noexcept;
};

// The kernel's: what every piece uses outside of a unit test.
Syscalls& real_syscalls();

}  // namespace mrun::sys
