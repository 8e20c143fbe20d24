// One user namespace for all rootless containers of a state root, kept alive by a small
// holder process and joined by each container, so that newuidmap and newgidmap (two
// setuid programs, about a fifth of a container's start) run once per holder instead
// of once per container. podman's rootless pause process does the same.
//
// What the containers then share, and why that is safe:
//  - The id map. They shared it before: every container maps the same subordinate
//    range, so a uid of one container is that uid of every other on the host's files.
//  - The owner of their namespaces. Root of one container has capabilities over the
//    mount, PID, network, IPC and UTS namespaces of every other, but to use them it
//    needs a handle on them (a /proc/PID/ns file, a pidfd), and it sees no process of
//    another container (a PID namespace of its own) and no fd of one. The default
//    capability set has no CAP_SYS_PTRACE or CAP_SYS_ADMIN, and the default seccomp
//    profile refuses setns and unshare(CLONE_NEWUSER).
//  - The holder itself: a process of the caller's uid in the host's PID namespace,
//    invisible from any container (which has a PID namespace of its own); it has
//    nothing of its caller's: this binary re-executed as `mrun-userns UID`
//    (userns_holder.hpp), so no argument, environment or memory of the mrun that
//    started it, no fd of mrun's, its cwd is /. Its own fds are the
//    record's watch and the spare network namespaces it hands out (spare_netns.hpp):
//    a socket in the state root, its home network namespace and one spare.
//  --userns private gives a container a namespace of its own, as before.
//
// The holder: STATE_ROOT/.userns names it ("PID STARTTIME"). It exits after LINGER
// seconds in which no mrun looked it up (it watches the record with inotify), or as
// soon as the record no longer names it (replaced by a holder with another map,
// removed with the state root). Joining checks, by a pidfd taken first, that the
// process is the one the record names (pid and start time), alive after its namespace
// was opened, in a user namespace owned by the caller whose parent is the caller's,
// and mapped exactly as the caller's plan: anything else is not joined.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "base/unique_fd.hpp"
#include "userns/idmap.hpp"

namespace mrun::userns {

struct SharedUsernsRequest {
  std::string state_root;  // the caller's private state directory
  IdMapPlan ids;           // subordinate maps (MapKind::subordinate)
  int linger_seconds = 60;
};

// An fd of the shared user namespace (of /proc/HOLDER/ns/user), starting a holder
// when none lives or the living one maps other ids. Throws mrun::Error (newuidmap's
// failure, for one) when a holder cannot be started.
UniqueFd shared_user_namespace(const SharedUsernsRequest& request, const Logger& log);

// The living holder's namespace, never starting one; an invalid fd when there is none
// that maps IDS (for removing a container's storage).
UniqueFd existing_shared_user_namespace(const std::string& state_root, const IdMapPlan& ids);

// The living holder of STATE_ROOT's shared namespace (`mrun userns`), whatever it maps.
struct HolderView {
  pid_t pid = -1;
  std::string user_namespace;  // "user:[INODE]", as /proc/PID/ns/user reads
  std::vector<IdMapEntry> uids, gids;
};
std::optional<HolderView> find_shared_userns_holder(const std::string& state_root);

// `mrun userns --stop`: removes the record (no mrun joins it any more), ends the holder
// with SIGTERM through a pidfd of the process the record named, and waits (up to five
// seconds) for it to exit. Containers already in the namespace keep it alive and run
// on; the next container starts a new holder. The pid stopped, or nullopt for none.
std::optional<pid_t> stop_shared_userns_holder(const std::string& state_root);

// MRUN_USERNS_LINGER (seconds, 1..86400) or 60.
int shared_userns_linger_seconds();

}  // namespace mrun::userns
