// mrun update [--resources FILE|-] [runc's flags] ID   -- see mrun-oci(1)
// The flags become the linux.resources document --resources would give, so both take
// one path: oci::parse_resources, then runtime::update_container.
#include <cerrno>
#include <charconv>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cgroup/limits.hpp"
#include "cli/command.hpp"
#include "lifecycle/update.hpp"
#include "oci/resources.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

using nlohmann::json;

Error invalid(const std::string& flag, const std::string& value, const std::string& want) {
  return Error("invalid value for " + flag + ": \"" + value + "\"", EINVAL, want);
}

template <typename T>
T number(const std::string& flag, const std::string& value) {
  T out{};
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size()) {
    throw invalid(flag, value, std::is_signed_v<T> ? "give an integer" : "give a whole number");
  }
  return out;
}

// runc's sizes (docker's RAMInBytes): bytes or k, m, g, t (binary), or -1 for
// unlimited; 0 leaves the limit as it is.
std::int64_t size(const std::string& flag, const std::string& value) {
  if (value == "-1") return -1;
  if (value == "0") return 0;
  auto bytes = cgroup::parse_size(value);
  if (!bytes) {
    throw invalid(flag, value, "give bytes or a number with k, m, g (binary units), or -1");
  }
  return static_cast<std::int64_t>(*bytes);
}

class UpdateCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* u = app.add_subcommand("update", "change a running container's resource limits");
    u->add_option("-r,--resources", resources_,
                  "linux.resources JSON from FILE, or - for stdin (instead of the flags)");
    u->add_option("--memory", memory_, "memory limit: bytes, k/m/g, or -1 (memory.max)");
    u->add_option("--memory-swap", memory_swap_,
                  "memory plus swap, or -1 for unlimited swap (memory.swap.max = this - memory)");
    u->add_option("--memory-reservation", memory_reservation_, "soft limit (memory.low)");
    u->add_option("--kernel-memory", kernel_memory_, "deprecated; accepted and ignored");
    u->add_option("--kernel-memory-tcp", kernel_memory_tcp_, "deprecated; accepted and ignored");
    u->add_option("--cpu-share,--cpu-shares", cpu_shares_,
                  "relative CPU weight, cgroup v1 units (cpu.weight: 1024 is 100)");
    u->add_option("--cpu-quota", cpu_quota_, "CPU time per period in us, -1 for none (cpu.max)");
    u->add_option("--cpu-period", cpu_period_, "CPU period in us (cpu.max)");
    u->add_option("--cpu-burst", cpu_burst_, "CPU burst in us (cpu.max.burst)");
    u->add_option("--cpu-idle", cpu_idle_, "1: SCHED_IDLE, 0: normal (cpu.idle)");
    u->add_option("--cpu-rt-period", cpu_rt_period_, "realtime period (cgroup v1 only)");
    u->add_option("--cpu-rt-runtime", cpu_rt_runtime_, "realtime runtime (cgroup v1 only)");
    u->add_option("--cpuset-cpus", cpuset_cpus_, "CPUs to run on, e.g. 0-2,4 (cpuset.cpus)");
    u->add_option("--cpuset-mems", cpuset_mems_, "memory nodes, e.g. 0 (cpuset.mems)");
    u->add_option("--pids-limit", pids_limit_, "most processes, -1 for no limit (pids.max)");
    u->add_option("--blkio-weight", blkio_weight_,
                  "I/O weight 10..1000 (io.bfq.weight, else io.weight)");
    u->add_option("--l3-cache-schema", l3_cache_schema_, "refused: no Intel RDT support");
    u->add_option("--mem-bw-schema", mem_bw_schema_, "refused: no Intel RDT support");
    u->add_option("ID", id_, "container id")->required();
    return u;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    if (!l3_cache_schema_.empty() || !mem_bw_schema_.empty()) {
      throw Error(std::string(l3_cache_schema_.empty() ? "--mem-bw-schema" : "--l3-cache-schema") +
                      ": mrun has no Intel RDT support (linux.intelRdt)",
                  ENOTSUP, "leave out the Intel RDT schema options");
    }
    json doc;
    std::string source = "update";
    if (!resources_.empty()) {
      if (any_flag()) {
        throw Error("update: --resources and the limit flags together", EINVAL,
                    "give either --resources FILE|- or the flags, not both");
      }
      source = "update --resources " + resources_;
      doc = read_document();
    } else {
      doc = from_flags();
    }
    auto parsed = oci::parse_resources(doc, source);
    if (parsed.device_rules) {
      ctx.log.debug(
          "update: linux.resources.devices: the device rules are not changed by "
          "update (as runc)");
    }
    for (const auto& field : parsed.unknown) {
      ctx.log.debug("update: " + field + ": not a runtime-spec property, ignored");
    }
    runtime::update_container(ctx, id_, parsed.resources);
    return 0;
  }

 private:
  bool any_flag() const {
    for (const auto* s :
         {&memory_, &memory_swap_, &memory_reservation_, &kernel_memory_, &kernel_memory_tcp_,
          &cpu_shares_, &cpu_quota_, &cpu_period_, &cpu_burst_, &cpu_idle_, &cpu_rt_period_,
          &cpu_rt_runtime_, &cpuset_cpus_, &cpuset_mems_, &pids_limit_, &blkio_weight_}) {
      if (!s->empty()) return true;
    }
    return false;
  }

  json read_document() const {
    std::string text;
    if (resources_ == "-") {
      text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
      auto file = sys::read_file(resources_);
      if (!file) throw_errno("read " + resources_, "give a readable JSON file, or - for stdin");
      text = *file;
    }
    try {
      return json::parse(text);
    } catch (const json::exception& e) {
      throw Error("update --resources " + resources_ + ": malformed JSON: " + e.what(), EINVAL);
    }
  }

  // The document runc's update builds from its flags.
  json from_flags() const {
    json r = json::object();
    auto set = [&](const char* group, const char* key, const json& value) {
      r[group][key] = value;
    };
    if (!memory_.empty()) set("memory", "limit", size("--memory", memory_));
    if (!memory_swap_.empty()) set("memory", "swap", size("--memory-swap", memory_swap_));
    if (!memory_reservation_.empty()) {
      set("memory", "reservation", size("--memory-reservation", memory_reservation_));
    }
    if (!kernel_memory_.empty()) set("memory", "kernel", size("--kernel-memory", kernel_memory_));
    if (!kernel_memory_tcp_.empty()) {
      set("memory", "kernelTCP", size("--kernel-memory-tcp", kernel_memory_tcp_));
    }
    if (!cpu_shares_.empty())
      set("cpu", "shares", number<std::uint64_t>("--cpu-share", cpu_shares_));
    if (!cpu_quota_.empty()) set("cpu", "quota", number<std::int64_t>("--cpu-quota", cpu_quota_));
    if (!cpu_period_.empty()) {
      set("cpu", "period", number<std::uint64_t>("--cpu-period", cpu_period_));
    }
    if (!cpu_burst_.empty()) set("cpu", "burst", number<std::uint64_t>("--cpu-burst", cpu_burst_));
    if (!cpu_idle_.empty()) set("cpu", "idle", number<std::int64_t>("--cpu-idle", cpu_idle_));
    if (!cpu_rt_period_.empty()) {
      set("cpu", "realtimePeriod", number<std::uint64_t>("--cpu-rt-period", cpu_rt_period_));
    }
    if (!cpu_rt_runtime_.empty()) {
      set("cpu", "realtimeRuntime", number<std::int64_t>("--cpu-rt-runtime", cpu_rt_runtime_));
    }
    if (!cpuset_cpus_.empty()) set("cpu", "cpus", cpuset_cpus_);
    if (!cpuset_mems_.empty()) set("cpu", "mems", cpuset_mems_);
    if (!pids_limit_.empty()) {
      set("pids", "limit", number<std::int64_t>("--pids-limit", pids_limit_));
    }
    if (!blkio_weight_.empty()) {
      set("blockIO", "weight", number<std::uint16_t>("--blkio-weight", blkio_weight_));
    }
    return r;
  }

  std::string id_;
  std::string resources_;
  std::string memory_, memory_swap_, memory_reservation_, kernel_memory_, kernel_memory_tcp_;
  std::string cpu_shares_, cpu_quota_, cpu_period_, cpu_burst_, cpu_idle_, cpu_rt_period_,
      cpu_rt_runtime_, cpuset_cpus_, cpuset_mems_;
  std::string pids_limit_, blkio_weight_;
  std::string l3_cache_schema_, mem_bw_schema_;
};

}  // namespace

std::unique_ptr<Command> make_update_command() {
  return std::make_unique<UpdateCommand>();
}

}  // namespace mrun::cli
