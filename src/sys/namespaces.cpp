#include "sys/namespaces.hpp"

#include <linux/nsfs.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "sys/fs.hpp"

namespace mrun::sys {

int join_session_keyring(const std::string& name) {
  constexpr long keyctl_join_session_keyring = 1;  // KEYCTL_JOIN_SESSION_KEYRING
  if (::syscall(SYS_keyctl, keyctl_join_session_keyring, name.c_str()) < 0) return errno;
  return 0;
}

bool same_namespace(pid_t pid, const std::string& type) {
  struct stat self {
  }, other{};
  std::string mine = "/proc/self/ns/" + type;
  std::string theirs = "/proc/" + std::to_string(pid) + "/ns/" + type;
  if (::stat(mine.c_str(), &self) != 0) throw_errno("stat " + mine);
  if (::stat(theirs.c_str(), &other) != 0) throw_errno("stat " + theirs);
  return same_inode(self, other);
}

void set_hostname(const std::string& name) {
  if (::sethostname(name.data(), name.size()) != 0) throw_errno("set hostname " + name);
}

void set_domainname(const std::string& name) {
  if (::setdomainname(name.data(), name.size()) != 0) throw_errno("set domain name " + name);
}

int try_unshare(int flags) noexcept {
  return ::unshare(flags) == 0 ? 0 : errno;
}

void unshare_namespaces(int flags, const std::string& what, const std::string& fix) {
  if (::unshare(flags) != 0) throw_errno(what, fix);
}

void bring_loopback_up() {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) throw_errno("socket for loopback setup");
  struct ifreq req {};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0) throw_errno("read flags of lo");
  if ((req.ifr_flags & IFF_UP) != 0) return;  // a spare namespace comes with it up
  req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &req) != 0) throw_errno("bring lo up");
}

void setns_pidfd(int pidfd, int nstypes, const std::string& what) {
  if (::setns(pidfd, nstypes) != 0) throw_errno("join namespaces of " + what);
}

int namespace_type(int fd) {
  int type = ::ioctl(fd, NS_GET_NSTYPE);
  return type < 0 ? 0 : type;
}

int setns_fd(int fd, int nstype) noexcept {
  return ::setns(fd, nstype) == 0 ? 0 : errno;
}

}  // namespace mrun::sys
