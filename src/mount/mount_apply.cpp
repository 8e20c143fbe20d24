#include "mount/mount_apply.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "mount/copy_tree.hpp"
#include "sys/fs.hpp"
#include "sys/mount_fd.hpp"
#include "sys/open_in_root.hpp"

namespace mrun::mount {

namespace {

// Every step of the plan works on descriptors: the root is opened once (after the rootfs
// is mounted on it), each target is opened inside it with openat2(RESOLVE_IN_ROOT), or
// made relative to its parent's descriptor so opened, and the mount is attached onto that
// descriptor. A target is opened once (an optional step's check hands its descriptor on),
// and nothing of the image is ever used as a source: the masks' /dev/null is the host's,
// opened here.
class PlanApplier {
 public:
  PlanApplier(const std::string& root, const Logger& log)
      : root_(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)), log_(log) {
    if (!root_) throw_errno("open container root " + root);
  }

  // Carries out one step. `at` is the target when the caller has opened it already (an
  // optional step's existence check, open_existing): it is used as it is, not opened again.
  void apply(const MountStep& step, UniqueFd at = {}) {
    // A directory kept from the last symlink or node step is only reused by the next
    // such step: any other step attaches a mount, which may cover it.
    if (step.kind != StepKind::symlink && step.kind != StepKind::device_node) forget_dir();
    switch (step.kind) {
      case StepKind::filesystem: filesystem(step, std::move(at)); break;
      case StepKind::bind: bind(step, std::move(at)); break;
      case StepKind::mask: mask(step, std::move(at)); break;
      case StepKind::read_only: read_only(step, std::move(at)); break;
      case StepKind::symlink: symlink(step); break;
      case StepKind::device_node: device_node(step); break;
      case StepKind::root_read_only:
        sys::set_mount_attrs(root_.get(), MOUNT_ATTR_RDONLY, false, "the container root");
        break;
      case StepKind::root_propagation: break;  // after pivot_root: apply_root_propagation
    }
  }

  // An optional step's target, or an invalid descriptor when it cannot be opened (a kernel
  // without /proc/acpi): the step is then skipped. The descriptor is the step's target.
  UniqueFd open_existing(const std::string& path) {
    int err = 0;
    return sys::try_open_in_root(root_.get(), path, O_PATH, &err);
  }

 private:
  // `path` split into its parent ("/" at the top) and last component, "" and "."
  // components left out; the leaf is empty for the root itself.
  static std::pair<std::string, std::string> split_leaf(const std::string& path) {
    std::vector<std::string> parts;
    for (auto& part : split(path, '/')) {
      if (!part.empty() && part != ".") parts.push_back(std::move(part));
    }
    if (parts.empty()) return {"/", ""};
    std::string parent;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) parent += "/" + parts[i];
    return {parent.empty() ? "/" : parent, parts.back()};
  }

  // Opens `path` inside the root (O_PATH). When it is missing and `create`, its parent is
  // opened inside the root the same way (and made first, recursively, only when it is
  // missing too: the walk goes up no further than the first directory that exists), and
  // the leaf is made relative to the parent's descriptor, as a directory, or an empty file
  // when `as_file`. Every lookup is either openat2(RESOLVE_IN_ROOT) from the root or an
  // *at call on a descriptor so obtained: a symlink of the image, or one planted
  // meanwhile, resolves inside the root and nowhere else.
  UniqueFd target(const std::string& path, bool create, bool as_file) {
    int err = 0;
    UniqueFd fd = sys::try_open_in_root(root_.get(), path, O_PATH, &err);
    if (fd) return fd;
    auto [parent_path, leaf] = split_leaf(path);
    if (!create || err != ENOENT || leaf.empty()) {
      throw_errno(err, "open " + path + " inside the container root");
    }
    UniqueFd parent = target(parent_path, true, false);
    return make_entry(parent.get(), leaf, as_file, path);
  }

  // A target the caller opened already, else `path` opened (and made) as target() does.
  UniqueFd target(UniqueFd given, const std::string& path, bool create, bool as_file) {
    return given ? std::move(given) : target(path, create, as_file);
  }

  // Makes `name` in the directory `dir` and returns it. A new file is created with
  // O_CREAT|O_EXCL|O_NOFOLLOW (never through a symlink, never an entry that was there),
  // and the descriptor of that creation is the target itself. A directory (mkdirat
  // follows nothing) is opened from its parent's descriptor following no link at all: a
  // directory above swapped for a symlink meanwhile (a shared volume's, raced) does not
  // make it vanish. Should the entry itself have been there already or been swapped, the
  // path is resolved inside the root once more, which is safe either way.
  UniqueFd make_entry(int dir, const std::string& name, bool file, const std::string& path) {
    if (file) {
      UniqueFd created(
          ::openat(dir, name.c_str(), O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0644));
      if (created) return created;
      if (errno != EEXIST) throw_errno("create mount point " + path);
    } else if (::mkdirat(dir, name.c_str(), 0755) != 0 && errno != EEXIST) {
      throw_errno("create mount point " + path + " in the container");
    }
    int err = 0;
    UniqueFd fd = sys::try_open_entry(dir, name, O_PATH, &err);
    return fd ? std::move(fd) : sys::open_in_root(root_.get(), path, O_PATH);
  }

