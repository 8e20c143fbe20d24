// A pool of kept directories: what one container leaves, emptied, for the next, so that
// neither has to make and remove it (dear on ext4 without a journal: runtime/storage.hpp).
// The state store keeps its state directories here, the launcher its overlay storage.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace mrun::sys {

// Moves DIR into the pool directory POOL (made 0700 if missing) under a name of its own,
// unless POOL holds MAX already. Returns false when it was not kept (the caller removes
// it).
bool keep_spare_dir(const std::string& pool, const std::string& dir, std::size_t max);

// Renames one kept directory of POOL to TARGET (atomic: of two takers, one gets each)
// and returns true if it is ours (owned by our euid) and USABLE(its fd) says it may be
// used; a taken one that is not is removed and the next tried. False when none is.
bool take_spare_dir(const std::string& pool, const std::string& target,
                    const std::function<bool(int dir_fd)>& usable);

}  // namespace mrun::sys
