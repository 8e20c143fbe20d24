#include "launch/device_access.hpp"

#include <linux/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/device_filter.hpp"
#include "security/capabilities.hpp"
#include "sys/spawn.hpp"

#ifndef MRUN_GPU_HELPER_PATH
#define MRUN_GPU_HELPER_PATH "/usr/local/libexec/mrun/mrun-gpu-helper"
#endif

namespace mrun::runtime {

namespace {

bool devices_requested(const ContainerConfig& config) {
  return !config.devices.empty() || config.run.gpu.has_value();
}

cgroup::AllowedNode allowed_node(const mount::HostDevice& d) {
  return {cgroup::DeviceType::character, d.major, d.minor, d.spec.access};
}

// The caller's groups as the kernel will judge the container's opens: its gid, plus
// the supplementary groups unless they are dropped (setgroups(0) in the child).
std::vector<gid_t> effective_groups(bool kept) {
  std::vector<gid_t> groups{::getgid()};
  if (!kept) return groups;
  int n = ::getgroups(0, nullptr);
  if (n > 0) {
    std::vector<gid_t> more(static_cast<std::size_t>(n));
    n = ::getgroups(n, more.data());
    if (n > 0) groups.insert(groups.end(), more.begin(), more.begin() + n);
  }
  return groups;
}

std::string helper_message(const sys::ProgramResult& result) {
  std::string text(trim(result.output));
  if (auto nl = text.rfind('\n'); nl != std::string::npos) text = text.substr(nl + 1);
  return text.empty() ? "exit status " + std::to_string(result.status)
                      : text + " (exit status " + std::to_string(result.status) + ")";
}

}  // namespace

GpuHelper find_gpu_helper() {
  const char* env = std::getenv("MRUN_GPU_HELPER");
  std::string path = env != nullptr && env[0] == '/' ? env : MRUN_GPU_HELPER_PATH;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return {{}, "mrun-gpu-helper(8) is not installed (" + path + " is missing)"};
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & S_ISUID) == 0) {
    return {{}, "mrun-gpu-helper(8) at " + path + " is not setuid root"};
  }
  return {path, {}};
}

std::vector<cgroup::DeviceRule> plan_filter_rules(const ContainerConfig& config,
                                                  const std::vector<mount::HostDevice>& devices) {
  cgroup::FilterInput input;
  input.defaults = cgroup::default_device_rules();
  for (const auto& d : devices) input.nodes.push_back(allowed_node(d));
  input.extra = config.device_rules;
  input.privileged = config.run.privileged;
  return cgroup::plan_device_rules(input);
}

std::vector<std::string> helper_filter_devices(const std::vector<mount::HostDevice>& devices) {
  const auto defaults = cgroup::default_device_rules();
  std::vector<std::string> args;
  for (const auto& d : devices) {
    auto access = cgroup::parse_access(d.spec.access).value_or(0);
    bool covered = false;
    for (const auto& r : defaults) {
      covered = covered || (r.type != cgroup::DeviceType::block &&
                            (r.major == cgroup::any_number || r.major == d.major) &&
                            (r.minor == cgroup::any_number || r.minor == d.minor) &&
                            (access & r.access) == access);
    }
    if (!covered) args.push_back(d.spec.host_path + ":" + cgroup::access_string(access));
  }
  return args;
}

DeviceAccess::DeviceAccess(const ContainerConfig& config, const PrivilegeModel& privilege,
                           std::vector<mount::HostDevice> devices, const Logger& log)
    : config_(config), privilege_(privilege), devices_(std::move(devices)), log_(log) {
  if (privilege_.uses_gpu_helper && devices_requested(config_)) helper_ = find_gpu_helper();
  if (privilege_.node_access_is_callers) {
    // With a single-ID map setgroups is denied and the groups stay, as with --keep-groups.
    const auto groups = effective_groups(config_.process.keep_groups);
    for (const auto& d : devices_) {
      if (!mount::caller_can_open(d, ::getuid(), groups)) grants_.push_back(d);
    }
    if (!grants_.empty() && helper_.path.empty()) {
      log_.warn(grants_.front().spec.host_path + (grants_.size() > 1 ? " and others" : "") +
                ": not usable by you in the container (mode and owner) and " + helper_.why_not +
                ": opening it there fails with EACCES");
      grants_.clear();
    }
  }
}

// What a container could do with devices beyond the defaults, without a restriction.
std::string beyond_default_devices(const ContainerConfig& config) {
  if (config.run.privileged) return "--privileged";
  if (!config.devices.empty() || config.run.gpu) return "--device/--gpu";
  // CAP_MKNOD in the bounding set: the command may make any node it likes (mrun run's
  // default set leaves it out; --cap-add MKNOD or an engine's config puts it in).
  if (const auto& sets = config.process.security.capability_sets) {
    for (const auto& cap : sets->bounding) {
      if (security::capability_from_name(cap) == CAP_MKNOD) return "CAP_MKNOD (--cap-add MKNOD)";
    }
  }
  return {};
}

