#include "sys/fd_passing.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.hpp"

namespace mrun::sys {

bool unix_address(const std::string& path, struct sockaddr_un* addr) noexcept {
  *addr = {};
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof addr->sun_path) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size());
  return true;
}

UniqueFd connect_unix_socket(const std::string& path, int type) {
  struct sockaddr_un addr {};
  if (!unix_address(path, &addr)) throw_errno(ENAMETOOLONG, "connect to " + path);
  UniqueFd sock(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!sock) throw_errno("socket to connect to " + path);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw_errno("connect to " + path);
  }
  return sock;
}

int try_send_with_fd(int sock, std::string_view data, int fd) noexcept {
  struct iovec iov {
    const_cast<char*>(data.data()), data.size()
  };
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  }
  while (::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

void send_with_fd(int sock, std::string_view data, int fd, const std::string& what) {
  if (int err = try_send_with_fd(sock, data, fd); err != 0) throw_errno(err, what);
}

void send_fd_to_socket(const std::string& path, int fd, const std::string& name) {
  struct sockaddr_un addr {};
  if (!unix_address(path, &addr)) {
    throw Error("--console-socket " + path + ": path too long", ENAMETOOLONG);
  }
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) throw_errno("socket for --console-socket");
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw_errno("connect to --console-socket " + path, "the socket must be listening");
  }
  send_with_fd(sock.get(), name, fd, "send the pty master to --console-socket " + path);
}

ReceivedMessage receive_with_fd(int sock, char* buf, std::size_t size) noexcept {
  struct iovec iov {
    buf, size
  };
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(
      struct cmsghdr) char control[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ReceivedMessage got;
  while ((got.size = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (got.size < 0) {
    got.err = errno;
    return got;
  }
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      // Every descriptor that came is ours now: the first is kept, any more (a peer
      // that sent several) are closed, and a message with several counts as cut short.
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        UniqueFd received(fd);
        if (!got.fd) {
          got.fd = std::move(received);
        } else {
          got.truncated = true;
        }
      }
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
      struct ucred cred {};
      std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
      got.sender = cred.pid;
    }
  }
  if ((msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0) got.truncated = true;
  return got;
}

}  // namespace mrun::sys
