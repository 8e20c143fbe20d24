#include "cgroup/v1_limits.hpp"

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::cgroup {

namespace {

// The kernel's v1 controllers; anything else in a cgroup mount's options (rw,
// clone_children, release_agent=..., xattr) is not one.
bool v1_controller(const std::string& option) {
  static const std::vector<std::string> known{
      "cpu",      "cpuacct", "cpuset",     "memory",  "devices", "freezer", "net_cls",
      "net_prio", "blkio",   "perf_event", "hugetlb", "pids",    "rdma",    "misc"};
  return starts_with(option, "name=") ||
         std::find(known.begin(), known.end(), option) != known.end();
}

std::string device(std::int64_t major, std::int64_t minor) {
  return std::to_string(major) + ":" + std::to_string(minor);
}

Error bad(const std::string& field, const std::string& what, const std::string& hint = {}) {
  return Error(field + ": " + what, EINVAL, hint);
}

struct Writer {
  const Resources& r;
  std::vector<FileWrite> out;

  FileWrite& add(std::string file, std::string value, const std::string& field) {
    FileWrite w;
    w.file = std::move(file);
    w.value = std::move(value);
    w.field = field_name(r, field);
    out.push_back(std::move(w));
    return out.back();
  }
  std::string name(const std::string& field) const { return field_name(r, field); }
};

std::string bytes_or_unlimited(std::int64_t value, const std::string& field) {
  if (value < -1) throw bad(field, "must be -1 (unlimited) or a byte count");
  return std::to_string(value);
}

// runc's order: raising both writes memory+swap first (the limit may not exceed it),
// lowering both writes the limit first (memory+swap may not go below it).
void plan_memory_and_swap(Writer& w, const V1Now& now) {
  const auto& m = w.r.memory;
  std::optional<std::int64_t> limit;
  if (m.limit && *m.limit != 0) limit = *m.limit;
  std::optional<std::int64_t> swap;
  if (m.swap && *m.swap != 0) swap = *m.swap;
  // Unlimited memory and no swap asked for: unlimited both (runc).
  if (limit == -1 && !swap) swap = -1;
  const std::string swap_field = m.swap_implied ? "memory.limit" : "memory.swap";
  if (swap && *swap > 0) {
    if (!limit) {
      throw bad(w.name("memory.swap"), "needs " + w.name("memory.limit"),
                "it is memory plus swap: give the memory limit too");
    }
    if (*limit > 0 && *swap < *limit) {
      throw bad(w.name("memory.swap"),
                std::to_string(*swap) + " is below " + w.name("memory.limit") + " " +
                    std::to_string(*limit),
                "it is memory plus swap: give at least the memory limit, or -1");
    }
  }
  auto write_limit = [&] {
    w.add("memory.limit_in_bytes", bytes_or_unlimited(*limit, w.name("memory.limit")),
          "memory.limit");
  };
  auto write_swap = [&] {
    // Without swap accounting (swapaccount=0) there is no such file: left out.
    w.add("memory.memsw.limit_in_bytes", bytes_or_unlimited(*swap, w.name(swap_field)), swap_field)
        .skip_if_absent = true;
  };
  const bool swap_first =
      limit && swap &&
      (*swap == -1 || (now.memory_limit && *now.memory_limit < static_cast<std::uint64_t>(*swap)));
  if (swap_first) write_swap();
  if (limit) write_limit();
  if (swap && !swap_first) write_swap();
}

void plan_memory(Writer& w, const V1Now& now) {
  const auto& m = w.r.memory;
  plan_memory_and_swap(w, now);
  if (m.reservation && *m.reservation != 0) {
    w.add("memory.soft_limit_in_bytes",
          bytes_or_unlimited(*m.reservation, w.name("memory.reservation")), "memory.reservation");
  }
  if (m.swappiness) {
    if (*m.swappiness > 100) {
      throw bad(w.name("memory.swappiness"), std::to_string(*m.swappiness) + " is out of range",
                "give 0 to 100, as vm.swappiness");
    }
    w.add("memory.swappiness", std::to_string(*m.swappiness), "memory.swappiness");
  }
  if (m.disable_oom_killer) w.add("memory.oom_control", "1", "memory.disableOOMKiller");
}

void plan_cpu(Writer& w) {
  const auto& c = w.r.cpu;
  if (c.shares && *c.shares != 0) {
    // The kernel clamps silently; runc refuses what it would clamp.
    if (*c.shares < 2 || *c.shares > 262144) {
      throw bad(w.name("cpu.shares"), std::to_string(*c.shares) + " is out of range",
                "give 2 to 262144 (1024 is the default), or 0 to leave it unset");
    }
    w.add("cpu.shares", std::to_string(*c.shares), "cpu.shares");
  }
  // The period before the quota, as runc; a period the kernel refuses against the old
  // quota is retried after it (apply_writes retries an EINVAL once).
  if (c.period && *c.period != 0) {
    w.add("cpu.cfs_period_us", std::to_string(*c.period), "cpu.period");
  }
  if (c.quota && *c.quota != 0) {
    w.add("cpu.cfs_quota_us", std::to_string(*c.quota < 0 ? -1 : *c.quota), "cpu.quota");
  }
  if (c.burst) w.add("cpu.cfs_burst_us", std::to_string(*c.burst), "cpu.burst");
  // Realtime bandwidth: the period before the runtime, as runc, and both before the
  // container joins (a SCHED_RR process cannot join a group without realtime runtime).
  // A group's runtime must fit in what its parent has: the kernel's EINVAL then names
  // the field.
  if (c.realtime_period) {
    w.add("cpu.rt_period_us", std::to_string(*c.realtime_period), "cpu.realtimePeriod");
  }
  if (c.realtime_runtime) {
    w.add("cpu.rt_runtime_us", std::to_string(*c.realtime_runtime), "cpu.realtimeRuntime");
  }
  if (c.idle) w.add("cpu.idle", std::to_string(*c.idle), "cpu.idle");
  if (c.cpus && !c.cpus->empty()) w.add("cpuset.cpus", *c.cpus, "cpu.cpus");
  if (c.mems && !c.mems->empty()) w.add("cpuset.mems", *c.mems, "cpu.mems");
}

void plan_blkio(Writer& w) {
  const auto& b = w.r.block_io;
  // blkio.weight is CFQ's; with BFQ the kernel has blkio.bfq.weight instead (runc).
  if (b.weight && *b.weight != 0) {
    auto& f = w.add("blkio.weight", std::to_string(*b.weight), "blockIO.weight");
    f.fallback_file = "blkio.bfq.weight";
    f.fallback_value = f.value;
  }
  for (const auto& d : b.weight_device) {
    auto& f =
        w.add("blkio.weight_device", device(d.major, d.minor) + " " + std::to_string(d.weight),
              "blockIO.weightDevice");
    f.fallback_file = "blkio.bfq.weight_device";
    f.fallback_value = f.value;
  }
  auto throttle = [&](const std::vector<DeviceRate>& rates, const char* file, const char* field) {
    for (const auto& d : rates) {
      w.add(file, device(d.major, d.minor) + " " + std::to_string(d.rate), field);
    }
  };
  throttle(b.read_bps, "blkio.throttle.read_bps_device", "blockIO.throttleReadBpsDevice");
  throttle(b.write_bps, "blkio.throttle.write_bps_device", "blockIO.throttleWriteBpsDevice");
  throttle(b.read_iops, "blkio.throttle.read_iops_device", "blockIO.throttleReadIOPSDevice");
  throttle(b.write_iops, "blkio.throttle.write_iops_device", "blockIO.throttleWriteIOPSDevice");
}

}  // namespace

std::vector<V1Hierarchy> v1_hierarchies_from(const std::string& mountinfo_text) {
  std::vector<V1Hierarchy> out;
  for (const auto& line : split(mountinfo_text, '\n')) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto before = split(line.substr(0, dash), ' ');
    auto after = split(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3 || after[0] != "cgroup") continue;
    V1Hierarchy h{before[4], {}};
    for (const auto& option : split(after[2], ',')) {
      if (v1_controller(option)) h.controllers.push_back(option);
    }
    // A hierarchy mounted twice (a bind of it elsewhere) is joined once.
    auto same = [&](const V1Hierarchy& o) { return o.controllers == h.controllers; };
    if (!h.controllers.empty() && std::none_of(out.begin(), out.end(), same)) {
      out.push_back(std::move(h));
    }
  }
  return out;
}

