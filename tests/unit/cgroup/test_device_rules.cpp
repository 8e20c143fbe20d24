// The device cgroup filter's rules (cgroup/device_rules.hpp) and who asks the helper
// for what (launch/device_access.hpp): the pure parts, without privilege.
#include <catch2/catch.hpp>
#include <iterator>
#include <random>
#include <string>
#include <utility>

#include "base/error.hpp"
#include "cgroup/device_rules.hpp"
#include "cgroup/devices_v1.hpp"
#include "launch/device_access.hpp"
#include "mount/devices.hpp"
#include "runtime/config.hpp"

using namespace mrun::cgroup;
using mrun::Error;

namespace {
const std::uint32_t rwm = access_read | access_write | access_mknod;
DeviceRule chr(std::uint32_t major, std::uint32_t minor, std::uint32_t access) {
  return {DeviceType::character, major, minor, access};
}
DeviceRule deny(DeviceRule rule) {
  rule.deny = true;
  return rule;
}
// What the loaded filter decides for a plan: device_filter.bpf.c's own step over the map
// entries it gets, checked against the reference reading of the list each time.
bool allows(const std::vector<DeviceRule>& rules, DeviceType type, std::uint32_t major,
            std::uint32_t minor, std::uint32_t access) {
  const bool filter = filter_allows(filter_map_entries(rules), type, major, minor, access);
  REQUIRE(filter == rules_allow(rules, type, major, minor, access));
  return filter;
}
mrun::mount::HostDevice host_device(const std::string& path, unsigned major, unsigned minor,
                                    const std::string& access, uid_t uid = 0, gid_t gid = 0,
                                    mode_t mode = 0600) {
  mrun::mount::HostDevice d;
  d.spec = {path, path, access};
  d.major = major;
  d.minor = minor;
  d.uid = uid;
  d.gid = gid;
  d.mode = mode;
  return d;
}
}  // namespace

TEST_CASE("devices.conf: TYPE MAJOR:MINOR ACCESS, comments and blank lines") {
  auto rules = parse_device_rules("# comment\n\nc 1:3 rwm  # null\nb *:* m\na 10:* rw\n", "t");
  REQUIRE(rules.size() == 3);
  REQUIRE(rules[0] == chr(1, 3, rwm));
  REQUIRE(rules[1] == DeviceRule{DeviceType::block, any_number, any_number, access_mknod});
  REQUIRE(rules[2] == DeviceRule{DeviceType::any, 10, any_number, access_read | access_write});
  REQUIRE(to_string(rules[0]) == "c 1:3 rwm");
  REQUIRE(to_string(rules[1]) == "b *:* m");
}

TEST_CASE("devices.conf: each bad line names the file, the line and the fix") {
  REQUIRE_THROWS_WITH(parse_device_rules("c 1:3 rwm\nx 1:3 rwm\n", "f.conf"),
                      Catch::Contains("f.conf:2") && Catch::Contains("is not a, b or c"));
  REQUIRE_THROWS_WITH(parse_device_rules("c 1 rwm\n", "f"), Catch::Contains("not MAJOR:MINOR"));
  REQUIRE_THROWS_WITH(parse_device_rules("c 1:x rwm\n", "f"), Catch::Contains("not MAJOR:MINOR"));
  REQUIRE_THROWS_WITH(parse_device_rules("c 1:3 rwx\n", "f"), Catch::Contains("is not rwm"));
  REQUIRE_THROWS_WITH(parse_device_rules("c 1:3 rr\n", "f"), Catch::Contains("is not rwm"));
  REQUIRE_THROWS_WITH(parse_device_rules("c 1:3\n", "f"), Catch::Contains("is not a rule"));
  REQUIRE_THROWS_WITH(parse_device_rules("c 1:3 rwm extra\n", "f"), Catch::Contains("c 1:3 rwm"));
  REQUIRE_THROWS_WITH(parse_device_rules("c 4294967295:1 r\n", "f"),
                      Catch::Contains("not MAJOR:MINOR"));
}

TEST_CASE("the built-in default set: the OCI nodes, nothing else") {
  auto rules = default_device_rules();
  for (auto [major, minor] : {std::pair{1u, 3u},
                              {1u, 5u},
                              {1u, 7u},
                              {1u, 8u},
                              {1u, 9u},
                              {5u, 0u},
                              {5u, 1u},
                              {5u, 2u},
                              {136u, 0u},
                              {136u, 7u}}) {
    INFO(major << ":" << minor);
    REQUIRE(allows(rules, DeviceType::character, major, minor, access_read | access_write));
  }
  // mknod of anything (as runc), but no open of anything else: tun, a disk, a GPU.
  REQUIRE(allows(rules, DeviceType::block, 8, 0, access_mknod));
  REQUIRE_FALSE(allows(rules, DeviceType::block, 8, 0, access_read));
  REQUIRE_FALSE(allows(rules, DeviceType::character, 10, 200, access_read));
  REQUIRE_FALSE(allows(rules, DeviceType::character, 240, 0, access_read | access_write));
}

