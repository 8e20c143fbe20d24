#include "sys/procfs.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "base/error.hpp"

namespace mrun::sys {

UniqueFd open_own_proc_file(const std::string& name, int flags) {
  UniqueFd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct statfs fs {};
  if (!proc || ::fstatfs(proc.get(), &fs) != 0) throw_errno("open /proc");
  if (fs.f_type != PROC_SUPER_MAGIC) {
    throw Error("/proc is not procfs", EXDEV,
                "mount a proc filesystem on /proc (mounts in config.json), as the runtime "
                "spec expects");
  }
  // Our pid as this procfs numbers it (its "self" link: a procfs of another pid namespace,
  // the host's before pivot_root, has its own numbers), then the file by that number,
  // following no link at all: this procfs's own entry for this process, on this mount.
  char self[32] = {};
  ssize_t n = ::readlinkat(proc.get(), "self", self, sizeof self - 1);
  if (n <= 0 ||
      std::string_view(self, static_cast<std::size_t>(n)).find_first_not_of("0123456789") !=
          std::string_view::npos) {
    throw Error("/proc/self does not name this process's pid", EXDEV,
                "mount a proc filesystem on /proc");
  }
  const std::string relative = std::string(self, static_cast<std::size_t>(n)) + "/" + name;
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC | O_NOCTTY);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd = ::syscall(SYS_openat2, proc.get(), relative.c_str(), &how, sizeof how);
  if (fd < 0) throw_errno("open /proc/" + relative);
  return UniqueFd(static_cast<int>(fd));
}

void write_proc_sys(const std::string& relative, const std::string& value) {
  UniqueFd dir(::open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct statfs fs {};
  if (!dir || ::fstatfs(dir.get(), &fs) != 0) throw_errno("open /proc/sys");
  if (fs.f_type != PROC_SUPER_MAGIC) throw Error("/proc/sys is not procfs", EXDEV);
  struct open_how how {};
  how.flags = O_WRONLY | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd = ::syscall(SYS_openat2, dir.get(), relative.c_str(), &how, sizeof how);
  if (fd < 0) throw_errno("open /proc/sys/" + relative);
  UniqueFd file(static_cast<int>(fd));
  ssize_t n;
  do {
    n = ::write(file.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0 || static_cast<std::size_t>(n) != value.size())
    throw_errno("write /proc/sys/" + relative);
}

}  // namespace mrun::sys
