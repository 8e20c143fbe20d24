#include "sys/mount_fd.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/mounts.hpp"

namespace mrun::sys {

namespace {
// What the filesystem context logged ("e mqueue: ..."), for the error message: the
// kernel explains EINVAL there and nowhere else.
std::string context_message(int fs_fd) {
  char buf[512];
  ssize_t n = ::read(fs_fd, buf, sizeof buf - 1);
  if (n <= 2) return {};
  std::string text(buf, static_cast<std::size_t>(n));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.size() > 2 ? " (kernel: " + text.substr(2) + ")" : std::string();
}

[[noreturn]] void fail_in_context(int fs_fd, const std::string& step) {
  int err = errno;
  std::string detail = context_message(fs_fd);
  throw_errno(err, step + detail);
}
}  // namespace

std::uint64_t mount_attrs_from_flags(unsigned long ms_flags) {
  std::uint64_t attrs = 0;
  if (ms_flags & MS_RDONLY) attrs |= MOUNT_ATTR_RDONLY;
  if (ms_flags & MS_NOSUID) attrs |= MOUNT_ATTR_NOSUID;
  if (ms_flags & MS_NODEV) attrs |= MOUNT_ATTR_NODEV;
  if (ms_flags & MS_NOEXEC) attrs |= MOUNT_ATTR_NOEXEC;
  if (ms_flags & MS_NODIRATIME) attrs |= MOUNT_ATTR_NODIRATIME;
  // The atime modes are one field: strictatime and noatime replace relatime.
  if (ms_flags & MS_STRICTATIME) {
    attrs |= MOUNT_ATTR_STRICTATIME;
  } else if (ms_flags & MS_NOATIME) {
    attrs |= MOUNT_ATTR_NOATIME;
  }
  return attrs;
}

UniqueFd new_filesystem(const std::string& fstype, const std::string& source,
                        const std::string& data, std::uint64_t attrs, const std::string& what) {
  UniqueFd fs(::fsopen(fstype.c_str(), FSOPEN_CLOEXEC));
  if (!fs) throw_errno("open a " + fstype + " filesystem for " + what);
  if (!source.empty() &&
      ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", source.c_str(), 0) != 0) {
    fail_in_context(fs.get(), "set source of " + what);
  }
  for (const auto& option : split(data, ',')) {
    if (option.empty()) continue;
    auto eq = option.find('=');
    int rc = eq == std::string::npos
                 ? ::fsconfig(fs.get(), FSCONFIG_SET_FLAG, option.c_str(), nullptr, 0)
                 : ::fsconfig(fs.get(), FSCONFIG_SET_STRING, option.substr(0, eq).c_str(),
                              option.c_str() + eq + 1, 0);
    if (rc != 0) fail_in_context(fs.get(), "option \"" + option + "\" of " + what);
  }
  if ((attrs & MOUNT_ATTR_RDONLY) &&
      ::fsconfig(fs.get(), FSCONFIG_SET_FLAG, "ro", nullptr, 0) != 0) {
    fail_in_context(fs.get(), "read-only " + what);
  }
  if (::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    fail_in_context(fs.get(), "mount " + what);
  }
  UniqueFd mnt(::fsmount(fs.get(), FSMOUNT_CLOEXEC, static_cast<unsigned int>(attrs)));
  if (!mnt) fail_in_context(fs.get(), "mount " + what);
  return mnt;
}

UniqueFd clone_mount(int fd, bool recursive, const std::string& what) {
  unsigned int flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH;
  if (recursive) flags |= AT_RECURSIVE;
  UniqueFd tree(::open_tree(fd, "", flags));
  if (!tree) throw_errno("bind " + what);
  return tree;
}

UniqueFd clone_mount(const std::string& path, bool recursive, const std::string& what) {
  unsigned int flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC;
  if (recursive) flags |= AT_RECURSIVE;
  UniqueFd tree(::open_tree(AT_FDCWD, path.c_str(), flags));
  if (!tree) throw_errno("bind " + what);
  return tree;
}

int enter_mount_namespace_keeping_root(int mntns_fd) {
  // A copy, not the root itself: when the namespace the root is in goes away the kernel
  // disconnects every mount below it (/proc, /dev would show empty directories), while
  // a detached copy's tree, dissolved once its descriptor is closed, stays connected.
  UniqueFd root = clone_mount("/", true, "the container's root");
  if (::setns(mntns_fd, CLONE_NEWNS) != 0) return errno;
  chroot_to(root.get(), "the container's root");
  return 0;
}

UniqueFd idmapped_tree(const std::string& path, int userns_fd, bool recursive,
                       const std::string& what) {
  UniqueFd tree = clone_mount(path, recursive, what);
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<std::uint64_t>(userns_fd);
  unsigned int flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (::mount_setattr(tree.get(), "", flags, &attr, sizeof attr) != 0) {
    throw_errno("idmap " + what,
                "the filesystem must support idmapped mounts (ext4, xfs, btrfs, tmpfs since "
                "6.3, overlayfs since 5.19), and mrun must hold CAP_SYS_ADMIN over it (root)");
  }
  return tree;
}

void set_mount_attrs(int fd, std::uint64_t attrs, bool recursive, const std::string& what) {
  if (attrs == 0) return;
  struct mount_attr attr {};
  attr.attr_set = attrs;
  unsigned int flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (::mount_setattr(fd, "", flags, &attr, sizeof attr) != 0) {
    throw_errno("set attributes of " + what);
  }
}

void set_mount_attrs(int fd, std::uint64_t set, std::uint64_t clear, std::uint64_t propagation,
                     bool recursive, const std::string& what) {
  if (set == 0 && clear == 0 && propagation == 0) return;
  struct mount_attr attr {};
  attr.attr_set = set;
  attr.attr_clr = clear;
  // The atime modes are one field: the kernel wants it cleared to set one (relatime
  // being the field's zero).
  if ((set & MOUNT_ATTR__ATIME) != 0 || (clear & MOUNT_ATTR__ATIME) != 0) {
    attr.attr_clr |= MOUNT_ATTR__ATIME;
  }
  attr.propagation = propagation;
  unsigned int flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (::mount_setattr(fd, "", flags, &attr, sizeof attr) != 0) {
    throw_errno("set attributes of " + what);
  }
}

void attach_mount(int mount_fd, int target_fd, const std::string& what) {
  if (::move_mount(mount_fd, "", target_fd, "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    throw_errno("attach " + what);
  }
}

UniqueFd open_host_dev_null() {
  UniqueFd fd(::open("/dev/null", O_PATH | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw_errno("open the host's /dev/null");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat the host's /dev/null");
  if (!S_ISCHR(st.st_mode) || st.st_rdev != ::makedev(1, 3)) {
    throw Error("the host's /dev/null is not the character device 1:3", ENODEV,
                "repair /dev/null on the host (mknod -m 666 /dev/null c 1 3)");
  }
  return fd;
}

}  // namespace mrun::sys
