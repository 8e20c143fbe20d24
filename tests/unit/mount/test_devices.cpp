// Device injection (mount/devices.hpp) and the gpu helper's policy (src/gpupolicy/): the
// pure parts, without privilege.
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "base/error.hpp"
#include "gpupolicy/gpu_policy.h"
#include "mount/config_mounts.hpp"
#include "mount/devices.hpp"
#include "mount/mount_plan.hpp"
#include "oci/run_config.hpp"

using namespace mrun::mount;

TEST_CASE("--device: HOSTPATH, HOSTPATH:CTRPATH, HOSTPATH:rwm, HOSTPATH:CTRPATH:rwm") {
  REQUIRE(parse_device("/dev/null") == DeviceSpec{"/dev/null", "/dev/null", "rwm"});
  REQUIRE(parse_device("/dev/null:/dev/mynull") == DeviceSpec{"/dev/null", "/dev/mynull", "rwm"});
  REQUIRE(parse_device("/dev/null:rw") == DeviceSpec{"/dev/null", "/dev/null", "rw"});
  REQUIRE(parse_device("/dev/fakegpu0:/dev/gpu:r") == DeviceSpec{"/dev/fakegpu0", "/dev/gpu", "r"});
}

TEST_CASE("--device: malformed specs are refused with exit 125") {
  for (const char* bad : {"", "dev/null", "/dev/null:dev/x", "/dev/null:/dev/x:rx",
                          "/dev/null:/dev/x:rr", "/dev/null:/dev/x:rw:extra", "/dev/../etc/passwd",
                          "/dev/null:/dev/../../x", "/dev/null:/", "/dev//null", "/dev/null:"}) {
    INFO(bad);
    try {
      parse_device(bad);
      FAIL("accepted");
    } catch (const mrun::Error& e) {
      REQUIRE(e.exit_status() == 125);
    }
  }
}

namespace {
HostDevice node(const std::string& path, unsigned maj, unsigned min) {
  HostDevice d;
  d.spec = {path, path, "rwm"};
  d.major = maj;
  d.minor = min;
  d.mode = 0660;
  d.uid = 0;
  d.gid = 44;
  return d;
}
}  // namespace

TEST_CASE("device plan: rootless binds the host node onto a file, rootful makes a node") {
  std::vector<HostDevice> devices{node("/dev/fakegpu0", 240, 0)};
  devices[0].spec.container_path = "/dev/gpu0";
  auto rootless = plan_device_mounts(devices, false);
  REQUIRE(rootless.size() == 1);
  REQUIRE(rootless[0].kind == StepKind::bind);
  REQUIRE(rootless[0].source == "/dev/fakegpu0");
  REQUIRE(rootless[0].target == "/dev/gpu0");
  REQUIRE(rootless[0].target_is_file);
  REQUIRE_FALSE(rootless[0].recursive);

  auto rootful = plan_device_mounts(devices, true);
  REQUIRE(rootful[0].kind == StepKind::device_node);
  REQUIRE(rootful[0].target == "/dev/gpu0");
  REQUIRE(rootful[0].device == makedev(240, 0));
  REQUIRE(rootful[0].mode == 0660);
  REQUIRE(rootful[0].gid == 44);
}

TEST_CASE("device plan: devices follow the /dev tmpfs and its default nodes, before masks") {
  ConfigMountInput input;
  for (const auto& m : mrun::oci::run_default_mounts()) {
    input.mounts.push_back({m.destination, *m.type, *m.source, m.options});
  }
  input.mounts.push_back({"/opt", "bind", "/srv", {"rbind"}});
  input.masked_paths = default_masked_paths();
  input.devices = plan_device_mounts({node("/dev/fakegpu0", 240, 0)}, false);
  input.injected =
      plan_gpu_userspace({{"/b/libfakegpu.so.1.0.0"}, {"libfakegpu.so.1"}, {"/b/fakegpu-client"}});
  auto plan = plan_config_mounts(input);
  auto at = [&](const std::string& target) {
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (plan[i].target == target) return static_cast<long>(i);
    }
    FAIL("no step for " << target);
    return -1L;
  };
  REQUIRE(at("/dev") < at("/dev/fakegpu0"));
  REQUIRE(at("/dev/null") < at("/dev/fakegpu0"));
  REQUIRE(at("/dev/fakegpu0") < at("/proc/kcore"));
  // The injected driver comes after the volumes: a volume on /opt cannot hide it.
  REQUIRE(at("/opt") < at("/opt/fakegpu/lib/libfakegpu.so.1"));
}

