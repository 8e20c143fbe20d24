// linux.resources -> cgroup v2 files (src/cgroup/resources.hpp), each conversion as runc
// and crun make it, and the per-field rule of plan_cgroup: what asks for nothing beyond
// a fresh cgroup's defaults runs without one. The writing (apply_writes,
// enable_controllers, update_leaf) on a temporary directory laid out like a leaf.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/resources.hpp"
#include "sys/fs.hpp"
#include "temp_dir.hpp"

using namespace mrun::cgroup;

namespace {

using Files = std::vector<std::pair<std::string, std::string>>;

Files files_of(const Resources& r) {
  Files out;
  for (const auto& w : plan_resource_files(r)) out.emplace_back(w.file, w.value);
  return out;
}

std::string error_of(const Resources& r) {
  try {
    plan_resource_files(r);
  } catch (const mrun::Error& e) {
    return e.what();
  }
  return "";
}

struct TempDir : mrun::test::TempDir {
  TempDir() : mrun::test::TempDir("resources") {}
  // An interface file: empty, as cgroupfs files read before a write here.
  void file(const std::string& name, const std::string& content = "") const {
    mrun::sys::write_file_atomic(path + "/" + name, content, 0644);
  }
  std::string read(const std::string& name) const {
    return std::string(mrun::trim(mrun::sys::read_file(path + "/" + name).value_or("<absent>")));
  }
};

}  // namespace

TEST_CASE("cpu.shares -> cpu.weight: runc's and crun's quadratic map keeps 1024 at 100") {
  REQUIRE(cpu_weight_from_shares(0) == 0);  // unset
  REQUIRE(cpu_weight_from_shares(1) == 1);
  REQUIRE(cpu_weight_from_shares(2) == 1);
  REQUIRE(cpu_weight_from_shares(1024) == 100);
  REQUIRE(cpu_weight_from_shares(2048) == 174);
  REQUIRE(cpu_weight_from_shares(512) == 59);
  REQUIRE(cpu_weight_from_shares(100) == 17);
  REQUIRE(cpu_weight_from_shares(262144) == 10000);
  REQUIRE(cpu_weight_from_shares(1u << 30) == 10000);
  // Monotonic over the whole v1 range, within v2's 1..10000.
  std::uint64_t last = 0;
  for (std::uint64_t shares = 2; shares <= 262144; shares += 97) {
    auto w = cpu_weight_from_shares(shares);
    REQUIRE(w >= last);
    REQUIRE(w >= 1);
    REQUIRE(w <= 10000);
    last = w;
  }
}

TEST_CASE("blockIO.weight -> io.weight: linear from 10..1000 onto 1..10000") {
  REQUIRE(io_weight_from_blkio(10) == 1);
  REQUIRE(io_weight_from_blkio(100) == 910);
  REQUIRE(io_weight_from_blkio(500) == 4950);
  REQUIRE(io_weight_from_blkio(1000) == 10000);
}

TEST_CASE("memory.swap -> memory.swap.max: runc's conversion of memory+swap to swap alone") {
  const std::string s = "linux.resources.memory.swap", l = "linux.resources.memory.limit";
  REQUIRE(swap_max_for(-1, 100, s, l) == "max");
  REQUIRE_FALSE(swap_max_for(0, 100, s, l));  // unset
  REQUIRE(swap_max_for(300, 100, s, l) == "200");
  REQUIRE(swap_max_for(100, 100, s, l) == "0");   // no swap at all
  REQUIRE(swap_max_for(300, -1, s, l) == "300");  // unlimited memory: swap as is
  REQUIRE_THROWS_WITH(swap_max_for(50, 100, s, l),
                      Catch::Contains("linux.resources.memory.swap: 50 is below "
                                      "linux.resources.memory.limit 100"));
  REQUIRE_THROWS_WITH(swap_max_for(300, std::nullopt, s, l),
                      Catch::Contains("linux.resources.memory.swap: needs "
                                      "linux.resources.memory.limit"));
  REQUIRE_THROWS_WITH(swap_max_for(-5, 100, s, l), Catch::Contains("must be -1"));
}

