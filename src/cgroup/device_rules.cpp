#include "cgroup/device_rules.hpp"

#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/device_filter_rule.h"  // the BPF program's own step, shared
#include "embedded_policy.h"            // generated from policy/ by security/embed_policy.py

namespace mrun::cgroup {

namespace {

std::optional<std::uint32_t> parse_number(const std::string& text) {
  if (text == "*") return any_number;
  auto n = parse_u64(text);
  if (!n || *n >= any_number) return std::nullopt;
  return static_cast<std::uint32_t>(*n);
}

std::string number_string(std::uint32_t n) {
  return n == any_number ? "*" : std::to_string(n);
}

std::uint32_t number_from_oci(const std::optional<std::int64_t>& n, const char* field) {
  if (!n || *n == -1) return any_number;
  if (*n < 0 || *n >= any_number) {
    throw Error(std::string("linux.resources.devices: ") + field + " " + std::to_string(*n) +
                    " is out of range",
                EINVAL, "give a device number, or -1 (or nothing) for any");
  }
  return static_cast<std::uint32_t>(*n);
}

}  // namespace

std::optional<std::uint32_t> parse_access(const std::string& text) {
  if (text.empty() || text.size() > 3) return std::nullopt;
  std::uint32_t bits = 0;
  for (char c : text) {
    std::uint32_t bit = c == 'r'   ? access_read
                        : c == 'w' ? access_write
                        : c == 'm' ? access_mknod
                                   : 0;
    if (bit == 0 || (bits & bit) != 0) return std::nullopt;
    bits |= bit;
  }
  return bits;
}

std::string access_string(std::uint32_t access) {
  std::string text;
  if (access & access_read) text += 'r';
  if (access & access_write) text += 'w';
  if (access & access_mknod) text += 'm';
  return text;
}

std::string to_string(const DeviceRule& rule) {
  const char type = rule.type == DeviceType::character ? 'c'
                    : rule.type == DeviceType::block   ? 'b'
                                                       : 'a';
  return std::string(1, type) + " " + number_string(rule.major) + ":" + number_string(rule.minor) +
         " " + access_string(rule.access);
}

std::vector<DeviceRule> parse_device_rules(const std::string& text, const std::string& source) {
  std::vector<DeviceRule> rules;
  const std::string format =
      "write TYPE MAJOR:MINOR ACCESS, e.g. \"c 1:3 rwm\" (see mrun-policy(5))";
  int number = 0;
  for (const auto& raw : split(text, '\n')) {
    ++number;
    std::string line = raw.substr(0, raw.find('#'));
    std::vector<std::string> fields;
    for (const auto& f : split(line, ' ')) {
      for (const auto& g : split(f, '\t')) {
        if (!g.empty()) fields.push_back(g);
      }
    }
    if (fields.empty()) continue;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    if (fields.size() != 3)
      throw Error(where + "\"" + std::string(trim(raw)) + "\" is not a rule", EINVAL, format);
    DeviceRule rule;
    if (fields[0] == "c") {
      rule.type = DeviceType::character;
    } else if (fields[0] == "b") {
      rule.type = DeviceType::block;
    } else if (fields[0] == "a") {
      rule.type = DeviceType::any;
    } else {
      throw Error(where + "type \"" + fields[0] + "\" is not a, b or c", EINVAL, format);
    }
    auto numbers = split(fields[1], ':');
    auto major = numbers.size() == 2 ? parse_number(numbers[0]) : std::nullopt;
    auto minor = numbers.size() == 2 ? parse_number(numbers[1]) : std::nullopt;
    if (!major || !minor) {
      throw Error(where + "\"" + fields[1] + "\" is not MAJOR:MINOR", EINVAL, format);
    }
    rule.major = *major;
    rule.minor = *minor;
    auto access = parse_access(fields[2]);
    if (!access) throw Error(where + "access \"" + fields[2] + "\" is not rwm", EINVAL, format);
    rule.access = *access;
    rules.push_back(rule);
  }
  return rules;
}

std::vector<DeviceRule> default_device_rules() {
  return parse_device_rules(std::string(embedded_devices_conf, sizeof embedded_devices_conf),
                            "policy/devices.conf (built in)");
}

std::vector<DeviceRule> rules_from_oci(const std::vector<OciDeviceRule>& entries) {
  std::vector<DeviceRule> rules;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const std::string access_text = e.access.empty() ? "rwm" : e.access;
    auto access = parse_access(access_text);
    if (!access) {
      throw Error("linux.resources.devices: access \"" + e.access + "\" is not rwm", EINVAL,
                  "give any of r, w, m once each");
    }
    DeviceRule rule;
    if (e.type.empty() || e.type == "a") {
      rule.type = DeviceType::any;
    } else if (e.type == "c") {
      rule.type = DeviceType::character;
    } else if (e.type == "b") {
      rule.type = DeviceType::block;
    } else {
      throw Error("linux.resources.devices: type \"" + e.type + "\" is not a, b or c", EINVAL);
    }
    rule.major = number_from_oci(e.major, "major");
    rule.minor = number_from_oci(e.minor, "minor");
    rule.access = *access;
    rule.deny = !e.allow;
    const bool everything = rule.type == DeviceType::any && rule.major == any_number &&
                            rule.minor == any_number &&
                            rule.access == (access_read | access_write | access_mknod);
    if (everything && rule.deny) {
      rules.clear();  // what came before is overruled for every device and access
      continue;
    }
    rules.push_back(rule);
  }
  return rules;
}

