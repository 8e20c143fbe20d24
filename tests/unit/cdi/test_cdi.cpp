// CDI specs (src/cdi/): parsing, the spec `mrun cdi generate` writes, name resolution,
// and the edits applied to a container's configuration. /dev/null stands for a device
// node that exists on every host.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <string>

#include "base/error.hpp"
#include "cdi/cdi_registry.hpp"
#include "cdi/cdi_spec.hpp"
#include "cdi/fakegpu_cdi.hpp"

using namespace mrun::cdi;
using nlohmann::json;

namespace {

const char* example = R"({
  "cdiVersion": "0.5.0",
  "kind": "test.example/x",
  "devices": [
    {"name": "a", "containerEdits": {"deviceNodes": [{"path": "/dev/null", "type": "c",
                                                      "major": 1, "minor": 3}]}},
    {"name": "b", "containerEdits": {"env": ["B=1"]}}
  ],
  "containerEdits": {
    "env": ["COMMON=yes"],
    "mounts": [{"hostPath": "/etc/hostname", "containerPath": "/etc/x",
                "options": ["ro", "bind"]}]
  }
})";

// The message of the Error `fn` throws (exit 125), or "" when it does not throw.
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 125);
    return e.what();
  }
  return "";
}

mrun::mount::HostDevice node(const std::string& path, unsigned maj, unsigned min) {
  mrun::mount::HostDevice d;
  d.spec = {path, path, "rwm"};
  d.major = maj;
  d.minor = min;
  return d;
}

}  // namespace

TEST_CASE("cdi: a spec parses into its devices and common edits, and round-trips") {
  Spec spec = parse_spec(example, "/etc/cdi/x.json");
  REQUIRE(spec.kind == "test.example/x");
  REQUIRE(spec.devices.size() == 2);
  REQUIRE(spec.devices[0].edits.device_nodes[0].path == "/dev/null");
  REQUIRE(*spec.devices[0].edits.device_nodes[0].major == 1);
  REQUIRE(spec.edits.mounts[0].options == std::vector<std::string>{"ro", "bind"});
  REQUIRE(to_json(parse_spec(to_json(spec).dump(), "")) == to_json(spec));
  REQUIRE(to_json(spec) == json::parse(example));
}

TEST_CASE("cdi: a malformed spec is refused naming the file and the field") {
  auto with = [](const std::string& key, const json& value) {
    json doc = json::parse(example);
    doc[key] = value;
    return doc.dump();
  };
  auto err = [](const std::string& text) {
    return error_of([&] { parse_spec(text, "/etc/cdi/bad.json"); });
  };
  REQUIRE_THAT(err("{"), Catch::Contains("/etc/cdi/bad.json") && Catch::Contains("JSON"));
  REQUIRE_THAT(err(with("cdiVersion", "9.9.9")), Catch::Contains("cdiVersion"));
  REQUIRE_THAT(err(with("kind", "nokind")), Catch::Contains("kind"));
  REQUIRE_THAT(err(with("devices", json::array())), Catch::Contains("devices"));
  json dup = json::parse(example);
  dup["devices"][1]["name"] = "a";
  REQUIRE_THAT(err(dup.dump()), Catch::Contains("devices[1].name"));
  json bad_type = json::parse(example);
  bad_type["devices"][0]["containerEdits"]["deviceNodes"][0]["type"] = "z";
  REQUIRE_THAT(err(bad_type.dump()),
               Catch::Contains("devices[0].containerEdits.deviceNodes[0].type"));
  json bad_major = json::parse(example);
  bad_major["devices"][0]["containerEdits"]["deviceNodes"][0]["major"] = "one";
  REQUIRE_THAT(err(bad_major.dump()), Catch::Contains("deviceNodes[0].major"));
  json relative = json::parse(example);
  relative["containerEdits"]["mounts"][0]["containerPath"] = "etc/x";
  REQUIRE_THAT(err(relative.dump()), Catch::Contains("containerEdits.mounts[0].containerPath"));
  json bad_env = json::parse(example);
  bad_env["containerEdits"]["env"][0] = "NOVALUE";
  REQUIRE_THAT(err(bad_env.dump()), Catch::Contains("containerEdits.env[0]"));
  // Numbers that do not fit are refused, not cast (tests/fuzz/regressions/cdi): uid
  // 2^32 would have been 0, major 2^64-1 would have been -1; 1e999 is not a double.
  json big_uid = json::parse(example);
  big_uid["devices"][0]["containerEdits"]["deviceNodes"][0]["uid"] = 4294967296ULL;
  REQUIRE_THAT(err(big_uid.dump()),
               Catch::Contains("deviceNodes[0].uid: 4294967296 is out of range"));
  json big_major = json::parse(example);
  big_major["devices"][0]["containerEdits"]["deviceNodes"][0]["major"] = ~0ULL;
  REQUIRE_THAT(err(big_major.dump()), Catch::Contains("deviceNodes[0].major"));
  REQUIRE_THAT(err(R"({"cdiVersion": 1e999})"), Catch::Contains("not valid JSON"));
}

