#include "sys/vfork_child.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "sys/processes.hpp"

namespace mrun::sys {

namespace {

struct Trampoline {
  const VforkCall* call;
  sigset_t original_mask;
};

int trampoline(void* raw) {
  auto* t = static_cast<Trampoline*>(raw);
  return t->call->fn(t->call->arg, t->original_mask);
}

// The child's stack: reserved, not committed (only the pages it touches cost memory),
// with a guard page below it so that an overflow faults instead of writing the heap.
class ChildStack {
 public:
  ChildStack() {
    void* p = ::mmap(nullptr, kVforkStackSize + kGuard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) throw_errno("map a stack for the namespace-entering child");
    base_ = static_cast<char*>(p);
    if (::mprotect(base_, kGuard, PROT_NONE) != 0) {
      int err = errno;
      ::munmap(base_, kVforkStackSize + kGuard);
      throw_errno(err, "protect the stack guard of the namespace-entering child");
    }
  }
  ~ChildStack() { ::munmap(base_, kVforkStackSize + kGuard); }
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  void* top() const { return base_ + kGuard + kVforkStackSize; }

 private:
  static constexpr std::size_t kGuard = 4096;
  char* base_ = nullptr;
};

}  // namespace

void run_in_vfork_child(const VforkCall& call, bool sibling) {
  ChildStack stack;
  Trampoline t{&call, {}};
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &t.original_mask);
  int pidfd = -1;
  const int flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | (sibling ? CLONE_PARENT : SIGCHLD);
  const pid_t pid = ::clone(trampoline, stack.top(), flags, &t, &pidfd);
  const int clone_errno = errno;
  ::sigprocmask(SIG_SETMASK, &t.original_mask, nullptr);
  if (pid < 0) throw_process_creation_error(clone_errno, "clone the namespace-entering child");
  const UniqueFd child(pidfd);
  // Back here once it exited (CLONE_VFORK): reap it, or with CLONE_PARENT wait until it
  // is gone for the caller's parent to reap, so that its stack is no longer in use.
  if (sibling) {
    wait_pidfd_exit(child.get());
  } else {
    wait_pidfd(child.get());
  }
}

}  // namespace mrun::sys
