// mount/config_mounts: an OCI config's mount table as mrun's plan, in the config's order.
#include <linux/mount.h>
#include <sys/mount.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "mount/config_mounts.hpp"

using namespace mrun::mount;

namespace {
// containerd 1.6's default mounts (oci.populateDefaultUnixSpec), as ctr sends them.
std::vector<ConfigMount> ctr_default_mounts() {
  return {
      {"/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}},
      {"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}},
      {"/dev/pts",
       "devpts",
       "devpts",
       {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
      {"/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
      {"/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}},
      {"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}},
      {"/run", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}},
  };
}

std::ptrdiff_t index_of(const std::vector<MountStep>& plan, const std::string& target) {
  auto it = std::find_if(plan.begin(), plan.end(),
                         [&](const MountStep& s) { return s.target == target; });
  REQUIRE(it != plan.end());
  return it - plan.begin();
}

std::string error_of(const std::vector<std::string>& options) {
  try {
    parse_mount_options(options, "bind on /x");
  } catch (const mrun::Error& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST_CASE("config mounts: ctr's defaults are made as given, in order, /run's tmpfs included") {
  ConfigMountInput input;
  input.mounts = ctr_default_mounts();
  auto plan = plan_config_mounts(input);
  for (std::size_t i = 0; i + 1 < input.mounts.size(); ++i) {
    REQUIRE(index_of(plan, input.mounts[i].destination) <
            index_of(plan, input.mounts[i + 1].destination));
  }
  const MountStep& run = plan[static_cast<std::size_t>(index_of(plan, "/run"))];
  REQUIRE(run.kind == StepKind::filesystem);
  REQUIRE(run.fstype == "tmpfs");
  REQUIRE(run.data == "mode=755,size=65536k");
  REQUIRE(run.flags == (MS_NOSUID | MS_STRICTATIME));
  const MountStep& shm = plan[static_cast<std::size_t>(index_of(plan, "/dev/shm"))];
  REQUIRE(shm.source == "shm");  // the config's own /dev/shm, not mrun's
  REQUIRE(shm.data == "mode=1777,size=65536k");
  const MountStep& sys = plan[static_cast<std::size_t>(index_of(plan, "/sys"))];
  REQUIRE(sys.flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY));
  REQUIRE(sys.fallback_bind == "/sys");
  const MountStep& pts = plan[static_cast<std::size_t>(index_of(plan, "/dev/pts"))];
  REQUIRE(pts.data == "newinstance,ptmxmode=0666,mode=0620,gid=5");
  // runc's additions: the default nodes and links, after the config's /dev.
  REQUIRE(index_of(plan, "/dev") < index_of(plan, "/dev/null"));
  REQUIRE(plan[static_cast<std::size_t>(index_of(plan, "/dev/ptmx"))].source == "pts/ptmx");
  REQUIRE(plan[static_cast<std::size_t>(index_of(plan, "/dev/fd"))].kind == StepKind::symlink);
}

TEST_CASE("config mounts: masked and read-only paths as given, any path, after the mounts") {
  ConfigMountInput input;
  input.mounts = ctr_default_mounts();
  input.masked_paths = {"/proc/kcore", "/opt/secret"};
  input.readonly_paths = {"/proc/sys", "/usr/local"};
  input.read_only_root = true;
  input.rootfs_propagation = "rslave";
  auto plan = plan_config_mounts(input);
  REQUIRE(plan[static_cast<std::size_t>(index_of(plan, "/opt/secret"))].kind == StepKind::mask);
  REQUIRE(plan[static_cast<std::size_t>(index_of(plan, "/usr/local"))].kind == StepKind::read_only);
  REQUIRE(index_of(plan, "/proc") < index_of(plan, "/proc/kcore"));
  REQUIRE(plan[plan.size() - 2].kind == StepKind::root_read_only);
  REQUIRE(plan.back().kind == StepKind::root_propagation);
  REQUIRE(plan.back().propagation == MS_SLAVE);
  REQUIRE(plan.back().propagation_recursive);
}

TEST_CASE("config mounts: bind options, the recursive attributes and propagation") {
  auto o = parse_mount_options({"rbind", "ro", "rnosuid", "rprivate"}, "bind on /x");
  REQUIRE(o.bind);
  REQUIRE(o.recursive);
  REQUIRE(o.attrs_set == MOUNT_ATTR_RDONLY);  // ro: the top mount only, as runc
  REQUIRE(o.recursive_attrs_set == MOUNT_ATTR_NOSUID);
  REQUIRE(o.propagation == MS_PRIVATE);
  REQUIRE(o.propagation_recursive);
  // The later option wins.
  auto rw = parse_mount_options({"bind", "ro", "rw"}, "bind on /x");
  REQUIRE(rw.attrs_set == 0);
  REQUIRE(rw.attrs_clear == MOUNT_ATTR_RDONLY);
  auto atime = parse_mount_options({"noatime", "relatime"}, "tmpfs on /x");
  REQUIRE((atime.attrs_set & MOUNT_ATTR__ATIME) == 0);
  REQUIRE((atime.attrs_clear & MOUNT_ATTR__ATIME) == MOUNT_ATTR__ATIME);
}

TEST_CASE("config mounts: what cannot be honoured is a clear error naming the option") {
  REQUIRE_THAT(error_of({"idmap"}), Catch::Contains("it is for a bind mount"));
  REQUIRE_THAT(error_of({"bind", "idmap=uids=0-1000-10"}),
               Catch::Contains("as the mount's uidMappings"));
  REQUIRE_THAT(error_of({"bind", "tmpcopyup"}), Catch::Contains("it is for a tmpfs, not a bind"));
  // A filesystem's options on a bind mean nothing there: ignored, as by runc and crun.
  REQUIRE(error_of({"bind", "mode=755", "size=1k"}).empty());
  auto bind = parse_mount_options({"rbind", "mode=755", "size=1k", "ro"}, "bind on /x");
  REQUIRE(bind.data.empty());
  REQUIRE(bind.ignored_on_bind == std::vector<std::string>{"mode=755", "size=1k"});
  REQUIRE(bind.attrs_set == MOUNT_ATTR_RDONLY);
  REQUIRE(error_of({"bind", "sync"}).empty());
  REQUIRE_THROWS_AS(parse_propagation("sideways"), mrun::Error);
}

TEST_CASE("config mounts: idmap and ridmap binds carry their mappings to the step") {
  ConfigMountInput input;
  input.mounts.push_back(
      {"/data", "bind", "/srv", {"rbind", "idmap"}, {{0, 1000, 1}}, {{0, 2000, 1}}});
  input.mounts.push_back({"/tree", "bind", "/srv", {"rbind", "ridmap"}, {}, {}});
  auto plan = plan_config_mounts(input);
  REQUIRE(plan[0].idmap);
  REQUIRE_FALSE(plan[0].idmap_recursive);
  REQUIRE(plan[0].idmap_uids == std::vector<mrun::userns::IdMapEntry>{{0, 1000, 1}});
  REQUIRE(plan[0].idmap_gids == std::vector<mrun::userns::IdMapEntry>{{0, 2000, 1}});
  REQUIRE(plan[1].idmap_recursive);
  REQUIRE(plan[1].idmap_uids.empty());  // the container's maps, filled in by the launcher
  REQUIRE(plan[0].premade_fd == -1);
}

TEST_CASE("config mounts: tmpcopyup on a tmpfs copies the image's files up; elsewhere refused") {
  ConfigMountInput input;
  input.mounts.push_back({"/run", "tmpfs", "tmpfs", {"nosuid", "tmpcopyup", "mode=755"}});
  auto plan = plan_config_mounts(input);
  REQUIRE(plan[0].copy_up);
  REQUIRE(plan[0].data == "mode=755");  // not handed to the filesystem
  input.mounts[0] = {"/proc", "proc", "proc", {"tmpcopyup"}};
  REQUIRE_THROWS_WITH(plan_config_mounts(input), Catch::Contains("it is for a tmpfs, not proc"));
}

TEST_CASE("config mounts: a bind over /proc is refused, a /dev bind keeps runc's nodes away") {
  ConfigMountInput input;
  input.mounts = {{"/proc", "bind", "/tmp", {"rbind"}}};
  REQUIRE_THROWS_AS(plan_config_mounts(input), mrun::Error);
  input.mounts = {{"/dev", "bind", "/dev", {"rbind"}}};
  auto plan = plan_config_mounts(input);
  REQUIRE(std::count_if(plan.begin(), plan.end(),
                        [](const MountStep& s) { return s.target == "/dev/null"; }) == 0);
}

TEST_CASE("config mounts: cgroup of either type is a fresh cgroup2, the host's when refused") {
  ConfigMountInput input;
  input.mounts = {{"/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "ro"}}};
  auto plan = plan_config_mounts(input);
  REQUIRE(plan[0].fstype == "cgroup2");
  REQUIRE(plan[0].fallback_bind == "/sys/fs/cgroup");
  REQUIRE((plan[0].flags & MS_RDONLY) != 0);
  // A fresh proc needs a PID namespace of the container's own; else the host's.
  input.mounts = {{"/proc", "proc", "proc", {}}};
  input.own_pid_namespace = false;
  plan = plan_config_mounts(input);
  REQUIRE(plan[0].fallback_bind == "/proc");
  REQUIRE_FALSE(plan[0].fallback_read_only);
}