std::vector<FileWrite> plan_v1_files(const Resources& r, const V1Now& now) {
  if (!r.unified.empty()) {
    throw Error(field_name(r, "unified." + r.unified.begin()->first) +
                    ": unified keys are cgroup v2 files, and this host's controllers are on "
                    "cgroup v1",
                ENOTSUP, "give the limit as its linux.resources field, or run on cgroup v2");
  }
  Writer w{r, {}};
  plan_memory(w, now);
  if (r.pids_limit && *r.pids_limit != 0) {
    w.add("pids.max", *r.pids_limit < 0 ? "max" : std::to_string(*r.pids_limit), "pids.limit");
  }
  plan_cpu(w);
  plan_blkio(w);
  for (const auto& h : r.hugepage_limits) {
    w.add("hugetlb." + h.page_size + ".limit_in_bytes", std::to_string(h.limit), "hugepageLimits");
    // Reservations too where the kernel accounts them (5.7+), as runc.
    w.add("hugetlb." + h.page_size + ".rsvd.limit_in_bytes", std::to_string(h.limit),
          "hugepageLimits")
        .skip_if_absent = true;
  }
  for (const auto& [dev, limit] : r.rdma) {
    std::string value = dev;
    if (limit.hca_handles) value += " hca_handle=" + std::to_string(*limit.hca_handles);
    if (limit.hca_objects) value += " hca_object=" + std::to_string(*limit.hca_objects);
    w.add("rdma.max", value, "rdma." + dev);
  }
  return std::move(w.out);
}

std::optional<std::uint64_t> v1_limit_value(const std::string& text) {
  auto n = parse_u64(trim(text));
  // 2^63-1 rounded down to a page: what a fresh group shows.
  if (!n || *n >= (std::uint64_t{1} << 62)) return std::nullopt;
  return n;
}

LeafValues v1_leaf_values(std::optional<std::string> quota, std::optional<std::string> period,
                          std::optional<std::string> limit, std::optional<std::string> memsw,
                          std::optional<std::uint64_t> usage) {
  LeafValues v;
  if (quota && period) {
    const std::string q(trim(*quota));
    v.cpu_max = (q == "-1" ? std::string("max") : q) + " " + std::string(trim(*period));
  }
  const std::uint64_t none = ~std::uint64_t{0};
  const std::uint64_t l = limit ? v1_limit_value(*limit).value_or(none) : none;
  v.memory_max = l == none ? std::string("max") : std::to_string(l);
  if (memsw) {
    const std::uint64_t total = v1_limit_value(*memsw).value_or(none);
    // The v2 reading of swap: what memory+swap allows beyond the memory limit.
    v.memory_swap_max =
        total != none && l != none && total >= l ? std::to_string(total - l) : std::string("max");
  }
  v.memory_current = usage;
  return v;
}

}  // namespace mrun::cgroup
