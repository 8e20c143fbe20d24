#include "mount/config_mounts.hpp"

#include <linux/mount.h>
#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::mount {

namespace {

struct AttrOption {
  std::uint64_t set = 0, clear = 0;
  bool recursive = false;
};

// mount(8)'s names, and the recursive forms (util-linux's "rro", runc's and crun's
// "rnosuid", ...) that apply to every mount below a bind as well.
const std::map<std::string, AttrOption>& attr_options() {
  static const std::map<std::string, AttrOption> table = [] {
    std::map<std::string, AttrOption> t{
        {"ro", {MOUNT_ATTR_RDONLY, 0}},
        {"rw", {0, MOUNT_ATTR_RDONLY}},
        {"nosuid", {MOUNT_ATTR_NOSUID, 0}},
        {"suid", {0, MOUNT_ATTR_NOSUID}},
        {"nodev", {MOUNT_ATTR_NODEV, 0}},
        {"dev", {0, MOUNT_ATTR_NODEV}},
        {"noexec", {MOUNT_ATTR_NOEXEC, 0}},
        {"exec", {0, MOUNT_ATTR_NOEXEC}},
        {"nodiratime", {MOUNT_ATTR_NODIRATIME, 0}},
        {"diratime", {0, MOUNT_ATTR_NODIRATIME}},
        {"noatime", {MOUNT_ATTR_NOATIME, 0}},
        {"strictatime", {MOUNT_ATTR_STRICTATIME, 0}},
        // relatime is the atime field's zero: clearing the field sets it.
        {"relatime", {0, MOUNT_ATTR__ATIME}},
        {"atime", {0, MOUNT_ATTR__ATIME}},
        {"norelatime", {MOUNT_ATTR_STRICTATIME, 0}},
        {"nostrictatime", {0, MOUNT_ATTR__ATIME}},
    };
    std::map<std::string, AttrOption> all = t;
    for (const auto& [name, option] : t) all["r" + name] = {option.set, option.clear, true};
    return all;
  }();
  return table;
}

const std::map<std::string, std::pair<std::uint64_t, bool>>& propagation_options() {
  static const std::map<std::string, std::pair<std::uint64_t, bool>> table{
      {"private", {MS_PRIVATE, false}},       {"rprivate", {MS_PRIVATE, true}},
      {"shared", {MS_SHARED, false}},         {"rshared", {MS_SHARED, true}},
      {"slave", {MS_SLAVE, false}},           {"rslave", {MS_SLAVE, true}},
      {"unbindable", {MS_UNBINDABLE, false}}, {"runbindable", {MS_UNBINDABLE, true}},
  };
  return table;
}

// Superblock flags fsconfig knows by name: passed to a fresh filesystem as they are.
bool superblock_flag(const std::string& option) {
  static const std::vector<std::string> flags{"sync", "dirsync", "mand", "lazytime", "silent"};
  return std::find(flags.begin(), flags.end(), option) != flags.end();
}

// The defaults those flags have: nothing to ask for.
bool default_flag(const std::string& option) {
  static const std::vector<std::string> flags{"async", "nomand",   "nolazytime",
                                              "loud",  "defaults", "notmpcopyup"};
  return std::find(flags.begin(), flags.end(), option) != flags.end();
}

Error cannot(const std::string& what, const std::string& option, const std::string& why) {
  return Error("config.json: mounts (" + what + "): option \"" + option + "\": " + why, ENOTSUP,
               "remove the option from config.json");
}

MountStep fs_step(const ConfigMount& m, const MountOptions& o, const std::string& fstype) {
  MountStep step;
  step.kind = StepKind::filesystem;
  step.target = m.destination;
  step.fstype = fstype;
  step.source = m.source.empty() ? fstype : m.source;
  step.data = o.data;
  // A fresh filesystem takes its attributes at fsmount; `flags` carries them there.
  if (o.attrs_set & MOUNT_ATTR_RDONLY) step.flags |= MS_RDONLY;
  if (o.attrs_set & MOUNT_ATTR_NOSUID) step.flags |= MS_NOSUID;
  if (o.attrs_set & MOUNT_ATTR_NODEV) step.flags |= MS_NODEV;
  if (o.attrs_set & MOUNT_ATTR_NOEXEC) step.flags |= MS_NOEXEC;
  if (o.attrs_set & MOUNT_ATTR_NODIRATIME) step.flags |= MS_NODIRATIME;
  if ((o.attrs_set & MOUNT_ATTR__ATIME) == MOUNT_ATTR_STRICTATIME) step.flags |= MS_STRICTATIME;
  if ((o.attrs_set & MOUNT_ATTR__ATIME) == MOUNT_ATTR_NOATIME) step.flags |= MS_NOATIME;
  step.propagation = o.propagation;
  step.propagation_recursive = o.propagation_recursive;
  step.copy_up = o.copy_up;
  return step;
}

}  // namespace

