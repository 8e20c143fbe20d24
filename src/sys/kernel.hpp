// Facts about the running kernel that only a system call answers.
#pragma once

#include <string>

namespace mrun::sys {

// Whether this kernel runs x32 syscalls (x86_64 only: getpid with the x32 bit; a kernel
// built or booted without them answers ENOSYS). false on other architectures.
bool kernel_runs_x32_syscalls();

// `uname -rv`: release and version of the running kernel.
std::string kernel_version();

}  // namespace mrun::sys
