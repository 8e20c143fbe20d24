#include "oci/resources.hpp"

#include <cerrno>
#include <set>
#include <utility>

#include "base/error.hpp"

namespace mrun::oci {

using nlohmann::json;

namespace {

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  Error bad(const std::string& field, const std::string& what) const {
    return Error(source_ + ": " + field + ": " + what, EINVAL);
  }
  // A field cgroup v2 cannot carry: 125 naming it, and why.
  Error refused(const std::string& field, const std::string& why) const {
    return Error(source_ + ": " + field + ": " + why, ENOTSUP,
                 "cgroup v2 has no such setting; remove it from the configuration");
  }

  const json& object(const json& j, const std::string& field) const {
    if (!j.is_object()) throw bad(field, "must be an object");
    return j;
  }
  const json& array(const json& j, const std::string& field) const {
    if (!j.is_array()) throw bad(field, "must be an array");
    return j;
  }

  // j[key] as an integer of type T when present (null is absent). nlohmann would cast
  // any number to T, wrapping -1 round to 2^64-1: checked here, naming the field.
  template <typename T>
  std::optional<T> integer(const json& j, const char* key, const std::string& field) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    const std::string name = field + "." + key;
    if (!it->is_number()) throw bad(name, "wrong type (" + std::string(it->type_name()) + ")");
    if constexpr (std::is_unsigned_v<T>) {
      if (!it->is_number_unsigned()) throw bad(name, "must be a non-negative integer");
    }
    if (!it->is_number_integer()) throw bad(name, "must be an integer, not " + it->dump());
    bool fits = it->is_number_unsigned() ? std::in_range<T>(it->get<std::uint64_t>())
                                         : std::in_range<T>(it->get<std::int64_t>());
    if (!fits) throw bad(name, it->dump() + " is out of range");
    return it->get<T>();
  }
  std::optional<std::string> string(const json& j, const char* key,
                                    const std::string& field) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) {
      throw bad(field + "." + key, "wrong type (" + std::string(it->type_name()) + ")");
    }
    return it->get<std::string>();
  }
  std::optional<bool> boolean(const json& j, const char* key, const std::string& field) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) {
      throw bad(field + "." + key, "wrong type (" + std::string(it->type_name()) + ")");
    }
    return it->get<bool>();
  }

  // Keys of `j` outside `known`: ignored (the spec's rule), listed for --debug.
  void unknown(const json& j, std::initializer_list<const char*> known, const std::string& field,
               std::vector<std::string>& out) const {
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool found = false;
      for (const char* k : known) found = found || it.key() == k;
      if (!found) out.push_back(field + "." + it.key());
    }
  }

 private:
  std::string source_;
};

std::int64_t bytes_or_unlimited(const Reader& in, std::optional<std::int64_t> v,
                                const std::string& field) {
  if (*v < -1) throw in.bad(field, "must be -1 (unlimited) or a number of bytes");
  return *v;
}

void parse_memory(const Reader& in, const json& j, cgroup::Resources& r, ParsedResources& out) {
  const std::string f = "linux.resources.memory";
  in.object(j, f);
  in.unknown(j,
             {"limit", "reservation", "swap", "kernel", "kernelTCP", "swappiness",
              "disableOOMKiller", "useHierarchy", "checkBeforeUpdate"},
             f, out.unknown);
  if (auto v = in.integer<std::int64_t>(j, "limit", f)) {
    r.memory.limit = bytes_or_unlimited(in, v, f + ".limit");
  }
  if (auto v = in.integer<std::int64_t>(j, "reservation", f)) {
    r.memory.reservation = bytes_or_unlimited(in, v, f + ".reservation");
  }
  if (auto v = in.integer<std::int64_t>(j, "swap", f)) {
    r.memory.swap = bytes_or_unlimited(in, v, f + ".swap");
  }
  for (const char* key : {"kernel", "kernelTCP"}) {
    if (in.integer<std::int64_t>(j, key, f)) {
      r.ignored.push_back(f + "." + key +
                          ": ignored: kernel memory limits are deprecated by the runtime spec "
                          "and cgroup v2 has none (as runc)");
    }
  }
  // cgroup v1's alone: kept for a v1 group, refused by the v2 plan (cgroup/resources.hpp).
  r.memory.swappiness = in.integer<std::uint64_t>(j, "swappiness", f);
  r.memory.disable_oom_killer = in.boolean(j, "disableOOMKiller", f).value_or(false);
  if (!in.boolean(j, "useHierarchy", f).value_or(true)) {
    throw in.refused(f + ".useHierarchy", "cgroup v2 is always hierarchical");
  }
  r.memory.check_before_update = in.boolean(j, "checkBeforeUpdate", f).value_or(false);
}