TEST_CASE("linux.devices: made rootful (FIFOs always), bound rootless from a matching node") {
  std::vector<ConfigDevice> devices{{"/dev/loop0", 'b', 7, 0, 0660, 0, 6},
                                    {"/dev/net/tun", 'c', 10, 200, 0666, 0, 0},
                                    {"/run/fifo", 'p', 0, 0, 0600, 1, 1}};
  auto host = [](const std::string& path) -> std::optional<HostNode> {
    if (path == "/dev/loop0") return HostNode{S_IFBLK, makedev(7, 0)};
    if (path == "/dev/net/tun") return HostNode{S_IFCHR, makedev(10, 200)};
    return std::nullopt;
  };
  auto rootful = plan_config_devices(devices, true, host);
  REQUIRE(rootful.size() == 3);
  REQUIRE(rootful[0].kind == StepKind::device_node);
  REQUIRE(rootful[0].node_type == S_IFBLK);
  REQUIRE(rootful[0].device == makedev(7, 0));
  REQUIRE(rootful[0].mode == 0660);
  REQUIRE(rootful[0].gid == 6);
  REQUIRE(rootful[1].node_type == S_IFCHR);
  REQUIRE(rootful[2].node_type == S_IFIFO);

  auto rootless = plan_config_devices(devices, false, host);
  REQUIRE(rootless[0].kind == StepKind::bind);
  REQUIRE(rootless[0].source == "/dev/loop0");
  REQUIRE(rootless[0].read_only);
  REQUIRE(rootless[1].kind == StepKind::bind);
  REQUIRE(rootless[2].kind == StepKind::device_node);  // mkfifo needs no privilege
  REQUIRE(rootless[2].node_type == S_IFIFO);

  std::vector<ConfigDevice> absent{{"/dev/mrun-absent", 'c', 1, 3, 0666, 0, 0}};
  REQUIRE_THROWS_WITH(plan_config_devices(absent, false, host),
                      Catch::Contains("no node at /dev/mrun-absent"));
  REQUIRE_NOTHROW(plan_config_devices(absent, true, host));
  std::vector<ConfigDevice> other{{"/dev/net/tun", 'c', 10, 201, 0666, 0, 0}};
  REQUIRE_THROWS_WITH(plan_config_devices(other, false, host), Catch::Contains("another node"));
}

TEST_CASE("--gpu: all or a list of numbers") {
  REQUIRE(parse_gpu("all") == GpuRequest{true, {}});
  REQUIRE(parse_gpu("0,2") == GpuRequest{false, {0, 2}});
  for (const char* bad : {"", "x", "0,", "-1", "1,a", "256"}) {
    INFO(bad);
    REQUIRE_THROWS_AS(parse_gpu(bad), mrun::Error);
  }
}

