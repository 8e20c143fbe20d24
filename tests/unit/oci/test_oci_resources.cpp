// linux.resources of config.json (and of `mrun update --resources`) as cgroup::Resources
// (src/oci/resources.hpp): every field, what cgroup v2 cannot do refused by name, and
// the real config ctr writes (configs/ctr-default.json).
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "cgroup/resources.hpp"
#include "oci/resources.hpp"
#include "oci/spec.hpp"

using namespace mrun;
using nlohmann::json;

namespace {

json fixture_json(const std::string& name) {
  std::ifstream in(std::string(MRUN_OCI_FIXTURES) + "/" + name);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

cgroup::Resources parsed(const json& j) {
  return oci::parse_resources(j, "config.json").resources;
}

std::string error_of(const json& j) {
  try {
    oci::parse_resources(j, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

using Files = std::vector<std::pair<std::string, std::string>>;
Files files_of(const cgroup::Resources& r) {
  Files out;
  for (const auto& w : cgroup::plan_resource_files(r)) out.emplace_back(w.file, w.value);
  return out;
}

}  // namespace

TEST_CASE("ctr's default spec: cpu.shares 1024 and device rules, a fresh cgroup's defaults") {
  const json config = fixture_json("configs/ctr-default.json");
  auto p = oci::parse_resources(config["linux"]["resources"], "config.json");
  REQUIRE(p.resources.cpu.shares == 1024u);
  REQUIRE(p.device_rules);
  REQUIRE_FALSE(p.device_rules->empty());
  auto writes = cgroup::plan_resource_files(p.resources);
  REQUIRE(files_of(p.resources) == Files{{"cpu.weight", "100"}});
  REQUIRE(cgroup::describe_requests(writes).empty());  // runs where mrun has no cgroup
}

TEST_CASE("every linux.resources field of the runtime spec is read") {
  const json j = json::parse(R"({
    "memory": {"limit": 536870912, "reservation": 268435456, "swap": 1073741824,
               "disableOOMKiller": false, "useHierarchy": true, "checkBeforeUpdate": true},
    "cpu": {"shares": 512, "quota": 50000, "period": 100000, "burst": 10000,
            "realtimeRuntime": 0, "realtimePeriod": 0, "cpus": "0-1", "mems": "0", "idle": 0},
    "pids": {"limit": 64},
    "blockIO": {"weight": 100, "leafWeight": 0,
                "weightDevice": [{"major": 8, "minor": 0, "weight": 500}],
                "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1048576}],
                "throttleWriteBpsDevice": [{"major": 8, "minor": 0, "rate": 2097152}],
                "throttleReadIOPSDevice": [{"major": 8, "minor": 0, "rate": 100}],
                "throttleWriteIOPSDevice": [{"major": 8, "minor": 16, "rate": 200}]},
    "hugepageLimits": [{"pageSize": "2MB", "limit": 209715200}],
    "rdma": {"mlx5_1": {"hcaHandles": 3, "hcaObjects": 10000}},
    "network": {},
    "unified": {"memory.high": "400000000", "cgroup.max.descendants": "10"}
  })");
  auto r = parsed(j);
  REQUIRE(r.memory.limit == 536870912);
  REQUIRE(r.memory.reservation == 268435456);
  REQUIRE(r.memory.swap == 1073741824);
  REQUIRE(r.memory.check_before_update);
  REQUIRE(r.cpu.shares == 512u);
  REQUIRE(r.cpu.cpus == "0-1");
  REQUIRE(r.pids_limit == 64);
  REQUIRE(r.block_io.weight == 100);
  REQUIRE(r.block_io.write_iops == std::vector<cgroup::DeviceRate>{{8, 16, 200}});
  REQUIRE(r.hugepage_limits == std::vector<cgroup::HugepageLimit>{{"2MB", 209715200}});
  REQUIRE(r.rdma.at("mlx5_1").hca_objects == 10000u);
  REQUIRE(files_of(r) == Files{{"memory.max", "536870912"},
                               {"memory.swap.max", "536870912"},
                               {"memory.low", "268435456"},
                               {"pids.max", "64"},
                               {"cpu.weight", "59"},
                               {"cpu.idle", "0"},
                               {"cpu.max", "50000 100000"},
                               {"cpu.max.burst", "10000"},
                               {"cpuset.cpus", "0-1"},
                               {"cpuset.mems", "0"},
                               {"io.bfq.weight", "100"},
                               {"io.bfq.weight", "8:0 500"},
                               {"io.max", "8:0 rbps=1048576 wbps=2097152 riops=100"},
                               {"io.max", "8:16 wiops=200"},
                               {"hugetlb.2MB.max", "209715200"},
                               {"hugetlb.2MB.rsvd.max", "209715200"},
                               {"rdma.max", "mlx5_1 hca_handle=3 hca_object=10000"},
                               {"cgroup.max.descendants", "10"},
                               {"memory.high", "400000000"}});
}

TEST_CASE("realtime CPU bandwidth is read, and cgroup v2's plan refuses it naming the field") {
  auto parsed = oci::parse_resources(
      json::parse(R"({"cpu": {"realtimeRuntime": 950000, "realtimePeriod": 1000000}})"),
      "config.json");
  REQUIRE(parsed.resources.cpu.realtime_runtime == 950000);
  REQUIRE(parsed.resources.cpu.realtime_period == 1000000u);
  auto plan_error = [](const cgroup::Resources& r) -> std::string {
    try {
      cgroup::plan_resource_files(r);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  REQUIRE_THAT(
      plan_error(parsed.resources),
      Catch::Contains("linux.resources.cpu.realtimeRuntime") && Catch::Contains("no realtime"));
  parsed.resources.cpu.realtime_runtime.reset();
  REQUIRE_THAT(plan_error(parsed.resources), Catch::Contains("linux.resources.cpu.realtimePeriod"));
  // 0 is unset, as runc reads it.
  auto zero = oci::parse_resources(
      json::parse(R"({"cpu": {"realtimeRuntime": 0, "realtimePeriod": 0}})"), "config.json");
  REQUIRE_FALSE(zero.resources.cpu.realtime_runtime.has_value());
  REQUIRE_FALSE(zero.resources.cpu.realtime_period.has_value());
  REQUIRE(plan_error(zero.resources).empty());
}

TEST_CASE("what cgroup v2 cannot do is refused, naming the field") {
  auto fails = [](const char* text) { return error_of(json::parse(text)); };
  REQUIRE_THAT(fails(R"({"memory": {"useHierarchy": false}})"),
               Catch::Contains("linux.resources.memory.useHierarchy"));
  REQUIRE_THAT(fails(R"({"blockIO": {"leafWeight": 10}})"),
               Catch::Contains("linux.resources.blockIO.leafWeight"));
  REQUIRE_THAT(
      fails(R"({"blockIO": {"weightDevice": [{"major": 8, "minor": 0, "leafWeight": 5}]}})"),
      Catch::Contains("linux.resources.blockIO.weightDevice[0].leafWeight"));
  REQUIRE_THAT(fails(R"({"network": {"classID": 1048577}})"),
               Catch::Contains("linux.resources.network"));
  try {
    parsed(json::parse(R"({"memory": {"useHierarchy": false}})"));
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE(e.exit_status() == 125);
  }
  // Their "nothing asked" values are fine.
  REQUIRE(fails(R"({"memory": {"disableOOMKiller": false, "useHierarchy": true},
                   "cpu": {"realtimeRuntime": 0, "realtimePeriod": 0},
                   "network": {"priorities": []}})")
              .empty());
}

TEST_CASE("cgroup v1's swappiness and disableOOMKiller are kept for a v1 group, refused on v2") {
  auto r = parsed(json::parse(R"({"memory": {"swappiness": 10, "disableOOMKiller": true}})"));
  REQUIRE(r.memory.swappiness == 10);
  REQUIRE(r.memory.disable_oom_killer);
  try {
    cgroup::plan_resource_files(r);
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE(e.exit_status() == 125);
    REQUIRE_THAT(std::string(e.what()), Catch::Contains("linux.resources.memory.swappiness"));
  }
  REQUIRE_THAT(error_of(json::parse(R"({"memory": {"swappiness": -1}})")),
               Catch::Contains("linux.resources.memory.swappiness"));
}

TEST_CASE("kernel memory limits are accepted and ignored with a warning, as runc") {
  auto r = parsed(json::parse(R"({"memory": {"limit": 1048576, "kernel": -1, "kernelTCP": 1}})"));
  REQUIRE(r.ignored.size() == 2);
  REQUIRE_THAT(r.ignored[0], Catch::Contains("linux.resources.memory.kernel: ignored"));
  REQUIRE(files_of(r) == Files{{"memory.max", "1048576"}});
}

TEST_CASE("values of the wrong shape or range are an Error naming the field") {
  auto fails = [](const char* text) { return error_of(json::parse(text)); };
  REQUIRE_THAT(fails(R"({"memory": {"limit": -2}})"),
               Catch::Contains("linux.resources.memory.limit: must be -1"));
  REQUIRE_THAT(fails(R"({"memory": {"limit": "1g"}})"),
               Catch::Contains("linux.resources.memory.limit: wrong type"));
  REQUIRE_THAT(fails(R"({"cpu": {"shares": -1}})"),
               Catch::Contains("linux.resources.cpu.shares: must be a non-negative integer"));
  REQUIRE_THAT(fails(R"({"cpu": {"quota": 1.5}})"),
               Catch::Contains("linux.resources.cpu.quota: must be an integer"));
  REQUIRE_THAT(fails(R"({"cpu": {"cpus": "0\n1"}})"), Catch::Contains("linux.resources.cpu.cpus"));
  REQUIRE_THAT(fails(R"({"blockIO": {"weight": 5}})"),
               Catch::Contains("linux.resources.blockIO.weight: 5 is out of range"));
  REQUIRE_THAT(fails(R"({"blockIO": {"weight": 70000}})"),
               Catch::Contains("linux.resources.blockIO.weight: 70000 is out of range"));
  REQUIRE_THAT(fails(R"({"blockIO": {"throttleReadBpsDevice": [{"major": 8, "rate": 1}]}})"),
               Catch::Contains("throttleReadBpsDevice[0]: needs major, minor and rate"));
  REQUIRE_THAT(fails(R"({"hugepageLimits": [{"pageSize": "2MB/../../x", "limit": 1}]})"),
               Catch::Contains("linux.resources.hugepageLimits[0].pageSize"));
  REQUIRE_THAT(fails(R"({"rdma": {"../mlx": {"hcaHandles": 1}}})"),
               Catch::Contains("not an RDMA device name"));
  REQUIRE_THAT(fails(R"({"rdma": {"mlx5_1": {}}})"), Catch::Contains("needs hcaHandles"));
  REQUIRE_THAT(fails(R"({"unified": {"memory.max": 5}})"),
               Catch::Contains("linux.resources.unified.memory.max: wrong type"));
  REQUIRE_THAT(fails("[1]"), Catch::Contains("linux.resources: must be an object"));
  REQUIRE_THAT(fails(R"({"memory": 5})"),
               Catch::Contains("linux.resources.memory: must be an object"));
}

TEST_CASE("a unified key is a plain file of the leaf, never a path or mrun's own files") {
  for (const char* key : {"../memory.max", "a/b.max", "/etc/passwd", "..", ".", "", "nodot",
                          "memory.max\n", ".hidden"}) {
    INFO(key);
    REQUIRE_FALSE(oci::unified_key_problem(key).empty());
    REQUIRE_THAT(error_of(json{{"unified", {{key, "1"}}}}),
                 Catch::Contains("linux.resources.unified."));
  }
  for (const char* key : {"cgroup.procs", "cgroup.kill", "cgroup.freeze", "cgroup.threads"}) {
    INFO(key);
    REQUIRE_THAT(oci::unified_key_problem(key), Catch::Contains("not a resource"));
  }
  for (const char* key : {"memory.high", "io.max", "cgroup.max.depth", "hugetlb.1GB.max"}) {
    INFO(key);
    REQUIRE(oci::unified_key_problem(key).empty());
  }
}

TEST_CASE("properties the spec does not define are ignored and listed") {
  auto p = oci::parse_resources(json::parse(R"({"memory": {"limit": 1, "future": 1},
                                              "newController": {}})"),
                                "config.json");
  REQUIRE(p.unknown == std::vector<std::string>{"linux.resources.memory.future",
                                                "linux.resources.newController"});
}