void parse_cpu(const Reader& in, const json& j, cgroup::Resources& r, ParsedResources& out) {
  const std::string f = "linux.resources.cpu";
  in.object(j, f);
  in.unknown(j,
             {"shares", "quota", "burst", "period", "realtimeRuntime", "realtimePeriod", "cpus",
              "mems", "idle"},
             f, out.unknown);
  r.cpu.shares = in.integer<std::uint64_t>(j, "shares", f);
  r.cpu.quota = in.integer<std::int64_t>(j, "quota", f);
  if (r.cpu.quota && *r.cpu.quota < -1) {
    throw in.bad(f + ".quota", "must be -1 (no quota) or a number of microseconds");
  }
  r.cpu.burst = in.integer<std::uint64_t>(j, "burst", f);
  r.cpu.period = in.integer<std::uint64_t>(j, "period", f);
  // 0 is unset, as runc reads it; cgroup v2 refuses the rest (cgroup/resources.cpp).
  r.cpu.realtime_runtime = in.integer<std::int64_t>(j, "realtimeRuntime", f);
  if (r.cpu.realtime_runtime == 0) r.cpu.realtime_runtime.reset();
  r.cpu.realtime_period = in.integer<std::uint64_t>(j, "realtimePeriod", f);
  if (r.cpu.realtime_period == 0u) r.cpu.realtime_period.reset();
  r.cpu.cpus = in.string(j, "cpus", f);
  r.cpu.mems = in.string(j, "mems", f);
  auto list = [&](const std::optional<std::string>& s, const char* key) {
    if (s && s->find_first_not_of("0123456789,-") != std::string::npos) {
      throw in.bad(f + "." + key, "\"" + *s + "\" is not a list such as \"0-3,6\"");
    }
  };
  list(r.cpu.cpus, "cpus");
  list(r.cpu.mems, "mems");
  r.cpu.idle = in.integer<std::int64_t>(j, "idle", f);
}

std::vector<cgroup::DeviceRate> parse_rates(const Reader& in, const json& j, const char* key,
                                            const std::string& f) {
  std::vector<cgroup::DeviceRate> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  const std::string field = f + "." + key;
  in.array(*it, field);
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string e = field + "[" + std::to_string(i) + "]";
    const json& d = in.object((*it)[i], e);
    auto major = in.integer<std::int64_t>(d, "major", e);
    auto minor = in.integer<std::int64_t>(d, "minor", e);
    auto rate = in.integer<std::uint64_t>(d, "rate", e);
    if (!major || !minor || !rate) throw in.bad(e, "needs major, minor and rate");
    if (*major < 0 || *minor < 0) throw in.bad(e, "major and minor must be non-negative");
    out.push_back({*major, *minor, *rate});
  }
  return out;
}

std::uint16_t blkio_weight(const Reader& in, std::uint16_t w, const std::string& field) {
  if (w < 10 || w > 1000) {
    throw in.bad(field, std::to_string(w) + " is out of range (10 to 1000, the blkio weights)");
  }
  return w;
}

