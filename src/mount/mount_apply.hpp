// Carries out a mount plan under the new root, before pivot_root. Every container path
// is resolved with openat2(RESOLVE_IN_ROOT), so a symlink inside the image (say
// /proc -> /host/proc) resolves inside the image, never to the host.
#pragma once

#include <string>
#include <vector>

#include "base/log.hpp"
#include "mount/mount_plan.hpp"

namespace mrun::mount {

void apply_mount_plan(const std::string& root, const std::vector<MountStep>& plan,
                      const Logger& log);

// Resolves `container_path` under `root` (creating it, as a directory or an empty
// file, when `create` is set) and returns the host path of what it resolved to.
std::string resolve_in_root(const std::string& root, const std::string& container_path, bool create,
                            bool as_file);

}  // namespace mrun::mount
