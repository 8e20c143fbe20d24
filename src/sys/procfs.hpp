// Writes into procfs that must land in procfs: each file opened beneath a descriptor of
// /proc checked to be procfs, with no symlink and no mount crossed, so that a config's
// mount over /proc or over one entry cannot redirect a runtime write (CVE-2025-52881).
#pragma once

#include <string>

#include "base/unique_fd.hpp"

namespace mrun::sys {

// /proc/<our pid>/<name> (oom_score_adj, ...) of the procfs mounted at /proc, opened
// with `flags` beneath /proc with no symlink and no mount crossed, after checking that
// /proc is procfs at all: a config that puts a tmpfs there, or a file bound over the
// entry, gets an error instead of a write that lands elsewhere (CVE-2025-52881).
UniqueFd open_own_proc_file(const std::string& name, int flags);

// Writes `value` to /proc/sys/<relative> (a sysctl, "net/ipv4/ip_forward") through a
// descriptor: /proc/sys checked to be procfs, the file opened beneath it with no symlink
// and no mount crossed (CVE-2025-52881: a write redirected by a mount elsewhere).
void write_proc_sys(const std::string& relative, const std::string& value);

}  // namespace mrun::sys