void parse_block_io(const Reader& in, const json& j, cgroup::Resources& r, ParsedResources& out) {
  const std::string f = "linux.resources.blockIO";
  in.object(j, f);
  in.unknown(j,
             {"weight", "leafWeight", "weightDevice", "throttleReadBpsDevice",
              "throttleWriteBpsDevice", "throttleReadIOPSDevice", "throttleWriteIOPSDevice"},
             f, out.unknown);
  if (auto w = in.integer<std::uint16_t>(j, "weight", f); w && *w != 0) {
    r.block_io.weight = blkio_weight(in, *w, f + ".weight");
  }
  if (in.integer<std::uint16_t>(j, "leafWeight", f).value_or(0) != 0) {
    throw in.refused(f + ".leafWeight", "cgroup v2 has no leaf weight (CFQ's, cgroup v1)");
  }
  if (auto it = j.find("weightDevice"); it != j.end() && !it->is_null()) {
    const std::string field = f + ".weightDevice";
    in.array(*it, field);
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string e = field + "[" + std::to_string(i) + "]";
      const json& d = in.object((*it)[i], e);
      auto major = in.integer<std::int64_t>(d, "major", e);
      auto minor = in.integer<std::int64_t>(d, "minor", e);
      auto weight = in.integer<std::uint16_t>(d, "weight", e);
      if (in.integer<std::uint16_t>(d, "leafWeight", e).value_or(0) != 0) {
        throw in.refused(e + ".leafWeight", "cgroup v2 has no leaf weight (CFQ's, cgroup v1)");
      }
      if (!major || !minor) throw in.bad(e, "needs major and minor");
      if (*major < 0 || *minor < 0) throw in.bad(e, "major and minor must be non-negative");
      if (!weight) throw in.bad(e, "needs a weight");
      r.block_io.weight_device.push_back(
          {*major, *minor, blkio_weight(in, *weight, e + ".weight")});
    }
  }
  r.block_io.read_bps = parse_rates(in, j, "throttleReadBpsDevice", f);
  r.block_io.write_bps = parse_rates(in, j, "throttleWriteBpsDevice", f);
  r.block_io.read_iops = parse_rates(in, j, "throttleReadIOPSDevice", f);
  r.block_io.write_iops = parse_rates(in, j, "throttleWriteIOPSDevice", f);
}

// "2MB", "64KB", "1GB": digits and a K, M or G before B, as hugetlb.<size>.max names it.
bool page_size_name(const std::string& s) {
  if (s.size() < 3 || s.back() != 'B') return false;
  char unit = s[s.size() - 2];
  if (unit != 'K' && unit != 'M' && unit != 'G') return false;
  for (std::size_t i = 0; i + 2 < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

void parse_hugepages(const Reader& in, const json& j, cgroup::Resources& r) {
  const std::string f = "linux.resources.hugepageLimits";
  in.array(j, f);
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string e = f + "[" + std::to_string(i) + "]";
    const json& h = in.object(j[i], e);
    auto size = in.string(h, "pageSize", e);
    auto limit = in.integer<std::uint64_t>(h, "limit", e);
    if (!size || !limit) throw in.bad(e, "needs pageSize and limit");
    if (!page_size_name(*size)) {
      throw in.bad(e + ".pageSize", "\"" + *size + "\" is not a page size such as 2MB or 1GB");
    }
    r.hugepage_limits.push_back({*size, *limit});
  }
}

void parse_rdma(const Reader& in, const json& j, cgroup::Resources& r) {
  const std::string f = "linux.resources.rdma";
  in.object(j, f);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& dev = it.key();
    const std::string e = f + "." + dev;
    if (dev.empty() || dev.find_first_of("/ \t\n=") != std::string::npos) {
      throw in.bad(e, "\"" + dev + "\" is not an RDMA device name");
    }
    const json& v = in.object(it.value(), e);
    cgroup::RdmaLimit limit;
    limit.hca_handles = in.integer<std::uint32_t>(v, "hcaHandles", e);
    limit.hca_objects = in.integer<std::uint32_t>(v, "hcaObjects", e);
    if (!limit.hca_handles && !limit.hca_objects) {
      throw in.bad(e, "needs hcaHandles or hcaObjects");
    }
    r.rdma[dev] = limit;
  }
}