TEST_CASE("memory: limit, swap and reservation") {
  Resources r;
  r.memory.limit = 256 << 20;
  r.memory.swap = 512 << 20;
  r.memory.reservation = 128 << 20;
  REQUIRE(files_of(r) == Files{{"memory.max", "268435456"},
                               {"memory.swap.max", "268435456"},
                               {"memory.low", "134217728"}});
  // Explicit swap is required to land: no skipping where swap accounting is missing.
  REQUIRE_FALSE(plan_resource_files(r)[1].skip_if_absent);
  r.memory = {};
  r.memory.limit = -1;  // unlimited memory, swap not given: both unlimited (runc)
  auto writes = plan_resource_files(r);
  REQUIRE(files_of(r) == Files{{"memory.max", "max"}, {"memory.swap.max", "max"}});
  REQUIRE(writes[0].is_default);
  REQUIRE(writes[1].is_default);
  REQUIRE(writes[1].skip_if_absent);
  r.memory = {};
  r.memory.limit = 0;  // 0 is "unset"
  r.memory.reservation = 0;
  REQUIRE(files_of(r).empty());
  r.memory.reservation = -1;
  REQUIRE(files_of(r) == Files{{"memory.low", "max"}});
  r.memory = {};
  r.memory.swap = 1 << 20;
  REQUIRE_THAT(error_of(r), Catch::Contains("needs linux.resources.memory.limit"));
}

TEST_CASE("cpu: weight, idle, max, burst, cpuset, in the order the kernel needs") {
  Resources r{};  // value-initialised: GCC 12 warns on assigning into a fresh optional<string>
  r.cpu.shares = 2048;
  r.cpu.quota = 50000;
  r.cpu.period = 200000;
  r.cpu.burst = 10000;
  r.cpu.idle = 0;
  r.cpu.cpus.emplace("0-1");
  r.cpu.mems.emplace("0");
  REQUIRE(files_of(r) == Files{{"cpu.weight", "174"},
                               {"cpu.idle", "0"},
                               {"cpu.max", "50000 200000"},
                               {"cpu.max.burst", "10000"},
                               {"cpuset.cpus", "0-1"},
                               {"cpuset.mems", "0"}});
  REQUIRE(controllers_for(plan_resource_files(r)) == std::vector<std::string>{"cpu", "cpuset"});
  // A quota alone: the kernel's default period. A period alone, or -1: no quota.
  Resources q;
  q.cpu.quota = 25000;
  REQUIRE(files_of(q) == Files{{"cpu.max", "25000 100000"}});
  q.cpu.quota = -1;
  REQUIRE(files_of(q) == Files{{"cpu.max", "max 100000"}});
  REQUIRE(plan_resource_files(q)[0].is_default);
  q.cpu.quota.reset();
  q.cpu.period = 50000;
  REQUIRE(files_of(q) == Files{{"cpu.max", "max 50000"}});
  REQUIRE(plan_resource_files(q)[0].field == "linux.resources.cpu.period");
  // shares 0 is unset; empty cpus/mems are nothing to write.
  Resources none{};
  none.cpu.shares = 0;
  none.cpu.cpus.emplace();
  REQUIRE(files_of(none).empty());
}

TEST_CASE("pids: -1 is max, 0 is unset (as crun)") {
  Resources r;
  r.pids_limit = 32;
  REQUIRE(files_of(r) == Files{{"pids.max", "32"}});
  r.pids_limit = -1;
  REQUIRE(files_of(r) == Files{{"pids.max", "max"}});
  r.pids_limit = 0;
  REQUIRE(files_of(r).empty());
}

TEST_CASE("blockIO: weights with io.weight as fallback, throttles merged per device in io.max") {
  Resources r;
  r.block_io.weight = 500;
  r.block_io.weight_device = {{8, 0, 300}};
  r.block_io.read_bps = {{8, 0, 1048576}, {253, 1, 4096}};
  r.block_io.write_bps = {{8, 0, 2097152}};
  r.block_io.read_iops = {{8, 0, 100}};
  r.block_io.write_iops = {{8, 0, 50}, {8, 0, 60}};  // the later one wins
  auto writes = plan_resource_files(r);
  REQUIRE(files_of(r) == Files{{"io.bfq.weight", "500"},
                               {"io.bfq.weight", "8:0 300"},
                               {"io.max", "8:0 rbps=1048576 wbps=2097152 riops=100 wiops=60"},
                               {"io.max", "253:1 rbps=4096"}});
  REQUIRE(writes[0].fallback_file == "io.weight");
  REQUIRE(writes[0].fallback_value == "4950");
  REQUIRE(writes[1].fallback_value == "8:0 2930");
  REQUIRE(writes[2].field == "linux.resources.blockIO.throttleReadBpsDevice");
  REQUIRE(controllers_for(writes) == std::vector<std::string>{"io"});
}