  // The parent directory of `path` inside the root (created if missing) and the leaf
  // name. Consecutive symlink and node steps share a directory (/dev's links): the
  // descriptor is kept, keyed by the parent's path, until a step that mounts (apply).
  // What such steps make are entries inside that directory, which cannot change where
  // the same path resolves.
  std::pair<int, std::string> parent_and_leaf(const std::string& path) {
    auto [parent_path, leaf] = split_leaf(path);
    if (!dir_ || dir_path_ != parent_path) {
      dir_ = target(parent_path, true, false);
      dir_path_ = parent_path;
    }
    return {dir_.get(), leaf};
  }

  void forget_dir() {
    dir_.reset();
    dir_path_.clear();
  }

  void filesystem(const MountStep& step, UniqueFd given) {
    UniqueFd at = target(std::move(given), step.target, true, false);
    const std::string what = step.fstype + " on " + step.target;
    UniqueFd mnt;
    try {
      mnt = sys::new_filesystem(step.fstype, step.source, step.data,
                                sys::mount_attrs_from_flags(step.flags), what);
    } catch (const Error& e) {
      if (step.fallback_bind.empty() || (e.errno_value() != EPERM && e.errno_value() != EACCES)) {
        throw;
      }
      log_.debug("mount " + what + " refused (" + e.what() + "); binding the host's " +
                 step.fallback_bind + " read-only instead");
      if (!sys::exists(step.fallback_bind)) {
        throw Error(e.what_failed() + " (" + e.what() + "), and the host has no " +
                        step.fallback_bind + " to bind instead",
                    e.errno_value(),
                    "give the container a namespace of its own for it (linux.namespaces), or "
                    "mount one on the host's " +
                        step.fallback_bind);
      }
      mnt = sys::clone_mount(step.fallback_bind, true, "the host's " + step.fallback_bind);
      if (step.fallback_read_only) {
        sys::set_mount_attrs(mnt.get(), MOUNT_ATTR_RDONLY, true,
                             "the host's " + step.fallback_bind);
      }
    }
    if (step.copy_up) copy_up(at.get(), mnt.get(), step.target);
    sys::attach_mount(mnt.get(), at.get(), what);
    set_propagation(mnt.get(), step, what);
  }

