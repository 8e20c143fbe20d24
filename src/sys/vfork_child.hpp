// A short-lived child that shares the caller's memory, as posix_spawn makes its child.
#pragma once

#include <signal.h>

#include <cstddef>

namespace mrun::sys {

// Runs FN(ARG) in a child made with CLONE_VM | CLONE_VFORK on a stack of its own, and
// returns once that child has exited (FN's return value is its exit code). Sharing the
// memory spares a copy of the caller's page tables and the copy-on-write faults that
// follow, on every container start that goes through such a child (shared_userns.hpp).
//
// FN runs while the caller is stopped in clone(): what it writes through ARG the caller
// reads afterwards. It must do no more than system calls and plain stores: no malloc, no
// exceptions, no locks (the caller's heap and stdio are shared, and glibc does not know
// of this child). A process it clones without CLONE_VM gets a private copy of the memory
// and may do anything; it starts on FN's stack, which is large enough for the
// container's whole setup (kStackSize).
//
// Every signal is blocked in the caller around the clone, so that no handler of the
// caller's runs on the shared memory in the child; FN gets the caller's mask as it was
// (ORIGINAL_MASK) to restore in what it clones. With SIBLING (CLONE_PARENT) the child is
// the caller's sibling and the caller's parent reaps it; otherwise it is reaped here.
// Throws Error if the clone fails.
struct VforkCall {
  int (*fn)(void* arg, const sigset_t& original_mask);
  void* arg;
};
void run_in_vfork_child(const VforkCall& call, bool sibling);

inline constexpr std::size_t kVforkStackSize = 8u << 20;

}  // namespace mrun::sys
