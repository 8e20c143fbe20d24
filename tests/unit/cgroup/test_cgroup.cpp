// cgroup planning without a kernel: limits parsing and files, finding the delegated
// subtree in a temporary directory laid out like /sys/fs/cgroup.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/limits.hpp"
#include "cgroup/runc_stats.hpp"
#include "mount/mount_plan.hpp"
#include "sys/fs.hpp"

using namespace mrun::cgroup;

TEST_CASE("parse_size takes bytes and binary units") {
  REQUIRE(parse_size("1048576") == 1048576u);
  REQUIRE(parse_size("100M") == 100u * 1024 * 1024);
  REQUIRE(parse_size("100m") == 100u * 1024 * 1024);
  REQUIRE(parse_size("1g") == 1024ull * 1024 * 1024);
  REQUIRE(parse_size("1GiB") == 1024ull * 1024 * 1024);
  REQUIRE(parse_size("512kb") == 512u * 1024);
  REQUIRE(parse_size("1.5g") == 1536ull * 1024 * 1024);
  REQUIRE(parse_size("10b") == 10u);
  for (const char* bad : {"", "0", "m", "-1", "1x", "1.5", "1.g", "100 M", "1e9"}) {
    INFO(bad);
    REQUIRE_FALSE(parse_size(bad));
  }
}

TEST_CASE("parse_swap takes a size or -1") {
  REQUIRE(parse_swap("-1") == unlimited);
  REQUIRE(parse_swap("200m") == 200ll * 1024 * 1024);
  REQUIRE_FALSE(parse_swap("-2"));
}

TEST_CASE("--cpus becomes cpu.max") {
  REQUIRE(parse_cpus("0.5") == 0.5);
  REQUIRE(parse_cpus("2") == 2.0);
  REQUIRE_FALSE(parse_cpus("0"));
  REQUIRE_FALSE(parse_cpus("-1"));
  REQUIRE_FALSE(parse_cpus("1.5x"));
  REQUIRE_FALSE(parse_cpus("2000"));
  REQUIRE(cpu_max_for(0.5) == "50000 100000");
  REQUIRE(cpu_max_for(2) == "200000 100000");
  REQUIRE(cpu_max_for(1.25) == "125000 100000");
  REQUIRE(cpu_max_for(0.001) == "1000 100000");  // the kernel's minimum quota
}

TEST_CASE("mrun run's flags become linux.resources and then interface files") {
  using Files = std::vector<std::pair<std::string, std::string>>;
  auto files = [](const Limits& limits) {
    Files out;
    for (const auto& w : plan_resource_files(to_resources(limits)))
      out.emplace_back(w.file, w.value);
    return out;
  };
  Limits limits;
  REQUIRE_FALSE(limits.any());
  REQUIRE(files(limits).empty());
  limits.memory = 100u << 20;
  limits.pids = 20;
  limits.cpus = 0.5;
  // Unset --memory-swap: as much swap again as memory (docker, podman).
  REQUIRE(files(limits) == Files{{"memory.max", "104857600"},
                                 {"memory.swap.max", "104857600"},
                                 {"pids.max", "20"},
                                 {"cpu.max", "50000 100000"}});
  auto writes = plan_resource_files(to_resources(limits));
  REQUIRE(controllers_for(writes) == std::vector<std::string>{"memory", "pids", "cpu"});
  REQUIRE(describe_requests(writes) == "--memory, --pids-limit, --cpus");
  // The implied swap is left out where the kernel has no swap accounting.
  REQUIRE(writes[1].skip_if_absent);

  limits.memory_swap = static_cast<std::int64_t>(100u << 20);
  REQUIRE(files(limits)[1].second == "0");
  limits.memory_swap = unlimited;
  REQUIRE(files(limits)[1].second == "max");
  limits.memory_swap = 1;
  REQUIRE_THROWS_WITH(to_resources(limits), Catch::Contains("--memory-swap 1 is below --memory"));
  Limits swap_only;
  swap_only.memory_swap = 1 << 20;
  REQUIRE_THROWS_WITH(to_resources(swap_only), Catch::Contains("--memory-swap needs --memory"));
  Limits tiny;
  tiny.cpus = 0.001;
  REQUIRE(files(tiny) == Files{{"cpu.max", "1000 100000"}});  // the kernel's minimum quota
}