namespace {
bool matches(const DeviceRule& r, DeviceType type, std::uint32_t major, std::uint32_t minor) {
  return (r.type == DeviceType::any || r.type == type) &&
         (r.major == any_number || r.major == major) && (r.minor == any_number || r.minor == minor);
}
}  // namespace

bool rules_allow(const std::vector<DeviceRule>& rules, DeviceType type, std::uint32_t major,
                 std::uint32_t minor, std::uint32_t access) {
  if (access == 0) return false;
  for (std::uint32_t bit : {access_read, access_write, access_mknod}) {
    if ((access & bit) == 0) continue;
    bool allowed = false;  // no rule names it: denied
    for (auto r = rules.rbegin(); r != rules.rend(); ++r) {
      if (matches(*r, type, major, minor) && (r->access & bit) != 0) {
        allowed = !r->deny;
        break;
      }
    }
    if (!allowed) return false;
  }
  return true;
}

std::vector<FilterMapEntry> filter_map_entries(const std::vector<DeviceRule>& rules) {
  std::vector<FilterMapEntry> entries;
  for (auto r = rules.rbegin(); r != rules.rend(); ++r) {
    entries.push_back({static_cast<std::uint32_t>(r->type), r->major, r->minor,
                       r->access | (r->deny ? DEVICE_RULE_DENY : 0)});
  }
  return entries;
}

bool filter_allows(const std::vector<FilterMapEntry>& entries, DeviceType type, std::uint32_t major,
                   std::uint32_t minor, std::uint32_t access) {
  __u32 pending = access;
  for (const auto& e : entries) {
    const device_rule rule{e.type, e.major, e.minor, e.access};
    if ((rule.access & DEVICE_RULE_ACCESS_BITS) == 0) return false;
    int verdict = device_rule_step(&rule, static_cast<__u32>(type), major, minor, &pending);
    if (verdict != DEVICE_RULE_NEXT) return verdict == DEVICE_RULE_ALLOWS;
  }
  return false;
}

std::vector<DeviceRule> plan_device_rules(const FilterInput& input) {
  const std::uint32_t all = access_read | access_write | access_mknod;
  if (input.privileged) return {DeviceRule{DeviceType::any, any_number, any_number, all}};
  std::vector<DeviceRule> rules = input.extra;
  for (const auto& node : input.nodes) {
    auto access = parse_access(node.access);
    if (!access) {
      throw Error("device " + std::to_string(node.major) + ":" + std::to_string(node.minor) +
                      ": access \"" + node.access + "\" is not rwm",
                  EINVAL);
    }
    rules.push_back({node.type, node.major, node.minor, *access});
  }
  rules.insert(rules.end(), input.defaults.begin(), input.defaults.end());
  std::erase_if(rules, [](const DeviceRule& r) { return r.access == 0; });
  if (rules.size() > max_device_rules) {
    throw Error("the device filter would have " + std::to_string(rules.size()) +
                    " rules, more than its " + std::to_string(max_device_rules),
                E2BIG, "pass fewer --device nodes or device rules");
  }
  return rules;
}

}  // namespace mrun::cgroup
