#include "sys/spare_dirs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/unique_fd.hpp"
#include "sys/fs.hpp"

namespace mrun::sys {

namespace {
constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
}  // namespace

bool keep_spare_dir(const std::string& pool, const std::string& dir, std::size_t max) {
  if (::mkdir(pool.c_str(), 0700) != 0 && errno != EEXIST) return false;
  UniqueFd pool_fd(::open(pool.c_str(), kDirFlags));
  if (!pool_fd || directory_entries(pool_fd.get()).size() >= max) return false;
  static unsigned counter = 0;
  const std::string name = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  return ::renameat(AT_FDCWD, dir.c_str(), pool_fd.get(), name.c_str()) == 0;
}

bool take_spare_dir(const std::string& pool, const std::string& target,
                    const std::function<bool(int dir_fd)>& usable) {
  UniqueFd pool_fd(::open(pool.c_str(), kDirFlags));
  if (!pool_fd) return false;
  for (const auto& name : directory_entries(pool_fd.get())) {
    if (::renameat(pool_fd.get(), name.c_str(), AT_FDCWD, target.c_str()) != 0) continue;
    UniqueFd dir(::open(target.c_str(), kDirFlags));
    struct stat st {};
    if (dir && ::fstat(dir.get(), &st) == 0 && st.st_uid == ::geteuid() && usable(dir.get())) {
      return true;
    }
    remove_tree(target);
  }
  return false;
}

}  // namespace mrun::sys
