// Compiles a SeccompProfile with libseccomp into a classic BPF program, in the parent
// before clone: a bad profile fails there (exit 125, nothing started), and the container
// only hands the finished program to seccomp(2) as its last step before execve.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"
#include "security/capabilities.hpp"
#include "security/seccomp_profile.hpp"
#include "security/seccomp_support.hpp"

namespace mrun::security {

// What the includes/excludes of a profile are evaluated against, as podman does: the
// container's bounding set, the native architecture, the running kernel.
struct SeccompTarget {
  CapMask capabilities = 0;
  std::string kernel_release;  // uname -r; "" = assume every minKernel is met
  // Whether the kernel runs x32 syscalls (sys::kernel_runs_x32_syscalls). Where it does
  // not (Debian's kernels, unless booted with syscall.x32=y), the archMap's x32
  // sub-architecture is left out: a third of the program, which the kernel must check
  // and JIT at every start, instruction by instruction, for syscalls it refuses anyway.
  // An x32 syscall then fails with ENOSYS, the kernel's own answer (the filter's action
  // for syscalls of an architecture it does not cover).
  bool x32_syscalls = true;
  // What the kernel honours (seccomp_support.hpp): a flag or an action outside these is
  // refused by name. Everything by default (unit tests, the fuzzer).
  unsigned int kernel_flags = ~0u;  // SECCOMP_FILTER_FLAG_* it takes
  SeccompActionSet kernel_actions = all_seccomp_actions;
};

struct CompiledSeccomp {
  std::vector<sock_filter> program;
  // SECCOMP_FILTER_FLAG_* for seccomp(2): the profile's, plus NEW_LISTENER when a
  // SCMP_ACT_NOTIFY rule is in the program.
  unsigned int flags = 0;
  std::vector<std::string> architectures;     // libseccomp names, native first
  std::vector<std::string> unknown_syscalls;  // skipped: unknown to this libseccomp
  std::size_t rules_added = 0;
  // Not part of the program: where its notification listener goes (the profile's
  // listenerPath and listenerMetadata), for the monitor.
  std::string listener_path;
  std::string listener_metadata;
  // Whether loading it makes a listener that must reach the agent at listener_path.
  bool has_listener() const noexcept;
};

// How libseccomp lays the syscall numbers out in the program. `binary_tree` (libseccomp's
// SCMP_FLTATR_CTL_OPTIMIZE=2) finds a syscall's rules in about log2(syscalls) comparisons
// instead of walking a chain of one comparison per syscall: the same decisions (a unit
// test compares both layouts on every syscall number), but the kernel's load of the
// filter, which emulates it once per syscall number of each architecture to build its
// cache of always-allowed syscalls and JITs it, costs a fraction. `linear` is
// libseccomp's default, kept to test the tree against.
enum class SeccompLayout { binary_tree, linear };

// Throws mrun::Error (exit 125) naming the rule ("syscalls[3] (keyctl)") that libseccomp
// refused, or the flag or action the kernel lacks ("flags[0]: ..."). Unknown syscall
// names are not an error: they are listed in unknown_syscalls for the caller to warn
// about (a profile written for a newer kernel must still load).
CompiledSeccomp compile_seccomp(const SeccompProfile& profile, const SeccompTarget& target,
                                SeccompLayout layout = SeccompLayout::binary_tree);

// "6.18.44-fc" >= "4.8"?
bool kernel_at_least(const std::string& release, const std::string& minimum);

// The Go architecture name podman's includes.arches uses for libseccomp's native arch
// ("amd64" on x86_64).
std::string native_go_arch();

// Loads a compiled program into the calling thread (seccomp(2), SECCOMP_SET_MODE_FILTER).
// Needs no_new_privs or CAP_SYS_ADMIN in the current user namespace. Returns the
// notification listener (O_CLOEXEC) when the filter has one, else an empty fd: from
// here on every syscall of this process is the filter's to judge, and one it notifies
// waits until an agent holding the listener answers.
UniqueFd load_seccomp_program(const CompiledSeccomp& filter);
// The same program without a listener (--init's PID 1, whose command's agent never hears
// of it): a syscall the profile notifies fails with ENOSYS there, as the kernel answers
// a notification nobody can receive.
void load_seccomp_program_without_listener(const CompiledSeccomp& filter);

}  // namespace mrun::security
