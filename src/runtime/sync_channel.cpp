#include "runtime/sync_channel.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "sys/fd_passing.hpp"

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
  return sys::try_send_with_fd(fd_.get(), std::string_view(header, sizeof header), fd);
}

std::optional<SyncSocket::Raw> SyncSocket::receive() const {
  std::vector<char> buf(max_message);
  // The fd is taken whatever else is wrong with the message: closed, not leaked.
  sys::ReceivedMessage got = sys::receive_with_fd(fd_.get(), buf.data(), buf.size());
  if (got.size < 0 && got.err == ECONNRESET) return std::nullopt;
  if (got.size < 0) throw_errno(got.err, "receive setup message");
  if (got.size == 0) return std::nullopt;
  const auto n = static_cast<std::size_t>(got.size);
  Raw message;
  message.fd = std::move(got.fd);
  message.sender = got.sender;
  if (n < header_size) throw Error("short setup message", EPROTO);
  std::memcpy(&message.type, buf.data(), 4);
  std::memcpy(&message.value, buf.data() + 4, 4);
  message.text.assign(buf.data() + header_size, n - header_size);
  return message;
}

}  // namespace mrun::runtime
