// mrun stats NAME [--format table|json]   -- see mrun(1)
// The counters of a container's cgroup v2 leaf (or, rootful on cgroup v1, its v1 group):
// memory, pids, CPU time, OOM kills.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/v1_stats.hpp"
#include "cli/command.hpp"
#include "lifecycle/lifecycle.hpp"
#include "state/state.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f%s" : "%.1f%s", value, units[unit]);
  return buf;
}

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

class StatsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* stats = app.add_subcommand("stats", "show a running container's resource usage");
    stats->add_option("NAME", name_, "container name")->required();
    stats->add_option("--format", format_, "table|json")->check(CLI::IsMember({"table", "json"}));
    return stats;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    auto state = std::optional<runtime::ContainerState>(runtime::existing_container(store, name_));
    if (runtime::effective_status(*state) != runtime::Status::running) {
      throw Error("container \"" + name_ + "\" is not running", 0,
                  "stats come from its cgroup, which is removed when it exits");
    }
    const bool v1 = !state->cgroup_v1.empty();
    if (!v1 && (state->cgroup.empty() || !sys::is_dir(state->cgroup))) {
      throw Error("container \"" + name_ + "\" has no cgroup", 0,
                  "it was started without one (see `mrun --debug run` for why: no delegated "
                  "cgroup v2 subtree, or --cgroups=disabled)");
    }
    auto s = v1 ? cgroup::read_v1_stats(state->cgroup_v1) : cgroup::read_stats(state->cgroup);
    if (format_ == "json") {
      nlohmann::json out{
          {"name", name_},
          {"cgroup", v1 ? cgroup::v1_dir(state->cgroup_v1, "memory") : state->cgroup},
          {"memory_current", or_null(s.memory_current)},
          {"memory_max", or_null(s.memory_max)},
          {"pids_current", or_null(s.pids_current)},
          {"pids_max", or_null(s.pids_max)},
          {"cpu_usage_usec", or_null(s.cpu_usage_usec)},
          {"cpu_max", or_null(s.cpu_max)},
          {"oom_kills", or_null(s.oom_kills)}};
      std::cout << out.dump(2) << std::endl;
      return 0;
    }
    auto num = [](const std::optional<std::uint64_t>& v, const char* absent) {
      return v ? std::to_string(*v) : std::string(absent);
    };
    std::string memory = s.memory_current ? human_bytes(*s.memory_current) : "-";
    memory += " / " + (s.memory_max ? human_bytes(*s.memory_max) : std::string("max"));
    std::string pids = num(s.pids_current, "-") + " / " + num(s.pids_max, "max");
    std::string cpu = s.cpu_usage_usec ? std::to_string(*s.cpu_usage_usec / 1000) + "ms" : "-";
    std::printf("%-20s %-24s %-12s %-12s %-16s %s\n", "NAME", "MEM USAGE / LIMIT", "PIDS",
                "CPU TIME", "CPU MAX", "OOM KILLS");
    std::printf("%-20s %-24s %-12s %-12s %-16s %s\n", name_.c_str(), memory.c_str(), pids.c_str(),
                cpu.c_str(), s.cpu_max.value_or("-").c_str(), num(s.oom_kills, "-").c_str());
    return 0;
  }

 private:
  std::string name_;
  std::string format_ = "table";
};

}  // namespace

std::unique_ptr<Command> make_stats_command() {
  return std::make_unique<StatsCommand>();
}

}  // namespace mrun::cli
