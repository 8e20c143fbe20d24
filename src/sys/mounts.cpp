#include "sys/mounts.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace mrun::sys {

void mount(const std::string& source, const std::string& target, const std::string& fstype,
           unsigned long flags, const std::string& data, const std::string& what) {
  if (::mount(source.empty() ? nullptr : source.c_str(), target.c_str(),
              fstype.empty() ? nullptr : fstype.c_str(), flags,
              data.empty() ? nullptr : data.c_str()) != 0) {
    throw_errno("mount " + what + " on " + target);
  }
}

int try_mount(const char* source, const char* target, const char* fstype, unsigned long flags,
              const char* data) noexcept {
  return ::mount(source, target, fstype, flags, data) == 0 ? 0 : errno;
}

void bind_mount(const std::string& source, const std::string& target, bool recursive) {
  unsigned long flags = MS_BIND | (recursive ? MS_REC : 0);
  if (::mount(source.c_str(), target.c_str(), nullptr, flags, nullptr) != 0) {
    throw_errno("bind mount " + source + " on " + target);
  }
}

void make_rprivate(const std::string& target) {
  if (::mount(nullptr, target.c_str(), nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    throw_errno("make mounts under " + target + " private");
  }
}

void umount_detach(const std::string& target) {
  if (::umount2(target.c_str(), MNT_DETACH) != 0) throw_errno("unmount " + target);
}

void pivot_into(const std::string& new_root) {
  // The pivot_root(".", ".") idiom (as in runc): the old root ends up stacked on top of
  // the new one, so unmounting "." removes it without needing a directory for it
  // inside the image.
  UniqueFd root(::open(new_root.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC));
  if (!root) throw_errno("open new root " + new_root);
  if (::fchdir(root.get()) != 0) throw_errno("chdir to new root " + new_root);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("pivot_root to " + new_root);
  // The old root may have shared mounts we must not propagate our unmount to.
  if (::mount(nullptr, ".", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    throw_errno("make old root a slave");
  }
  if (::umount2(".", MNT_DETACH) != 0) throw_errno("detach old root");
  if (::chdir("/") != 0) throw_errno("chdir to / in the new root");
}

void move_root_into(const std::string& new_root) {
  if (::chdir(new_root.c_str()) != 0) throw_errno("chdir to new root " + new_root);
  if (::mount(new_root.c_str(), "/", nullptr, MS_MOVE, nullptr) != 0) {
    throw_errno("move " + new_root + " onto / (--no-pivot)");
  }
  if (::chroot(".") != 0) throw_errno("chroot into " + new_root + " (--no-pivot)");
  if (::chdir("/") != 0) throw_errno("chdir to / in the new root");
}

void chroot_to(int dir, const std::string& what) {
  if (::fchdir(dir) != 0) throw_errno("chdir to " + what);
  if (::chroot(".") != 0) throw_errno("chroot into " + what);
  if (::chdir("/") != 0) throw_errno("chdir to / in " + what);
}

}  // namespace mrun::sys
