#include <sys/mount.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "mount/config_mounts.hpp"
#include "mount/mount_plan.hpp"
#include "mount/overlay.hpp"
#include "oci/run_config.hpp"

using namespace mrun::mount;

// mrun run's mount table: the config its flags build (oci/run_config.hpp), converted as
// any bundle's is, planned by the one planner (config_mounts.hpp).
namespace {
std::vector<MountStep> run_plan(mrun::oci::RunRequest request = {}, bool mknod = false) {
  request.name = "c1";
  request.rootfs = "/img";
  request.args = {"/bin/true"};
  auto built = mrun::oci::build_run_config(request, {});
  auto config = mrun::oci::to_container_config(built.spec, {}, "c1", 1000, 1000, mrun::Logger{},
                                               built.additions);
  ConfigMountInput input = config.mounts;
  input.mknod_default_devices = mknod;
  return plan_config_mounts(input);
}

std::ptrdiff_t index_of(const std::vector<MountStep>& plan, const std::string& target) {
  auto it = std::find_if(plan.begin(), plan.end(),
                         [&](const MountStep& s) { return s.target == target; });
  REQUIRE(it != plan.end());
  return it - plan.begin();
}
const MountStep& step_for(const std::vector<MountStep>& plan, const std::string& target) {
  return plan[static_cast<std::size_t>(index_of(plan, target))];
}
}  // namespace

TEST_CASE("mount plan: /proc, /dev and /sys come before what masks or locks them") {
  auto plan = run_plan();
  REQUIRE(index_of(plan, "/proc") < index_of(plan, "/proc/kcore"));
  REQUIRE(index_of(plan, "/proc") < index_of(plan, "/proc/sys"));
  REQUIRE(index_of(plan, "/dev") < index_of(plan, "/dev/null"));
  REQUIRE(index_of(plan, "/dev") < index_of(plan, "/dev/pts"));
  REQUIRE(index_of(plan, "/dev/null") < index_of(plan, "/proc/kcore"));  // masks bind /dev/null
  REQUIRE(index_of(plan, "/sys") < index_of(plan, "/sys/firmware"));
  REQUIRE(step_for(plan, "/proc/kcore").kind == StepKind::mask);
  REQUIRE(step_for(plan, "/proc/sys").kind == StepKind::read_only);
  REQUIRE(step_for(plan, "/proc").flags == (MS_NOSUID | MS_NODEV | MS_NOEXEC));
}

TEST_CASE("mount plan: every default device node is a bind onto a file") {
  auto plan = run_plan();
  for (const auto& node : default_device_nodes()) {
    const auto& step = step_for(plan, "/dev/" + node);
    REQUIRE(step.kind == StepKind::bind);
    REQUIRE(step.source == "/dev/" + node);
    REQUIRE(step.target_is_file);
    REQUIRE(step.read_only);  // no chmod of the host's node through it
  }
  REQUIRE(step_for(plan, "/dev/ptmx").kind == StepKind::symlink);
  REQUIRE(step_for(plan, "/dev/ptmx").source == "pts/ptmx");
}

TEST_CASE("mount plan: rootful, the default nodes are the container's own (mknod)") {
  auto plan = run_plan({}, true);
  for (const auto& node : default_device_nodes()) {
    const auto& step = step_for(plan, "/dev/" + node);
    REQUIRE(step.kind == StepKind::device_node);
    REQUIRE(step.mode == 0666);
    REQUIRE(step.uid == 0);
  }
  REQUIRE(step_for(plan, "/dev/null").device == ::makedev(1, 3));
  REQUIRE(step_for(plan, "/dev/tty").device == ::makedev(5, 0));
  REQUIRE(index_of(plan, "/dev") < index_of(plan, "/dev/null"));
}

TEST_CASE("mount plan: devpts keeps gid=5 only where gid 5 is mapped") {
  auto plan = run_plan();
  REQUIRE(step_for(plan, "/dev/pts").data.find("gid=5") != std::string::npos);
  drop_unmapped_devpts_gid(plan, [](std::uint32_t gid) { return gid <= 5; });
  REQUIRE(step_for(plan, "/dev/pts").data.find("gid=5") != std::string::npos);
  drop_unmapped_devpts_gid(plan, [](std::uint32_t gid) { return gid == 0; });
  REQUIRE(step_for(plan, "/dev/pts").data == "newinstance,ptmxmode=0666,mode=0620");
}

TEST_CASE("mount plan: a fresh read-only sysfs, else the host's bound read-only") {
  auto sys = step_for(run_plan(), "/sys");
  REQUIRE(sys.kind == StepKind::filesystem);
  REQUIRE((sys.flags & MS_RDONLY) != 0);
  REQUIRE(sys.fallback_bind == "/sys");
  REQUIRE(sys.fallback_read_only);
}

