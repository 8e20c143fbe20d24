#include "state/storage.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "base/error.hpp"
#include "base/spares.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/namespaces.hpp"
#include "sys/processes.hpp"
#include "sys/spare_dirs.hpp"
#include "userns/apply_idmap.hpp"
#include "userns/caller.hpp"
#include "userns/idmap.hpp"
#include "userns/shared_userns.hpp"

namespace mrun::runtime {

std::string storage_dir_for(const Context& ctx, const std::string& name) {
  return ctx.data_root + "/containers/" + name;
}

namespace {
// Files of subordinate ids in the upper (a container's non-root users wrote them) are
// removed as root of a user namespace with the caller's map: the state root's shared
// one when its holder lives (no newuidmap), else one made for the purpose.
bool remove_in_shared_user_namespace(int userns_fd, const std::string& dir) {
  auto child = sys::clone_with_pidfd(0, SIGCHLD);
  if (child.pid == 0) {
    if (sys::setns_fd(userns_fd, CLONE_NEWUSER) != 0) ::_exit(1);
    ::_exit(sys::remove_tree(dir) ? 0 : 1);
  }
  return sys::wait_pidfd(child.pidfd.get()) == 0;
}

bool remove_in_user_namespace(const Context& ctx, const std::string& dir) {
  auto plan = userns::plan_caller_maps(ctx.subuid_file, ctx.subgid_file, true);
  if (UniqueFd shared = userns::existing_shared_user_namespace(ctx.state_root, plan)) {
    if (remove_in_shared_user_namespace(shared.get(), dir)) return true;
  }
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return false;
  UniqueFd go_read(go[0]);
  UniqueFd go_write(go[1]);
  auto child = sys::clone_with_pidfd(CLONE_NEWUSER, SIGCHLD);
  if (child.pid == 0) {
    go_write.reset();
    char byte = 0;
    if (::read(go_read.get(), &byte, 1) != 1) ::_exit(1);
    ::_exit(sys::remove_tree(dir) ? 0 : 1);
  }
  go_read.reset();
  try {
    userns::apply_id_maps(child.pid, plan);
  } catch (const Error&) {
    go_write.reset();
    sys::wait_pidfd(child.pidfd.get());
    return false;
  }
  [[maybe_unused]] ssize_t n = ::write(go_write.get(), "g", 1);
  go_write.reset();
  return sys::wait_pidfd(child.pidfd.get()) == 0;
}
}  // namespace

namespace {

std::string spare_root(const Context& ctx) {
  return ctx.data_root + "/containers/.spare";
}

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

bool is_empty_dir(int parent, const char* name) {
  UniqueFd dir(::openat(parent, name, kDirFlags));
  return dir && sys::directory_entries(dir.get()).empty();
}

// Extended attributes of the upper root that overlayfs itself keeps there (its uuid,
// say); through the overlay a container can set none of these names (EPERM), only
// others (user.*, security.capability, an ACL), which it may then have planted.
bool only_overlayfs_xattrs(int fd) {
  char names[4096];
  ssize_t len = ::flistxattr(fd, names, sizeof names);
  if (len < 0) return false;  // ERANGE: more than overlayfs ever sets
  for (ssize_t at = 0; at < len;) {
    const std::string_view name(names + at);
    if (!starts_with(name, "user.overlay.") && !starts_with(name, "trusted.overlay.")) {
      return false;
    }
    at += static_cast<ssize_t>(name.size()) + 1;
  }
  return true;
}

// The upper layer's own directory is the next container's /: a container that ran
// chmod, chown or setfattr on its / changed it, without leaving an entry in it. Only
// one as make_storage makes it may be reused: ours, 0755, no attribute but overlayfs's.
bool upper_root_is_as_made(int upper_fd) {
  struct stat st {};
  return ::fstat(upper_fd, &st) == 0 && st.st_uid == ::geteuid() && st.st_gid == ::getegid() &&
         (st.st_mode & 07777) == 0755 && only_overlayfs_xattrs(upper_fd);
}

// Nothing in the upper layer (what is there would be the next container's root) and
// its root as made.
bool upper_is_empty_as_made(int upper_fd) {
  return sys::directory_entries(upper_fd).empty() && upper_root_is_as_made(upper_fd);
}

// That, and nothing on the mount point.
bool layers_are_empty(int storage_fd) {
  UniqueFd upper(::openat(storage_fd, "upper", kDirFlags));
  return upper && upper_is_empty_as_made(upper.get()) && is_empty_dir(storage_fd, "merged");
}

// What a new container takes: empty layers and work/, and times of its / that are its
// own start's, not the last one's (whose file made and removed in / moved them;
// touch -d could set any).
bool ready_for_a_new_container(int storage_fd) {
  UniqueFd upper(::openat(storage_fd, "upper", kDirFlags));
  return upper && upper_is_empty_as_made(upper.get()) && is_empty_dir(storage_fd, "merged") &&
         is_empty_dir(storage_fd, "work") && ::futimens(upper.get(), nullptr) == 0;
}

// Spares are kept as left ("kept-"): overlayfs's work/work/incompat/volatile tree still
// in work/. A tidied one ("ready-") has an empty work/ and is what a new container takes.
constexpr char kKeptTag[] = "kept-";
constexpr char kReadyTag[] = "ready-";
}  // namespace

void make_storage(const Context& ctx, const std::string& dir) {
  // Only a tidied spare: emptying work/ here (three rmdirs, each a synchronous discard
  // on ext4 mounted with discard) costs more than making new directories.
  if (kKeepSpares &&
      sys::take_spare_dir(spare_root(ctx), dir, ready_for_a_new_container, kReadyTag)) {
    return;
  }
  // mkdir -p only the first time: it tries every component from / (a mkdir each).
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    try {
      sys::make_dirs(dir, 0700);
    } catch (const Error& e) {
      throw e.wrap("container storage")
          .with_hint(::getuid() == 0 ? "make " + ctx.data_root + " a writable directory"
                                     : "set XDG_DATA_HOME (or HOME) to a directory of yours");
    }
  }
  for (const char* sub : {"/upper", "/work", "/merged"}) {
    const std::string path = dir + sub;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) throw_errno("create " + path);
  }
}

bool keep_storage_as_spare(const Context& ctx, const std::string& dir) {
  if (!kKeepSpares) return false;
  UniqueFd storage(::open(dir.c_str(), kDirFlags));
  if (!storage || !layers_are_empty(storage.get())) return false;
  return sys::keep_spare_dir(spare_root(ctx), dir, kMaxSpareStorages, kKeptTag);
}

bool tidy_spare_storage(const Context& ctx) {
  if (!kKeepSpares) return false;
  return sys::tidy_one_spare_dir(spare_root(ctx), kReadyTag, [](int fd) {
    if (!layers_are_empty(fd)) return false;
    UniqueFd work(::openat(fd, "work", kDirFlags));
    return work && sys::remove_children_of(work.get());
  });
}

void remove_storage(const Context& ctx, const std::string& dir, bool subordinate_ids) {
  if (dir.empty() || !sys::exists(dir)) return;
  if (sys::remove_tree(dir)) return;
  if (::getuid() != 0 && subordinate_ids && remove_in_user_namespace(ctx, dir)) return;
  throw Error("remove container storage " + dir, errno == 0 ? EPERM : errno,
              "remove it by hand (as root, or inside `unshare -r`)");
}

}  // namespace mrun::runtime
