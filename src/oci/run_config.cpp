#include "oci/run_config.hpp"

#include <linux/capability.h>

#include <cerrno>

#include "base/error.hpp"
#include "mount/mount_plan.hpp"

namespace mrun::oci {

namespace {

Mount mount_entry(std::string destination, std::string type, std::string source,
                  std::vector<std::string> options) {
  return Mount{std::move(destination), std::move(type), std::move(source), std::move(options)};
}

std::vector<std::string> names_of(security::CapMask mask) {
  std::vector<std::string> names;
  for (int cap = 0; cap < 64; ++cap) {
    if (mask & security::cap_bit(cap)) names.push_back(security::capability_name(cap));
  }
  return names;
}

// podman's rules for --cap-add, --cap-drop and --privileged (security/capabilities.hpp),
// written out as the five sets, which the launcher then takes exactly as given.
Capabilities capability_sets(const RunRequest& request, const RunPolicy& policy) {
  security::CapabilityRequest caps;
  caps.defaults = policy.default_caps;
  // Raw sockets on the host's own network namespace could spoof the host's traffic: the
  // default set keeps CAP_NET_RAW for a network of the container's own (policy/caps.conf).
  if (policy.rootful && request.network == runtime::NetworkMode::host) {
    caps.defaults &= ~security::cap_bit(CAP_NET_RAW);
  }
  caps.all = policy.all_caps;
  caps.add = request.security.cap_add;
  caps.drop = request.security.cap_drop;
  caps.privileged = request.security.privileged;
  caps.root_user = request.user.uid == 0;
  const security::CapabilityPlan plan = security::plan_capabilities(caps);
  return Capabilities{names_of(plan.bounding), names_of(plan.effective), names_of(plan.inheritable),
                      names_of(plan.permitted), names_of(plan.ambient)};
}

// --memory and friends as linux.resources, the numbers cgroup::to_resources chose.
nlohmann::json resources_json(const cgroup::Resources& r) {
  nlohmann::json j = nlohmann::json::object();
  if (r.memory.limit) j["memory"]["limit"] = *r.memory.limit;
  if (r.memory.swap) j["memory"]["swap"] = *r.memory.swap;
  if (r.pids_limit) j["pids"]["limit"] = *r.pids_limit;
  if (r.cpu.quota) j["cpu"]["quota"] = *r.cpu.quota;
  if (r.cpu.period) j["cpu"]["period"] = *r.cpu.period;
  return j;
}

}  // namespace

std::vector<Mount> run_default_mounts() {
  // runc's and podman's defaults, so that `mrun run` and an engine's config see the same
  // /dev and /proc. Where the kernel refuses a fresh sysfs (a network namespace that
  // is not the container user namespace's: --network host rootless) or cgroup2 (no
  // cgroup namespace of its own), the launcher binds the host's read-only instead
  // (mount/config_mounts.hpp); devpts' gid=5 is dropped where gid 5 is not mapped.
  return {
      mount_entry("/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}),
      mount_entry("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}),
      mount_entry("/dev/pts", "devpts", "devpts",
                  {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}),
      mount_entry("/dev/shm", "tmpfs", "shm",
                  {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}),
      mount_entry("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}),
      mount_entry("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}),
      mount_entry("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "ro"}),
  };
}

RunConfig build_run_config(const RunRequest& request, const RunPolicy& policy) {
  RunConfig out;
  Spec& spec = out.spec;
  spec.oci_version = spec_version;

  Process p;
  p.terminal = request.tty;
  p.args = request.args;
  p.env = request.env;
  p.cwd = request.workdir;
  p.user.uid = request.user.uid;
  p.user.gid = request.user.gid;
  p.user.additional_gids.assign(request.user.additional_gids.begin(),
                                request.user.additional_gids.end());
  p.capabilities = capability_sets(request, policy);
  p.no_new_privileges = request.security.no_new_privileges;
  spec.process = p;
  spec.root = Root{request.rootfs, request.read_only};
  spec.hostname = request.hostname.empty() ? request.name : request.hostname;

  std::vector<Mount> mounts = run_default_mounts();
  for (const auto& v : request.volumes) {
    mount::check_volume_destination({v.source, v.destination, v.read_only, false});
    // rro: read-only all the way down, the mounts under the source included.
    std::vector<std::string> options{"rbind"};
    if (v.read_only) options.emplace_back("rro");
    mounts.push_back(mount_entry(v.destination, "bind", v.source, std::move(options)));
  }
  spec.mounts = std::move(mounts);
  if (request.keep_groups) {
    spec.annotations = std::map<std::string, std::string>{{"run.oci.keep_original_groups", "1"}};
  }

  Linux l;
  l.namespaces = {{"pid", {}}, {"ipc", {}}, {"uts", {}}, {"mount", {}}, {"cgroup", {}}};
  if (request.network != runtime::NetworkMode::host) l.namespaces.push_back({"network", {}});
  // Rootful runs in the host's user namespace unless --userns single asks for one.
  if (!policy.rootful || request.additions.userns == runtime::UsernsMode::single) {
    l.namespaces.push_back({"user", {}});
  }
  // Ping by default, as podman does it (containers.conf's default_sysctls): ICMP echo
  // sockets for the container's root group, in its own network namespace (a host
  // network is the host's to decide; a wider range would need gids the container's user
  // namespace may not map, which the kernel refuses).
  if (request.network != runtime::NetworkMode::host) {
    l.sysctl = std::map<std::string, std::string>{{"net.ipv4.ping_group_range", "0 0"}};
  }
  l.masked_paths = mount::default_masked_paths();
  l.readonly_paths = mount::default_read_only_paths();
  if (nlohmann::json r = resources_json(request.resources); !r.empty()) l.resources = r;
  spec.linux = l;

  runtime::RunAdditions& a = out.additions;
  a = request.additions;
  if (runtime::mrun_connects_network(request.network)) a.connected_network = request.network;
  a.gid_from_image = request.user.gid_from_image;
  a.privileged = request.security.privileged;
  a.seccomp = request.security.seccomp;
  a.seccomp_profile = request.security.seccomp_profile;
  // --privileged implies no filter; an explicit seccomp=PATH still applies.
  if (a.privileged && a.seccomp == security::SeccompMode::automatic) {
    a.seccomp = security::SeccompMode::unconfined;
  }
  a.resources_from_flags = true;
  a.swap_implied = request.resources.memory.swap_implied;
  return out;
}

}  // namespace mrun::oci
