#include "userns/spare_netns.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "base/error.hpp"
#include "base/spares.hpp"
#include "sys/fd_passing.hpp"
#include "sys/fs.hpp"
#include "sys/namespaces.hpp"

namespace mrun::userns {

namespace {

UniqueFd open_own_network_namespace() {
  return UniqueFd(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
}

}  // namespace

std::string spare_netns_socket_path(const std::string& state_root) {
  return state_root + "/.userns.sock";
}

UniqueFd listen_for_spare_requests(const std::string& state_root) {
  if (!kKeepSpares) return {};
  const std::string path = spare_netns_socket_path(state_root);
  struct sockaddr_un addr {};
  if (!sys::unix_address(path, &addr)) return {};
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return {};
  // A previous holder's (gone, or replaced along with its record): ours from now on.
  ::unlink(path.c_str());
  if (::bind(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return {};
  if (::listen(sock.get(), 16) != 0) {
    ::unlink(path.c_str());
    return {};
  }
  return sock;
}

SpareNetworkNamespaces::SpareNetworkNamespaces() {
  if (sys::try_unshare(CLONE_NEWNET) != 0) return;
  home_ = open_own_network_namespace();
  make_spare();
}

void SpareNetworkNamespaces::make_spare() {
  spare_.reset();
  if (!home_ || sys::try_unshare(CLONE_NEWNET) != 0) return;
  UniqueFd made = open_own_network_namespace();
  // Its loopback up now, as every container in a new network namespace has it: that
  // (the device's IPv4 and IPv6 addresses and routes) is then the holder's, not
  // the container's, setup. Where it fails, the container brings it up itself.
  try {
    sys::bring_loopback_up();
  } catch (const Error&) {
  }
  // Back home before the spare can be handed out; if that fails the holder would sit in
  // what it hands out: no more spares then.
  if (sys::setns_fd(home_.get(), CLONE_NEWNET) != 0) {
    home_.reset();
    return;
  }
  spare_ = std::move(made);
}

void SpareNetworkNamespaces::serve(int listen_fd) {
  UniqueFd conn(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return;
  struct ucred peer {};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
      peer.uid != ::getuid()) {
    return;  // not the caller's: closed without an answer
  }
  const char answer = spare_ ? 's' : 'n';
  try {
    sys::send_with_fd(conn.get(), std::string_view(&answer, 1), spare_ ? spare_.get() : -1,
                      "hand a spare network namespace over");
  } catch (const Error&) {
    // The caller went away: it starts without a spare.
  }
  conn.reset();
  // Whether or not the send went through, this one is never handed again (a caller
  // that vanished mid-way may still have received it).
  make_spare();
}

UniqueFd ask_for_spare_network_namespace(const std::string& state_root) {
  if (!kKeepSpares) return {};
  struct sockaddr_un addr {};
  if (!sys::unix_address(spare_netns_socket_path(state_root), &addr)) return {};
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return {};
  // A holder that does not answer within a second is not waited for; nor one whose
  // backlog is full (stopped, or flooded by another process of the user): a unix
  // socket's connect waits for room as long as SO_SNDTIMEO lets it.
  struct timeval timeout {
    1, 0
  };
  ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return {};
  return sock;
}

UniqueFd receive_spare_network_namespace(const UniqueFd& request, int userns_fd) {
  if (!request) return {};
  char byte = 0;
  sys::ReceivedMessage got = sys::receive_with_fd(request.get(), &byte, 1);
  UniqueFd spare = std::move(got.fd);
  if (got.size != 1 || byte != 's' || !spare || got.truncated) return {};
  // A network namespace, owned by the shared user namespace: anything else is not used.
  if (::ioctl(spare.get(), NS_GET_NSTYPE) != CLONE_NEWNET) return {};
  UniqueFd owner(::ioctl(spare.get(), NS_GET_USERNS));
  if (!owner || !sys::same_inode(owner.get(), userns_fd)) return {};
  return spare;
}

}  // namespace mrun::userns