TEST_CASE("mount plan: a read-only cgroup2 at /sys/fs/cgroup, after /sys") {
  auto plan = run_plan();
  const auto& cg = step_for(plan, "/sys/fs/cgroup");
  REQUIRE(cg.fstype == "cgroup2");
  REQUIRE((cg.flags & MS_RDONLY) != 0);
  REQUIRE(cg.fallback_bind == "/sys/fs/cgroup");
  REQUIRE(index_of(plan, "/sys") < index_of(plan, "/sys/fs/cgroup"));
}

TEST_CASE("mount plan: volumes after the default filesystems, read-only all the way down") {
  mrun::oci::RunRequest request;
  request.read_only = true;
  request.volumes.push_back({"/srv/data", "/data", true});
  request.volumes.push_back({"/srv/rw", "/rw", false});
  auto plan = run_plan(request);
  REQUIRE(index_of(plan, "/data") > index_of(plan, "/sys/fs/cgroup"));
  REQUIRE(step_for(plan, "/data").recursive);
  REQUIRE(step_for(plan, "/data").recursive_attrs_set == MOUNT_ATTR_RDONLY);
  REQUIRE(step_for(plan, "/rw").recursive_attrs_set == 0);
  REQUIRE(plan.back().kind == StepKind::root_read_only);
}

TEST_CASE("volume specs") {
  auto v = parse_volume("/a:/b:ro");
  REQUIRE(v.source == "/a");
  REQUIRE(v.destination == "/b");
  REQUIRE(v.read_only);
  REQUIRE_FALSE(parse_volume("/a:/b").read_only);
  REQUIRE_FALSE(parse_volume("/a:/b:rw").read_only);
  REQUIRE_THROWS_AS(parse_volume("/a"), mrun::Error);
  REQUIRE_THROWS_AS(parse_volume("/a:/b:rx"), mrun::Error);
  REQUIRE_THROWS_AS(parse_volume("a:/b"), mrun::Error);
  REQUIRE_THROWS_AS(parse_volume("/a:/"), mrun::Error);
  REQUIRE_THROWS_WITH(parse_volume("/a:b"), Catch::Contains("must be absolute"));
}

TEST_CASE("overlay mount data, and paths it cannot carry") {
  OverlayLayers layers{"/img", "/s/upper", "/s/work", "/s/merged"};
  REQUIRE(overlay_mount_data(layers, true) ==
          "lowerdir=/img,upperdir=/s/upper,workdir=/s/work,userxattr");
  REQUIRE(overlay_mount_data(layers, true, true) ==
          "lowerdir=/img,upperdir=/s/upper,workdir=/s/work,userxattr,volatile");
  auto argv = fuse_overlayfs_argv("/usr/bin/fuse-overlayfs", layers);
  REQUIRE(argv == std::vector<std::string>{"/usr/bin/fuse-overlayfs", "-f", "-o",
                                           "lowerdir=/img,upperdir=/s/upper,workdir=/s/work",
                                           "/s/merged"});
  layers.lower = "/img,upperdir=/etc";
  REQUIRE_THROWS_WITH(overlay_mount_data(layers, false), Catch::Contains("contains ','"));
}

TEST_CASE("mount plan: no volume over /proc (CVE-2019-16884), lxcfs files excepted") {
  // Also as openat2(RESOLVE_IN_ROOT) resolves them (tests/fuzz/regressions/volume/): by
  // -v, and by a config's own bind entries.
  for (const char* dst :
       {"/proc", "/proc/", "/proc/self", "/proc/sys/kernel", "/proc/1/attr", "//proc",
        "/./proc/sys", "/tmp/../proc", "/../proc/self", "/proc/meminfo/../sys"}) {
    INFO(dst);
    mrun::oci::RunRequest request;
    request.volumes.push_back({"/tmp", dst, false});
    REQUIRE_THROWS_WITH(run_plan(request), Catch::Contains("covers the container's /proc"));
    ConfigMountInput config;
    config.mounts.push_back({dst, "bind", "/tmp", {"rbind"}});
    REQUIRE_THROWS_WITH(plan_config_mounts(config),
                        Catch::Contains("covers the container's /proc"));
  }
  mrun::oci::RunRequest lxcfs;
  lxcfs.volumes.push_back({"/var/lib/lxcfs/proc/meminfo", "/proc/meminfo", true});
  REQUIRE_NOTHROW(run_plan(lxcfs));
  mrun::oci::RunRequest near;
  near.volumes.push_back({"/tmp", "/procfs", false});
  REQUIRE_NOTHROW(run_plan(near));
}