TEST_CASE("plan: one rule per --device/--gpu node with its access, then the defaults") {
  FilterInput input;
  input.defaults = default_device_rules();
  input.nodes.push_back({DeviceType::character, 240, 0, "r"});   // --device ...:r
  input.nodes.push_back({DeviceType::character, 240, 1, "rw"});  // --gpu
  auto rules = plan_device_rules(input);
  REQUIRE(rules.size() == input.defaults.size() + 2);
  REQUIRE(rules[1] == chr(240, 1, access_read | access_write));
  REQUIRE(rules.back() == input.defaults.back());
  REQUIRE(allows(rules, DeviceType::character, 240, 0, access_read));
  REQUIRE_FALSE(allows(rules, DeviceType::character, 240, 0, access_read | access_write));
  REQUIRE(allows(rules, DeviceType::character, 240, 1, access_read | access_write));
  REQUIRE_FALSE(allows(rules, DeviceType::character, 240, 2, access_read));  // not passed
  REQUIRE_FALSE(allows(rules, DeviceType::block, 240, 1, access_read));      // wrong type
}

TEST_CASE("plan: --privileged allows every device, as podman") {
  FilterInput input;
  input.defaults = default_device_rules();
  input.privileged = true;
  auto rules = plan_device_rules(input);
  REQUIRE(rules == std::vector<DeviceRule>{{DeviceType::any, any_number, any_number, rwm}});
  REQUIRE(allows(rules, DeviceType::block, 8, 0, access_read | access_write));
}

TEST_CASE("plan: more rules than the map holds is an error, not a truncated list") {
  FilterInput input;
  for (unsigned i = 0; i < max_device_rules + 1; ++i) {
    input.nodes.push_back({DeviceType::character, 240, i, "rw"});
  }
  REQUIRE_THROWS_WITH(plan_device_rules(input), Catch::Contains("more than its 64"));
  input.nodes.back().access = "x";
  input.nodes.resize(1);
  input.nodes[0].access = "rx";
  REQUIRE_THROWS_WITH(plan_device_rules(input), Catch::Contains("is not rwm"));
}

TEST_CASE("OCI linux.resources.devices: a leading deny-all, then rules in order") {
  std::vector<OciDeviceRule> entries{
      {false, "", std::nullopt, std::nullopt, "rwm"},
      {true, "c", 240, std::nullopt, "rw"},
      {true, "b", 8, 0, "r"},
      {true, "a", -1, -1, ""},
  };
  auto rules = rules_from_oci(entries);
  REQUIRE(rules.size() == 3);
  REQUIRE(rules[0] == chr(240, any_number, access_read | access_write));
  REQUIRE(rules[1] == DeviceRule{DeviceType::block, 8, 0, access_read});
  REQUIRE(rules[2] == DeviceRule{DeviceType::any, any_number, any_number, rwm});
  // The default podman/runc shape alone: no extra rules.
  REQUIRE(rules_from_oci({{false, "", std::nullopt, std::nullopt, "rwm"}}).empty());
}

TEST_CASE("OCI linux.resources.devices: denies anywhere, a later deny-all overrules") {
  REQUIRE(rules_from_oci({{false, "c", 1, 3, "rwm"}}) == std::vector{deny(chr(1, 3, rwm))});
  // Everything before a deny-all decides nothing any more.
  REQUIRE(rules_from_oci({{true, "c", 1, 3, "rw"},
                          {false, "", std::nullopt, std::nullopt, "rwm"},
                          {true, "c", 1, 5, "r"}}) == std::vector{chr(1, 5, access_read)});
  // A deny of less than everything is a rule like any other.
  REQUIRE(rules_from_oci({{true, "c", 1, 3, "rw"}, {false, "a", -1, -1, "w"}}) ==
          std::vector{chr(1, 3, access_read | access_write),
                      deny(DeviceRule{DeviceType::any, any_number, any_number, access_write})});
}

