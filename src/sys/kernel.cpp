#include "sys/kernel.hpp"

#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/error.hpp"

namespace mrun::sys {

bool kernel_runs_x32_syscalls() {
#if defined(__x86_64__)
  constexpr long x32_syscall_bit = 0x40000000;
  return ::syscall(x32_syscall_bit | SYS_getpid) >= 0;
#else
  return false;
#endif
}

std::string kernel_version() {
  struct utsname u {};
  if (::uname(&u) != 0) throw_errno("uname");
  return std::string(u.release) + " " + u.version;
}

}  // namespace mrun::sys