TEST_CASE("cdi: qualified names; host paths are not CDI names") {
  REQUIRE(!parse_qualified_name("/dev/null"));
  REQUIRE(!parse_qualified_name("/dev/null:/dev/x:rw"));
  auto name = parse_qualified_name("fakegpu.example/gpu=0");
  REQUIRE(name);
  REQUIRE(name->kind == "fakegpu.example/gpu");
  REQUIRE(name->name == "0");
  for (const char* bad : {"gpu=0", "fakegpu.example/=0", "fakegpu.example/gpu=", "/x/y=z/",
                          "fakegpu.example/gpu=a b", "-v/x=y"}) {
    INFO(bad);
    if (bad[0] == '/') continue;
    REQUIRE(!error_of([&] { parse_qualified_name(bad); }).empty());
  }
}

TEST_CASE("cdi: resolution applies a spec's common edits once, then each device's") {
  std::vector<Spec> specs{parse_spec(example, "/etc/cdi/x.json")};
  auto edits =
      resolve(specs, {{"test.example/x", "a"}, {"test.example/x", "b"}, {"test.example/x", "a"}});
  REQUIRE(edits.env == std::vector<std::string>{"COMMON=yes", "B=1"});
  REQUIRE(edits.mounts.size() == 1);
  REQUIRE(edits.device_nodes.size() == 1);
}

TEST_CASE("cdi: an unknown kind or device is refused listing the known ones") {
  std::vector<Spec> specs{parse_spec(example, "/etc/cdi/x.json")};
  REQUIRE_THAT(error_of([&] {
                 resolve(specs, {{"other.example/y", "0"}});
               }),
               Catch::Contains("known kinds: test.example/x"));
  REQUIRE_THAT(error_of([&] {
                 resolve(specs, {{"test.example/x", "c"}});
               }),
               Catch::Contains("its devices: a, b"));
  REQUIRE_THAT(error_of([&] {
                 resolve({}, {{"test.example/x", "a"}});
               }),
               Catch::Contains("no CDI spec found"));
}

TEST_CASE("cdi: a later spec of the same kind wins; devices may span files") {
  json later = json::parse(example);
  later["devices"] = json::array({{{"name", "a"}, {"containerEdits", {{"env", {"LATER=1"}}}}},
                                  {{"name", "c"}, {"containerEdits", {{"env", {"C=1"}}}}}});
  later.erase("containerEdits");
  std::vector<Spec> specs{parse_spec(example, "/etc/cdi/x.json"),
                          parse_spec(later.dump(), "/var/run/cdi/x.json")};
  REQUIRE(resolve(specs, {{"test.example/x", "a"}}).env == std::vector<std::string>{"LATER=1"});
  REQUIRE(resolve(specs, {{"test.example/x", "b"}}).env ==
          std::vector<std::string>{"COMMON=yes", "B=1"});
  REQUIRE(resolve(specs, {{"test.example/x", "c"}}).env == std::vector<std::string>{"C=1"});
}

TEST_CASE("cdi: hooks and non-bind mounts are refused, since mrun cannot apply them") {
  json hooks = json::parse(example);
  hooks["devices"][0]["containerEdits"]["hooks"] =
      json::array({{{"hookName", "createContainer"}, {"path", "/bin/true"}}});
  std::vector<Spec> specs{parse_spec(hooks.dump(), "/etc/cdi/x.json")};
  REQUIRE_THAT(error_of([&] {
                 resolve(specs, {{"test.example/x", "a"}});
               }),
               Catch::Contains("hooks"));
  json tmpfs = json::parse(example);
  tmpfs["containerEdits"]["mounts"][0]["type"] = "tmpfs";
  tmpfs["containerEdits"]["mounts"][0]["options"] = json::array({"ro"});
  specs = {parse_spec(tmpfs.dump(), "/etc/cdi/x.json")};
  REQUIRE_THAT(error_of([&] {
                 resolve(specs, {{"test.example/x", "b"}});
               }),
               Catch::Contains("only bind mounts"));
}