// Docker 20.10's default linux.resources.devices, as `docker run` hands it to a runtime.
std::vector<OciDeviceRule> docker_device_list() {
  auto allow = [](const char* type, std::int64_t major, std::int64_t minor, const char* access) {
    return OciDeviceRule{true, type, major, minor, access};
  };
  return {{false, "a", std::nullopt, std::nullopt, "rwm"},
          allow("c", 1, 5, "rwm"),
          allow("c", 1, 3, "rwm"),
          allow("c", 1, 9, "rwm"),
          allow("c", 1, 8, "rwm"),
          allow("c", 5, 0, "rwm"),
          allow("c", 5, 1, "rwm"),
          allow("c", 1, 7, "rwm"),
          allow("c", 136, -1, "rwm"),
          allow("c", 5, 2, "rwm"),
          allow("c", 10, 200, "rwm"),
          {false, "c", 10, 229, "rwm"}};
}

TEST_CASE("Docker's default device list: its nodes open, /dev/fuse does not") {
  FilterInput input;
  input.defaults = default_device_rules();
  input.extra = rules_from_oci(docker_device_list());
  auto rules = plan_device_rules(input);
  const std::uint32_t rw = access_read | access_write;
  for (auto [major, minor] : {std::pair{1u, 3u}, {1u, 5u}, {1u, 9u}, {5u, 2u}, {136u, 4u}}) {
    INFO(major << ":" << minor);
    REQUIRE(allows(rules, DeviceType::character, major, minor, rw));
  }
  REQUIRE(allows(rules, DeviceType::character, 10, 200, rw));  // tun: Docker allows it
  REQUIRE_FALSE(allows(rules, DeviceType::character, 10, 229, access_read));
  REQUIRE_FALSE(allows(rules, DeviceType::character, 10, 229, rw));
  // mknod of any node stays allowed by the defaults that follow the spec's list, as by
  // runc's (c *:* m): a node made is still one the filter will not open.
  REQUIRE(allows(rules, DeviceType::character, 10, 229, access_mknod));
  REQUIRE(allows(rules, DeviceType::character, 10, 230, access_mknod));  // defaults: c *:* m
  REQUIRE_FALSE(allows(rules, DeviceType::block, 8, 0, access_read));
}

TEST_CASE("the filter's map walk decides every access as the reference reading does") {
  // Lists of up to 12 rules over a small world of devices, allows and denies mixed, and
  // every access to every device of that world, for several thousand lists.
  std::mt19937 random(20261206);
  const std::uint32_t numbers[] = {1, 2, any_number};
  const DeviceType types[] = {DeviceType::any, DeviceType::block, DeviceType::character};
  auto pick = [&](auto& from) { return from[random() % std::size(from)]; };
  for (int list = 0; list < 3000; ++list) {
    std::vector<DeviceRule> rules(random() % 13);
    for (auto& r : rules) {
      r = {pick(types), pick(numbers), pick(numbers), 1 + static_cast<std::uint32_t>(random() % 7),
           random() % 2 == 0};
    }
    const auto entries = filter_map_entries(rules);
    for (DeviceType type : {DeviceType::block, DeviceType::character}) {
      for (std::uint32_t major : {1u, 2u, 3u}) {
        for (std::uint32_t minor : {1u, 2u, 3u}) {
          for (std::uint32_t access = 1; access <= rwm; ++access) {
            INFO("list " << list << ", device " << static_cast<int>(type) << " " << major << ":"
                         << minor << ", access " << access);
            REQUIRE(filter_allows(entries, type, major, minor, access) ==
                    rules_allow(rules, type, major, minor, access));
          }
        }
      }
    }
  }
}

TEST_CASE("the reference reading: the last rule naming a bit decides it") {
  const std::vector<DeviceRule> rules{chr(1, 3, rwm), deny(chr(1, 3, access_write))};
  REQUIRE(rules_allow(rules, DeviceType::character, 1, 3, access_read));
  REQUIRE_FALSE(rules_allow(rules, DeviceType::character, 1, 3, access_read | access_write));
  const std::vector<DeviceRule> later{deny(chr(1, 3, access_write)), chr(1, 3, rwm)};
  REQUIRE(rules_allow(later, DeviceType::character, 1, 3, access_read | access_write));
  REQUIRE_FALSE(rules_allow({}, DeviceType::character, 1, 3, access_read));
  REQUIRE_FALSE(rules_allow(rules, DeviceType::character, 1, 3, 0));
}

TEST_CASE("OCI linux.resources.devices: what mrun cannot honour is refused") {
  REQUIRE_THROWS_WITH(rules_from_oci({{true, "x", 1, 3, "rw"}}), Catch::Contains("type \"x\""));
  REQUIRE_THROWS_WITH(rules_from_oci({{true, "c", 1, 3, "rq"}}), Catch::Contains("is not rwm"));
  REQUIRE_THROWS_WITH(rules_from_oci({{true, "c", -2, 3, "r"}}), Catch::Contains("out of range"));
}

