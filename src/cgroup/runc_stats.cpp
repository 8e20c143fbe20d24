#include "cgroup/runc_stats.hpp"

#include <filesystem>
#include <limits>
#include <optional>
#include <vector>

#include "base/strings.hpp"
#include "sys/fs.hpp"

namespace mrun::cgroup {

namespace {

using nlohmann::json;

std::string text_of(const std::string& path) {
  return sys::read_file(path).value_or("");
}

std::uint64_t number_of(const std::string& path) {
  auto value = parse_u64(trim(text_of(path)));
  return value.value_or(0);
}

// memory.max and friends: "max" is no limit, which runc reports as the largest value.
std::uint64_t limit_of(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) return 0;
  if (trim(*text) == "max") return std::numeric_limits<std::uint64_t>::max();
  return parse_u64(trim(*text)).value_or(0);
}

}  // namespace

std::vector<std::uint16_t> cpu_list_of(const std::string& text) {
  std::vector<std::uint16_t> out;
  for (const auto& range : split(trim(text), ',')) {
    if (range.empty()) continue;
    auto dash = range.find('-');
    auto first = parse_u64(range.substr(0, dash));
    auto last = dash == std::string::npos ? first : parse_u64(range.substr(dash + 1));
    if (!first || !last || *last > 0xffff) continue;
    for (auto n = *first; n <= *last; ++n) out.push_back(static_cast<std::uint16_t>(n));
  }
  return out;
}

namespace {

json memory_entry(std::uint64_t usage, std::uint64_t limit, std::uint64_t max,
                  std::uint64_t failcnt) {
  json j = {{"limit", limit}, {"failcnt", failcnt}};
  if (usage) j["usage"] = usage;
  if (max) j["max"] = max;
  return j;
}

json cpu(const std::string& leaf) {
  const std::string stat = text_of(leaf + "/cpu.stat");
  json usage = {{"kernel", keyed_number(stat, "system_usec") * 1000},
                {"user", keyed_number(stat, "user_usec") * 1000}};
  if (auto total = keyed_number(stat, "usage_usec")) usage["total"] = total * 1000;
  json throttling = json::object();
  if (auto v = keyed_number(stat, "nr_periods")) throttling["periods"] = v;
  if (auto v = keyed_number(stat, "nr_throttled")) throttling["throttledPeriods"] = v;
  if (auto v = keyed_number(stat, "throttled_usec")) throttling["throttledTime"] = v * 1000;
  return {{"usage", usage}, {"throttling", throttling}};
}

json memory(const std::string& leaf) {
  const std::string stat = text_of(leaf + "/memory.stat");
  const std::string events = text_of(leaf + "/memory.events");
  json raw = json::object();
  for (const auto& line : split(stat, '\n')) {
    auto fields = split(line, ' ');
    if (fields.size() == 2) {
      if (auto v = parse_u64(fields[1])) raw[fields[0]] = *v;
    }
  }
  const std::uint64_t current = number_of(leaf + "/memory.current");
  const std::uint64_t swap_current = number_of(leaf + "/memory.swap.current");
  json j = {
      {"usage", memory_entry(current, limit_of(leaf + "/memory.max"),
                             number_of(leaf + "/memory.peak"), keyed_number(events, "max"))},
      // runc's swap figures on v2 are memory plus swap, as v1's memsw were.
      {"swap",
       memory_entry(
           current + swap_current,
           sys::exists(leaf + "/memory.swap.max") ? limit_of(leaf + "/memory.swap.max") : 0, 0, 0)},
      {"kernel", memory_entry(0, 0, 0, 0)},
      {"kernelTCP", memory_entry(0, 0, 0, 0)},
      {"event_count",
       {{"low", keyed_number(events, "low")},
        {"high", keyed_number(events, "high")},
        {"max", keyed_number(events, "max")},
        {"oom", keyed_number(events, "oom")},
        {"oom_kill", keyed_number(events, "oom_kill")}}}};
  if (auto cache = keyed_number(stat, "file")) j["cache"] = cache;
  if (!raw.empty()) j["raw"] = raw;
  return j;
}

// io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N" a line.
json blkio(const std::string& leaf) {
  json bytes = json::array(), ios = json::array();
  for (const auto& line : split(text_of(leaf + "/io.stat"), '\n')) {
    auto fields = split(line, ' ');
    if (fields.size() < 2) continue;
    auto numbers = split(fields[0], ':');
    if (numbers.size() != 2) continue;
    auto major = parse_u64(numbers[0]), minor = parse_u64(numbers[1]);
    if (!major || !minor) continue;
    for (std::size_t i = 1; i < fields.size(); ++i) {
      auto eq = fields[i].find('=');
      if (eq == std::string::npos) continue;
      const std::string key = fields[i].substr(0, eq);
      auto value = parse_u64(fields[i].substr(eq + 1)).value_or(0);
      auto entry = [&](const char* op) {
        return json{{"major", *major}, {"minor", *minor}, {"op", op}, {"value", value}};
      };
      if (key == "rbytes") bytes.push_back(entry("Read"));
      if (key == "wbytes") bytes.push_back(entry("Write"));
      if (key == "rios") ios.push_back(entry("Read"));
      if (key == "wios") ios.push_back(entry("Write"));
    }
  }
  json j = json::object();
  if (!bytes.empty()) j["ioServiceBytesRecursive"] = bytes;
  if (!ios.empty()) j["ioServicedRecursive"] = ios;
  return j;
}

json hugetlb(const std::string& leaf) {
  json j = json::object();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(leaf, ec)) {
    const std::string name = entry.path().filename().string();
    // hugetlb.2MB.current, hugetlb.2MB.max, hugetlb.2MB.events
    if (!starts_with(name, "hugetlb.") || !name.ends_with(".current") ||
        name.find(".rsvd.") != std::string::npos) {
      continue;
    }
    const std::string size = name.substr(8, name.size() - 8 - 8);
    const std::string base = leaf + "/hugetlb." + size;
    j[size] = {{"usage", number_of(base + ".current")},
               {"max", number_of(base + ".max")},
               {"failcnt", keyed_number(text_of(base + ".events"), "max")}};
  }
  return j;
}

}  // namespace

