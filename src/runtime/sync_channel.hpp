// The monitor <-> container-setup conversation: a SOCK_SEQPACKET socketpair, one message
// per step, optionally carrying an fd (the pty master). The container's end is
// O_CLOEXEC, so end-of-file after the last message means "execve succeeded". The
// monitor's end has SO_PASSCRED: each message it receives says, as the kernel saw it,
// which process sent it (the command under --init is not the container's first process).
//
// Typed per direction (as youki's channel is): the monitor sends only ToContainer and
// receives only ToMonitor, the container's setup process the other way round. The two
// enums number their messages apart, so a message that names the other direction, or
// no message at all, is refused where it arrives ("unexpected setup message") instead of
// being taken for something it is not: the container's side is code that runs in the
// container's namespaces before the command, and the monitor trusts nothing it says
// beyond what each message may mean.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "base/unique_fd.hpp"

namespace mrun::runtime {

// The monitor (mrun run, create, exec) to the container's setup process.
enum class ToContainer : std::uint32_t {
  ids_mapped = 1,          // uid/gid maps written (and the cgroup joined): go on
  fuse_ready,              // fuse-overlayfs serves the rootfs
  fuse_failed,             // give up (the monitor reports the error)
  pty_ready,               // window size set: go on
  hooks_done,              // prestart/createRuntime ran (text: the state JSON for the hooks)
  device_grants_done,      // mrun-gpu-helper made the nodes usable (or gave up, warning)
  seccomp_listener_taken,  // the agent at listenerPath holds the listener: go on
};

// The container's setup process (or exec's) to the monitor.
enum class ToMonitor : std::uint32_t {
  need_fuse = 101,    // mount fuse-overlayfs for me (text: why)
  pty_master,         // the pty master (fd attached)
  error,              // setup failed (value: exit status, text: the message)
  created,            // create: set up, held on the exec fifo until `start`;
                      // exec: the process (value: its pid, fd: its pidfd)
  create_hooks,       // mounts made: run prestart/createRuntime
  need_device_grant,  // after pivot_root: have mrun-gpu-helper make the nodes usable
  seccomp_listener,   // the seccomp filter's notification listener (fd attached), for
                      // the agent at listenerPath (init/seccomp_agent.hpp)
};

const char* message_name(ToContainer type);
const char* message_name(ToMonitor type);

template <typename Type>
struct SyncMessage {
  Type type{};
  std::int32_t value = 0;
  std::string text;
  UniqueFd fd;
  pid_t sender = 0;  // the monitor's end only: the sender's pid in the monitor's view
};

// The untyped transport under both ends.
class SyncSocket {
 public:
  struct Raw {
    std::uint32_t type = 0;
    std::int32_t value = 0;
    std::string text;
    UniqueFd fd;
    pid_t sender = 0;
  };
  SyncSocket() = default;
  explicit SyncSocket(UniqueFd fd) : fd_(std::move(fd)) {}
  void send(std::uint32_t type, std::int32_t value, const std::string& text, int fd) const;
  // One sendmsg(2) of a bare message carrying `fd`, and nothing else: no allocation (so
  // no brk or mmap either), no other syscall. For the seccomp listener, sent while the
  // filter already judges every syscall of the process. Returns 0 or the errno.
  int send_fd_only(std::uint32_t type, int fd) const noexcept;
  // std::nullopt on end-of-file (the peer exec'd or exited).
  std::optional<Raw> receive() const;
  int fd() const noexcept { return fd_.get(); }
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
};

// Throws Error(EPROTO) naming the number: a message this end never receives.
[[noreturn]] void refuse_setup_message(std::uint32_t raw, const char* receiver);
// Throws Error: `got` arrived (nullptr: end-of-file) where only `wanted` may.
[[noreturn]] void unexpected_setup_message(const char* got, const char* wanted);

template <typename Out, typename In>
class SyncEnd {
 public:
  SyncEnd() = default;
  explicit SyncEnd(UniqueFd fd) : socket_(std::move(fd)) {}

  void send(Out type, std::int32_t value = 0, const std::string& text = {}, int fd = -1) const {
    socket_.send(static_cast<std::uint32_t>(type), value, text, fd);
  }
  int send_fd_only(Out type, int fd) const noexcept {
    return socket_.send_fd_only(static_cast<std::uint32_t>(type), fd);
  }
  // std::nullopt on end-of-file; a message of the other direction, or one no enum
  // value names, is refused (Error, EPROTO).
  std::optional<SyncMessage<In>> receive() const {
    auto raw = socket_.receive();
    if (!raw) return std::nullopt;
    if (message_name(static_cast<In>(raw->type)) == nullptr) {
      refuse_setup_message(raw->type, receiver());
    }
    return SyncMessage<In>{static_cast<In>(raw->type), raw->value, std::move(raw->text),
                           std::move(raw->fd), raw->sender};
  }
  // Receives and checks the type; anything else (or end-of-file) is an error.
  SyncMessage<In> expect(In type) const {
    auto message = receive();
    if (!message) unexpected_setup_message(nullptr, message_name(type));
    if (message->type != type) {
      unexpected_setup_message(message_name(message->type), message_name(type));
    }
    return std::move(*message);
  }
  int fd() const noexcept { return socket_.fd(); }
  void close() { socket_.close(); }

 private:
  static const char* receiver() {
    return std::is_same_v<In, ToMonitor> ? "the monitor" : "the container";
  }
  SyncSocket socket_;
};

using MonitorEnd = SyncEnd<ToContainer, ToMonitor>;
using ContainerEnd = SyncEnd<ToMonitor, ToContainer>;

std::pair<MonitorEnd, ContainerEnd> make_sync_pair();

}  // namespace mrun::runtime
