#include "sys/sealed_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>

#include <cerrno>

#include "base/error.hpp"

namespace mrun::sys {

UniqueFd memfd_create_executable(const std::string& name) {
#ifndef MFD_EXEC
  constexpr unsigned kMfdExec = 0x0010U;  // linux/memfd.h, 6.3
#else
  constexpr unsigned kMfdExec = MFD_EXEC;
#endif
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  int fd = ::memfd_create(name.c_str(), flags | kMfdExec);
  if (fd < 0 && errno == EINVAL) fd = ::memfd_create(name.c_str(), flags);
  if (fd < 0) {
    throw_errno(
        "memfd_create " + name,
        errno == EACCES ? "vm.memfd_noexec=2 forbids executable memfds; set it to 0 or 1" : "");
  }
  return UniqueFd(fd);
}

int file_seals(int fd) {
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 && errno == EINVAL) return -1;
  if (seals < 0) throw_errno("read the seals of fd " + std::to_string(fd));
  return seals;
}

void add_seals(int fd, int seals) {
  if (::fcntl(fd, F_ADD_SEALS, seals) != 0) throw_errno("seal fd " + std::to_string(fd));
}

void copy_file_contents(int from, int to, std::size_t count, const std::string& what) {
  while (count > 0) {
    ssize_t n = ::sendfile(to, from, nullptr, count);
    if (n == 0) throw Error("copy " + what + ": the file ended early", EIO);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("copy " + what);
    count -= static_cast<std::size_t>(n);
  }
}

}  // namespace mrun::sys
