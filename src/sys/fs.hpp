// File helpers: whole-file reads and writes, atomic replacement, directory trees.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace mrun::sys {

std::optional<std::string> read_file(const std::string& path);
// realpath(3): the absolute path with every symlink and "..", or nullopt (errno set)
// when a part of it does not exist.
std::optional<std::string> real_path(const std::string& path);
// Reads `fd` until end-of-file (a pipe whose writers all closed, a socket shut down).
std::string read_all(int fd);
void write_file(const std::string& path, const std::string& content);
// Write to a temporary file in the same directory, rename over `path`: readers see
// the old or the new content, never a torn one. (Not durable across a crash of the
// machine: meant for runtime state.)
void write_file_atomic(const std::string& path, const std::string& content, mode_t mode = 0600);
// Creates `path` (O_EXCL: never over something there) and writes `content`: for a file
// nobody can see yet (in a directory still under a scratch name), where the temporary
// file and rename of write_file_atomic would be two more inode operations for nothing.
void write_new_file(const std::string& path, const std::string& content, mode_t mode = 0600);
// mkdir -p; returns true if the last component was created.
bool make_dirs(const std::string& path, mode_t mode = 0755);
// Creates `path` (and parents) as a directory of the caller, refusing one that exists
// but is not a directory (a symlink included), belongs to someone else, or is writable
// by others (a state dir in /tmp must not be pre-created or shared by another user).
// An existing directory's mode is left as its owner chose. `what` names it in errors
// ("state directory"), `hint` says what to do instead.
void ensure_private_dir(const std::string& path, const std::string& what = "state directory",
                        const std::string& hint = "remove it or pass --root DIR");
// The same checks without creating anything: true when `path` exists and passes them,
// false when it does not exist; throws when it exists and fails them.
bool check_private_dir(const std::string& path, const std::string& what, const std::string& hint);
// The same rule as a question, for choosing among candidates (a login's /run/user/UID,
// the passwd entry's home): a directory, not a symlink, of `uid`, writable by no one else.
bool is_private_dir(const std::string& path, uid_t uid);
// rm -rf without following symlinks or crossing into other mounts. Returns false if
// something could not be removed (EACCES/EPERM: files of other uids), true when gone.
bool remove_tree(const std::string& path);
// Everything in the directory DIR_FD, as remove_tree does (the directory stays).
bool remove_children_of(int dir_fd);
// The names in the directory DIR_FD (read from its current offset), without . and ..
std::vector<std::string> directory_entries(int dir_fd);
// Whether two stat results are one file: the same device and inode. The one identity
// check for files, namespaces (nsfs inodes) and records.
inline bool same_inode(const struct stat& a, const struct stat& b) noexcept {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
// The same for two open files; false when either cannot be read.
bool same_inode(int fd_a, int fd_b) noexcept;
// The same for an open file and what PATH (followed) names now; false when either
// cannot be read.
bool same_inode(int fd, const std::string& path) noexcept;
bool exists(const std::string& path);
bool is_dir(const std::string& path);
// Search PATH for an executable, like execvp: "" when not found.
std::string find_in_path(const std::string& name, const std::string& path_var);
// The same against mrun's own $PATH, for the helper programs mrun runs on the host.
std::string find_program(const std::string& name);

}  // namespace mrun::sys
