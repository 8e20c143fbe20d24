#include "mount/mount_apply.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/syscalls.hpp"

namespace mrun::mount {

namespace {
std::string read_fd_link(int fd) {
  char buf[4096];
  ssize_t n = ::readlink(sys::fd_path(fd).c_str(), buf, sizeof buf - 1);
  if (n < 0) throw_errno("resolve " + sys::fd_path(fd));
  return std::string(buf, static_cast<std::size_t>(n));
}

// Opens (O_PATH) each prefix of `path` under the root, creating missing directories.
UniqueFd ensure_parent_dirs(int root_fd, const std::vector<std::string>& parts, std::size_t upto) {
  UniqueFd current = sys::open_in_root(root_fd, "/", O_PATH | O_DIRECTORY);
  std::string prefix;
  for (std::size_t i = 0; i < upto; ++i) {
    if (parts[i].empty() || parts[i] == ".") continue;
    std::string next = prefix + "/" + parts[i];
    try {
      current = sys::open_in_root(root_fd, next, O_PATH | O_DIRECTORY);
    } catch (const Error& e) {
      if (e.errno_value() != ENOENT) throw;
      if (::mkdirat(current.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST) {
        throw_errno("create mount point " + next + " in the container");
      }
      current = sys::open_in_root(root_fd, next, O_PATH | O_DIRECTORY);
    }
    prefix = next;
  }
  return current;
}
}  // namespace

std::string resolve_in_root(const std::string& root, const std::string& container_path, bool create,
                            bool as_file) {
  UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) throw_errno("open container root " + root);
  UniqueFd target;
  try {
    target = sys::open_in_root(root_fd.get(), container_path, O_PATH);
  } catch (const Error& e) {
    if (e.errno_value() != ENOENT || !create) throw;
    auto parts = split(container_path, '/');
    std::string leaf = parts.back();
    UniqueFd parent = ensure_parent_dirs(root_fd.get(), parts, parts.size() - 1);
    if (as_file) {
      // O_PATH fds cannot create; reopen the parent as a real directory fd.
      UniqueFd dir(::openat(parent.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dir) throw_errno("open parent of " + container_path);
      UniqueFd file(
          ::openat(dir.get(), leaf.c_str(), O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
      if (!file && errno != EEXIST) throw_errno("create mount point " + container_path);
    } else if (::mkdirat(parent.get(), leaf.c_str(), 0755) != 0 && errno != EEXIST) {
      throw_errno("create mount point " + container_path + " in the container");
    }
    target = sys::open_in_root(root_fd.get(), container_path, O_PATH);
  }
  return read_fd_link(target.get());
}

namespace {
bool path_exists_in_root(const std::string& root, const std::string& path) {
  try {
    resolve_in_root(root, path, false, false);
    return true;
  } catch (const Error& e) {
    if (e.errno_value() == ENOENT || e.errno_value() == ENOTDIR) return false;
    throw;
  }
}

void apply_filesystem(const std::string& root, const MountStep& step, const Logger& log) {
  std::string target = resolve_in_root(root, step.target, true, false);
  try {
    sys::mount(step.source, target, step.fstype, step.flags, step.data, step.fstype);
  } catch (const Error& e) {
    if (step.fallback_bind.empty() || (e.errno_value() != EPERM && e.errno_value() != EACCES)) {
      throw;
    }
    log.debug("mount " + step.fstype + " on " + step.target + " refused (" + e.what() +
              "); binding the host's " + step.fallback_bind + " read-only instead");
    sys::bind_mount(step.fallback_bind, target, true);
    sys::make_tree_readonly(target);
  }
}

void apply_bind(const std::string& root, const MountStep& step) {
  std::string target = resolve_in_root(root, step.target, true, step.target_is_file);
  sys::bind_mount(step.source, target, step.recursive);
  if (step.read_only) {
    if (step.recursive) {
      sys::make_tree_readonly(target);
    } else {
      sys::remount_bind_readonly(target);
    }
  }
}

void apply_mask(const std::string& root, const MountStep& step) {
  std::string target = resolve_in_root(root, step.target, false, false);
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) throw_errno("stat " + step.target);
  if (S_ISDIR(st.st_mode)) {
    sys::mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
               "size=0,mode=555", "mask tmpfs");
  } else {
    sys::bind_mount(root + "/dev/null", target, false);
  }
}

void apply_read_only(const std::string& root, const MountStep& step) {
  std::string target = resolve_in_root(root, step.target, false, false);
  sys::bind_mount(target, target, true);
  sys::remount_bind_readonly(target);
}

// Rootful only (the plan has no such step otherwise): a fresh node in the container's
// /dev. The parent is resolved inside the root like every other target; the leaf is
// created relative to that directory fd, so a symlink in the image cannot redirect it.
void apply_device_node(const std::string& root, const MountStep& step) {
  auto slash = step.target.rfind('/');
  std::string parent_path = slash == 0 ? "/" : step.target.substr(0, slash);
  std::string leaf = step.target.substr(slash + 1);
  std::string parent = resolve_in_root(root, parent_path, true, false);
  UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) throw_errno("open " + parent_path + " in the container");
  // What the image has there (a node, a file) is replaced, as runc does.
  if (::unlinkat(dir.get(), leaf.c_str(), 0) != 0 && errno != ENOENT) {
    throw_errno("remove " + step.target + " to make the device node");
  }
  if (::mknodat(dir.get(), leaf.c_str(), S_IFCHR | (step.mode & 07777), step.device) != 0) {
    throw_errno("mknod " + step.target + " (for " + step.source + ")",
                "rootless containers cannot mknod; the node is bind-mounted instead");
  }
  // The host node's owner and mode (mknod's were cut by the umask).
  if (::fchownat(dir.get(), leaf.c_str(), step.uid, step.gid, AT_SYMLINK_NOFOLLOW) != 0 ||
      ::fchmodat(dir.get(), leaf.c_str(), step.mode & 07777, 0) != 0) {
    throw_errno("set owner and mode of " + step.target);
  }
}

void apply_symlink(const std::string& root, const MountStep& step) {
  auto parts = split(step.target, '/');
  std::string parent_path = step.target.substr(0, step.target.rfind('/'));
  std::string parent = resolve_in_root(root, parent_path.empty() ? "/" : parent_path, true, false);
  std::string link = parent + "/" + parts.back();
  if (::symlink(step.source.c_str(), link.c_str()) != 0 && errno != EEXIST) {
    throw_errno("create symlink " + step.target + " -> " + step.source);
  }
}
}  // namespace

void apply_mount_plan(const std::string& root, const std::vector<MountStep>& plan,
                      const Logger& log) {
  for (const auto& step : plan) {
    if (step.optional && !path_exists_in_root(root, step.target)) continue;
    switch (step.kind) {
      case StepKind::filesystem: apply_filesystem(root, step, log); break;
      case StepKind::bind: apply_bind(root, step); break;
      case StepKind::mask: apply_mask(root, step); break;
      case StepKind::read_only: apply_read_only(root, step); break;
      case StepKind::symlink: apply_symlink(root, step); break;
      case StepKind::device_node: apply_device_node(root, step); break;
      case StepKind::root_read_only: sys::remount_bind_readonly(root); break;
    }
  }
}

}  // namespace mrun::mount
