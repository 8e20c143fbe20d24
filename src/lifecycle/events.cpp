#include "lifecycle/events.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.hpp"
#include "cgroup/runc_stats.hpp"
#include "cgroup/v1_group.hpp"
#include "cgroup/v1_stats.hpp"
#include "lifecycle/lifecycle.hpp"
#include "state/state.hpp"
#include "sys/fs.hpp"

namespace mrun::runtime {

namespace {

bool running(const ContainerState& state) {
  return effective_status(state) == Status::running;
}

// The container's cgroup, v2 leaf or v1 group: where its figures come from.
struct Source {
  const ContainerState& state;
  bool exists() const {
    if (!state.cgroup_v1.empty()) {
      const auto dirs = cgroup::v1_unique_dirs(state.cgroup_v1);
      return std::all_of(dirs.begin(), dirs.end(), [](auto& d) { return sys::is_dir(d); });
    }
    return !state.cgroup.empty() && sys::is_dir(state.cgroup);
  }
  std::uint64_t oom_kills() const {
    if (!state.cgroup_v1.empty()) return cgroup::v1_oom_kills(state.cgroup_v1);
    return cgroup::keyed_number(sys::read_file(state.cgroup + "/memory.events").value_or(""),
                                "oom_kill");
  }
  nlohmann::json stats() const {
    if (!state.cgroup_v1.empty()) return cgroup::runc_stats_v1(state.cgroup_v1);
    return cgroup::runc_stats(state.cgroup);
  }
};

}  // namespace

void container_events(const Context& ctx, const std::string& id, bool stats_once,
                      std::chrono::milliseconds interval, std::ostream& out) {
  StateStore store(ctx.state_root);
  const ContainerState state = existing_container(store, id);
  if (!running(state)) {
    throw Error("container " + id + " is not running", 0,
                "events come from the cgroup of a running container");
  }
  const Source source{state};
  if (!source.exists()) {
    throw Error("container " + id + " has no cgroup of its own", 0,
                "events come from its cgroup (a v2 leaf, or rootful on cgroup v1 a v1 group): "
                "run it where mrun can make one (see mrun-run(1), RESOURCE LIMITS)");
  }
  auto stats_event = [&] {
    out << nlohmann::json{{"type", "stats"}, {"id", id}, {"data", source.stats()}}.dump()
        << std::endl;
  };
  if (stats_once) {
    stats_event();
    return;
  }
  std::uint64_t ooms = source.oom_kills();
  auto next_stats = std::chrono::steady_clock::now();
  // Polled every 100 ms (or the interval, when shorter): an OOM kill shows within that,
  // and the loop ends soon after the container does.
  const auto tick = std::min(interval, std::chrono::milliseconds(100));
  while (true) {
    auto now_state = store.read(id);
    if (!now_state || !running(*now_state) || !source.exists()) return;
    if (auto now = source.oom_kills(); now > ooms) {
      ooms = now;
      out << nlohmann::json{{"type", "oom"}, {"id", id}}.dump() << std::endl;
    }
    if (std::chrono::steady_clock::now() >= next_stats) {
      stats_event();
      next_stats += interval;
    }
    std::this_thread::sleep_for(tick);
  }
}

}  // namespace mrun::runtime
