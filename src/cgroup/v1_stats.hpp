// A cgroup v1 group's figures (v1_group.hpp), for `events --stats` in the shape runc's
// fs manager gives on v1 (runc's types.Stats, as runc_stats.hpp for v2) and for
// `mrun stats`. Read from the group's files only; a file the kernel does not have (no
// swap accounting, no hugetlb hierarchy) leaves its figures at zero, as runc does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "cgroup/cgroup.hpp"
#include "cgroup/v1_group.hpp"

namespace mrun::cgroup {

nlohmann::json runc_stats_v1(const V1Dirs& dirs);

// `mrun stats`: the same figures as read_stats of a v2 leaf.
Stats read_v1_stats(const V1Dirs& dirs);

// memory.oom_control's oom_kill: processes the OOM killer killed in the group.
std::uint64_t v1_oom_kills(const V1Dirs& dirs);

}  // namespace mrun::cgroup
