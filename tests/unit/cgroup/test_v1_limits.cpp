// linux.resources -> cgroup v1 files (src/cgroup/v1_limits.hpp), each as runc's
// libcontainer/cgroups/fs writes it, the v1 hierarchies of a mountinfo text, and where
// plan_cgroup puts a rootful container's v1 group.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/resources.hpp"
#include "cgroup/v1_limits.hpp"
#include "sys/fs.hpp"
#include "temp_dir.hpp"

using namespace mrun::cgroup;

namespace {

using Files = std::vector<std::pair<std::string, std::string>>;

Files v1_files_of(const Resources& r, const V1Now& now = {}) {
  Files out;
  for (const auto& w : plan_v1_files(r, now)) out.emplace_back(w.file, w.value);
  return out;
}

std::string v1_error_of(const Resources& r) {
  try {
    plan_v1_files(r);
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 125);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("v1: every mounted hierarchy, named ones too, once each") {
  const std::string mountinfo =
      "25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
      "26 25 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n"
      "27 25 0:24 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
      "30 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "31 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "32 25 0:28 / /mnt/memory rw - cgroup cgroup rw,memory\n"
      "33 25 0:29 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset,clone_children\n";
  REQUIRE(v1_hierarchies_from(mountinfo) ==
          std::vector<V1Hierarchy>{{"/sys/fs/cgroup/systemd", {"name=systemd"}},
                                   {"/sys/fs/cgroup/cpu,cpuacct", {"cpu", "cpuacct"}},
                                   {"/sys/fs/cgroup/memory", {"memory"}},
                                   {"/sys/fs/cgroup/cpuset", {"cpuset"}}});
  REQUIRE(v1_hierarchies_from("26 25 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n").empty());
}

TEST_CASE("v1: realtime bandwidth, the period before the runtime, as runc writes them") {
  Resources r;
  r.cpu.realtime_runtime = 950000;
  r.cpu.realtime_period = 1000000;
  REQUIRE(v1_files_of(r) ==
          Files{{"cpu.rt_period_us", "1000000"}, {"cpu.rt_runtime_us", "950000"}});
  Resources runtime_only;
  runtime_only.cpu.realtime_runtime = 10000;
  REQUIRE(v1_files_of(runtime_only) == Files{{"cpu.rt_runtime_us", "10000"}});
}

TEST_CASE("v1: memory limit, reservation, swappiness, OOM killer as runc writes them") {
  Resources r;
  r.memory.limit = 64 << 20;
  r.memory.reservation = 32 << 20;
  r.memory.swappiness = 0;
  r.memory.disable_oom_killer = true;
  REQUIRE(v1_files_of(r) == Files{{"memory.limit_in_bytes", "67108864"},
                                  {"memory.soft_limit_in_bytes", "33554432"},
                                  {"memory.swappiness", "0"},
                                  {"memory.oom_control", "1"}});
  // -1 is unlimited on v1 as in the spec: written as it is, with memory+swap too.
  Resources u;
  u.memory.limit = -1;
  REQUIRE(v1_files_of(u) ==
          Files{{"memory.memsw.limit_in_bytes", "-1"}, {"memory.limit_in_bytes", "-1"}});
}

TEST_CASE("v1: the spec's swap is memory+swap, ordered so raising and lowering both work") {
  Resources r;
  r.memory.limit = 100 << 20;
  r.memory.swap = 200 << 20;
  // A fresh group (no limit yet) and a lower one: the limit first.
  REQUIRE(v1_files_of(r) == Files{{"memory.limit_in_bytes", "104857600"},
                                  {"memory.memsw.limit_in_bytes", "209715200"}});
  REQUIRE(v1_files_of(r, {300 << 20}) == Files{{"memory.limit_in_bytes", "104857600"},
                                               {"memory.memsw.limit_in_bytes", "209715200"}});
  // Today's limit below the new total: memory+swap first.
  REQUIRE(v1_files_of(r, {50 << 20}) == Files{{"memory.memsw.limit_in_bytes", "209715200"},
                                              {"memory.limit_in_bytes", "104857600"}});
  // Unlimited swap goes first too.
  r.memory.swap = -1;
  REQUIRE(v1_files_of(r).front() ==
          std::pair<std::string, std::string>{"memory.memsw.limit_in_bytes", "-1"});
  // Written only where the kernel accounts swap.
  for (const auto& w : plan_v1_files(r)) {
    REQUIRE(w.skip_if_absent == (w.file == "memory.memsw.limit_in_bytes"));
  }
}

TEST_CASE("v1: bad memory values name the field") {
  Resources below;
  below.memory.limit = 100 << 20;
  below.memory.swap = 50 << 20;
  REQUIRE_THAT(v1_error_of(below), Catch::Contains("linux.resources.memory.swap") &&
                                       Catch::Contains("below linux.resources.memory.limit"));
  Resources alone;
  alone.memory.swap = 50 << 20;
  REQUIRE_THAT(v1_error_of(alone), Catch::Contains("needs linux.resources.memory.limit"));
  Resources swappy;
  swappy.memory.swappiness = 101;
  REQUIRE_THAT(v1_error_of(swappy), Catch::Contains("linux.resources.memory.swappiness"));
  Resources flags;
  flags.named_by_flags = true;
  flags.memory.limit = -5;
  REQUIRE_THAT(v1_error_of(flags), Catch::Contains("--memory"));
}

TEST_CASE("v1: pids, cpu shares, CFS bandwidth and cpuset") {
  Resources r;
  r.pids_limit = 20;
  r.cpu.shares = 512;
  r.cpu.quota = 50000;
  r.cpu.period = 100000;
  r.cpu.cpus.emplace("0");
  r.cpu.mems.emplace("0");
  REQUIRE(v1_files_of(r) == Files{{"pids.max", "20"},
                                  {"cpu.shares", "512"},
                                  {"cpu.cfs_period_us", "100000"},
                                  {"cpu.cfs_quota_us", "50000"},
                                  {"cpuset.cpus", "0"},
                                  {"cpuset.mems", "0"}});
  // Docker's unset values (0) write nothing; -1 is "no limit".
  Resources unset;
  unset.cpu.shares = 0;
  unset.cpu.quota = 0;
  unset.pids_limit = 0;
  REQUIRE(v1_files_of(unset).empty());
  Resources none;
  none.pids_limit = -1;
  none.cpu.quota = -1;
  REQUIRE(v1_files_of(none) == Files{{"pids.max", "max"}, {"cpu.cfs_quota_us", "-1"}});
  Resources tiny;
  tiny.cpu.shares = 1;
  REQUIRE_THAT(v1_error_of(tiny), Catch::Contains("linux.resources.cpu.shares"));
}

TEST_CASE("v1: blkio weight and throttles, hugetlb; unified is refused") {
  Resources r;
  r.block_io.weight = 500;
  r.block_io.weight_device = {{8, 0, 300}};
  r.block_io.read_bps = {{8, 0, 1048576}};
  r.block_io.write_iops = {{8, 16, 200}};
  r.hugepage_limits = {{"2MB", 209715200}};
  REQUIRE(v1_files_of(r) == Files{{"blkio.weight", "500"},
                                  {"blkio.weight_device", "8:0 300"},
                                  {"blkio.throttle.read_bps_device", "8:0 1048576"},
                                  {"blkio.throttle.write_iops_device", "8:16 200"},
                                  {"hugetlb.2MB.limit_in_bytes", "209715200"},
                                  {"hugetlb.2MB.rsvd.limit_in_bytes", "209715200"}});
  REQUIRE(plan_v1_files(r)[0].fallback_file == "blkio.bfq.weight");
  Resources u;
  u.unified["memory.high"] = "1";
  REQUIRE_THAT(v1_error_of(u), Catch::Contains("linux.resources.unified.memory.high"));
}

TEST_CASE("v1: cgroup v2 refuses what only v1 has") {
  Resources r;
  r.memory.swappiness = 10;
  REQUIRE_THROWS_WITH(plan_resource_files(r), Catch::Contains("linux.resources.memory.swappiness"));
  Resources o;
  o.memory.disable_oom_killer = true;
  REQUIRE_THROWS_WITH(plan_resource_files(o),
                      Catch::Contains("linux.resources.memory.disableOOMKiller") &&
                          Catch::Contains("cannot disable the OOM killer"));
}

TEST_CASE("v1: today's values read for update as complete_update takes them") {
  auto v = v1_leaf_values("50000", "100000", "104857600", "209715200", 4096);
  REQUIRE(v.cpu_max == "50000 100000");
  REQUIRE(v.memory_max == "104857600");
  REQUIRE(v.memory_swap_max == "104857600");
  auto fresh = v1_leaf_values("-1", "100000", "9223372036854771712", "9223372036854771712", 0);
  REQUIRE(fresh.cpu_max == "max 100000");
  REQUIRE(fresh.memory_max == "max");
  REQUIRE(fresh.memory_swap_max == "max");
  // update --memory alone keeps today's memory+swap total, as runc.
  Resources asked;
  asked.memory.limit = 150 << 20;
  auto done = complete_update(asked, v);
  REQUIRE(done.memory.swap == 209715200);
  REQUIRE(v1_files_of(done, {104857600}) == Files{{"memory.memsw.limit_in_bytes", "209715200"},
                                                  {"memory.limit_in_bytes", "157286400"}});
}

TEST_CASE("plan_cgroup: rootful on a hybrid host gets a v1 group, rootless stays without") {
  mrun::test::TempDir temp("v1");
  const std::string& dir = temp.path;
  const std::string mountinfo = dir + "/mountinfo";
  mrun::sys::write_new_file(
      mountinfo, "26 25 0:23 / " + dir +
                     " rw - cgroup2 cgroup2 rw\n"
                     "30 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                     "31 25 0:28 / /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n");
  Paths paths;
  paths.mountinfo = mountinfo;
  Request request;
  request.name = "c1";
  request.rootful = true;
  request.parent = "/mrun";
  request.resources.memory.limit = 1 << 20;
  auto plan = plan_cgroup(request, paths);
  REQUIRE_FALSE(plan.use);
  REQUIRE(plan.v1);
  REQUIRE(plan.v1->relative == "/mrun/mrun-c1");
  // The devices hierarchy is devices_v1.hpp's.
  REQUIRE(plan.v1->hierarchies == std::vector<V1Hierarchy>{{"/sys/fs/cgroup/memory", {"memory"}}});
  REQUIRE(plan.v1->writes.size() == 1);
  // An engine's cgroupsPath: the whole path, below each hierarchy's root.
  request.parent = "kubepods/pod1";
  request.leaf_name = "ctr1";
  REQUIRE(plan_cgroup(request, paths).v1->relative == "/kubepods/pod1/ctr1");
  // A limit no mounted hierarchy carries is refused before anything is made.
  request.resources.pids_limit = 5;
  REQUIRE_THROWS_WITH(plan_cgroup(request, paths), Catch::Contains("linux.resources.pids.limit"));
  // Rootless: as before, an explicit limit needs a cgroup v2 leaf.
  request.rootful = false;
  REQUIRE_THROWS_WITH(plan_cgroup(request, paths), Catch::Contains("needs a cgroup"));
}