void DeviceAccess::check_before_start(const cgroup::Plan& plan) const {
  if (privilege_.rootful && !plan.use && config_.run.cgroups == CgroupsMode::enabled &&
      !cgroup::devices_v1_available()) {
    const std::string why = "no cgroup v2 leaf (" + plan.why_not +
                            ") and no cgroup v1 devices controller: nothing restricts which "
                            "device nodes container " +
                            config_.name + " may create and open";
    const std::string beyond = beyond_default_devices(config_);
    if (config_.run.device_filter == DeviceFilterMode::off) {
      log_.warn(why + " (--device-filter=off)");
    } else if (!beyond.empty()) {
      throw Error(why + ", so " + beyond + " is refused", EPERM,
                  "run on a host with cgroup v2 or the v1 devices controller, or pass "
                  "--device-filter=off to accept it");
    } else {
      log_.warn(why + "; it has no CAP_MKNOD, so only the default nodes");
    }
  }
  if (config_.run.device_filter != DeviceFilterMode::required || plan.use) return;
  if (privilege_.rootful && config_.run.cgroups == CgroupsMode::enabled &&
      cgroup::devices_v1_available()) {
    return;  // the v1 devices group does it
  }
  // Say what stops it first: a kernel that refuses the program, else the missing leaf.
  std::string reason = "no cgroup to attach it to (" + plan.why_not + ")";
  if (auto failure = cgroup::attach_device_filter({}, plan_filter_rules(config_, devices_))) {
    reason = failure->describe() + "; and " + reason;
  }
  throw Error("device filter for container " + config_.name + ": " + reason, 0,
              "use --device-filter=auto to run without it");
}

std::optional<cgroup::DevicesV1Group> DeviceAccess::devices_v1_group(
    bool have_leaf, const std::string& v1_relative, const std::string& unique) const {
  // --cgroups disabled: no cgroup of any kind, as asked (the state says so).
  if (have_leaf || !privilege_.rootful || config_.run.device_filter == DeviceFilterMode::off ||
      config_.run.cgroups != CgroupsMode::enabled) {
    return std::nullopt;
  }
  return cgroup::DevicesV1Group::create(v1_relative, unique, plan_filter_rules(config_, devices_));
}

std::string DeviceAccess::not_attached(const std::string& reason, bool warn) const {
  if (config_.run.device_filter == DeviceFilterMode::required) {
    throw Error("device filter for container " + config_.name + ": " + reason, 0);
  }
  if (warn) {
    log_.warn("device filter for container " + config_.name + " not attached: " + reason +
              "; the container can open any device node bound into it");
  } else {
    log_.debug("device filter for container " + config_.name + " not attached: " + reason);
  }
  return "none: " + reason;
}

std::string DeviceAccess::attach_filter(const std::string& leaf, const std::string& no_leaf,
                                        pid_t child) const {
  if (config_.run.device_filter == DeviceFilterMode::off) {
    log_.debug("device filter: off (--device-filter=off)");
    return "none: --device-filter=off";
  }
  if (leaf.empty()) return not_attached("no cgroup of its own (" + no_leaf + ")", false);
  const auto rules = plan_filter_rules(config_, devices_);
  if (!privilege_.rootful && config_.run.privileged) {
    return not_attached("--privileged (every device is allowed)", false);
  }
  auto failure = cgroup::attach_device_filter(leaf, rules);
  if (!failure) {
    log_.debug("device filter attached to " + leaf + " (" + std::to_string(rules.size()) +
               " rules)");
    return "bpf";
  }
  const std::string why = failure->describe();
  if (!privilege_.uses_gpu_helper || !devices_requested(config_)) {
    bool warn = privilege_.rootful || devices_requested(config_);
    return not_attached(why, warn);
  }
  if (helper_.path.empty()) {
    return not_attached(why + "; " + helper_.why_not + ": install mrun-gpu-helper(8) setuid root",
                        true);
  }
  std::vector<std::string> argv{helper_.path, "--filter", std::to_string(child)};
  for (const auto& arg : helper_filter_devices(devices_)) argv.push_back(arg);
  auto result = sys::run_program(argv);
  if (result.status != 0) {
    return not_attached(why + "; mrun-gpu-helper --filter: " + helper_message(result), true);
  }
  log_.debug("device filter attached by mrun-gpu-helper: " + std::string(trim(result.output)));
  return "helper";
}

void DeviceAccess::grant_nodes(pid_t child) const {
  for (const auto& d : grants_) {
    auto result = sys::run_program(
        {helper_.path, std::to_string(child), d.spec.host_path, d.spec.container_path});
    if (result.status != 0) {
      log_.warn(d.spec.host_path + ": mrun-gpu-helper could not make it usable in the container: " +
                helper_message(result) + "; opening it there fails with EACCES");
    } else {
      log_.debug("mrun-gpu-helper: " + std::string(trim(result.output)));
    }
  }
}

}  // namespace mrun::runtime
