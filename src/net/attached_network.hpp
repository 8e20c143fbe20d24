// What mrun connected to a container's own network namespace (a slirp4netns or pasta
// process, or a veth into a bridge): the launcher holds one while the container runs
// and stops it when the container exits. Destroying it stops it too, so every error
// path tears the network down without extra code.
#pragma once

#include "base/log.hpp"

namespace mrun::net {

class AttachedNetwork {
 public:
  virtual ~AttachedNetwork() = default;
  // While the container runs: report a network that dies under it.
  virtual void watch(const Logger& log) = 0;
  // Idempotent; never throws.
  virtual void stop() noexcept = 0;
};

}  // namespace mrun::net
