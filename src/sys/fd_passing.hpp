// Unix sockets and the descriptors sent over them (SCM_RIGHTS): the one place that
// builds or reads the control messages, for the setup channel between mrun and the
// container, the holder's spare network namespaces, seccomp listeners and
// --console-socket.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "base/unique_fd.hpp"

struct sockaddr_un;

namespace mrun::sys {

// PATH as a unix socket address; false when it does not fit sun_path (107 bytes).
bool unix_address(const std::string& path, struct sockaddr_un* addr) noexcept;

// A connection of TYPE (SOCK_STREAM, SOCK_SEQPACKET; close-on-exec) to the unix socket at
// PATH. Throws an Error "connect to PATH: <errno>" (ENAMETOOLONG for a path no
// sockaddr_un holds).
UniqueFd connect_unix_socket(const std::string& path, int type = SOCK_STREAM);

// One sendmsg of DATA on a connected unix socket, carrying FD (SCM_RIGHTS) unless it is
// negative; retried on EINTR, never SIGPIPE. Returns 0 or the errno: no allocation, so
// a child between clone and exec may call it.
int try_send_with_fd(int sock, std::string_view data, int fd) noexcept;
// The same, throwing an Error naming WHAT.
void send_with_fd(int sock, std::string_view data, int fd, const std::string& what);

// --console-socket: connects to the unix socket at `path` and sends `fd` in one
// SCM_RIGHTS message whose data is `name` (runc sends the pty master so, named
// "/dev/ptmx"; conmon and podman read it that way).
void send_fd_to_socket(const std::string& path, int fd, const std::string& name);

// What one recvmsg brought: SIZE bytes of data (0: the peer closed; -1: ERR is the
// errno, EINTR retried), the descriptor an SCM_RIGHTS message carried (always taken,
// so never leaked, whatever the caller then makes of the message; close-on-exec), the
// sender's pid where SCM_CREDENTIALS came along (SO_PASSCRED), and whether data or
// control data were cut short.
struct ReceivedMessage {
  ssize_t size = -1;
  int err = 0;
  UniqueFd fd;
  pid_t sender = 0;
  bool truncated = false;
};
ReceivedMessage receive_with_fd(int sock, char* buf, std::size_t size) noexcept;

}  // namespace mrun::sys
