// A pool of kept directories: what one container leaves, emptied, for the next, so that
// neither has to make and remove it (dear on ext4 without a journal: state/storage.hpp).
// The state store keeps its state directories here, the launcher its overlay storage.
//
// Names in a pool: TAG-PID-N for a kept directory (the tag says what state it was kept
// in; the state store uses none), and .tidy-PID-N for one an mrun is tidying, which no
// taker takes (tidy_one_spare_dir). Every move in or out is one rename, so of two mruns
// that reach for the same directory one gets it and the other sees ENOENT. The renames
// go through CALLS (sys/seam.hpp), so that a unit test can lose each race on purpose.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "sys/seam.hpp"

namespace mrun::sys {

// Moves DIR into the pool directory POOL (made 0700 if missing) under a name of its own
// that starts with TAG, unless POOL holds MAX already. Returns false when it was not
// kept (the caller removes it).
bool keep_spare_dir(const std::string& pool, const std::string& dir, std::size_t max,
                    const std::string& tag = "", Syscalls& calls = real_syscalls());

// Renames one kept directory of POOL whose name starts with TAG to TARGET and returns
// true if it is ours (owned by our euid) and USABLE(its fd) says it may be used; a taken
// one that is not is removed and the next tried. False when none is.
bool take_spare_dir(const std::string& pool, const std::string& target,
                    const std::function<bool(int dir_fd)>& usable, const std::string& tag = "",
                    Syscalls& calls = real_syscalls());

// Tidies one kept directory of POOL whose name does not start with READY_TAG (or one
// that an mrun killed while tidying left): takes it out of takers' reach under a
// .tidy- name, runs TIDY(its fd), and keeps it again as READY_TAG-PID-N; removes it if
// TIDY says false. Returns whether there was one. For work that would otherwise be done
// by a taker, in time when the caller waits anyway.
bool tidy_one_spare_dir(const std::string& pool, const std::string& ready_tag,
                        const std::function<bool(int dir_fd)>& tidy,
                        Syscalls& calls = real_syscalls());

}  // namespace mrun::sys
