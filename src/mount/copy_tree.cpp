#include "mount/copy_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace mrun::mount {

namespace {

// Owner and mode of the copy; an owner the user namespace does not map (EINVAL) stays
// the copier's, as crun does.
void set_owner_and_mode(int dir, const char* name, const struct stat& st, const std::string& what,
                        bool symlink) {
  if (::fchownat(dir, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0 && errno != EINVAL) {
    throw_errno("tmpcopyup " + what + ": chown " + name);
  }
  if (!symlink && ::fchmodat(dir, name, st.st_mode & 07777, 0) != 0) {
    throw_errno("tmpcopyup " + what + ": chmod " + name);
  }
}

void copy_file(int from_dir, int to_dir, const char* name, const struct stat& st,
               const std::string& what) {
  UniqueFd in(::openat(from_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
  if (!in) throw_errno("tmpcopyup " + what + ": open " + name);
  UniqueFd out(::openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) throw_errno("tmpcopyup " + what + ": create " + name);
  off_t left = st.st_size;
  while (left > 0) {
    ssize_t n = ::sendfile(out.get(), in.get(), nullptr, static_cast<std::size_t>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("tmpcopyup " + what + ": copy " + name);
    if (n == 0) break;  // the file shrank meanwhile
    left -= n;
  }
}

void copy_entries(int from_dir, int to_dir, const std::string& what, int depth) {
  if (depth > 256) throw Error("tmpcopyup " + what + ": directories nested too deep", ELOOP);
  // fdopendir takes the descriptor over: give it a duplicate of its own.
  int listing = ::openat(from_dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing < 0) throw_errno("tmpcopyup " + what + ": open the directory");
  DIR* d = ::fdopendir(listing);
  if (d == nullptr) {
    ::close(listing);
    throw_errno("tmpcopyup " + what + ": list the directory");
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  for (const auto& entry : names) {
    const char* name = entry.c_str();
    struct stat st {};
    if (::fstatat(from_dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // gone meanwhile
      throw_errno("tmpcopyup " + what + ": stat " + entry);
    }
    if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(to_dir, name, 0700) != 0) throw_errno("tmpcopyup " + what + ": mkdir " + entry);
      UniqueFd sub_from(::openat(from_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      UniqueFd sub_to(::openat(to_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub_from || !sub_to) throw_errno("tmpcopyup " + what + ": open " + entry);
      copy_entries(sub_from.get(), sub_to.get(), what + "/" + entry, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      copy_file(from_dir, to_dir, name, st, what);
    } else if (S_ISLNK(st.st_mode)) {
      std::vector<char> target(static_cast<std::size_t>(st.st_size) + 1);
      ssize_t n = ::readlinkat(from_dir, name, target.data(), target.size());
      if (n < 0 || static_cast<std::size_t>(n) >= target.size()) {
        throw_errno("tmpcopyup " + what + ": readlink " + entry);
      }
      target[static_cast<std::size_t>(n)] = '\0';
      if (::symlinkat(target.data(), to_dir, name) != 0) {
        throw_errno("tmpcopyup " + what + ": symlink " + entry);
      }
    } else if (::mknodat(to_dir, name, st.st_mode, st.st_rdev) != 0) {
      // A device node where mknod is refused (a user namespace): left out, as the
      // container could not open it anyway; anything else is an error.
      if (errno == EPERM && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) continue;
      throw_errno("tmpcopyup " + what + ": mknod " + entry);
    }
    set_owner_and_mode(to_dir, name, st, what, S_ISLNK(st.st_mode));
  }
}

}  // namespace

void copy_tree(int from_dir, int to_dir, const std::string& what) {
  struct stat st {};
  if (::fstat(from_dir, &st) != 0) throw_errno("tmpcopyup " + what + ": stat");
  if (!S_ISDIR(st.st_mode)) {
    throw Error("tmpcopyup " + what + ": not a directory", ENOTDIR,
                "tmpcopyup copies a directory of the image into the tmpfs");
  }
  copy_entries(from_dir, to_dir, what, 0);
  if (::fchown(to_dir, st.st_uid, st.st_gid) != 0 && errno != EINVAL) {
    throw_errno("tmpcopyup " + what + ": chown the tmpfs");
  }
  if (::fchmod(to_dir, st.st_mode & 07777) != 0) throw_errno("tmpcopyup " + what + ": chmod");
}

}  // namespace mrun::mount
