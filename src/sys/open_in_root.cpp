#include "sys/open_in_root.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"

namespace mrun::sys {

namespace {
// openat2(RESOLVE_IN_ROOT) fails with EAGAIN when a rename or a mount anywhere on the
// host raced with a ".." of the path (the kernel cannot then prove it stayed inside);
// openat2(2) says to retry. Without the retry a busy host made mount steps fail at
// random (found by tests/fuzz/fuzz_open_in_root.cpp while other processes renamed
// files). Bounded, so that a host renaming without pause still gets an answer.
long openat2_in_root(int root_fd, const std::string& path, int flags, mode_t mode) {
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::size_t skip = path.find_first_not_of('/');
  const char* rel = skip == std::string::npos ? "." : path.c_str() + skip;
  long fd = -1;
  for (int attempt = 0; attempt < 128; ++attempt) {
    fd = ::syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}
}  // namespace

UniqueFd try_open_in_root(int root_fd, const std::string& path, int flags, int* err) {
  long fd = openat2_in_root(root_fd, path, flags, 0);
  *err = fd < 0 ? errno : 0;
  return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

UniqueFd try_open_entry(int dir_fd, const std::string& name, int flags, int* err) {
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof how);
  *err = fd < 0 ? errno : 0;
  return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

UniqueFd open_in_root(int root_fd, const std::string& path, int flags, mode_t mode) {
  long fd = openat2_in_root(root_fd, path, flags, mode);
  if (fd < 0) throw_errno("open " + path + " inside the container root");
  return UniqueFd(static_cast<int>(fd));
}

std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace mrun::sys
