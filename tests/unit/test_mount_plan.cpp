#include <sys/mount.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "mount/mount_plan.hpp"
#include "mount/overlay.hpp"

using namespace mrun::mount;

namespace {
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
  auto plan = plan_container_mounts({});
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
  auto plan = plan_container_mounts({});
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
  MountPlanInput input;
  input.mknod_default_devices = true;
  auto plan = plan_container_mounts(input);
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

TEST_CASE("mount plan: devpts asks for gid 5 only when it is mapped") {
  MountPlanInput input;
  input.gid5_mapped = false;
  REQUIRE(step_for(plan_container_mounts(input), "/dev/pts").data.find("gid=5") ==
          std::string::npos);
  input.gid5_mapped = true;
  REQUIRE(step_for(plan_container_mounts(input), "/dev/pts").data.find("gid=5") !=
          std::string::npos);
}

TEST_CASE("mount plan: sysfs needs our own network namespace, else a read-only rbind") {
  MountPlanInput input;
  input.own_network_namespace = true;
  auto fresh = step_for(plan_container_mounts(input), "/sys");
  REQUIRE(fresh.kind == StepKind::filesystem);
  REQUIRE((fresh.flags & MS_RDONLY) != 0);
  REQUIRE(fresh.fallback_bind == "/sys");
  input.own_network_namespace = false;
  auto bound = step_for(plan_container_mounts(input), "/sys");
  REQUIRE(bound.kind == StepKind::bind);
  REQUIRE(bound.recursive);
  REQUIRE(bound.read_only);
}

TEST_CASE("mount plan: volumes come after the defaults, read-only root last") {
  MountPlanInput input;
  input.read_only_root = true;
  input.volumes.push_back({"/srv/data", "/data", true, false});
  auto plan = plan_container_mounts(input);
  REQUIRE(index_of(plan, "/data") > index_of(plan, "/proc/sysrq-trigger"));
  REQUIRE(step_for(plan, "/data").read_only);
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
  // Also as openat2(RESOLVE_IN_ROOT) resolves them (tests/fuzz/regressions/volume/).
  for (const char* dst :
       {"/proc", "/proc/", "/proc/self", "/proc/sys/kernel", "/proc/1/attr", "//proc",
        "/./proc/sys", "/tmp/../proc", "/../proc/self", "/proc/meminfo/../sys"}) {
    MountPlanInput input;
    input.volumes.push_back({"/tmp", dst, false, false});
    REQUIRE_THROWS_WITH(plan_container_mounts(input),
                        Catch::Contains("covers the container's /proc"));
  }
  MountPlanInput lxcfs;
  lxcfs.volumes.push_back({"/var/lib/lxcfs/proc/meminfo", "/proc/meminfo", true, true});
  REQUIRE_NOTHROW(plan_container_mounts(lxcfs));
  MountPlanInput near;
  near.volumes.push_back({"/tmp", "/procfs", false, false});
  REQUIRE_NOTHROW(plan_container_mounts(near));
}
