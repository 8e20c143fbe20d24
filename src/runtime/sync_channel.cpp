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

std::pair<SyncChannel, SyncChannel> SyncChannel::make_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    throw_errno("create sync socket pair");
  }
  return {SyncChannel(UniqueFd(fds[0])), SyncChannel(UniqueFd(fds[1]))};
}

void SyncChannel::send(SyncType type, std::int32_t value, const std::string& text, int fd) const {
  std::vector<char> buf(header_size + std::min(text.size(), max_message - header_size));
  auto raw_type = static_cast<std::uint32_t>(type);
  std::memcpy(buf.data(), &raw_type, 4);
  std::memcpy(buf.data() + 4, &value, 4);
  std::memcpy(buf.data() + header_size, text.data(), buf.size() - header_size);

  sys::send_with_fd(fd_.get(), std::string_view(buf.data(), buf.size()), fd, "send setup message");
}

std::optional<SyncMessage> SyncChannel::receive() const {
  std::vector<char> buf(max_message);
  struct iovec iov {
    buf.data(), buf.size()
  };
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC)) < 0) {
    if (errno == ECONNRESET) return std::nullopt;
    if (errno != EINTR) throw_errno("receive setup message");
  }
  if (n == 0) return std::nullopt;
  if (static_cast<std::size_t>(n) < header_size) throw Error("short setup message", EPROTO);
  SyncMessage message;
  std::uint32_t raw_type = 0;
  std::memcpy(&raw_type, buf.data(), 4);
  std::memcpy(&message.value, buf.data() + 4, 4);
  message.type = static_cast<SyncType>(raw_type);
  message.text.assign(buf.data() + header_size, static_cast<std::size_t>(n) - header_size);
  for (struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
      message.fd.reset(fd);
    }
  }
  return message;
}

SyncMessage SyncChannel::expect(SyncType type) const {
  auto message = receive();
  if (!message) throw Error("setup peer went away", EPIPE);
  if (message->type != type) {
    throw Error("unexpected setup message " + std::to_string(static_cast<int>(message->type)),
                EPROTO);
  }
  return std::move(*message);
}

}  // namespace mrun::runtime