TEST_CASE("--gpu: the requested nodes plus fakegpuctl; missing ones are errors") {
  std::vector<std::string> present{"fakegpuctl", "fakegpu1", "fakegpu0", "fakegpu10"};
  auto all = gpu_device_specs({true, {}}, present);
  REQUIRE(all.size() == 4);
  REQUIRE(all[0].host_path == "/dev/fakegpu0");
  REQUIRE(all[1].host_path == "/dev/fakegpu1");
  REQUIRE(all[2].host_path == "/dev/fakegpu10");
  REQUIRE(all[3].host_path == "/dev/fakegpuctl");
  auto one = gpu_device_specs({false, {1}}, present);
  REQUIRE(one.size() == 2);
  REQUIRE(one[0].container_path == "/dev/fakegpu1");
  REQUIRE_THROWS_WITH(gpu_device_specs({false, {2}}, present), Catch::Contains("fakegpu2"));
  REQUIRE_THROWS_WITH(gpu_device_specs({true, {}}, {}), Catch::Contains("modprobe fakegpu"));
  REQUIRE_THROWS_WITH(gpu_device_specs({true, {}}, {"fakegpu0"}), Catch::Contains("fakegpuctl"));
}

TEST_CASE("--gpu: the user-space driver is bound read-only under /opt/fakegpu") {
  GpuUserspace u{{"/b/libfakegpu.so.1.0.0", "/b/libfakegpu.so.1.0.0"},
                 {"libfakegpu.so", "libfakegpu.so.1"},
                 {"/b/fakegpu-client", "/b/fakegpu-client-static"}};
  auto steps = plan_gpu_userspace(u);
  REQUIRE(steps.size() == 4);
  REQUIRE(steps[1].target == "/opt/fakegpu/lib/libfakegpu.so.1");
  REQUIRE(steps[1].source == "/b/libfakegpu.so.1.0.0");
  REQUIRE(steps[3].target == "/opt/fakegpu/bin/fakegpu-client-static");
  for (const auto& s : steps) {
    REQUIRE(s.kind == StepKind::bind);
    REQUIRE(s.read_only);
    REQUIRE(s.target_is_file);
  }
  std::vector<std::string> env{"PATH=/bin", "HOME=/"};
  add_gpu_environment(env);
  REQUIRE(env[0] == "PATH=/bin:/opt/fakegpu/bin");
  REQUIRE(env[2] == "LD_LIBRARY_PATH=/opt/fakegpu/lib");
  std::vector<std::string> env2{"LD_LIBRARY_PATH=/x"};
  add_gpu_environment(env2);
  REQUIRE(env2[0] == "LD_LIBRARY_PATH=/opt/fakegpu/lib:/x");
}

namespace {
int fake_group(const char* name, gid_t* gid) {
  if (std::strcmp(name, "fakegpu") == 0) {
    *gid = 990;
    return 0;
  }
  return -1;
}
struct Parsed {
  policy p{};
  int line = 0;
  char err[128] = {};
  explicit Parsed(const std::string& text) {
    line = policy_parse(text.data(), text.size(), &p, err, sizeof err);
  }
};
}  // namespace

TEST_CASE("helper policy: rules, comments, blank lines") {
  Parsed ok(
      "# comment\n\n/dev/fakegpu[0-9]*  group:fakegpu  # trailing\n"
      "/dev/fakegpuctl\tuser:alice uid:1001 gid:5\n");
  REQUIRE(ok.line == 0);
  REQUIRE(ok.p.count == 2);
  REQUIRE(std::string(ok.p.rules[0].pattern) == "/dev/fakegpu[0-9]*");
  REQUIRE(ok.p.rules[1].nwho == 3);
  REQUIRE(ok.p.rules[1].who[1].kind == POLICY_UID);
  REQUIRE(ok.p.rules[1].who[1].id == 1001);
}