TEST_CASE("the container's rules: config, nodes, OCI extras and --privileged together") {
  mrun::runtime::ContainerConfig config;
  config.device_rules = {chr(10, 200, access_read)};
  auto gpu = host_device("/dev/fakegpu0", 240, 0, "rw");
  auto rules = mrun::runtime::plan_filter_rules(config, {gpu});
  REQUIRE(allows(rules, DeviceType::character, 240, 0, access_read | access_write));
  REQUIRE(allows(rules, DeviceType::character, 10, 200, access_read));
  REQUIRE(allows(rules, DeviceType::character, 1, 3, access_read | access_write));
  config.run.privileged = true;
  REQUIRE(mrun::runtime::plan_filter_rules(config, {gpu}).size() == 1);
}

TEST_CASE("the helper is told only the nodes the default set does not cover") {
  auto args = mrun::runtime::helper_filter_devices({host_device("/dev/null", 1, 3, "rwm"),
                                                    host_device("/dev/fakegpu0", 240, 0, "rw"),
                                                    host_device("/dev/fakegpu1", 240, 1, "r")});
  REQUIRE(args == std::vector<std::string>{"/dev/fakegpu0:rw", "/dev/fakegpu1:r"});
}

TEST_CASE("rootless node access: owner, then group (when kept), then other bits") {
  using mrun::mount::caller_can_open;
  auto root_only = host_device("/dev/fakegpu0", 240, 0, "rw", 0, 0, 0600);
  REQUIRE_FALSE(caller_can_open(root_only, 1000, {1000}));
  auto mine = host_device("/dev/fakegpu0", 240, 0, "rw", 1000, 0, 0600);
  REQUIRE(caller_can_open(mine, 1000, {1000}));
  auto group = host_device("/dev/fakegpu0", 240, 0, "rw", 0, 44, 0660);
  REQUIRE_FALSE(caller_can_open(group, 1000, {1000}));  // groups dropped
  REQUIRE(caller_can_open(group, 1000, {1000, 44}));    // --keep-groups
  auto read_only_group = host_device("/dev/fakegpu0", 240, 0, "rw", 0, 44, 0640);
  REQUIRE_FALSE(caller_can_open(read_only_group, 1000, {1000, 44}));
  auto read = host_device("/dev/fakegpu0", 240, 0, "r", 0, 44, 0640);
  REQUIRE(caller_can_open(read, 1000, {1000, 44}));
  auto world = host_device("/dev/null", 1, 3, "rwm", 0, 0, 0666);
  REQUIRE(caller_can_open(world, 1000, {1000}));
  auto mknod_only = host_device("/dev/fakegpu0", 240, 0, "m", 0, 0, 0600);
  REQUIRE(caller_can_open(mknod_only, 1000, {1000}));
}

TEST_CASE("--device-filter: auto, required, off") {
  using mrun::runtime::DeviceFilterMode;
  REQUIRE(mrun::runtime::parse_device_filter_mode("auto") == DeviceFilterMode::automatic);
  REQUIRE(mrun::runtime::parse_device_filter_mode("required") == DeviceFilterMode::required);
  REQUIRE(mrun::runtime::parse_device_filter_mode("off") == DeviceFilterMode::off);
  REQUIRE_FALSE(mrun::runtime::parse_device_filter_mode("bogus"));
}

TEST_CASE("devices v1: the hierarchy from mountinfo, the caller's group, the allow lines") {
  const std::string mountinfo =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "36 31 0:33 / /sys/fs/cgroup/devices rw,nosuid - cgroup cgroup rw,devices\n"
      "40 31 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
  REQUIRE(mrun::cgroup::find_devices_v1_mount(mountinfo) == "/sys/fs/cgroup/devices");
  REQUIRE(
      mrun::cgroup::find_devices_v1_mount("40 31 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
          .empty());
  REQUIRE(mrun::cgroup::own_devices_v1_group("9:name=systemd:/\n5:devices:/user.slice\n0::/\n") ==
          "/user.slice");
  REQUIRE(mrun::cgroup::own_devices_v1_group("0::/x\n") == "/");
  using mrun::cgroup::DeviceRule;
  using mrun::cgroup::DeviceType;
  std::vector<DeviceRule> rules{
      {DeviceType::character, 1, 3, 7},
      {DeviceType::any, mrun::cgroup::any_number, mrun::cgroup::any_number, 7}};
  rules.push_back({DeviceType::character, 10, 229, 7, true});
  using Write = std::pair<std::string, std::string>;
  REQUIRE(mrun::cgroup::devices_v1_writes(rules) ==
          std::vector<Write>{{"devices.allow", "c 1:3 rwm"},
                             {"devices.allow", "a *:* rwm"},
                             {"devices.deny", "c 10:229 rwm"}});
}