std::vector<std::string> known_mount_options() {
  std::vector<std::string> names{"bind", "rbind"};
  for (const auto& entry : attr_options()) names.push_back(entry.first);
  for (const auto& entry : propagation_options()) names.push_back(entry.first);
  for (const char* flag : {"sync", "dirsync", "mand", "lazytime", "silent", "async", "nomand",
                           "nolazytime", "loud", "defaults", "notmpcopyup", "tmpcopyup"}) {
    names.emplace_back(flag);
  }
  return names;
}

MountOptions parse_mount_options(const std::vector<std::string>& options, const std::string& what) {
  MountOptions o;
  std::vector<std::string> data;
  for (const auto& option : options) {
    if (option == "bind" || option == "rbind") {
      o.bind = true;
      o.recursive = o.recursive || option == "rbind";
    } else if (auto a = attr_options().find(option); a != attr_options().end()) {
      auto& set = a->second.recursive ? o.recursive_attrs_set : o.attrs_set;
      auto& clear = a->second.recursive ? o.recursive_attrs_clear : o.attrs_clear;
      // The later option wins, as mount(8) reads them: "ro,rw" is rw.
      set = (set & ~a->second.clear) | a->second.set;
      clear = (clear & ~a->second.set) | a->second.clear;
      if (a->second.set & MOUNT_ATTR__ATIME) set = (set & ~MOUNT_ATTR__ATIME) | a->second.set;
    } else if (auto p = propagation_options().find(option); p != propagation_options().end()) {
      o.propagation = p->second.first;
      o.propagation_recursive = p->second.second;
    } else if (option == "idmap" || option == "ridmap") {
      o.idmap = true;
      o.idmap_recursive = option == "ridmap";
    } else if (starts_with(option, "idmap=") || starts_with(option, "ridmap=")) {
      throw cannot(what, option,
                   "give the mappings as the mount's uidMappings and gidMappings instead");
    } else if (option == "tmpcopyup") {
      o.copy_up = true;
    } else if (default_flag(option)) {
      // Nothing to ask for: the kernel's default.
    } else {
      data.push_back(option);
    }
  }
  if (o.copy_up && o.bind) throw cannot(what, "tmpcopyup", "it is for a tmpfs, not a bind");
  if (o.idmap && !o.bind) {
    throw cannot(what, o.idmap_recursive ? "ridmap" : "idmap", "it is for a bind mount");
  }
  for (const auto& d : data) {
    // A bind makes no filesystem, so a filesystem's own option ("mode=755", "size=1k",
    // as engines and test suites write them) has nothing to apply to: the kernel ignores
    // mount(2)'s data with MS_BIND, and runc and crun pass such options without effect.
    if (o.bind) {
      if (!superblock_flag(d)) o.ignored_on_bind.push_back(d);
      continue;
    }
    o.data += (o.data.empty() ? "" : ",") + d;
  }
  return o;
}

std::pair<std::uint64_t, bool> parse_propagation(const std::string& value) {
  auto it = propagation_options().find(value);
  if (it == propagation_options().end()) {
    throw Error("config.json: linux.rootfsPropagation: \"" + value + "\" is not a propagation",
                EINVAL,
                "use one of private, rprivate, shared, rshared, slave, rslave, "
                "unbindable, runbindable");
  }
  return it->second;
}