TEST_CASE("hugepageLimits, rdma and unified") {
  Resources r;
  r.hugepage_limits = {{"2MB", 4194304}};
  r.rdma["mlx5_1"] = {3, 10000};
  r.rdma["rxe3"] = {std::nullopt, 100};
  r.unified["io.max"] = "259:0 rbps=2097152 wiops=120\n253:0 rbps=2097152 wiops=120\n";
  r.unified["memory.high"] = "max";
  r.unified["pids.max"] = "";  // nothing to write (as crun)
  r.pids_limit = 10;           // ... and unified comes last, so it would override this
  auto writes = plan_resource_files(r);
  REQUIRE(files_of(r) == Files{{"pids.max", "10"},
                               {"hugetlb.2MB.max", "4194304"},
                               {"hugetlb.2MB.rsvd.max", "4194304"},
                               {"rdma.max", "mlx5_1 hca_handle=3 hca_object=10000"},
                               {"rdma.max", "rxe3 hca_object=100"},
                               {"io.max", "259:0 rbps=2097152 wiops=120"},
                               {"io.max", "253:0 rbps=2097152 wiops=120"},
                               {"memory.high", "max"}});
  REQUIRE_FALSE(writes[1].skip_if_absent);
  REQUIRE(writes[2].skip_if_absent);  // reservations only where the kernel has them
  REQUIRE(writes[7].is_default);
  REQUIRE(writes[5].field == "linux.resources.unified.io.max");
  REQUIRE(controllers_for(writes) ==
          std::vector<std::string>{"pids", "hugetlb", "rdma", "io", "memory"});
  REQUIRE(controller_of("cgroup.max.depth").empty());
}

TEST_CASE("a request that asks only for a fresh cgroup's defaults is told apart") {
  Resources ctr;  // ctr's default spec and containerd's CRI: cpu.shares 1024
  ctr.cpu.shares = 1024;
  auto writes = plan_resource_files(ctr);
  REQUIRE(writes.size() == 1);
  REQUIRE(writes[0].is_default);
  REQUIRE(describe_requests(writes).empty());
  REQUIRE(describe_defaults(writes) == "linux.resources.cpu.shares (cpu.weight 100)");
  ctr.cpu.shares = 2048;
  writes = plan_resource_files(ctr);
  REQUIRE(describe_requests(writes) == "linux.resources.cpu.shares");
  ctr.cpu.shares = 1024;
  ctr.memory.limit = 1 << 20;
  REQUIRE(describe_requests(plan_resource_files(ctr)) == "linux.resources.memory.limit");
  for (auto [file, value] : Files{{"cpu.max", "max 100000"},
                                  {"pids.max", "max"},
                                  {"memory.low", "0"},
                                  {"cpu.idle", "0"},
                                  {"cpu.max.burst", "0"}}) {
    INFO(file);
    REQUIRE(fresh_default(file, value));
  }
  REQUIRE_FALSE(fresh_default("cpu.weight", "101"));
  REQUIRE_FALSE(fresh_default("cpuset.cpus", ""));
}