std::uint64_t keyed_number(const std::string& text, const std::string& key) {
  for (const auto& line : split(text, '\n')) {
    auto fields = split(line, ' ');
    if (fields.size() == 2 && fields[0] == key) return parse_u64(fields[1]).value_or(0);
  }
  return 0;
}

nlohmann::json runc_stats(const std::string& leaf) {
  json pids = json::object();
  if (auto current = number_of(leaf + "/pids.current")) pids["current"] = current;
  if (auto max = limit_of(leaf + "/pids.max");
      max && max != std::numeric_limits<std::uint64_t>::max()) {
    pids["limit"] = max;
  }
  json cpuset = {
      {"cpu_exclusive", 0},   {"mem_hardwall", 0},       {"mem_exclusive", 0},
      {"memory_migrate", 0},  {"memory_spread_page", 0}, {"memory_spread_slab", 0},
      {"memory_pressure", 0}, {"sched_load_balance", 0}, {"sched_relax_domain_level", 0}};
  if (auto cpus = cpu_list_of(text_of(leaf + "/cpuset.cpus.effective")); !cpus.empty()) {
    cpuset["cpus"] = cpus;
  }
  if (auto mems = cpu_list_of(text_of(leaf + "/cpuset.mems.effective")); !mems.empty()) {
    cpuset["mems"] = mems;
  }
  return {{"cpu", cpu(leaf)},
          {"cpuset", cpuset},
          {"memory", memory(leaf)},
          {"pids", pids},
          {"blkio", blkio(leaf)},
          {"hugetlb", hugetlb(leaf)},
          {"intel_rdt", json::object()},
          {"network_interfaces", nullptr}};
}

}  // namespace mrun::cgroup
