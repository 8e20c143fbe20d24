#include "mount/console.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "sys/mount_fd.hpp"
#include "sys/open_in_root.hpp"

namespace mrun::mount {

namespace {

// /dev/console itself, never through a symlink, made as an empty file where it is
// missing. A link there is refused, not removed: /dev may be a directory of the host's
// that the config binds in, and mrun deletes nothing of the host's.
UniqueFd open_console_target(int dev) {
  int err = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    UniqueFd fd = sys::try_open_entry(dev, "console", O_PATH, &err);
    if (fd) return fd;
    if (err == ELOOP) {
      throw Error("/dev/console in the container is a symlink", ELOOP,
                  "the terminal is bound onto /dev/console itself, never through a link: remove "
                  "the link from the container's /dev");
    }
    if (err != ENOENT) throw_errno(err, "open /dev/console");
    UniqueFd made(
        ::openat(dev, "console", O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!made && errno != EEXIST) throw_errno("create /dev/console");
  }
  throw Error("/dev/console keeps changing under the container's setup", EAGAIN,
              "check what else writes to the container's /dev");
}

}  // namespace

void bind_console(int pty_slave_fd) {
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) throw_errno("open the container root");
  UniqueFd dev = sys::open_in_root(root.get(), "/dev", O_PATH | O_DIRECTORY);
  UniqueFd target = open_console_target(dev.get());
  struct stat st {};
  if (::fstat(target.get(), &st) != 0) throw_errno("stat /dev/console");
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
    throw Error("/dev/console in the container is neither a file nor a device node", EINVAL,
                "remove it from the image");
  }
  UniqueFd pty = sys::clone_mount(pty_slave_fd, false, "the pty on /dev/console");
  sys::attach_mount(pty.get(), target.get(), "the pty on /dev/console");
}

}  // namespace mrun::mount
