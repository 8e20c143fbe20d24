#include "sys/spare_dirs.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/strings.hpp"
#include "base/unique_fd.hpp"
#include "sys/fs.hpp"

namespace mrun::sys {

namespace {
constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
constexpr char kTidyPrefix[] = ".tidy-";

std::string own_name(const std::string& prefix) {
  static unsigned counter = 0;
  return prefix + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// DIR (a kept directory just renamed out of the pool) is ours (owned by our euid) and
// CHECK(its fd) says yes.
bool ours_and(const UniqueFd& dir, const std::function<bool(int dir_fd)>& check) {
  struct stat st {};
  return dir && ::fstat(dir.get(), &st) == 0 && st.st_uid == ::geteuid() && check(dir.get());
}

// A .tidy-PID-N whose mrun is gone: what it was tidying is anyone's to finish.
bool abandoned_tidy(const std::string& name) {
  if (!starts_with(name, kTidyPrefix)) return false;
  const char* digits = name.c_str() + sizeof kTidyPrefix - 1;
  char* end = nullptr;
  const long pid = std::strtol(digits, &end, 10);
  if (end == digits || *end != '-' || pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}
}  // namespace

bool keep_spare_dir(const std::string& pool, const std::string& dir, std::size_t max,
                    const std::string& tag, Syscalls& calls) {
  if (::mkdir(pool.c_str(), 0700) != 0 && errno != EEXIST) return false;
  UniqueFd pool_fd(::open(pool.c_str(), kDirFlags));
  if (!pool_fd || directory_entries(pool_fd.get()).size() >= max) return false;
  return calls.renameat(AT_FDCWD, dir.c_str(), pool_fd.get(), own_name(tag).c_str()) == 0;
}

bool take_spare_dir(const std::string& pool, const std::string& target,
                    const std::function<bool(int dir_fd)>& usable, const std::string& tag,
                    Syscalls& calls) {
  UniqueFd pool_fd(::open(pool.c_str(), kDirFlags));
  if (!pool_fd) return false;
  for (const auto& name : directory_entries(pool_fd.get())) {
    if (name[0] == '.' || !starts_with(name, tag)) continue;  // being tidied, or not ready
    if (calls.renameat(pool_fd.get(), name.c_str(), AT_FDCWD, target.c_str()) != 0) continue;
    if (ours_and(UniqueFd(::open(target.c_str(), kDirFlags)), usable)) return true;
    remove_tree(target);
  }
  return false;
}

bool tidy_one_spare_dir(const std::string& pool, const std::string& ready_tag,
                        const std::function<bool(int dir_fd)>& tidy, Syscalls& calls) {
  UniqueFd pool_fd(::open(pool.c_str(), kDirFlags));
  if (!pool_fd) return false;
  for (const auto& name : directory_entries(pool_fd.get())) {
    if (!ready_tag.empty() && starts_with(name, ready_tag)) continue;
    if (name[0] == '.' && !abandoned_tidy(name)) continue;
    // Out of takers' reach first: a taker must never mount what is being emptied.
    const std::string tidying = own_name(kTidyPrefix);
    if (calls.renameat(pool_fd.get(), name.c_str(), pool_fd.get(), tidying.c_str()) != 0) continue;
    if (ours_and(UniqueFd(::openat(pool_fd.get(), tidying.c_str(), kDirFlags)), tidy) &&
        calls.renameat(pool_fd.get(), tidying.c_str(), pool_fd.get(),
                       own_name(ready_tag).c_str()) == 0) {
      return true;
    }
    remove_tree(pool + "/" + tidying);
    return true;
  }
  return false;
}

}  // namespace mrun::sys
