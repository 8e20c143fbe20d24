#include "runtime/events.hpp"

#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.hpp"
#include "cgroup/runc_stats.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/state.hpp"
#include "sys/fs.hpp"

namespace mrun::runtime {

namespace {

bool running(const ContainerState& state) {
  return effective_status(state) == Status::running;
}

std::uint64_t oom_kills(const std::string& leaf) {
  return cgroup::keyed_number(sys::read_file(leaf + "/memory.events").value_or(""), "oom_kill");
}

}  // namespace

void container_events(const Context& ctx, const std::string& id, bool stats_once,
                      std::chrono::milliseconds interval, std::ostream& out) {
  StateStore store(ctx.state_root);
  const ContainerState state = existing_container(store, id);
  if (!running(state)) {
    throw Error("container " + id + " is not running", 0,
                "events come from its cgroup, which goes when it stops");
  }
  if (state.cgroup.empty() || !sys::is_dir(state.cgroup)) {
    throw Error("container " + id + " has no cgroup of its own", 0,
                "events come from its cgroup v2 leaf: run it where mrun can make one (see "
                "mrun-run(1), RESOURCE LIMITS)");
  }
  auto stats_event = [&] {
    out << nlohmann::json{{"type", "stats"}, {"id", id}, {"data", cgroup::runc_stats(state.cgroup)}}
               .dump()
        << std::endl;
  };
  if (stats_once) {
    stats_event();
    return;
  }
  std::uint64_t ooms = oom_kills(state.cgroup);
  auto next_stats = std::chrono::steady_clock::now();
  // Polled every 100 ms (or the interval, when shorter): an OOM kill shows within that,
  // and the loop ends soon after the container does.
  const auto tick = std::min(interval, std::chrono::milliseconds(100));
  while (true) {
    auto now_state = store.read(id);
    if (!now_state || !running(*now_state) || !sys::is_dir(state.cgroup)) return;
    if (auto now = oom_kills(state.cgroup); now > ooms) {
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
