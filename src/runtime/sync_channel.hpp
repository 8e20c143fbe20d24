// The parent <-> container-setup conversation: a SOCK_SEQPACKET socketpair, one message
// per step, optionally carrying an fd (the pty master). The child's end is O_CLOEXEC,
// so end-of-file after the last message means "execve succeeded".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.hpp"

namespace mrun::runtime {

enum class SyncType : std::uint32_t {
  ids_mapped = 1,      // parent -> child: uid/gid maps written, go on
  need_fuse,           // child -> parent: mount fuse-overlayfs for me (text: why)
  fuse_ready,          // parent -> child
  fuse_failed,         // parent -> child: give up (the parent reports the error)
  pty_master,          // child -> parent: the pty master (fd attached)
  pty_ready,           // parent -> child: window size set, go on
  error,               // child -> parent: setup failed (value: exit status, text: message)
  created,             // child -> parent: set up, now held on the exec fifo until `start`
  create_hooks,        // child -> parent: mounts made; run prestart/createRuntime hooks
  hooks_done,          // parent -> child: done (text: the state JSON for the container's hooks)
  need_device_grant,   // child -> parent: after pivot_root, have mrun-gpu-helper make
                       // the --device/--gpu nodes I cannot open usable
  device_grants_done,  // parent -> child: done (or given up, with a warning)
};

struct SyncMessage {
  SyncType type = SyncType::error;
  std::int32_t value = 0;
  std::string text;
  UniqueFd fd;
};

class SyncChannel {
 public:
  SyncChannel() = default;
  explicit SyncChannel(UniqueFd fd) : fd_(std::move(fd)) {}
  static std::pair<SyncChannel, SyncChannel> make_pair();

  void send(SyncType type, std::int32_t value = 0, const std::string& text = {}, int fd = -1) const;
  // std::nullopt on end-of-file (the peer exec'd or exited).
  std::optional<SyncMessage> receive() const;
  // Receives and checks the type; anything else (or EOF) is an error.
  SyncMessage expect(SyncType type) const;
  int fd() const noexcept { return fd_.get(); }
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
};

}  // namespace mrun::runtime
