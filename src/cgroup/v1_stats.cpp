#include "cgroup/v1_stats.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/strings.hpp"
#include "cgroup/runc_stats.hpp"
#include "cgroup/v1_limits.hpp"
#include "sys/fs.hpp"

namespace mrun::cgroup {

namespace {

using nlohmann::json;

std::string text_of(const std::string& dir, const std::string& file) {
  if (dir.empty()) return {};
  return sys::read_file(dir + "/" + file).value_or("");
}

std::uint64_t number_of(const std::string& dir, const std::string& file) {
  return parse_u64(trim(text_of(dir, file))).value_or(0);
}

std::vector<std::uint64_t> numbers_of(const std::string& text) {
  std::vector<std::uint64_t> out;
  for (const auto& word : split(trim(text), ' ')) {
    if (auto n = parse_u64(word)) out.push_back(*n);
  }
  return out;
}

// PREFIX.usage_in_bytes, .max_usage_in_bytes, .limit_in_bytes, .failcnt.
json memory_entry(const std::string& dir, const std::string& prefix) {
  json j = {{"limit", number_of(dir, prefix + ".limit_in_bytes")},
            {"failcnt", number_of(dir, prefix + ".failcnt")}};
  if (auto usage = number_of(dir, prefix + ".usage_in_bytes")) j["usage"] = usage;
  if (auto max = number_of(dir, prefix + ".max_usage_in_bytes")) j["max"] = max;
  return j;
}

json cpu(const std::string& cpu_dir, const std::string& acct) {
  // cpuacct.stat counts USER_HZ ticks; runc reports nanoseconds.
  const double tick_ns = 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  const std::string stat = text_of(acct, "cpuacct.stat");
  auto ns = [&](const char* key) {
    return static_cast<std::uint64_t>(static_cast<double>(keyed_number(stat, key)) * tick_ns);
  };
  json usage = {{"kernel", ns("system")}, {"user", ns("user")}};
  if (auto total = number_of(acct, "cpuacct.usage")) usage["total"] = total;
  if (auto percpu = numbers_of(text_of(acct, "cpuacct.usage_percpu")); !percpu.empty()) {
    usage["percpu"] = percpu;
  }
  const std::string throttled = text_of(cpu_dir, "cpu.stat");
  json throttling = json::object();
  if (auto v = keyed_number(throttled, "nr_periods")) throttling["periods"] = v;
  if (auto v = keyed_number(throttled, "nr_throttled")) throttling["throttledPeriods"] = v;
  if (auto v = keyed_number(throttled, "throttled_time")) throttling["throttledTime"] = v;
  return {{"usage", usage}, {"throttling", throttling}};
}

json memory(const std::string& dir) {
  json raw = json::object();
  const std::string stat = text_of(dir, "memory.stat");
  for (const auto& line : split(stat, '\n')) {
    auto fields = split(line, ' ');
    if (fields.size() == 2) {
      if (auto v = parse_u64(fields[1])) raw[fields[0]] = *v;
    }
  }
  json j = {{"usage", memory_entry(dir, "memory")},
            {"swap", memory_entry(dir, "memory.memsw")},
            {"kernel", memory_entry(dir, "memory.kmem")},
            {"kernelTCP", memory_entry(dir, "memory.kmem.tcp")}};
  if (auto cache = keyed_number(stat, "cache")) j["cache"] = cache;
  if (!raw.empty()) j["raw"] = raw;
  return j;
}

// "8:0 Read 4096" a line, "Total N" last.
json blkio_entries(const std::string& text) {
  json out = json::array();
  for (const auto& line : split(text, '\n')) {
    auto fields = split(line, ' ');
    if (fields.size() != 3) continue;
    auto numbers = split(fields[0], ':');
    if (numbers.size() != 2) continue;
    auto major = parse_u64(numbers[0]), minor = parse_u64(numbers[1]);
    auto value = parse_u64(fields[2]);
    if (!major || !minor || !value) continue;
    out.push_back({{"major", *major}, {"minor", *minor}, {"op", fields[1]}, {"value", *value}});
  }
  return out;
}

json blkio(const std::string& dir) {
  // CFQ's own counters where the kernel has them, else the throttle layer's (runc).
  auto read = [&](const char* name) {
    auto cfq = text_of(dir, std::string("blkio.") + name);
    return cfq.empty() ? text_of(dir, std::string("blkio.throttle.") + name) : cfq;
  };
  json j = json::object();
  if (auto b = blkio_entries(read("io_service_bytes_recursive")); !b.empty()) {
    j["ioServiceBytesRecursive"] = b;
  }
  if (auto s = blkio_entries(read("io_serviced_recursive")); !s.empty()) {
    j["ioServicedRecursive"] = s;
  }
  return j;
}

json hugetlb(const std::string& dir) {
  json j = json::object();
  if (dir.empty()) return j;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // hugetlb.2MB.limit_in_bytes (not the .rsvd. ones)
    if (!starts_with(name, "hugetlb.") || !name.ends_with(".limit_in_bytes") ||
        name.find(".rsvd.") != std::string::npos) {
      continue;
    }
    const std::string size = name.substr(8, name.size() - 8 - 15);
    const std::string base = "hugetlb." + size;
    j[size] = {{"usage", number_of(dir, base + ".usage_in_bytes")},
               {"max", number_of(dir, base + ".max_usage_in_bytes")},
               {"failcnt", number_of(dir, base + ".failcnt")}};
  }
  return j;
}

json cpuset(const std::string& dir) {
  json j = json::object();
  for (const char* flag : {"cpu_exclusive", "mem_hardwall", "mem_exclusive", "memory_migrate",
                           "memory_spread_page", "memory_spread_slab", "memory_pressure",
                           "sched_load_balance", "sched_relax_domain_level"}) {
    j[flag] = number_of(dir, std::string("cpuset.") + flag);
  }
  if (auto cpus = cpu_list_of(text_of(dir, "cpuset.cpus")); !cpus.empty()) j["cpus"] = cpus;
  if (auto mems = cpu_list_of(text_of(dir, "cpuset.mems")); !mems.empty()) j["mems"] = mems;
  return j;
}

}  // namespace