TEST_CASE("mountinfo and /proc/self/cgroup parsing") {
  const std::string hybrid =
      "25 1 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
      "41 25 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
      "42 25 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  REQUIRE(cgroup2_mount_from(hybrid) == "/sys/fs/cgroup/unified");
  REQUIRE(hybrid_layout_from(hybrid));
  const std::string unified = "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
  REQUIRE(cgroup2_mount_from(unified) == "/sys/fs/cgroup");
  REQUIRE_FALSE(hybrid_layout_from(unified));
  REQUIRE_FALSE(cgroup2_mount_from("1 0 0:1 / / rw - ext4 /dev/sda rw\n"));
  REQUIRE(own_cgroup_from("12:pids:/\n1:name=systemd:/x\n0::/user.slice/a.scope\n") ==
          "/user.slice/a.scope");
  REQUIRE_FALSE(own_cgroup_from("1:name=systemd:/x\n"));
}

namespace {

// A directory laid out like a cgroup2 mount: <root>/cgroup.controllers and, per cgroup,
// the interface files delegation cares about. Files are plain files here.
struct FakeCgroupFs {
  std::string root;
  std::string mountinfo;
  std::string self_cgroup;
  FakeCgroupFs() {
    char tmpl[] = "/tmp/mrun-unit-cgroup-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    root = tmpl;
    mountinfo = root + "-mountinfo";
    self_cgroup = root + "-self";
    make("/");
    mrun::sys::write_file_atomic(root + "/cgroup.controllers", "cpuset cpu io memory pids\n");
    mrun::sys::write_file_atomic(mountinfo,
                                 "30 1 0:26 / " + root + " rw - cgroup2 cgroup2 rw,nsdelegate\n");
  }
  ~FakeCgroupFs() {
    mrun::sys::remove_tree(root);
    ::unlink(mountinfo.c_str());
    ::unlink(self_cgroup.c_str());
  }
  // Every level of `rel` gets the interface files, as in a real cgroup2.
  void make(const std::string& rel) {
    std::string dir = root;
    for (const auto& part : mrun::split(rel, '/')) {
      if (!part.empty()) dir += "/" + part;
      mrun::sys::make_dirs(dir, 0755);
      for (const char* f : {"/cgroup.procs", "/cgroup.subtree_control", "/cgroup.threads"}) {
        mrun::sys::write_file_atomic(dir + f, "", 0644);
      }
    }
  }
  void own(const std::string& rel) {
    mrun::sys::write_file_atomic(self_cgroup, "0::" + rel + "\n");
  }
  Paths paths() const { return {mountinfo, self_cgroup, ""}; }
};

Request rootless(uid_t uid, bool with_limit) {
  Request r;
  r.name = "c1";
  r.uid = uid;
  r.rootful = false;
  if (with_limit) {
    Limits limits;
    limits.memory = 100u << 20;
    r.resources = to_resources(limits);
  }
  return r;
}

}  // namespace

TEST_CASE("rootless: the leaf goes in the nearest delegated ancestor of mrun's cgroup") {
  FakeCgroupFs fs;
  fs.make("/user.slice/user-1000.slice/user@1000.service/app.slice/run-1.scope");
  fs.own("/user.slice/user-1000.slice/user@1000.service/app.slice/run-1.scope");
  // The temp dir is ours (uid = getuid()); to model "owned by someone else", ask for a
  // uid that owns nothing, and chown cannot be used without root, so ownership is the
  // test's variable: everything here belongs to getuid().
  auto plan = plan_cgroup(rootless(::getuid(), true), fs.paths());
  REQUIRE(plan.use);
  REQUIRE(plan.mount == fs.root);
  REQUIRE(plan.parent == fs.root + "/user.slice/user-1000.slice/user@1000.service/app.slice");
  REQUIRE(plan.leaf == plan.parent + "/mrun-c1");
}

TEST_CASE("rootless: not delegated and a limit asked for is a clear error") {
  FakeCgroupFs fs;
  fs.make("/session.scope");
  fs.own("/session.scope");
  const uid_t stranger = ::getuid() + 4242;  // owns nothing in the temp dir
  try {
    plan_cgroup(rootless(stranger, true), fs.paths());
    FAIL("no error");
  } catch (const mrun::Error& e) {
    std::string what = e.what();
    REQUIRE(e.exit_status() == 125);
    REQUIRE(what.find("--memory needs a cgroup") != std::string::npos);
    REQUIRE(what.find("no cgroup v2 subtree is delegated") != std::string::npos);
    REQUIRE(what.find("Delegate=yes") != std::string::npos);
    REQUIRE(what.find("chown") != std::string::npos);
  }
  // Without a limit: no cgroup, and why (for --debug).
  auto plan = plan_cgroup(rootless(stranger, false), fs.paths());
  REQUIRE_FALSE(plan.use);
  REQUIRE(plan.why_not.find("no cgroup v2 subtree is delegated") != std::string::npos);
}