TEST_CASE("cdi generate: devices 0..N and all; fakegpuctl, driver and env in common") {
  mrun::mount::GpuUserspace userspace;
  userspace.libraries = {"/usr/lib/libfakegpu.so.1.0.0"};
  userspace.library_names = {"libfakegpu.so.1"};
  userspace.programs = {"/usr/bin/fakegpu-client"};
  Spec spec = fakegpu_spec({node("/dev/fakegpu1", 240, 1), node("/dev/fakegpu0", 240, 0),
                            node("/dev/fakegpuctl", 240, 255)},
                           userspace);
  REQUIRE(spec.version == "0.5.0");
  REQUIRE(spec.kind == "fakegpu.example/gpu");
  REQUIRE(spec.devices.size() == 3);
  REQUIRE(spec.devices[0].name == "0");
  REQUIRE(spec.devices[0].edits.device_nodes[0].path == "/dev/fakegpu0");
  REQUIRE(*spec.devices[0].edits.device_nodes[0].minor == 0);
  REQUIRE(*spec.devices[1].edits.device_nodes[0].type == "c");
  REQUIRE(spec.devices[2].name == "all");
  REQUIRE(spec.devices[2].edits.device_nodes.size() == 2);
  REQUIRE(spec.edits.device_nodes.size() == 1);
  REQUIRE(spec.edits.device_nodes[0].path == "/dev/fakegpuctl");
  REQUIRE(*spec.edits.device_nodes[0].major == 240);
  REQUIRE(spec.edits.mounts.size() == 2);
  REQUIRE(spec.edits.mounts[0].host_path == "/usr/lib/libfakegpu.so.1.0.0");
  REQUIRE(spec.edits.mounts[0].container_path == "/opt/fakegpu/lib/libfakegpu.so.1");
  REQUIRE(spec.edits.mounts[1].container_path == "/opt/fakegpu/bin/fakegpu-client");
  REQUIRE(spec.edits.mounts[1].options[0] == "ro");
  REQUIRE(spec.edits.env ==
          std::vector<std::string>{
              "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/fakegpu/bin",
              "LD_LIBRARY_PATH=/opt/fakegpu/lib"});
  // What it writes is what it (and podman's CDI library) reads.
  REQUIRE(to_json(parse_spec(to_json(spec).dump(), "")) == to_json(spec));
}

TEST_CASE("cdi generate: without the driver's nodes it fails naming the fix") {
  REQUIRE_THAT(error_of([] { fakegpu_spec({}, {}); }), Catch::Contains("modprobe fakegpu"));
  REQUIRE_THAT(error_of([] { fakegpu_spec({node("/dev/fakegpu0", 240, 0)}, {}); }),
               Catch::Contains("fakegpuctl"));
}

TEST_CASE("cdi: edits become --device, -v and -e entries; stale numbers are refused") {
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  ContainerEdits edits;
  DeviceNode null_node;
  null_node.path = "/dev/cdi-null";
  null_node.host_path = "/dev/null";
  null_node.major = ::major(st.st_rdev);
  null_node.minor = ::minor(st.st_rdev);
  null_node.permissions = "rw";
  edits.device_nodes = {null_node};
  edits.mounts = {{"/etc/hostname", "/etc/x", "bind", {"ro", "bind"}}};
  edits.env = {"PATH=/cdi", "NEW=1"};
  mrun::oci::RunRequest config;
  config.env = {"PATH=/bin", "HOME=/root"};
  apply_edits(edits, config);
  REQUIRE(config.additions.devices ==
          std::vector<mrun::mount::DeviceSpec>{{"/dev/null", "/dev/cdi-null", "rw"}});
  REQUIRE(config.volumes.size() == 1);
  REQUIRE(config.volumes[0].read_only);
  REQUIRE(config.env == std::vector<std::string>{"HOME=/root", "PATH=/cdi", "NEW=1"});

  ContainerEdits stale;
  null_node.minor = *null_node.minor + 1;
  stale.device_nodes = {null_node};
  REQUIRE_THAT(error_of([&] { apply_edits(stale, config); }), Catch::Contains("regenerate"));
  ContainerEdits missing;
  missing.mounts = {{"/nonexistent/lib.so", "/x", "bind", {"ro"}}};
  REQUIRE_THAT(error_of([&] { apply_edits(missing, config); }), Catch::Contains("/nonexistent"));
}
