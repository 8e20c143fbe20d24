#include "cgroup/resources.hpp"

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/plain_math.hpp"
#include "base/strings.hpp"

namespace mrun::cgroup {

std::string field_name(const Resources& r, const std::string& field) {
  if (r.named_by_flags) {
    if (field == "memory.limit") return "--memory";
    if (field == "memory.swap") return "--memory-swap";
    if (field == "pids.limit") return "--pids-limit";
    if (field == "cpu.quota" || field == "cpu.period") return "--cpus";
  }
  return "linux.resources." + field;
}

namespace {

std::string name_of(const Resources& r, const std::string& field) {
  return field_name(r, field);
}

std::string bytes_or_max(std::int64_t value) {
  return value < 0 ? "max" : std::to_string(value);
}

std::string device(std::int64_t major, std::int64_t minor) {
  return std::to_string(major) + ":" + std::to_string(minor);
}

Error bad(const std::string& field, const std::string& what, const std::string& hint = {}) {
  return Error(field + ": " + what, EINVAL, hint);
}

}  // namespace

std::uint64_t cpu_weight_from_shares(std::uint64_t shares) {
  if (shares == 0) return 0;
  if (shares <= 2) return 1;
  if (shares >= 262144) return 10000;
  // log10(weight) is a quadratic in log2(shares) through (1, 0), (10, 2) and (18, 4):
  // v1's minimum, default and maximum onto v2's.
  const double l = log2_of(shares);
  const double exponent = (l * l + 125 * l) / 612.0 - 7.0 / 34.0;
  const double weight = pow10_of(exponent);
  const auto whole = static_cast<std::uint64_t>(weight);
  return static_cast<double>(whole) < weight ? whole + 1 : whole;  // ceil
}

std::uint64_t io_weight_from_blkio(std::uint64_t weight) {
  if (weight == 0) return 0;
  if (weight < 10) weight = 10;  // the spec's range starts at 10 (checked when parsed)
  return 1 + (weight - 10) * 9999 / 990;
}

std::optional<std::string> swap_max_for(std::int64_t swap, std::optional<std::int64_t> limit,
                                        const std::string& swap_field,
                                        const std::string& limit_field) {
  if (swap == -1) return "max";
  if (swap == 0) return std::nullopt;  // unset, as runc reads it
  if (swap < 0) throw bad(swap_field, "must be -1 (unlimited) or a byte count");
  if (!limit || *limit == 0) {
    throw bad(swap_field, "needs " + limit_field,
              "it is memory plus swap: cgroup v2's memory.swap.max is the swap alone, "
              "so mrun subtracts the memory limit from it (as runc and crun)");
  }
  if (*limit == -1) return std::to_string(swap);  // unlimited memory: the swap as is
  if (swap < *limit) {
    throw bad(swap_field,
              std::to_string(swap) + " is below " + limit_field + " " + std::to_string(*limit),
              "it is memory plus swap: give at least the memory limit, or -1");
  }
  return std::to_string(swap - *limit);
}

std::string controller_of(const std::string& file) {
  std::string prefix = file.substr(0, file.find('.'));
  return prefix == "cgroup" ? std::string() : prefix;
}

bool fresh_default(const std::string& file, const std::string& value) {
  static const std::map<std::string, std::vector<std::string>> defaults{
      {"cpu.weight", {"100"}},
      {"cpu.weight.nice", {"0"}},
      {"cpu.max", {"max 100000", "max"}},
      {"cpu.max.burst", {"0"}},
      {"cpu.idle", {"0"}},
      {"memory.max", {"max"}},
      {"memory.high", {"max"}},
      {"memory.low", {"0"}},
      {"memory.min", {"0"}},
      {"memory.swap.max", {"max"}},
      {"memory.swap.high", {"max"}},
      {"memory.zswap.max", {"max"}},
      {"memory.oom.group", {"0"}},
      {"pids.max", {"max"}},
  };
  auto it = defaults.find(file);
  if (it == defaults.end()) return false;
  const std::string v(trim(value));
  for (const auto& d : it->second) {
    if (v == d) return true;
  }
  return false;
}

std::vector<FileWrite> plan_resource_files(const Resources& r) {
  std::vector<FileWrite> out;
  auto add = [&](std::string file, std::string value, const std::string& field) -> FileWrite& {
    FileWrite w;
    w.file = std::move(file);
    w.value = std::move(value);
    w.field = name_of(r, field);
    w.is_default = fresh_default(w.file, w.value);
    out.push_back(std::move(w));
    return out.back();
  };

  for (const auto& [set, field, file] :
       {std::tuple{r.cpu.realtime_runtime.has_value(), "cpu.realtimeRuntime", "cpu.rt_runtime_us"},
        std::tuple{r.cpu.realtime_period.has_value(), "cpu.realtimePeriod", "cpu.rt_period_us"}}) {
    if (set) {
      throw Error(name_of(r, field) + ": cgroup v2 has no realtime CPU bandwidth (" + file +
                      " is cgroup v1's)",
                  ENOTSUP, "remove it from the configuration, or run on a cgroup v1 host as root");
    }
  }

  // memory: the limit first (as crun; on v2 the two are independent).
  const auto& m = r.memory;
  if (m.swappiness) {
    throw Error(name_of(r, "memory.swappiness") +
                    ": cgroup v2 has no per-cgroup swappiness (memory.swappiness is cgroup v1's)",
                ENOTSUP, "remove it from the configuration, or run on a cgroup v1 host as root");
  }
  if (m.disable_oom_killer) {
    throw Error(name_of(r, "memory.disableOOMKiller") +
                    ": cgroup v2 cannot disable the OOM killer (memory.oom_control is cgroup "
                    "v1's; crun refuses it too)",
                ENOTSUP, "remove it from the configuration, or run on a cgroup v1 host as root");
  }
  if (m.limit && *m.limit != 0) {
    if (*m.limit < -1) throw bad(name_of(r, "memory.limit"), "must be -1 or a byte count");
    add("memory.max", bytes_or_max(*m.limit), "memory.limit");
  }
  std::optional<std::string> swap;
  std::string swap_field = "memory.swap";
  if ((!m.swap || *m.swap == 0) && m.limit && *m.limit == -1) {
    swap = "max";  // runc: unlimited memory and no swap asked for: unlimited both
    swap_field = "memory.limit";
  } else if (m.swap) {
    swap = swap_max_for(*m.swap, m.limit, name_of(r, "memory.swap"), name_of(r, "memory.limit"));
    if (m.swap_implied) swap_field = "memory.limit";  // mrun run --memory's own allowance
  }
  if (swap) {
    auto& w = add("memory.swap.max", *swap, swap_field);
    // runc: without swap accounting "max" and "0" are moot; an explicit amount is not.
    w.skip_if_absent = *swap == "max" || *swap == "0" || m.swap_implied;
  }
  if (m.reservation && *m.reservation != 0) {
    if (*m.reservation < -1) {
      throw bad(name_of(r, "memory.reservation"), "must be -1 or a byte count");
    }
    add("memory.low", bytes_or_max(*m.reservation), "memory.reservation");
  }

  if (r.pids_limit && *r.pids_limit != 0) {
    add("pids.max", bytes_or_max(*r.pids_limit), "pids.limit");
  }

  // cpu: the weight before idle (the kernel refuses a weight for an idle cgroup), the
  // bandwidth before its burst (a burst may not exceed the quota).
  const auto& c = r.cpu;
  if (c.shares && *c.shares != 0) {
    add("cpu.weight", std::to_string(cpu_weight_from_shares(*c.shares)), "cpu.shares");
  }
  if (c.idle) add("cpu.idle", std::to_string(*c.idle), "cpu.idle");
  const bool quota = c.quota && *c.quota != 0;
  const bool period = c.period && *c.period != 0;
  if (quota || period) {
    std::string value = quota && *c.quota > 0 ? std::to_string(*c.quota) : "max";
    value += " " + std::to_string(period ? *c.period : 100000);
    add("cpu.max", value, quota ? "cpu.quota" : "cpu.period");
  }
  if (c.burst) add("cpu.max.burst", std::to_string(*c.burst), "cpu.burst");
  if (c.cpus && !c.cpus->empty()) add("cpuset.cpus", *c.cpus, "cpu.cpus");
  if (c.mems && !c.mems->empty()) add("cpuset.mems", *c.mems, "cpu.mems");

  // io: BFQ's weight where the scheduler is BFQ, else io.weight (io.cost) converted.
  const auto& b = r.block_io;
  if (b.weight && *b.weight != 0) {
    auto& w = add("io.bfq.weight", std::to_string(*b.weight), "blockIO.weight");
    w.fallback_file = "io.weight";
    w.fallback_value = std::to_string(io_weight_from_blkio(*b.weight));
  }
  for (const auto& d : b.weight_device) {
    auto& w = add("io.bfq.weight", device(d.major, d.minor) + " " + std::to_string(d.weight),
                  "blockIO.weightDevice");
    w.fallback_file = "io.weight";
    w.fallback_value =
        device(d.major, d.minor) + " " + std::to_string(io_weight_from_blkio(d.weight));
  }
  // One io.max line per device with every key asked for it (a later entry for the
  // same device and key wins, as runc's update).
  struct Line {
    std::string device;
    std::string field;
    std::vector<std::pair<std::string, std::uint64_t>> keys;
  };
  std::vector<Line> lines;
  auto throttle = [&](const std::vector<DeviceRate>& rates, const char* key, const char* field) {
    for (const auto& d : rates) {
      const std::string dev = device(d.major, d.minor);
      auto line =
          std::find_if(lines.begin(), lines.end(), [&](const Line& l) { return l.device == dev; });
      if (line == lines.end()) {
        lines.push_back({dev, field, {}});
        line = lines.end() - 1;
      }
      auto k = std::find_if(line->keys.begin(), line->keys.end(),
                            [&](const auto& kv) { return kv.first == key; });
      if (k == line->keys.end()) {
        line->keys.emplace_back(key, d.rate);
      } else {
        k->second = d.rate;
      }
    }
  };
  throttle(b.read_bps, "rbps", "blockIO.throttleReadBpsDevice");
  throttle(b.write_bps, "wbps", "blockIO.throttleWriteBpsDevice");
  throttle(b.read_iops, "riops", "blockIO.throttleReadIOPSDevice");
  throttle(b.write_iops, "wiops", "blockIO.throttleWriteIOPSDevice");
  for (const auto& line : lines) {
    std::string value = line.device;
    for (const auto& [key, rate] : line.keys) value += " " + key + "=" + std::to_string(rate);
    add("io.max", value, line.field);
  }

  for (const auto& h : r.hugepage_limits) {
    add("hugetlb." + h.page_size + ".max", std::to_string(h.limit), "hugepageLimits");
    // Reservations too where the kernel accounts them (5.7+), as runc: else a mapping
    // reserved before the fault escapes the limit.
    add("hugetlb." + h.page_size + ".rsvd.max", std::to_string(h.limit), "hugepageLimits")
        .skip_if_absent = true;
  }

  for (const auto& [dev, limit] : r.rdma) {
    std::string value = dev;
    if (limit.hca_handles) value += " hca_handle=" + std::to_string(*limit.hca_handles);
    if (limit.hca_objects) value += " hca_object=" + std::to_string(*limit.hca_objects);
    add("rdma.max", value, "rdma." + dev);
  }

  // Last: the unified map overrides whatever the fields above wrote. A value of several
  // lines is written line by line (io.max with two devices), as runc and crun do.
  for (const auto& [key, value] : r.unified) {
    for (const auto& line : split(value, '\n')) {
      if (trim(line).empty()) continue;
      add(key, line, "unified." + key);
    }
  }
  return out;
}

std::vector<std::string> controllers_for(const std::vector<FileWrite>& writes) {
  std::vector<std::string> out;
  for (const auto& w : writes) {
    std::string c = controller_of(w.file);
    if (!c.empty() && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string describe_requests(const std::vector<FileWrite>& writes) {
  std::vector<std::string> fields;
  for (const auto& w : writes) {
    if (w.is_default) continue;
    if (std::find(fields.begin(), fields.end(), w.field) == fields.end()) {
      fields.push_back(w.field);
    }
  }
  return join(fields, ", ");
}

std::string describe_defaults(const std::vector<FileWrite>& writes) {
  std::vector<std::string> items;
  for (const auto& w : writes) {
    if (!w.is_default) continue;
    std::string item = w.field + " (" + w.file + " " + w.value + ")";
    if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
  }
  return join(items, ", ");
}

Resources complete_update(const Resources& asked, const LeafValues& now) {
  Resources r = asked;
  // A quota without a period keeps today's period, and the reverse (runc's update).
  const bool quota = r.cpu.quota && *r.cpu.quota != 0;
  const bool period = r.cpu.period && *r.cpu.period != 0;
  if (quota != period && now.cpu_max) {
    auto parts = split(std::string(trim(*now.cpu_max)), ' ');
    if (parts.size() == 2) {
      if (quota) {
        if (auto p = parse_u64(parts[1])) r.cpu.period = *p;
      } else if (parts[0] == "max") {
        r.cpu.quota = -1;
      } else if (auto q = parse_u64(parts[0])) {
        r.cpu.quota = static_cast<std::int64_t>(*q);
      }
    }
  }
  // The spec's swap is memory + swap: a new limit alone keeps today's total, a new
  // total alone is taken against today's limit (runc keeps both in its config).
  auto number = [](const std::optional<std::string>& text) -> std::optional<std::int64_t> {
    if (!text) return std::nullopt;
    if (trim(*text) == "max") return -1;
    auto n = parse_u64(trim(*text));
    if (!n) return std::nullopt;
    return static_cast<std::int64_t>(*n);
  };
  auto& m = r.memory;
  const bool limit = m.limit && *m.limit != 0;
  const bool swap = m.swap && *m.swap != 0;
  if (limit && !swap && *m.limit != -1) {
    auto old_limit = number(now.memory_max);
    auto old_swap = number(now.memory_swap_max);
    if (old_limit && *old_limit >= 0 && old_swap && *old_swap >= 0) {
      const std::int64_t total = *old_limit + *old_swap;
      if (total < *m.limit) {
        throw Error("linux.resources.memory.limit " + std::to_string(*m.limit) +
                        " is above today's memory+swap total " + std::to_string(total) +
                        " (memory.max " + std::to_string(*old_limit) + " + memory.swap.max " +
                        std::to_string(*old_swap) + ")",
                    EINVAL,
                    "give the new memory+swap total too (--memory-swap, or memory.swap; -1 "
                    "for unlimited swap), as with runc");
      }
      m.swap = total;
    }
  } else if (swap && !limit) {
    if (auto old_limit = number(now.memory_max)) m.limit = *old_limit;
  }
  if (m.check_before_update && now.memory_current) {
    const auto usage = *now.memory_current;
    if (m.swap && *m.swap > 0 && static_cast<std::uint64_t>(*m.swap) <= usage) {
      throw Error("linux.resources.memory.swap: rejecting memory+swap limit " +
                      std::to_string(*m.swap) + " <= usage " + std::to_string(usage),
                  EINVAL, "memory.checkBeforeUpdate is set: give a limit above today's usage");
    }
    if (m.limit && *m.limit > 0 && static_cast<std::uint64_t>(*m.limit) <= usage) {
      throw Error("linux.resources.memory.limit: rejecting memory limit " +
                      std::to_string(*m.limit) + " <= usage " + std::to_string(usage),
                  EINVAL, "memory.checkBeforeUpdate is set: give a limit above today's usage");
    }
  }
  return r;
}

}  // namespace mrun::cgroup