TEST_CASE("update completes a partial request from the leaf's values, as runc's update") {
  LeafValues now;
  now.cpu_max = "50000 200000";
  now.memory_max = "104857600";
  now.memory_swap_max = "104857600";  // total 200M
  now.memory_current = 10 << 20;
  Resources quota_only;
  quota_only.cpu.quota = 20000;
  REQUIRE(files_of(complete_update(quota_only, now)) == Files{{"cpu.max", "20000 200000"}});
  Resources period_only;
  period_only.cpu.period = 100000;
  REQUIRE(files_of(complete_update(period_only, now)) == Files{{"cpu.max", "50000 100000"}});
  now.cpu_max = "max 100000";
  REQUIRE(files_of(complete_update(period_only, now)) == Files{{"cpu.max", "max 100000"}});

  // A new limit keeps today's memory+swap total.
  Resources memory;
  memory.memory.limit = 150 << 20;
  REQUIRE(files_of(complete_update(memory, now)) ==
          Files{{"memory.max", "157286400"}, {"memory.swap.max", "52428800"}});
  memory.memory.limit = 300 << 20;
  REQUIRE_THROWS_WITH(complete_update(memory, now),
                      Catch::Contains("above today's memory+swap total 209715200"));
  // Unlimited swap today: a new limit leaves it so.
  now.memory_swap_max = "max";
  REQUIRE(files_of(complete_update(memory, now)) == Files{{"memory.max", "314572800"}});
  // A new total alone is taken against today's limit.
  Resources swap;
  swap.memory.swap = 300 << 20;
  REQUIRE(files_of(complete_update(swap, now)) ==
          Files{{"memory.max", "104857600"}, {"memory.swap.max", "209715200"}});

  // checkBeforeUpdate: a limit at or below today's usage is refused.
  Resources check;
  check.memory.limit = 8 << 20;
  check.memory.check_before_update = true;
  REQUIRE_THROWS_WITH(complete_update(check, now), Catch::Contains("<= usage 10485760"));
  check.memory.check_before_update = false;
  REQUIRE_NOTHROW(complete_update(check, now));
}

namespace {

// A cgroup2 root at `dir` with the given controllers, and its mountinfo.
struct FakeRoot {
  TempDir dir;
  std::string mountinfo;
  explicit FakeRoot(const std::string& controllers) {
    mountinfo = dir.path + "/mountinfo";
    mrun::sys::write_file_atomic(
        mountinfo, "30 1 0:26 / " + dir.path + "/cg rw - cgroup2 cgroup2 rw,nsdelegate\n");
    mrun::sys::make_dirs(dir.path + "/cg/mrun", 0755);
    for (const std::string level : {"/cg", "/cg/mrun"}) {
      dir.file(level.substr(1) + "/cgroup.controllers", controllers + "\n");
      dir.file(level.substr(1) + "/cgroup.subtree_control");
    }
  }
  Paths paths() const { return {mountinfo, "", ""}; }
  std::string root() const { return dir.path + "/cg"; }
};

Request rootful(const Resources& r, bool enabled = true) {
  Request request;
  request.name = "c1";
  request.rootful = true;
  request.parent = "/mrun";
  request.resources = r;
  request.enabled = enabled;
  return request;
}

}  // namespace

TEST_CASE("plan_cgroup decides per field: defaults run without a cgroup, the rest is a 125") {
  FakeRoot hybrid("");  // this host: cgroup2 without controllers
  Resources ctr;
  ctr.cpu.shares = 1024;
  auto plan = plan_cgroup(rootful(ctr), hybrid.paths());
  REQUIRE_FALSE(plan.use);
  REQUIRE(plan.writes.empty());
  REQUIRE_THAT(plan.defaults_note, Catch::Contains("linux.resources.cpu.shares (cpu.weight 100)") &&
                                       Catch::Contains("accepted without a cgroup") &&
                                       Catch::Contains("no controllers"));
  // --cgroups=disabled, likewise.
  REQUIRE_FALSE(plan_cgroup(rootful(ctr, false), hybrid.paths()).use);

  ctr.cpu.shares = 2048;
  try {
    plan_cgroup(rootful(ctr), hybrid.paths());
    FAIL("no error");
  } catch (const mrun::Error& e) {
    REQUIRE(e.exit_status() == 125);
    REQUIRE_THAT(std::string(e.what()),
                 Catch::Contains("linux.resources.cpu.shares needs a cgroup, but") &&
                     Catch::Contains("hybrid"));
  }
  REQUIRE_THROWS_WITH(plan_cgroup(rootful(ctr, false), hybrid.paths()),
                      Catch::Contains("linux.resources.cpu.shares needs a cgroup, but "
                                      "--cgroups=disabled"));
  // With controllers, the writes travel with the plan.
  FakeRoot v2("cpu memory pids");
  plan = plan_cgroup(rootful(ctr), v2.paths());
  REQUIRE(plan.use);
  REQUIRE(plan.writes.size() == 1);
  REQUIRE(plan.writes[0].value == "174");
  // A bad combination fails before anything, wherever it runs.
  Resources bad;
  bad.memory.swap = 1 << 20;
  REQUIRE_THROWS_WITH(plan_cgroup(rootful(bad), hybrid.paths()),
                      Catch::Contains("needs linux.resources.memory.limit"));
}