void parse_unified(const Reader& in, const json& j, cgroup::Resources& r) {
  const std::string f = "linux.resources.unified";
  in.object(j, f);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string e = f + "." + it.key();
    if (auto problem = unified_key_problem(it.key()); !problem.empty()) throw in.bad(e, problem);
    if (!it.value().is_string()) {
      throw in.bad(e, "wrong type (" + std::string(it.value().type_name()) + ")");
    }
    r.unified[it.key()] = it.value().get<std::string>();
  }
}

void parse_devices(const Reader& in, const json& v, ParsedResources& out) {
  // The device cgroup filter's extra allow rules (cgroup/device_rules.hpp); the usual
  // leading deny-all is mrun's starting point anyway.
  const std::string f = "linux.resources.devices";
  in.array(v, f);
  std::vector<cgroup::OciDeviceRule> entries;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string e = f + "[" + std::to_string(i) + "]";
    const json& rule = in.object(v[i], e);
    cgroup::OciDeviceRule d;
    d.allow = in.boolean(rule, "allow", e).value_or(false);
    d.type = in.string(rule, "type", e).value_or("");
    d.major = in.integer<std::int64_t>(rule, "major", e);
    d.minor = in.integer<std::int64_t>(rule, "minor", e);
    d.access = in.string(rule, "access", e).value_or("");
    entries.push_back(d);
  }
  out.device_rules = cgroup::rules_from_oci(entries);
}

}  // namespace

std::string unified_key_problem(const std::string& key) {
  if (key.empty() || key == "." || key == ".." ||
      key.find_first_of(std::string("/\0\n ", 4)) != std::string::npos) {
    return "\"" + key + "\" is not a file name in the container's cgroup";
  }
  if (key.find('.') == std::string::npos || key.front() == '.' || key.back() == '.') {
    return "\"" + key + "\" is not a cgroup v2 file name (CONTROLLER.PARAMETER)";
  }
  static const std::set<std::string> managed{
      "cgroup.procs", "cgroup.threads",         "cgroup.kill",   "cgroup.freeze",
      "cgroup.type",  "cgroup.subtree_control", "cgroup.events", "cgroup.controllers"};
  if (managed.count(key)) {
    return key + " is not a resource: mrun moves, freezes and kills the container through it";
  }
  return {};
}

ParsedResources parse_resources(const json& j, const std::string& source) {
  Reader in(source);
  ParsedResources out;
  cgroup::Resources& r = out.resources;
  in.object(j, "linux.resources");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (v.is_null()) continue;
    if (key == "devices") {
      parse_devices(in, v, out);
    } else if (key == "memory") {
      parse_memory(in, v, r, out);
    } else if (key == "cpu") {
      parse_cpu(in, v, r, out);
    } else if (key == "pids") {
      const std::string f = "linux.resources.pids";
      in.object(v, f);
      in.unknown(v, {"limit"}, f, out.unknown);
      r.pids_limit = in.integer<std::int64_t>(v, "limit", f);
    } else if (key == "blockIO") {
      parse_block_io(in, v, r, out);
    } else if (key == "hugepageLimits") {
      parse_hugepages(in, v, r);
    } else if (key == "rdma") {
      parse_rdma(in, v, r);
    } else if (key == "unified") {
      parse_unified(in, v, r);
    } else if (key == "network") {
      in.object(v, "linux.resources.network");
      const bool empty_priorities = !v.contains("priorities") || v["priorities"].is_null() ||
                                    (v["priorities"].is_array() && v["priorities"].empty());
      if (in.integer<std::uint32_t>(v, "classID", "linux.resources.network").value_or(0) != 0 ||
          !empty_priorities) {
        throw in.refused("linux.resources.network",
                         "net_cls and net_prio are cgroup v1 controllers; cgroup v2 has none");
      }
    } else {
      out.unknown.push_back("linux.resources." + key);
    }
  }
  return out;
}

}  // namespace mrun::oci
