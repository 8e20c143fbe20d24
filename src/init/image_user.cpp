#include "init/image_user.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/strings.hpp"
#include "base/unique_fd.hpp"

namespace mrun::runtime {

std::optional<gid_t> primary_gid_in_passwd(const std::string& passwd, uid_t uid) {
  const std::string wanted = std::to_string(uid);
  for (const auto& line : split(passwd, '\n')) {
    auto fields = split(line, ':');
    if (fields.size() < 4 || fields[2] != wanted) continue;
    auto gid = parse_u64(fields[3]);
    if (!gid || *gid > 0xfffffffeULL) return std::nullopt;
    return static_cast<gid_t>(*gid);
  }
  return std::nullopt;
}

std::optional<std::string> home_in_passwd(const std::string& passwd, uid_t uid) {
  const std::string wanted = std::to_string(uid);
  for (const auto& line : split(passwd, '\n')) {
    auto fields = split(line, ':');
    if (fields.size() < 6 || fields[2] != wanted) continue;
    if (fields[5].empty()) return std::nullopt;
    return fields[5];
  }
  return std::nullopt;
}

std::optional<std::string> read_image_passwd() {
  UniqueFd fd(::open("/etc/passwd", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) > max_passwd_size) {
    return std::nullopt;
  }
  std::string text;
  char buf[8192];
  while (text.size() <= max_passwd_size) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (text.size() > max_passwd_size) return std::nullopt;  // grew while we read
  return text;
}

}  // namespace mrun::runtime