TEST_CASE("helper policy: malformed lines are refused with their line number") {
  struct Case {
    const char* text;
    int line;
  };
  for (auto c : {Case{"/dev/x\n", 1}, Case{"# ok\nfakegpu0 user:a\n", 2},
                 Case{"/dev/x person:a\n", 1}, Case{"/dev/x uid:abc\n", 1},
                 Case{"/dev/x user:\n", 1}, Case{"/dev/../etc/shadow user:a\n", 1},
                 Case{"/etc/shadow user:a\n", 1}, Case{"/dev/x uid:-1\n", 1}}) {
    INFO(c.text);
    Parsed bad(c.text);
    REQUIRE(bad.line == c.line);
    REQUIRE(std::strlen(bad.err) > 0);
  }
  std::string nul("/dev/x user:a\0b\n", 16);
  REQUIRE(Parsed(nul).line == 1);
  std::string many;
  for (int i = 0; i < POLICY_MAX_RULES + 1; ++i) many += "/dev/x uid:1\n";
  REQUIRE(Parsed(many).line == POLICY_MAX_RULES + 1);
}

TEST_CASE("helper policy: max_filters_per_user, default 8, one number, at most once") {
  Parsed unset("/dev/x uid:1\n");
  REQUIRE(unset.line == 0);
  REQUIRE(unset.p.max_filters_per_user == POLICY_DEFAULT_MAX_FILTERS);
  REQUIRE(POLICY_DEFAULT_MAX_FILTERS == 8);
  Parsed set("max_filters_per_user 2  # fewer\n/dev/x uid:1\n");
  REQUIRE(set.line == 0);
  REQUIRE(set.p.max_filters_per_user == 2);
  REQUIRE(set.p.count == 1);
  REQUIRE(Parsed("max_filters_per_user 0\n").p.max_filters_per_user == 0);
  REQUIRE(Parsed("max_filters_per_user 4096\n").p.max_filters_per_user == 4096);
  struct Case {
    const char* text;
    int line;
  };
  for (auto c : {Case{"max_filters_per_user\n", 1}, Case{"max_filters_per_user -1\n", 1},
                 Case{"max_filters_per_user 4097\n", 1}, Case{"max_filters_per_user x\n", 1},
                 Case{"max_filters_per_user 2 3\n", 1},
                 Case{"/dev/x uid:1\nmax_filters_per_user 2\nmax_filters_per_user 3\n", 3},
                 Case{"max_filters 2\n", 1}}) {
    INFO(c.text);
    Parsed bad(c.text);
    REQUIRE(bad.line == c.line);
    REQUIRE(std::strlen(bad.err) > 0);
  }
}

TEST_CASE("helper policy: matching by user, uid, group (real or supplementary) and gid") {
  Parsed parsed(
      "/dev/fakegpu[0-9]* group:fakegpu\n/dev/fakegpuctl user:alice\n/dev/null0 uid:1001\n"
      "/dev/zero gid:7\n");
  REQUIRE(parsed.line == 0);
  gid_t member[] = {1000, 990};
  gid_t outsider[] = {1000, 7};
  policy_caller alice{1000, "alice", member, 2, fake_group};
  policy_caller bob{1001, "bob", outsider, 2, fake_group};
  REQUIRE(policy_allows(&parsed.p, "/dev/fakegpu0", &alice));
  REQUIRE(policy_allows(&parsed.p, "/dev/fakegpu12", &alice));
  REQUIRE(policy_allows(&parsed.p, "/dev/fakegpuctl", &alice));
  REQUIRE_FALSE(policy_allows(&parsed.p, "/dev/null0", &alice));
  REQUIRE_FALSE(policy_allows(&parsed.p, "/dev/fakegpu0", &bob));
  REQUIRE_FALSE(policy_allows(&parsed.p, "/dev/fakegpuctl", &bob));
  REQUIRE(policy_allows(&parsed.p, "/dev/null0", &bob));
  REQUIRE(policy_allows(&parsed.p, "/dev/zero", &bob));
  // '*' does not cross '/': a pattern never reaches into a subdirectory.
  REQUIRE_FALSE(policy_allows(&parsed.p, "/dev/fakegpu0/../sda", &alice));
  policy_caller nameless{4242, nullptr, member, 1, fake_group};
  REQUIRE_FALSE(policy_allows(&parsed.p, "/dev/fakegpuctl", &nameless));
}
