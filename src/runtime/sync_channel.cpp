#include "runtime/sync_channel.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "sys/syscalls.hpp"

namespace mrun::runtime {

namespace {
constexpr std::size_t header_size = 8;
constexpr std::size_t max_message = 8192;
}  // namespace

const char* message_name(ToContainer type) {
  switch (type) {
    case ToContainer::ids_mapped: return "ids_mapped";
    case ToContainer::fuse_ready: return "fuse_ready";
    case ToContainer::fuse_failed: return "fuse_failed";
    case ToContainer::pty_ready: return "pty_ready";
    case ToContainer::hooks_done: return "hooks_done";
    case ToContainer::device_grants_done: return "device_grants_done";
    case ToContainer::seccomp_listener_taken: return "seccomp_listener_taken";
  }
  return nullptr;
}

const char* message_name(ToMonitor type) {
  switch (type) {
    case ToMonitor::need_fuse: return "need_fuse";
    case ToMonitor::pty_master: return "pty_master";
    case ToMonitor::error: return "error";
    case ToMonitor::created: return "created";
    case ToMonitor::create_hooks: return "create_hooks";
    case ToMonitor::need_device_grant: return "need_device_grant";
    case ToMonitor::seccomp_listener: return "seccomp_listener";
  }
  return nullptr;
}

void refuse_setup_message(std::uint32_t raw, const char* receiver) {
  throw Error(std::string("unexpected setup message ") + std::to_string(raw) + " sent to " +
                  receiver + ": not one of its direction",
              EPROTO);
}

void unexpected_setup_message(const char* got, const char* wanted) {
  if (got == nullptr) throw Error(std::string("setup peer went away before ") + wanted, EPIPE);
  throw Error(std::string("unexpected setup message ") + got + " where " + wanted + " belongs",
              EPROTO);
}

std::pair<MonitorEnd, ContainerEnd> make_sync_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    throw_errno("create sync socket pair");
  }
  MonitorEnd monitor{UniqueFd(fds[0])};
  ContainerEnd container{UniqueFd(fds[1])};
  int on = 1;
  if (::setsockopt(monitor.fd(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) {
    throw_errno("set SO_PASSCRED on the sync socket");
  }
  return {std::move(monitor), std::move(container)};
}

void SyncSocket::send(std::uint32_t type, std::int32_t value, const std::string& text,
                      int fd) const {
  std::vector<char> buf(header_size + std::min(text.size(), max_message - header_size));
  std::memcpy(buf.data(), &type, 4);
  std::memcpy(buf.data() + 4, &value, 4);
  std::memcpy(buf.data() + header_size, text.data(), buf.size() - header_size);
  sys::send_with_fd(fd_.get(), std::string_view(buf.data(), buf.size()), fd, "send setup message");
}

int SyncSocket::send_fd_only(std::uint32_t type, int fd) const noexcept {
  char header[header_size] = {};
  std::int32_t value = 0;
  std::memcpy(header, &type, 4);
  std::memcpy(header + 4, &value, 4);
  struct iovec iov {
    header, sizeof header
  };
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  while (::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

std::optional<SyncSocket::Raw> SyncSocket::receive() const {
  std::vector<char> buf(max_message);
  struct iovec iov {
    buf.data(), buf.size()
  };
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(
      struct cmsghdr) char control[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC)) < 0) {
    if (errno == ECONNRESET) return std::nullopt;
    if (errno != EINTR) throw_errno("receive setup message");
  }
  if (n == 0) return std::nullopt;
  Raw message;
  // The fd first: whatever else is wrong with the message, it is closed, not leaked.
  for (struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
      message.fd.reset(fd);
    } else if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS) {
      struct ucred cred {};
      std::memcpy(&cred, CMSG_DATA(cmsg), sizeof cred);
      message.sender = cred.pid;
    }
  }
  if (static_cast<std::size_t>(n) < header_size) throw Error("short setup message", EPROTO);
  std::memcpy(&message.type, buf.data(), 4);
  std::memcpy(&message.value, buf.data() + 4, 4);
  message.text.assign(buf.data() + header_size, static_cast<std::size_t>(n) - header_size);
  return message;
}

}  // namespace mrun::runtime
