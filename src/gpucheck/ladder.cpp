#include "gpucheck/ladder.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "gpu/version.hpp"
#include "gpu/xid.hpp"

namespace mrun::gpucheck {

namespace {

std::string octal(unsigned mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
  return buf;
}

std::string majmin(unsigned major, unsigned minor) {
  return std::to_string(major) + ":" + std::to_string(minor);
}

const char* udev_fix =
    "install helpers/70-fakegpu.rules in /etc/udev/rules.d and run `udevadm trigger "
    "--subsystem-match=fakegpu` (by hand: chgrp fakegpu /dev/fakegpu*; chmod 0660 "
    "/dev/fakegpu*)";

bool helper_usable(const HelperFact& h) {
  return !h.path.empty() && h.setuid_root && !h.nosuid_mount && h.policy_present &&
         h.policy_error.empty() && h.policy_allows;
}

Rung module_rung(const DoctorFacts& f) {
  Rung r{doctor_exit::module, "fakegpu module loaded"};
  r.ok = f.module_loaded && f.major.has_value();
  r.detail = r.ok ? "character major " + std::to_string(*f.major)
                  : "load the driver: `modprobe fakegpu` (from the source tree: `insmod "
                    "kmod/fakegpu.ko`, built by kmod/build.sh)";
  return r;
}

Rung nodes_rung(const DoctorFacts& f) {
  Rung r{doctor_exit::nodes, "device nodes present, major:minor right"};
  auto has = [&](const std::string& path) {
    return std::any_of(f.nodes.begin(), f.nodes.end(),
                       [&](const NodeFact& n) { return n.path == path && n.exists; });
  };
  for (const char* path : {"/dev/fakegpu0", "/dev/fakegpuctl"}) {
    if (!has(path)) {
      r.detail = std::string(path) +
                 " is missing: `udevadm trigger --subsystem-match=fakegpu` (or mknod it with "
                 "the numbers in /sys/class/fakegpu/*/dev)";
      return r;
    }
  }
  std::string seen;
  for (const auto& n : f.nodes) {
    if (!n.is_char) {
      r.detail = n.path + " is not a character device: `rm " + n.path +
                 "; udevadm trigger --subsystem-match=fakegpu`";
      return r;
    }
    auto want = n.sysfs_dev ? *n.sysfs_dev
                            : std::pair<unsigned, unsigned>{f.major.value_or(n.major), n.minor};
    if (n.major != want.first || n.minor != want.second) {
      r.detail = n.path + " is c " + majmin(n.major, n.minor) + ", the driver's is c " +
                 majmin(want.first, want.second) + ": `rm " + n.path +
                 "; udevadm trigger --subsystem-match=fakegpu`";
      return r;
    }
    seen += (seen.empty() ? "" : ", ") + n.path + " c " + majmin(n.major, n.minor);
  }
  r.ok = true;
  r.detail = seen;
  return r;
}

Rung access_rung(const DoctorFacts& f) {
  Rung r{doctor_exit::access, "caller may open the nodes (mode, groups, ACL)"};
  if (f.uid == 0) {
    r.ok = true;
    r.detail = "root";
    return r;
  }
  const NodeFact* denied = nullptr;
  for (const auto& n : f.nodes) {
    if (!n.caller_can_open) {
      denied = &n;
      break;
    }
  }
  if (!denied) {
    r.ok = true;
    r.detail = "read-write as " + f.user +
               " (rootless containers need --keep-groups to keep "
               "a group that grants it)";
    return r;
  }
  const std::string seen =
      denied->path + " is " + denied->owner + ":" + denied->group + " " + octal(denied->mode);
  if (helper_usable(f.helper)) {
    r.ok = true;
    r.detail = seen + ", not open to " + f.user + "; mrun-gpu-helper grants it";
    return r;
  }
  if (denied->group == "fakegpu" && (denied->mode & 060) == 060) {
    r.detail = seen + ": " +
               (f.in_group_db ? f.user +
                                    " is in group fakegpu but not in this session: log in "
                                    "again (or `newgrp fakegpu`)"
                              : "`usermod -aG fakegpu " + f.user + "`, then log in again");
  } else {
    r.detail = seen + ": give the nodes group fakegpu, mode 0660: " + std::string(udev_fix) +
               "; or let mrun-gpu-helper grant them (next rung)";
  }
  return r;
}

Rung helper_rung(const DoctorFacts& f) {
  Rung r{doctor_exit::helper, "mrun-gpu-helper installed setuid, policy allowing the caller"};
  const auto& h = f.helper;
  if (f.uid == 0) {
    r.ok = true;
    r.detail = "not needed as root (mrun attaches the device filter itself)";
    return r;
  }
  const std::string why =
      " (rootless, only the helper can attach the device filter: unprivileged BPF is off)";
  if (h.path.empty()) {
    r.detail =
        "not installed: `meson install` puts it in LIBEXECDIR/mrun mode 4755, or set "
        "MRUN_GPU_HELPER to a setuid-root copy" +
        why;
  } else if (!h.setuid_root) {
    r.detail = h.path + " is not setuid root: `chown root:root " + h.path + "; chmod 4755 " +
               h.path + "`" + why;
  } else if (h.nosuid_mount) {
    r.detail =
        h.path + " is on a nosuid mount, where setuid is ignored: install it elsewhere" + why;
  } else if (!h.policy_present) {
    r.detail = "no policy " + h.policy_path +
               ": write one (root-owned, 0644, in a directory only root can write), e.g. "
               "`/dev/fakegpu* user:" +
               f.user + "` (mrun-gpu-helper(8))";
  } else if (!h.policy_error.empty()) {
    // The helper's loader's own words (they name the file and the fix): the helper
    // refuses every request with them.
    r.detail = h.policy_error;
  } else if (!h.policy_allows) {
    r.detail = h.policy_path + " does not allow " + f.user + " " + h.not_allowed +
               ": add `user:" + f.user + "` (or one of its groups) to the rule for it";
  } else {
    r.ok = true;
    r.detail = h.path + ", policy allows " + f.user;
  }
  return r;
}

Rung subids_rung(const DoctorFacts& f) {
  Rung r{doctor_exit::subids, "subordinate ids for the user namespace"};
  if (f.uid == 0) {
    r.ok = true;
    r.detail = "not needed as root";
  } else if (!f.subuid || !f.subgid) {
    r.detail = std::string("no ") + (!f.subuid ? "/etc/subuid" : "/etc/subgid") + " entry for " +
               f.user + ": `" + f.add_subids_command + "`";
  } else if (!f.newuidmap) {
    r.detail = "newuidmap/newgidmap not installed: `apt-get install uidmap`";
  } else {
    r.ok = true;
    r.detail = "/etc/subuid and /etc/subgid have " + f.user + ", newuidmap installed";
  }
  return r;
}

// Xid events since the module was loaded: each named, with what it means and the fix.
Rung xid_rung(const DoctorFacts& f) {
  Rung r{doctor_exit::xid, "no Xid events in the kernel log"};
  if (!f.kernel_log_readable) {
    r.ok = true;
    r.detail =
        "the kernel log is not readable (kernel.dmesg_restrict): run the doctor as root "
        "to see Xid events";
    return r;
  }
  if (f.xids.empty()) {
    r.ok = true;
    r.detail = "none since fakegpu was loaded";
    return r;
  }
  r.name = std::to_string(f.xids.size()) + " Xid event" + (f.xids.size() > 1 ? "s" : "") +
           " since fakegpu was loaded";
  std::string detail;
  for (const auto& e : f.xids) {
    if (!detail.empty()) detail += "\n     ";
    detail += fakegpu::xid_label(e.xid) + ", pid " + std::to_string(e.pid) + " (" + e.comm +
              "), ctx " + std::to_string(e.ctx) + ": " + e.text;
    if (const auto* x = fakegpu::find_xid(e.xid))
      detail +=
          "\n       means: " + std::string(x->meaning) + "\n       fix: " + std::string(x->fix);
  }
  r.detail = detail;
  return r;
}

std::vector<Rung> container_rungs(const ContainerFact& c, const DoctorFacts& f) {
  std::vector<Rung> rungs;
  Rung running{doctor_exit::container_running, "container " + c.name + " running"};
  running.ok = c.running;
  running.detail = c.running ? "pid " + std::to_string(c.pid)
                             : "it is not running: start it (`mrun list` shows what exists)";
  rungs.push_back(running);
  if (!c.running) return rungs;

  Rung visible{doctor_exit::node_visible, "node visible in the container"};
  // A GPU and the control node; not every GPU (--gpu 0 injects one on purpose).
  bool ctl = false, gpu = false;
  for (const auto& n : c.nodes_visible) {
    (n == "/dev/fakegpuctl" ? ctl : gpu) = true;
    visible.detail += (visible.detail.empty() ? "" : ", ") + n;
  }
  visible.ok = ctl && gpu;
  if (!visible.ok) {
    visible.detail = std::string(!gpu ? "no /dev/fakegpuN" : "no /dev/fakegpuctl") +
                     " in its /dev: run it with --gpu (or --device /dev/fakegpuN --device "
                     "/dev/fakegpuctl)";
  }
  rungs.push_back(visible);
  if (!visible.ok) return rungs;

  Rung groups{doctor_exit::groups_kept, "groups kept (Groups: in its status)"};
  bool in_groups = std::find(c.groups.begin(), c.groups.end(), c.node_gid) != c.groups.end();
  if (!c.rootless || c.uid == 0) {
    groups.ok = true;
    groups.detail = "rootful: root";
  } else if (c.node_uid == c.uid && (c.node_mode & 0600) == 0600) {
    groups.ok = true;
    groups.detail = "the node is its own (made usable by mrun-gpu-helper)";
  } else if (in_groups && (c.node_mode & 060) == 060) {
    groups.ok = true;
    groups.detail = "group " + std::to_string(c.node_gid) + " kept";
  } else if ((c.node_mode & 06) == 06) {
    groups.ok = true;
    groups.detail = "the node is open to all";
  } else {
    groups.detail = "its /dev/fakegpu0 is group " + std::to_string(c.node_gid) + " mode " +
                    octal(c.node_mode) +
                    ", not among its groups: run it with --keep-groups (mrun drops supplementary "
                    "groups by default)";
  }
  rungs.push_back(groups);
  if (!groups.ok) return rungs;

  Rung filter{doctor_exit::device_filter, "device filter attached"};
  if (c.device_filter == "bpf" || c.device_filter == "helper") {
    filter.ok = true;
    filter.detail = c.device_filter;
  } else if (c.device_filter.empty()) {
    filter.detail =
        "its state has no device_filter: it was started by an mrun without the "
        "device filter; restart it with this one";
  } else if (c.device_filter.find("--device-filter=off") != std::string::npos) {
    filter.detail = c.device_filter + ": restart it without --device-filter=off";
  } else {
    filter.detail = c.device_filter + ": " +
                    (c.rootless ? "install mrun-gpu-helper setuid with a policy allowing " +
                                      f.user + " and start the container from a delegated cgroup"
                                : std::string("run it with a cgroup (not --cgroups disabled) "
                                              "and --device-filter auto"));
  }
  rungs.push_back(filter);
  if (!filter.ok) return rungs;

  // What its loader would load, not only whether --gpu injected something: an image's
  // own copy earlier on LD_LIBRARY_PATH wins over the injected one.
  Rung libs{doctor_exit::libs, "user-space library found"};
  const std::string injected = "/opt/fakegpu/lib/libfakegpu.so.1";
  libs.ok = !c.library.empty() || (!c.library_readable && c.libs_injected);
  if (!c.library.empty())
    libs.detail = c.library + (c.library == injected ? " (the host's, injected by --gpu)"
                                                     : " (the image's own copy, not the host's)");
  else if (libs.ok)
    libs.detail = injected +
                  " (injected; its root is not readable here: run the doctor as root "
                  "to check which copy its loader finds)";
  else
    libs.detail =
        "no libfakegpu.so.1 on its LD_LIBRARY_PATH or in the standard directories: run "
        "it with --gpu (it binds the host's libfakegpu read-only)";
  rungs.push_back(libs);
  if (!libs.ok || c.library.empty()) return rungs;

  Rung version{doctor_exit::library_version, "its libfakegpu serves the host's driver"};
  const std::uint32_t lib = c.library_version.value_or(1u << 16);
  const std::uint32_t drv = f.driver_version.value_or(1u << 16);
  version.ok = lib <= drv;
  const std::string versions = "libfakegpu " + fakegpu::version_string(lib) + " (" + c.library +
                               "), driver " + fakegpu::version_string(drv);
  if (version.ok)
    version.detail = versions;
  else
    version.detail = "driver version is insufficient for library version: " + versions +
                     ": the library needs a driver >= " + fakegpu::version_string(lib) +
                     ". Use the host's library - run it with --gpu, which puts /opt/fakegpu/lib "
                     "first on LD_LIBRARY_PATH (and drop the image's copy, or its "
                     "LD_LIBRARY_PATH entry) - or upgrade the host's driver";
  rungs.push_back(version);
  return rungs;
}

}  // namespace

std::vector<Rung> climb(const DoctorFacts& facts) {
  std::vector<Rung> rungs;
  for (auto rung : {module_rung, nodes_rung, access_rung, helper_rung, subids_rung, xid_rung}) {
    rungs.push_back(rung(facts));
    if (!rungs.back().ok) return rungs;
  }
  if (facts.container) {
    for (auto& r : container_rungs(*facts.container, facts)) rungs.push_back(r);
  }
  return rungs;
}

std::vector<XidEvent> parse_xid_events(const std::string& log) {
  std::vector<XidEvent> events;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    // A load ("fakegpu: 2 devices, major ...") starts a new module's history.
    if (line.find("fakegpu: ") != std::string::npos &&
        line.find(" devices, major ") != std::string::npos) {
      events.clear();
      continue;
    }
    const auto at = line.find("fakegpu: Xid ");
    if (at == std::string::npos) continue;
    XidEvent e;
    int pid = 0;
    char comm[64] = "";
    int used = 0;
    const std::string rest = line.substr(at + 13);
    if (std::sscanf(rest.c_str(), "%u, pid %d (%63[^)]), ctx %u: %n", &e.xid, &pid, comm, &e.ctx,
                    &used) < 4 ||
        used == 0)
      continue;
    e.pid = pid;
    e.comm = comm;
    e.text = rest.substr(static_cast<std::size_t>(used));
    events.push_back(std::move(e));
  }
  return events;
}

int doctor_status(const std::vector<Rung>& rungs) {
  for (const auto& r : rungs)
    if (!r.ok) return r.exit_status;
  return 0;
}

std::string render_rungs(const std::vector<Rung>& rungs) {
  std::ostringstream out;
  for (const auto& r : rungs) {
    if (r.ok)
      out << "ok   " << r.name << ": " << r.detail << "\n";
    else
      out << "FAIL " << r.name << "\n     fix: " << r.detail << "\n";
  }
  return out.str();
}

}  // namespace mrun::gpucheck