  // tmpcopyup: what the target directory holds now (the image's files) into the detached
  // tmpfs, by descriptors, before the tmpfs covers them.
  static void copy_up(int target, int mnt, const std::string& path) {
    UniqueFd from(::openat(target, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!from) throw_errno("tmpcopyup " + path + ": open the target directory");
    UniqueFd to(::openat(mnt, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!to) throw_errno("tmpcopyup " + path + ": open the tmpfs");
    copy_tree(from.get(), to.get(), path);
  }

  // An OCI config's propagation for one mount, once it is attached (a detached mount
  // has no peers to speak of).
  static void set_propagation(int mnt, const MountStep& step, const std::string& what) {
    if (step.propagation == 0) return;
    sys::set_mount_attrs(mnt, 0, 0, step.propagation, step.propagation_recursive, what);
  }

  void bind(const MountStep& step, UniqueFd given) {
    UniqueFd at = target(std::move(given), step.target, true, step.target_is_file);
    const std::string what = step.source + " on " + step.target;
    // CVE-2019-16884 through the image: the plan refused /proc by name, but an image's
    // symlink (/foo -> /proc) resolves there too. The descriptor says where it landed.
    struct statfs fs {};
    if (::fstatfs(at.get(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC &&
        !starts_with(step.target, "/proc/")) {
      throw Error("volume " + what +
                      " resolves into the container's /proc (through a symlink "
                      "of the image)",
                  EINVAL, "mount it somewhere that is not a link to /proc");
    }
    // An idmapped bind the monitor made (it alone could): attached as it came.
    UniqueFd tree = step.premade_fd >= 0 ? UniqueFd(step.premade_fd)
                                         : sys::clone_mount(step.source, step.recursive, what);
    if (step.read_only) sys::set_mount_attrs(tree.get(), MOUNT_ATTR_RDONLY, step.recursive, what);
    // An OCI config's options: the recursive ones ("rro") over the whole tree first,
    // then the plain ones ("ro": as runc, on the bind's top mount alone).
    sys::set_mount_attrs(tree.get(), step.recursive_attrs_set, step.recursive_attrs_clear, 0, true,
                         what);
    sys::set_mount_attrs(tree.get(), step.attrs_set, step.attrs_clear, 0, false, what);
    sys::attach_mount(tree.get(), at.get(), what);
    set_propagation(tree.get(), step, what);
  }

  // A directory gets an empty read-only tmpfs; anything else the host's /dev/null, read
  // only, so that even a container holding CAP_FOWNER cannot chmod the node through it.
  void mask(const MountStep& step, UniqueFd given) {
    UniqueFd at = target(std::move(given), step.target, false, false);
    struct stat st {};
    if (::fstat(at.get(), &st) != 0) throw_errno("stat " + step.target);
    const std::string what = "mask on " + step.target;
    UniqueFd mnt;
    if (S_ISDIR(st.st_mode)) {
      // One empty read-only tmpfs for all directory masks: the first is made, the others
      // are clones of it once it is attached (a clone keeps its read-only, nosuid, nodev,
      // noexec flags), a superblock each fewer to make and to tear down. Nothing can be
      // written to any of them, so that they share one is not to be seen.
      if (dir_mask_) {
        mnt = sys::clone_mount(dir_mask_.get(), false, what);
      } else {
        mnt = sys::new_filesystem(
            "tmpfs", "tmpfs", "size=0,mode=555",
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, what);
        sys::attach_mount(mnt.get(), at.get(), what);
        dir_mask_ = std::move(mnt);
        return;
      }
    } else {
      if (!dev_null_) dev_null_ = sys::open_host_dev_null();
      mnt = sys::clone_mount(dev_null_.get(), false, what);
      sys::set_mount_attrs(mnt.get(), MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                           false, what);
    }
    sys::attach_mount(mnt.get(), at.get(), what);
  }

  void read_only(const MountStep& step, UniqueFd given) {
    UniqueFd at = target(std::move(given), step.target, false, false);
    const std::string what = "read-only " + step.target;
    UniqueFd tree = sys::clone_mount(at.get(), true, what);
    sys::set_mount_attrs(tree.get(), MOUNT_ATTR_RDONLY, true, what);
    sys::attach_mount(tree.get(), at.get(), what);
  }

  void symlink(const MountStep& step) {
    auto [dir, leaf] = parent_and_leaf(step.target);
    if (::symlinkat(step.source.c_str(), dir, leaf.c_str()) != 0 && errno != EEXIST) {
      throw_errno("create symlink " + step.target + " -> " + step.source);
    }
  }

  // Rootful only for device nodes (the plan has no such step otherwise), a FIFO either
  // way: a fresh node in the container's tree, made relative to the parent's descriptor.
  void device_node(const MountStep& step) {
    auto [dir, leaf] = parent_and_leaf(step.target);
    // What the image has there (a node, a file) is replaced, as runc does.
    if (::unlinkat(dir, leaf.c_str(), 0) != 0 && errno != ENOENT) {
      throw_errno("remove " + step.target + " to make the device node");
    }
    if (::mknodat(dir, leaf.c_str(), step.node_type | (step.mode & 07777), step.device) != 0) {
      throw_errno("mknod " + step.target + " (for " + step.source + ")",
                  "rootless containers cannot mknod; the node is bind-mounted instead");
    }
    // The host node's owner and mode (mknod's were cut by the umask).
    if (::fchownat(dir, leaf.c_str(), step.uid, step.gid, AT_SYMLINK_NOFOLLOW) != 0 ||
        ::fchmodat(dir, leaf.c_str(), step.mode & 07777, 0) != 0) {
      throw_errno("set owner and mode of " + step.target);
    }
  }

  UniqueFd root_;
  UniqueFd dev_null_;
  UniqueFd dir_mask_;  // the first directory mask, attached: what the others clone
  UniqueFd dir_;       // parent_and_leaf's directory, and its path
  std::string dir_path_;
  const Logger& log_;
};

}  // namespace

void apply_root_propagation(const std::vector<MountStep>& plan) {
  for (const auto& step : plan) {
    if (step.kind != StepKind::root_propagation) continue;
    UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) throw_errno("open the container root");
    sys::set_mount_attrs(root.get(), 0, 0, step.propagation, step.propagation_recursive,
                         "the container root (linux.rootfsPropagation)");
  }
}

void apply_mount_plan(const std::string& root, const std::vector<MountStep>& plan,
                      const Logger& log) {
  PlanApplier applier(root, log);
  for (const auto& step : plan) {
    UniqueFd at;
    if (step.optional) {
      at = applier.open_existing(step.target);
      if (!at) continue;
    }
    applier.apply(step, std::move(at));
  }
}

}  // namespace mrun::mount
