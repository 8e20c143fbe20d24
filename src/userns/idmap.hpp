// Planning the container's uid/gid maps. Pure: no files, no syscalls, unit tested.
//
// Rootless with subordinate ids (the default): container 0 -> the caller, and
// container 1..N -> the caller's subordinate range(s), N at most 65535, so images that
// use ids up to 65535 (nobody, service users) work. Written by the setuid helpers
// newuidmap/newgidmap, which check /etc/subuid on our behalf.
// Single-ID (no subordinate ids, or --userns=single): only container 0 -> the caller;
// an unprivileged process may write that one line itself after denying setgroups.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "userns/subid.hpp"

namespace mrun::userns {

struct IdMapEntry {
  std::uint32_t inside = 0;
  std::uint32_t outside = 0;
  std::uint32_t count = 0;
  bool operator==(const IdMapEntry&) const = default;
};

enum class MapKind {
  subordinate,  // via newuidmap/newgidmap
  single,       // written directly, setgroups denied
  direct,       // a config's maps, written by a writer that may (root of the parent)
  joined,       // none to write: a user namespace joined by path has its own
};

struct IdMapPlan {
  MapKind kind = MapKind::single;
  std::vector<IdMapEntry> uids;
  std::vector<IdMapEntry> gids;
};

inline constexpr std::uint32_t max_container_ids = 65536;  // container ids 0..65535

// `want_subordinate` is false for --userns=single. Falls back to single when either
// file has no range for the caller (the caller decides whether to warn).
IdMapPlan plan_id_maps(uid_t uid, gid_t gid, const std::vector<SubIdRange>& subuids,
                       const std::vector<SubIdRange>& subgids, bool want_subordinate);

// "inside outside count\n" lines, the format of /proc/PID/uid_map.
std::string format_map(const std::vector<IdMapEntry>& entries);
// argv for newuidmap/newgidmap: PROGRAM PID inside outside count ...
std::vector<std::string> helper_argv(const std::string& program, pid_t pid,
                                     const std::vector<IdMapEntry>& entries);
// The host id a container id maps to, or -1.
std::int64_t map_to_host(const std::vector<IdMapEntry>& entries, std::uint32_t inside);

}  // namespace mrun::userns
