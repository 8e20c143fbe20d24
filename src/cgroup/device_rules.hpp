// The device cgroup rules as data: parsing policy/devices.conf and OCI
// linux.resources.devices, and planning the rules a container's filter gets. Pure (no
// I/O), unit tested; src/cgroup/device_filter.cpp loads the result into the BPF
// program, and mrun-gpu-helper(8) compiles the same default set in.
//
// A rule is what cgroup v1's devices.allow and devices.deny took: TYPE MAJOR:MINOR
// ACCESS, with type a (any), b or c, '*' for any major or minor, and ACCESS any of r, w,
// m, and it allows or denies. The rules are an ordered list, as the runtime spec has
// them (Docker's: deny all, allow a dozen nodes, deny /dev/fuse): for each access bit
// asked for (opening O_RDWR asks r and w), the last rule that matches the device and
// names that bit decides; a bit no rule decides is denied. An access is allowed when
// every bit it asks for is (rules_allow, the reference; the BPF program and cgroup v1
// get the same list).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mrun::cgroup {

// The values of the BPF program's map (src/cgroup/device_filter.bpf.c): the kernel's
// BPF_DEVCG_DEV_* and BPF_DEVCG_ACC_* numbers.
enum class DeviceType : std::uint32_t { any = 0, block = 1, character = 2 };
inline constexpr std::uint32_t access_mknod = 1;
inline constexpr std::uint32_t access_read = 2;
inline constexpr std::uint32_t access_write = 4;
inline constexpr std::uint32_t any_number = 0xffffffffu;
// Entries of the program's map (MAX_RULES there).
inline constexpr std::size_t max_device_rules = 64;

struct DeviceRule {
  DeviceType type = DeviceType::any;
  std::uint32_t major = any_number;
  std::uint32_t minor = any_number;
  std::uint32_t access = 0;  // BPF_DEVCG_ACC_* bits; never 0 in a plan (0 ends the map)
  bool deny = false;         // a deny rule (devices.deny), else an allow
  bool operator==(const DeviceRule&) const = default;
};

// The reference meaning of an ordered rule list (above): whether ACCESS (BPF_DEVCG_ACC_*
// bits) to the device TYPE MAJOR:MINOR is allowed.
bool rules_allow(const std::vector<DeviceRule>& rules, DeviceType type, std::uint32_t major,
                 std::uint32_t minor, std::uint32_t access);

// The BPF map's entries for RULES (device_filter_rule.h's layout): reversed, so that the
// program's first deciding entry is the list's last deciding rule, a deny marked in the
// access word. And the program's own walk over such entries, for the unit tests.
struct FilterMapEntry {
  std::uint32_t type = 0, major = 0, minor = 0, access = 0;
};
std::vector<FilterMapEntry> filter_map_entries(const std::vector<DeviceRule>& rules);
bool filter_allows(const std::vector<FilterMapEntry>& entries, DeviceType type, std::uint32_t major,
                   std::uint32_t minor, std::uint32_t access);

// "rwm" -> bits; std::nullopt when not one or more of r, w, m (each at most once).
std::optional<std::uint32_t> parse_access(const std::string& text);
std::string access_string(std::uint32_t access);
// "c 1:3 rwm", as in devices.conf.
std::string to_string(const DeviceRule& rule);

// One rule a line, '#' starts a comment. Throws mrun::Error naming SOURCE:LINE.
std::vector<DeviceRule> parse_device_rules(const std::string& text, const std::string& source);

// The built-in default set (policy/devices.conf, compiled in).
std::vector<DeviceRule> default_device_rules();

// One linux.resources.devices entry of an OCI config.json.
struct OciDeviceRule {
  bool allow = false;
  std::string type;                          // "a", "b", "c" or empty (all)
  std::optional<std::int64_t> major, minor;  // absent or -1: any
  std::string access;                        // empty: rwm
};
// The entries as rules, in their order. What comes before the last deny-all (a *:* rwm)
// is dropped with it: the list starts from deny, so it decides nothing.
std::vector<DeviceRule> rules_from_oci(const std::vector<OciDeviceRule>& entries);

// A node passed with --device or --gpu, as the host has it.
struct AllowedNode {
  DeviceType type = DeviceType::character;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  std::string access = "rw";  // rwm letters
};

struct FilterInput {
  std::vector<DeviceRule> defaults;  // normally default_device_rules()
  std::vector<AllowedNode> nodes;    // --device, --gpu
  std::vector<DeviceRule> extra;     // ContainerConfig::device_rules (OCI)
  bool privileged = false;           // --privileged: every device, as podman
};

// The rule list: the config's (EXTRA) in its order, then the nodes, then the defaults,
// so that those two are always allowed, as runc appends its default devices after the
// spec's rules. Throws mrun::Error when they exceed max_device_rules.
std::vector<DeviceRule> plan_device_rules(const FilterInput& input);

}  // namespace mrun::cgroup
