#include "sys/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "base/unique_fd.hpp"

namespace mrun::sys {

std::optional<std::string> real_path(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                       &std::free);
  if (!resolved) return std::nullopt;
  return std::string(resolved.get());
}

std::optional<std::string> read_file(const std::string& path) {
  // read(2), not an ifstream: libstdc++'s filebuf throws from underflow when a read
  // fails, as reading /proc/PID/... of a process that exits meanwhile does (ESRCH).
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return std::nullopt;
  std::string content;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return content;
    content.append(buf, static_cast<std::size_t>(n));
  }
}

std::string read_all(int fd) {
  std::string content;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) content.append(buf, static_cast<std::size_t>(n));
  }
  return content;
}

void write_file(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path + " for writing");
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    throw_errno("write " + path);
  }
}

void write_file_atomic(const std::string& path, const std::string& content, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) throw_errno("create " + tmp);
  // No fsync: this is runtime state (it lives on tmpfs under $XDG_RUNTIME_DIR and
  // means nothing after a reboot); rename alone keeps readers from seeing a torn
  // file, and an fsync per state change cost milliseconds of every container start.
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_errno(err, "write " + tmp);
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_errno(err, "rename " + tmp + " to " + path);
  }
}

void write_new_file(const std::string& path, const std::string& content, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) throw_errno("create " + path);
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    throw_errno("write " + path);
  }
}

bool make_dirs(const std::string& path, mode_t mode) {
  if (path.empty()) return false;
  std::string current;
  bool created = false;
  for (const auto& part : split(path, '/')) {
    if (part.empty()) {
      if (current.empty()) current = "/";
      continue;
    }
    if (!current.empty() && current.back() != '/') current += '/';
    current += part;
    if (::mkdir(current.c_str(), mode) == 0) {
      created = true;
    } else if (errno == EEXIST) {
      created = false;
      if (!is_dir(current)) throw Error("create directory " + current, ENOTDIR);
    } else {
      throw_errno("create directory " + current);
    }
  }
  return created;
}

bool check_private_dir(const std::string& path, const std::string& what, const std::string& hint) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    throw_errno("stat " + what + " " + path, hint);
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(what + " " + path + " is not a directory" +
                    (S_ISLNK(st.st_mode) ? " but a symlink" : std::string()),
                ENOTDIR, hint);
  }
  if (st.st_uid != ::getuid()) {
    throw Error(what + " " + path + " belongs to uid " + std::to_string(st.st_uid) +
                    ", not to uid " + std::to_string(::getuid()),
                EPERM, hint);
  }
  if ((st.st_mode & 022) != 0) {
    throw Error(
        what + " " + path + " is writable by other users (mode " +
            [&] {
              char mode[8];
              std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
              return std::string(mode);
            }() +
            ")",
        EPERM, "chmod go-w " + path + ", or " + hint);
  }
  return true;
}

bool is_private_dir(const std::string& path, uid_t uid) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
         (st.st_mode & 022) == 0;
}

void ensure_private_dir(const std::string& path, const std::string& what, const std::string& hint) {
  // Made only when missing: make_dirs tries every component from / (a mkdir and a stat
  // each), on every start.
  if (!check_private_dir(path, what, hint)) {
    try {
      make_dirs(path, 0700);
    } catch (const Error& e) {
      throw e.wrap(what).with_hint(hint);
    }
    check_private_dir(path, what, hint);
  }
  if (::access(path.c_str(), W_OK) != 0) throw_errno(what + " " + path + " is not writable", hint);
}

namespace {
// Calls VISIT(name, d_type) for each entry of DIR_FD but . and .., reading getdents64
// from the directory's current offset; VISIT may remove the entry it is given. False if
// getdents failed.
bool for_each_entry(int dir_fd, const std::function<void(const char*, unsigned char)>& visit) {
  // On the heap: remove_children recurses once per level of a tree a container made.
  constexpr std::size_t kBuffer = 8192;
  std::unique_ptr<char[]> buffer(new char[kBuffer]);
  for (;;) {
    long n = ::syscall(SYS_getdents64, dir_fd, buffer.get(), kBuffer);
    if (n < 0) return false;
    if (n == 0) return true;
    for (long at = 0; at < n;) {
      // getdents64's records are glibc's struct dirent64.
      const auto* entry = reinterpret_cast<const struct dirent64*>(buffer.get() + at);
      at += entry->d_reclen;
      if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
        visit(entry->d_name, entry->d_type);
      }
    }
  }
}

// Opens directory NAME under DIR_FD for reading, opening up its mode first if needed:
// overlay's work/work is created mode 000, and we own it.
UniqueFd open_dir_for_removal(int dir_fd, const char* name) {
  constexpr int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  UniqueFd child(::openat(dir_fd, name, flags));
  if (!child && errno == EACCES && ::fchmodat(dir_fd, name, 0700, 0) == 0) {
    child.reset(::openat(dir_fd, name, flags));
  }
  return child;
}

// Depth-first removal relative to a directory fd. Stays on one device: a mount point
// left inside (there should be none) is never descended into. Cheap on the common
// case, an --rm container's storage of a few empty directories: the entry's type comes
// from getdents, and an empty directory goes with one rmdir, before any stat or open.
bool remove_children(int dir_fd, dev_t device) {
  bool ok = true;
  auto remove = [&](const char* name, unsigned char type) {
    bool is_dir = type == DT_DIR;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        ok = false;
        return;
      }
      is_dir = S_ISDIR(st.st_mode);
    }
    if (!is_dir) {
      if (::unlinkat(dir_fd, name, 0) != 0) ok = false;
      return;
    }
    if (::unlinkat(dir_fd, name, AT_REMOVEDIR) == 0) return;  // it was empty
    if (errno != ENOTEMPTY && errno != EEXIST) {
      ok = false;
      return;
    }
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != device) {
      ok = false;
      return;
    }
    UniqueFd child = open_dir_for_removal(dir_fd, name);
    if (!child) {
      ok = false;
      return;
    }
    ok = remove_children(child.get(), device) && ok;
    if (::unlinkat(dir_fd, name, AT_REMOVEDIR) != 0) ok = false;
  };
  return for_each_entry(dir_fd, remove) && ok;
}
}  // namespace

bool remove_children_of(int dir_fd) {
  struct stat st {};
  return ::fstat(dir_fd, &st) == 0 && remove_children(dir_fd, st.st_dev);
}

std::vector<std::string> directory_entries(int dir_fd) {
  std::vector<std::string> names;
  for_each_entry(dir_fd, [&names](const char* name, unsigned char) { names.emplace_back(name); });
  return names;
}

bool remove_tree(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT;
  if (!S_ISDIR(st.st_mode)) return ::unlink(path.c_str()) == 0;
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return false;
  bool ok = remove_children(dir.get(), st.st_dev);
  dir.reset();
  return ::rmdir(path.c_str()) == 0 && ok;
}

bool same_inode(int fd_a, int fd_b) noexcept {
  struct stat a {
  }, b{};
  return ::fstat(fd_a, &a) == 0 && ::fstat(fd_b, &b) == 0 && same_inode(a, b);
}

bool same_inode(int fd, const std::string& path) noexcept {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && same_inode(a, b);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string find_in_path(const std::string& name, const std::string& path_var) {
  if (name.find('/') != std::string::npos) return name;
  for (const auto& dir : split(path_var, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !is_dir(candidate)) return candidate;
  }
  return {};
}

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  return find_in_path(name, path != nullptr ? path : "");
}

}  // namespace mrun::sys
