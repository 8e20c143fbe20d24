// Per-container storage (overlay upper/work dirs and the mount point) and its removal.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/context.hpp"

namespace mrun::runtime {

std::string storage_dir_for(const Context& ctx, const std::string& name);

// Makes DIR with upper/, work/ and merged/ for a new container: a kept spare when there
// is one (see keep_storage_as_spare), else new directories.
void make_storage(const Context& ctx, const std::string& dir);

// At the end of an --rm container: keeps its storage for a later container instead of
// removing it, when the container left nothing in its upper layer. What overlayfs left
// in work/ stays until tidy_spare_storage empties it; make_storage takes only tidied
// spares. Spares live in DATA/containers/.spare, at most kMaxSpareStorages of them.
// Why: on a filesystem where making and removing a directory is dear (ext4 without a
// journal, with discard, skips every inode freed in the last minute when it allocates
// one, and discards a freed directory's block before rmdir returns), the four
// directories of every --rm start were a tenth of it, and emptying work/ at the exit
// (three such rmdirs) was another twentieth. Returns false when the storage was not
// kept (the caller removes it).
inline constexpr std::size_t kMaxSpareStorages = 4;
bool keep_storage_as_spare(const Context& ctx, const std::string& dir);

// Empties the work/ of one spare kept as it was left, out of other mruns' reach while it
// does (sys/spare_dirs.hpp), so that a later make_storage can take it. Meant for time
// the caller would spend waiting anyway: the monitor calls it once its container runs
// its command. Returns whether there was one to tidy.
bool tidy_spare_storage(const Context& ctx);

// Removes a container's storage. Rootless, the upper dir may hold files owned by
// subordinate ids that the caller cannot delete directly (as `podman unshare rm`
// would); then the removal runs again as root of a user namespace with the same map.
void remove_storage(const Context& ctx, const std::string& dir, bool subordinate_ids);

}  // namespace mrun::runtime