TEST_CASE("rootless: a cgroup whose files are not writable is not delegated") {
  FakeCgroupFs fs;
  fs.make("/deleg/shell");
  fs.own("/deleg/shell");
  REQUIRE(delegated_to(fs.root + "/deleg", ::getuid()));
  ::chmod((fs.root + "/deleg/cgroup.subtree_control").c_str(), 0444);
  REQUIRE_FALSE(delegated_to(fs.root + "/deleg", ::getuid()));
  REQUIRE_FALSE(delegated_to(fs.root + "/missing", ::getuid()));
}

TEST_CASE("rootless: --cgroup-parent must be delegated and hold mrun's cgroup") {
  FakeCgroupFs fs;
  fs.make("/deleg/shell");
  fs.make("/other");
  fs.own("/deleg/shell");
  Request r = rootless(::getuid(), true);
  r.parent = "/deleg";
  REQUIRE(plan_cgroup(r, fs.paths()).leaf == fs.root + "/deleg/mrun-c1");
  r.parent = "/other";
  REQUIRE_THROWS_WITH(plan_cgroup(r, fs.paths()), Catch::Contains("is not below --cgroup-parent"));
  r.parent = "/deleg/shell";  // mrun's own cgroup: it holds processes
  REQUIRE_THROWS_WITH(plan_cgroup(r, fs.paths()), Catch::Contains("is not below --cgroup-parent"));
}

TEST_CASE("rootful: the leaf goes under the root-owned mrun parent") {
  FakeCgroupFs fs;
  fs.own("/");
  Request r;
  r.name = "c2";
  r.rootful = true;
  r.parent = "/mrun";
  auto plan = plan_cgroup(r, fs.paths());
  REQUIRE(plan.use);
  REQUIRE(plan.leaf == fs.root + "/mrun/mrun-c2");
  r.parent = "/mrun/../../etc";
  REQUIRE_THROWS_WITH(plan_cgroup(r, fs.paths()), Catch::Contains("leaves the cgroup tree"));
}

TEST_CASE("rootful: a leaf named by the engine's cgroupsPath is that cgroup, not mrun-ID") {
  FakeCgroupFs fs;
  fs.own("/");
  Request r;
  r.name = "abc";
  r.rootful = true;
  r.parent = "kubepods/burstable/pod1";
  r.leaf_name = "abc";
  auto plan = plan_cgroup(r, fs.paths());
  REQUIRE(plan.use);
  REQUIRE(plan.leaf == fs.root + "/kubepods/burstable/pod1/abc");
  r.parent = "";  // "/abc": directly under the root, as runc puts it
  REQUIRE(plan_cgroup(r, fs.paths()).leaf == fs.root + "/abc");
  r.leaf_name = "..";
  REQUIRE_THROWS_WITH(plan_cgroup(r, fs.paths()), Catch::Contains("is not one directory"));
}

TEST_CASE("a hybrid layout or --cgroups=disabled means no cgroup; limits are refused") {
  FakeCgroupFs fs;
  fs.own("/");
  Request r;
  r.name = "c3";
  r.rootful = true;
  r.parent = "/mrun";
  mrun::sys::write_file_atomic(fs.root + "/cgroup.controllers", "\n");
  REQUIRE_FALSE(plan_cgroup(r, fs.paths()).use);
  REQUIRE(plan_cgroup(r, fs.paths()).why_not.find("hybrid") != std::string::npos);
  r.resources.pids_limit = 20;
  REQUIRE_THROWS_WITH(
      plan_cgroup(r, fs.paths()),
      Catch::Contains("linux.resources.pids.limit needs a cgroup") && Catch::Contains("hybrid"));

  mrun::sys::write_file_atomic(fs.root + "/cgroup.controllers", "memory pids\n");
  r.enabled = false;
  REQUIRE_THROWS_WITH(plan_cgroup(r, fs.paths()), Catch::Contains("--cgroups=disabled"));
  r.resources = {};
  REQUIRE_FALSE(plan_cgroup(r, fs.paths()).use);
}