nlohmann::json runc_stats_v1(const V1Dirs& dirs) {
  const std::string pids_dir = v1_dir(dirs, "pids");
  json pids = json::object();
  if (auto current = number_of(pids_dir, "pids.current")) pids["current"] = current;
  if (auto max = number_of(pids_dir, "pids.max")) pids["limit"] = max;  // "max" reads 0
  return {{"cpu", cpu(v1_dir(dirs, "cpu"), v1_dir(dirs, "cpuacct"))},
          {"cpuset", cpuset(v1_dir(dirs, "cpuset"))},
          {"memory", memory(v1_dir(dirs, "memory"))},
          {"pids", pids},
          {"blkio", blkio(v1_dir(dirs, "blkio"))},
          {"hugetlb", hugetlb(v1_dir(dirs, "hugetlb"))},
          {"intel_rdt", json::object()},
          {"network_interfaces", nullptr}};
}

Stats read_v1_stats(const V1Dirs& dirs) {
  Stats s;
  auto number = [](const std::string& dir, const char* file) -> std::optional<std::uint64_t> {
    if (dir.empty()) return std::nullopt;
    auto text = sys::read_file(dir + "/" + file);
    if (!text) return std::nullopt;
    return parse_u64(trim(*text));
  };
  const std::string memory_dir = v1_dir(dirs, "memory");
  s.memory_current = number(memory_dir, "memory.usage_in_bytes");
  s.memory_max = v1_limit_value(text_of(memory_dir, "memory.limit_in_bytes"));
  s.pids_current = number(v1_dir(dirs, "pids"), "pids.current");
  s.pids_max = number(v1_dir(dirs, "pids"), "pids.max");
  if (auto ns = number(v1_dir(dirs, "cpuacct"), "cpuacct.usage")) s.cpu_usage_usec = *ns / 1000;
  const std::string cpu_dir = v1_dir(dirs, "cpu");
  if (!cpu_dir.empty()) {
    const std::string quota(trim(text_of(cpu_dir, "cpu.cfs_quota_us")));
    const std::string period(trim(text_of(cpu_dir, "cpu.cfs_period_us")));
    s.cpu_max = (quota == "-1" ? std::string("max") : quota) + " " + period;
  }
  if (!memory_dir.empty()) s.oom_kills = v1_oom_kills(dirs);
  return s;
}

std::uint64_t v1_oom_kills(const V1Dirs& dirs) {
  // "oom_kill_disable 0\nunder_oom 0\noom_kill N" (oom_kill since 4.13).
  return keyed_number(text_of(v1_dir(dirs, "memory"), "memory.oom_control"), "oom_kill");
}

}  // namespace mrun::cgroup
