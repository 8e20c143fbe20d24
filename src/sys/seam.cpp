#include "sys/seam.hpp"

#include <fcntl.h>
#include <stdio.h>

#include <cerrno>

#include "sys/namespaces.hpp"

namespace mrun::sys {

int Syscalls::setns(int fd, int nstype) noexcept {
  return setns_fd(fd, nstype);
}

int Syscalls::renameat(int from_dir, const char* from, int to_dir, const char* to) noexcept {
  return ::renameat(from_dir, from, to_dir, to) == 0 ? 0 : errno;
}

Syscalls& real_syscalls() {
  static Syscalls kernel;
  return kernel;
}

}  // namespace mrun::sys