TEST_CASE("read_stats reads the leaf's counters") {
  FakeCgroupFs fs;
  const std::string leaf = fs.root + "/leaf";
  mrun::sys::make_dirs(leaf, 0755);
  mrun::sys::write_file_atomic(leaf + "/memory.current", "1048576\n");
  mrun::sys::write_file_atomic(leaf + "/memory.max", "max\n");
  mrun::sys::write_file_atomic(leaf + "/pids.current", "3\n");
  mrun::sys::write_file_atomic(leaf + "/pids.max", "20\n");
  mrun::sys::write_file_atomic(leaf + "/cpu.stat", "usage_usec 1500\nuser_usec 1000\n");
  mrun::sys::write_file_atomic(leaf + "/cpu.max", "50000 100000\n");
  mrun::sys::write_file_atomic(leaf + "/memory.events", "low 0\noom 1\noom_kill 2\n");
  auto s = read_stats(leaf);
  REQUIRE(s.memory_current == 1048576u);
  REQUIRE_FALSE(s.memory_max);
  REQUIRE(s.pids_current == 3u);
  REQUIRE(s.pids_max == 20u);
  REQUIRE(s.cpu_usage_usec == 1500u);
  REQUIRE(s.cpu_max == "50000 100000");
  REQUIRE(s.oom_kills == 2u);
}

TEST_CASE("runc_stats: a leaf's files in the shape runc events --stats prints") {
  FakeCgroupFs fs;
  const std::string leaf = fs.root + "/leaf";
  mrun::sys::make_dirs(leaf, 0755);
  auto put = [&](const std::string& file, const std::string& text) {
    mrun::sys::write_file_atomic(leaf + "/" + file, text);
  };
  put("cpu.stat",
      "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 7\nnr_throttled 2\n"
      "throttled_usec 30\n");
  put("memory.current", "1048576\n");
  put("memory.max", "67108864\n");
  put("memory.peak", "2097152\n");
  put("memory.swap.current", "4096\n");
  put("memory.swap.max", "max\n");
  put("memory.events", "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n");
  put("memory.stat", "anon 8192\nfile 4096\n");
  put("pids.current", "3\n");
  put("pids.max", "max\n");
  put("io.stat", "8:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0\n");
  put("hugetlb.2MB.current", "0\n");
  put("hugetlb.2MB.max", "4194304\n");
  put("hugetlb.2MB.events", "max 0\n");
  put("cpuset.cpus.effective", "0-1,3\n");
  auto j = mrun::cgroup::runc_stats(leaf);
  REQUIRE(j["cpu"]["usage"]["total"] == 1500000);
  REQUIRE(j["cpu"]["usage"]["user"] == 1000000);
  REQUIRE(j["cpu"]["usage"]["kernel"] == 500000);
  REQUIRE(j["cpu"]["throttling"]["periods"] == 7);
  REQUIRE(j["cpu"]["throttling"]["throttledTime"] == 30000);
  REQUIRE(j["memory"]["usage"]["usage"] == 1048576);
  REQUIRE(j["memory"]["usage"]["limit"] == 67108864);
  REQUIRE(j["memory"]["usage"]["max"] == 2097152);
  REQUIRE(j["memory"]["usage"]["failcnt"] == 5);
  REQUIRE(j["memory"]["swap"]["usage"] == 1048576 + 4096);
  REQUIRE(j["memory"]["swap"]["limit"] == std::numeric_limits<std::uint64_t>::max());
  REQUIRE(j["memory"]["cache"] == 4096);
  REQUIRE(j["memory"]["raw"]["anon"] == 8192);
  REQUIRE(j["memory"]["event_count"]["oom_kill"] == 1);
  REQUIRE(j["pids"]["current"] == 3);
  REQUIRE_FALSE(j["pids"].contains("limit"));  // "max": no limit
  REQUIRE(j["blkio"]["ioServiceBytesRecursive"][1] ==
          nlohmann::json{{"major", 8}, {"minor", 0}, {"op", "Write"}, {"value", 200}});
  REQUIRE(j["blkio"]["ioServicedRecursive"][0]["value"] == 1);
  REQUIRE(j["hugetlb"]["2MB"]["max"] == 4194304);
  REQUIRE(j["cpuset"]["cpus"] == nlohmann::json({0, 1, 3}));
  REQUIRE(j["network_interfaces"].is_null());
}
