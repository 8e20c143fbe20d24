#include "sys/fd_slots.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/error.hpp"

namespace mrun::sys {

void hold_fd_slots(int count) {
  for (int fd = 3; fd < 3 + count; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // The lowest free number: `fd` itself, as every lower slot is taken by now.
    int placeholder = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (placeholder < 0) throw_errno("hold fd " + std::to_string(fd) + " for --preserve-fds");
    if (placeholder != fd) {
      int moved = ::dup3(placeholder, fd, O_CLOEXEC);
      ::close(placeholder);
      if (moved < 0) throw_errno("hold fd " + std::to_string(fd) + " for --preserve-fds");
    }
  }
}

void keep_fds_across_exec(int preserve) {
  for (int fd = 3; fd < 3 + preserve; ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) != 0) ::close(fd);
  }
  if (::close_range(static_cast<unsigned>(3 + preserve), ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    throw_errno("mark fds from " + std::to_string(3 + preserve) + " close-on-exec");
  }
}

}  // namespace mrun::sys