TEST_CASE("apply_writes: fallback files, absent files skipped or refused, EINVAL retried") {
  TempDir leaf;
  leaf.file("io.weight");
  leaf.file("memory.max");
  leaf.file("cpu.weight");
  mrun::Logger log;
  Resources r;
  r.block_io.weight = 500;  // no io.bfq.weight here: io.weight, converted
  r.memory.limit = 1 << 20;
  r.memory.swap = 1 << 20;  // "0": moot without swap accounting (no memory.swap.max)
  apply_writes(leaf.path, plan_resource_files(r), log);
  REQUIRE(leaf.read("io.weight") == "4950");
  REQUIRE(leaf.read("memory.max") == "1048576");
  REQUIRE(leaf.read("memory.swap.max") == "<absent>");

  Resources swap;
  swap.memory.limit = 1 << 20;
  swap.memory.swap = 2 << 20;  // an explicit amount of swap must land
  REQUIRE_THROWS_WITH(apply_writes(leaf.path, plan_resource_files(swap), log),
                      Catch::Contains("linux.resources.memory.swap") &&
                          Catch::Contains("memory.swap.max does not exist"));
  Resources hugetlb;
  hugetlb.hugepage_limits = {{"2MB", 2097152}};
  leaf.file("hugetlb.2MB.max");
  apply_writes(leaf.path, plan_resource_files(hugetlb), log);  // no .rsvd.max: skipped
  REQUIRE(leaf.read("hugetlb.2MB.max") == "2097152");
}

TEST_CASE("enable_controllers: rootful from the root down; defaults without a controller dropped") {
  FakeRoot root("cpu memory");
  mrun::Logger log;
  Resources r;
  r.cpu.shares = 2048;
  r.memory.limit = 1 << 20;
  auto writes = plan_resource_files(r);
  enable_controllers(root.root(), root.root() + "/mrun", true, writes, log);
  REQUIRE(writes.size() == 2);
  REQUIRE(root.dir.read("cg/cgroup.subtree_control").starts_with("+"));
  // No pids controller: pids.max max is the default, dropped; pids.max 10 is an error.
  Resources pids;
  pids.pids_limit = -1;
  writes = plan_resource_files(pids);
  enable_controllers(root.root(), root.root() + "/mrun", true, writes, log);
  REQUIRE(writes.empty());
  pids.pids_limit = 10;
  writes = plan_resource_files(pids);
  REQUIRE_THROWS_WITH(enable_controllers(root.root(), root.root() + "/mrun", true, writes, log),
                      Catch::Contains("linux.resources.pids.limit: the pids controller is not "
                                      "available"));
}

TEST_CASE("update_leaf writes a running container's leaf, completed from its files") {
  FakeRoot root("cpu memory pids");
  const std::string leaf = root.root() + "/mrun/mrun-c1";
  mrun::sys::make_dirs(leaf, 0755);
  root.dir.file("cg/mrun/mrun-c1/cpu.max", "50000 100000\n");
  root.dir.file("cg/mrun/mrun-c1/memory.max", "max\n");
  root.dir.file("cg/mrun/mrun-c1/memory.swap.max", "max\n");
  mrun::Logger log;
  Resources r;
  r.cpu.quota = 20000;
  update_leaf(leaf, true, r, log, root.paths());
  REQUIRE(root.dir.read("cg/mrun/mrun-c1/cpu.max").substr(0, 12) == "20000 100000");
  REQUIRE_THROWS_WITH(update_leaf(root.root() + "/mrun/gone", true, r, log, root.paths()),
                      Catch::Contains("does not exist"));
}
