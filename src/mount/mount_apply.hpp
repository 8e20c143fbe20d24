// Carries out a mount plan under the new root, before pivot_root. Every container path
// is opened with openat2(RESOLVE_IN_ROOT) and the mount attached onto that descriptor
// (sys/mount_fd.hpp), so a symlink inside the image (say /proc -> /host/proc, or /dev ->
// /etc) resolves inside the image, never to the host, and is never re-resolved.
#pragma once

#include <string>
#include <vector>

#include "base/log.hpp"
#include "mount/mount_plan.hpp"

namespace mrun::mount {

void apply_mount_plan(const std::string& root, const std::vector<MountStep>& plan,
                      const Logger& log);

// The plan's linux.rootfsPropagation on "/", once the process is in the new root:
// pivot_root refuses a shared root or a root whose parent is shared.
void apply_root_propagation(const std::vector<MountStep>& plan);

}  // namespace mrun::mount
