// A minimal rootfs built from the host's statically linked busybox: the default image,
// so `mrun run` works with no registry, no network and no image tooling.
#pragma once

#include <string>

namespace mrun::mount {

// The host busybox to copy; must be statically linked (Debian: busybox-static).
std::string find_static_busybox();
// Populates `dir` (created if missing; must be empty).
void make_busybox_rootfs(const std::string& dir, const std::string& busybox);
// The cached default rootfs under `data_root`, made on first use (atomically: built
// beside it, then renamed into place, so a concurrent or interrupted first run never
// leaves a half-made image).
std::string default_rootfs(const std::string& data_root);

}  // namespace mrun::mount
