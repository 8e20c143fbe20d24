#include "userns/idmap.hpp"

#include <algorithm>

namespace mrun::userns {

namespace {
// Container ids 1..65535 taken from the ranges in file order, as many as they hold.
std::vector<IdMapEntry> plan_one(std::uint32_t caller, const std::vector<SubIdRange>& ranges) {
  std::vector<IdMapEntry> entries{{0, caller, 1}};
  std::uint32_t next_inside = 1;
  for (const auto& range : ranges) {
    if (next_inside >= max_container_ids) break;
    std::uint32_t count = std::min<std::uint32_t>(range.count, max_container_ids - next_inside);
    entries.push_back({next_inside, range.start, count});
    next_inside += count;
  }
  return entries;
}
}  // namespace

IdMapPlan plan_id_maps(uid_t uid, gid_t gid, const std::vector<SubIdRange>& subuids,
                       const std::vector<SubIdRange>& subgids, bool want_subordinate) {
  IdMapPlan plan;
  if (want_subordinate && !subuids.empty() && !subgids.empty()) {
    plan.kind = MapKind::subordinate;
    plan.uids = plan_one(uid, subuids);
    plan.gids = plan_one(gid, subgids);
  } else {
    plan.kind = MapKind::single;
    plan.uids = {{0, uid, 1}};
    plan.gids = {{0, gid, 1}};
  }
  return plan;
}

std::string format_map(const std::vector<IdMapEntry>& entries) {
  std::string out;
  for (const auto& e : entries) {
    out += std::to_string(e.inside) + " " + std::to_string(e.outside) + " " +
           std::to_string(e.count) + "\n";
  }
  return out;
}

std::vector<std::string> helper_argv(const std::string& program, pid_t pid,
                                     const std::vector<IdMapEntry>& entries) {
  std::vector<std::string> argv{program, std::to_string(pid)};
  for (const auto& e : entries) {
    argv.push_back(std::to_string(e.inside));
    argv.push_back(std::to_string(e.outside));
    argv.push_back(std::to_string(e.count));
  }
  return argv;
}

std::int64_t map_to_host(const std::vector<IdMapEntry>& entries, std::uint32_t inside) {
  for (const auto& e : entries) {
    if (inside >= e.inside && inside - e.inside < e.count) {
      return static_cast<std::int64_t>(e.outside) + (inside - e.inside);
    }
  }
  return -1;
}

}  // namespace mrun::userns