std::vector<MountStep> plan_config_mounts(const ConfigMountInput& input) {
  std::vector<MountStep> plan;
  bool dev_is_bind = false;
  for (const auto& m : input.mounts) {
    const std::string what = m.type + " on " + m.destination;
    MountOptions o = parse_mount_options(m.options, what);
    if (m.type == "bind" || o.bind) {
      if (m.destination == "/dev") dev_is_bind = true;
      // CVE-2019-16884: no bind over the container's /proc ("/proc", "//proc",
      // "/tmp/../proc" alike); lxcfs-style files pass.
      check_volume_destination({m.source, m.destination, false, false});
      MountStep step;
      step.kind = StepKind::bind;
      step.source = m.source;
      step.target = m.destination;
      step.recursive = o.recursive;
      step.attrs_set = o.attrs_set;
      step.attrs_clear = o.attrs_clear;
      step.recursive_attrs_set = o.recursive_attrs_set;
      step.recursive_attrs_clear = o.recursive_attrs_clear;
      step.propagation = o.propagation;
      step.propagation_recursive = o.propagation_recursive;
      step.idmap = o.idmap;
      step.idmap_recursive = o.idmap_recursive;
      step.idmap_uids = m.uid_mappings;
      step.idmap_gids = m.gid_mappings;
      plan.push_back(step);
      continue;
    }
    if (m.type == "cgroup" || m.type == "cgroup2") {
      // cgroup2 always: on a v1 or hybrid host too, where a v1 tree of the container's
      // own is not mrun's to build (see mrun-oci(1)); where the kernel refuses a fresh
      // one (no cgroup namespace of the container's own, rootless), the host's
      // /sys/fs/cgroup read-only.
      MountStep step = fs_step(m, o, "cgroup2");
      step.source = "cgroup2";
      step.data.clear();  // v1 controller names mean nothing to cgroup2
      step.fallback_bind = "/sys/fs/cgroup";
      plan.push_back(step);
      continue;
    }
    if (m.type.empty()) {
      throw Error("config.json: mounts (" + m.destination + "): no type and no bind option", EINVAL,
                  "give \"type\" (tmpfs, proc, ...) or a \"bind\" option");
    }
    if (o.copy_up && m.type != "tmpfs") {
      throw cannot(what, "tmpcopyup", "it is for a tmpfs, not " + m.type);
    }
    MountStep step = fs_step(m, o, m.type);
    if (m.type == "sysfs") step.fallback_bind = "/sys";
    if (m.type == "mqueue" && !input.own_ipc_namespace) {
      // mqueue belongs to the IPC namespace: the caller's is its user namespace's.
      step.fallback_bind = "/dev/mqueue";
      step.fallback_read_only = false;
    }
    if (m.type == "proc" && !input.own_pid_namespace) {
      step.fallback_bind = "/proc";
      step.fallback_read_only = false;
    }
    plan.push_back(step);
  }

  plan.insert(plan.end(), input.injected.begin(), input.injected.end());

  // What runc and crun add to every container: the default nodes in /dev (unless the
  // config binds a /dev of its own) and the links a process expects there.
  if (!dev_is_bind) {
    add_default_device_nodes(plan, input.mknod_default_devices);
    const std::pair<const char*, const char*> links[] = {
        {"/dev/fd", "/proc/self/fd"},       {"/dev/stdin", "/proc/self/fd/0"},
        {"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"},
        {"/dev/ptmx", "pts/ptmx"},          {"/dev/core", "/proc/kcore"},
    };
    for (const auto& [link, to] : links) plan.push_back(symlink_step(link, to));
  }
  plan.insert(plan.end(), input.devices.begin(), input.devices.end());

  add_masked_and_read_only(plan, input.masked_paths, input.readonly_paths);
  if (input.read_only_root) {
    MountStep ro;
    ro.kind = StepKind::root_read_only;
    ro.target = "/";
    plan.push_back(ro);
  }
  if (!input.rootfs_propagation.empty()) {
    auto [propagation, recursive] = parse_propagation(input.rootfs_propagation);
    MountStep step;
    step.kind = StepKind::root_propagation;
    step.target = "/";
    step.propagation = propagation;
    step.propagation_recursive = recursive;
    plan.push_back(step);
  }
  return plan;
}

void drop_unmapped_devpts_gid(std::vector<MountStep>& plan,
                              const std::function<bool(std::uint32_t gid)>& mapped) {
  for (auto& step : plan) {
    if (step.kind != StepKind::filesystem || step.fstype != "devpts") continue;
    std::vector<std::string> kept;
    for (const auto& option : split(step.data, ',')) {
      if (starts_with(option, "gid=")) {
        auto gid = parse_u64(option.substr(4));
        if (gid && *gid <= 0xffffffffULL && !mapped(static_cast<std::uint32_t>(*gid))) continue;
      }
      kept.push_back(option);
    }
    step.data = join(kept, ",");
  }
}

}  // namespace mrun::mount
