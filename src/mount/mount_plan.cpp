#include "mount/mount_plan.hpp"

#include <sys/mount.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::mount {

const std::vector<std::string>& default_device_nodes() {
  static const std::vector<std::string> nodes{"null", "zero", "full", "random", "urandom", "tty"};
  return nodes;
}

MountStep default_device_node(const std::string& name) {
  // Fixed by the kernel's devices.txt: mem devices on major 1, /dev/tty on 5:0.
  static const std::vector<std::pair<std::string, dev_t>> numbers{
      {"null", ::makedev(1, 3)},   {"zero", ::makedev(1, 5)},    {"full", ::makedev(1, 7)},
      {"random", ::makedev(1, 8)}, {"urandom", ::makedev(1, 9)}, {"tty", ::makedev(5, 0)},
  };
  MountStep step;
  step.kind = StepKind::device_node;
  step.target = "/dev/" + name;
  step.source = "/dev/" + name;
  step.mode = 0666;
  for (const auto& [n, dev] : numbers) {
    if (n == name) step.device = dev;
  }
  if (step.device == 0) throw Error("no default device node " + name, EINVAL);
  return step;
}

const std::vector<std::string>& default_masked_paths() {
  static const std::vector<std::string> paths{
      "/proc/acpi",       "/proc/kcore",       "/proc/keys",        "/proc/latency_stats",
      "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
      "/sys/firmware",    "/sys/fs/selinux",   "/sys/dev/block",    "/sys/devices/virtual/powercap",
  };
  return paths;
}

const std::vector<std::string>& default_read_only_paths() {
  static const std::vector<std::string> paths{"/proc/asound", "/proc/bus", "/proc/fs",
                                              "/proc/irq",    "/proc/sys", "/proc/sysrq-trigger"};
  return paths;
}

MountStep symlink_step(std::string target, std::string points_to) {
  MountStep step;
  step.kind = StepKind::symlink;
  step.target = std::move(target);
  step.source = std::move(points_to);
  return step;
}

void add_default_device_nodes(std::vector<MountStep>& plan, bool mknod) {
  for (const auto& node : default_device_nodes()) {
    if (mknod) {
      plan.push_back(default_device_node(node));
      continue;
    }
    MountStep bind;
    bind.kind = StepKind::bind;
    bind.source = "/dev/" + node;
    bind.target = "/dev/" + node;
    bind.target_is_file = true;
    // Read-only: the node still reads and writes (a device ignores the mount's ro), but
    // no chmod or chown reaches the host's inode, even where the container's root is
    // the node's owner (--userns single under root).
    bind.read_only = true;
    plan.push_back(bind);
  }
}

void add_masked_and_read_only(std::vector<MountStep>& plan, const std::vector<std::string>& masked,
                              const std::vector<std::string>& read_only) {
  for (const auto& path : masked) {
    MountStep mask;
    mask.kind = StepKind::mask;
    mask.target = path;
    mask.optional = true;
    plan.push_back(mask);
  }
  for (const auto& path : read_only) {
    MountStep ro;
    ro.kind = StepKind::read_only;
    ro.target = path;
    ro.optional = true;
    plan.push_back(ro);
  }
}

void check_volume_destination(const VolumeSpec& volume) {
  // Files lxcfs serves over procfs's own (as runc allows them); nothing else of /proc.
  static const std::vector<std::string> lxcfs_files{
      "/proc/cpuinfo", "/proc/diskstats", "/proc/meminfo", "/proc/stat",
      "/proc/swaps",   "/proc/uptime",    "/proc/loadavg", "/proc/slabinfo"};
  // The destination as openat2(RESOLVE_IN_ROOT) will resolve it at apply time: "//",
  // "." and ".." (which stops at the root) taken out. Comparing the text as given let
  // "//proc", "/./proc" or "/tmp/../proc" through (found by tests/fuzz/fuzz_volume.cpp).
  std::vector<std::string> parts;
  for (const auto& part : split(volume.destination, '/')) {
    if (part.empty() || part == ".") continue;
    if (part != "..") {
      parts.push_back(part);
    } else if (!parts.empty()) {
      parts.pop_back();
    }
  }
  std::string dst;
  for (const auto& part : parts) dst += "/" + part;
  if (dst != "/proc" && !starts_with(dst, "/proc/")) return;
  if (std::find(lxcfs_files.begin(), lxcfs_files.end(), dst) != lxcfs_files.end()) return;
  // CVE-2019-16884: a volume over /proc (or a part of it) hides the container's real
  // procfs, and every later step that trusts /proc then reads or writes the volume.
  throw Error(
      "volume " + volume.source + ":" + volume.destination + " covers the container's /proc",
      EINVAL,
      "mount it somewhere else; only lxcfs-style files (/proc/meminfo, /proc/cpuinfo, "
      "...) may be bound over /proc");
}

VolumeSpec parse_volume(const std::string& spec) {
  auto parts = split(spec, ':');
  const std::string fix = "use -v SRC:DST[:ro|rw] with absolute paths";
  if (parts.size() < 2 || parts.size() > 3) {
    throw Error("volume \"" + spec + "\" is malformed", EINVAL, fix);
  }
  VolumeSpec volume;
  volume.source = parts[0];
  volume.destination = parts[1];
  if (parts.size() == 3) {
    if (parts[2] == "ro") {
      volume.read_only = true;
    } else if (parts[2] != "rw") {
      throw Error("volume \"" + spec + "\" has unknown option \"" + parts[2] + "\"", EINVAL, fix);
    }
  }
  if (volume.source.empty() || volume.source.front() != '/' || volume.destination.empty() ||
      volume.destination.front() != '/') {
    throw Error("volume \"" + spec + "\": both paths must be absolute", EINVAL, fix);
  }
  if (volume.destination == "/") {
    throw Error("volume \"" + spec + "\": cannot mount over the container root", EINVAL, fix);
  }
  return volume;
}

}  // namespace mrun::mount
