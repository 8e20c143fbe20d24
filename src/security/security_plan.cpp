#include "security/security_plan.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "embedded_policy.h"  // generated from policy/ by security/embed_policy.py
#include "security/seccomp_cache.hpp"
#include "security/seccomp_support.hpp"
#include "sys/kernel.hpp"

namespace mrun::security {

namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

std::string read_required(const std::string& path, const std::string& what) {
  auto text = read_text(path);
  if (!text) {
    int err = errno;
    throw Error("read " + what + " " + path, err != 0 ? err : EIO,
                "give a readable file (seccomp=PATH takes a podman/Docker-style JSON profile)");
  }
  return *text;
}

std::string kernel_release() {
  struct utsname u {};
  return ::uname(&u) == 0 ? std::string(u.release) : std::string();
}

// The capability sets to apply: the plan, except that --privileged cannot give more
// than this process holds.
CapabilityPlan applicable_caps(const SecurityPlan& plan) {
  CapabilityPlan caps = plan.caps;
  if (plan.privileged) {
    CapMask held = permitted_capabilities();
    caps.effective &= held;
    caps.permitted &= held;
    caps.inheritable &= held;
    caps.ambient &= held;
  }
  return caps;
}

}  // namespace

PolicyText default_policy() {
  PolicyText policy;
  const char* dir = std::getenv("MRUN_POLICY_DIR");
  if (dir != nullptr && dir[0] != '\0') {
    std::string base(dir);
    policy.profile_origin = base + "/seccomp/default.json";
    policy.caps_origin = base + "/caps.conf";
    policy.profile_json = read_required(policy.profile_origin, "default seccomp profile");
    policy.caps_conf = read_required(policy.caps_origin, "default capability set");
    return policy;
  }
  policy.profile_origin = "built-in default.json";
  policy.profile_json.assign(embedded_default_json, sizeof embedded_default_json);
  policy.caps_origin = "built-in caps.conf";
  policy.caps_conf.assign(embedded_caps_conf, sizeof embedded_caps_conf);
  return policy;
}

SecurityPlan prepare_security_plan(const SecurityOptions& options, uid_t container_uid,
                                   bool host_capabilities, const Logger& log,
                                   const std::string& cache_dir) {
  return prepare_security_plan(options, container_uid, host_capabilities, log, default_policy(),
                               cache_dir);
}

SecurityPlan prepare_security_plan(const SecurityOptions& options, uid_t container_uid,
                                   bool host_capabilities, const Logger& log,
                                   const PolicyText& policy, const std::string& cache_dir) {
  SecurityPlan plan;
  plan.last_cap = kernel_last_capability();
  plan.root_user = container_uid == 0;
  plan.no_new_privileges = options.no_new_privileges;
  plan.privileged = options.privileged;

  if (options.capability_sets) {
    // An OCI config's five sets, exactly as given (mrun run's translation is the else).
    ExactCapabilityRequest request;
    request.sets = *options.capability_sets;
    request.add = options.cap_add;
    request.all = all_capabilities(plan.last_cap);
    request.root_user = plan.root_user;
    auto exact = plan_exact_capabilities(request);
    plan.caps = exact.plan;
    for (const auto& name : exact.unavailable) {
      log.warn("process.capabilities: " + name + " is unknown to this kernel; not given");
    }
    if (exact.ambient_not_raised != 0) {
      // For root it changes nothing (execve by uid 0 gets the bounding set anyway).
      std::string message =
          "process.capabilities.ambient: " + capability_list(exact.ambient_not_raised) +
          " not raised: the kernel raises only what is both permitted and "
          "inheritable (add them to process.capabilities.inheritable)";
      if (plan.root_user) {
        log.debug(message);
      } else {
        log.warn(message);
      }
    }
  } else {
    CapabilityRequest request;
    request.defaults = parse_caps_conf(policy.caps_conf, policy.caps_origin);
    request.all = all_capabilities(plan.last_cap);
    request.add = options.cap_add;
    request.drop = options.cap_drop;
    request.privileged = options.privileged;
    request.root_user = plan.root_user;
    plan.caps = plan_capabilities(request);
  }
  log.debug("capabilities: bounding " + capability_list(plan.caps.bounding) + "; effective " +
            capability_list(plan.caps.effective) + "; permitted " +
            capability_list(plan.caps.permitted) + "; inheritable " +
            capability_list(plan.caps.inheritable) + "; ambient " +
            capability_list(plan.caps.ambient) +
            (host_capabilities ? " (host capabilities: rootful in the host user namespace)"
                               : " (in the container's user namespace)"));

  // --privileged implies no filter; an explicit seccomp=PATH still applies.
  SeccompMode mode = options.seccomp;
  if (mode == SeccompMode::automatic && options.privileged) mode = SeccompMode::unconfined;
  if (mode == SeccompMode::unconfined) {
    plan.seccomp_origin = "unconfined";
    log.debug("seccomp: unconfined");
    return plan;
  }
  // The profile by reference where it is held already (20 KiB: a copy is heap that
  // stays resident).
  std::string read_text, origin;
  const std::string* held = &read_text;
  if (mode == SeccompMode::file && !options.seccomp_profile_json.empty()) {
    origin = "config.json linux.seccomp";
    held = &options.seccomp_profile_json;
  } else if (mode == SeccompMode::file) {
    origin = options.seccomp_profile;
    read_text = read_required(origin, "seccomp profile");
  } else {
    origin = policy.profile_origin;
    held = &policy.profile_json;
  }
  const std::string& text = *held;
  SeccompTarget target;
  target.capabilities = plan.caps.bounding;
  target.kernel_release = kernel_release();
  target.x32_syscalls = sys::kernel_runs_x32_syscalls();
  target.kernel_flags = available_seccomp_flags();
  target.kernel_actions = available_seccomp_actions();
  // The same profile text for the same capabilities, kernel and libseccomp compiles to
  // the same program: reuse it (compiling is a large part of a start: bench/README.md).
  const std::string key = seccomp_cache_key(text, target);
  plan.seccomp = load_cached_seccomp(cache_dir, key, log);
  if (plan.seccomp) {
    log.debug("seccomp: compiled program from the cache in " + cache_dir);
  } else {
    const SeccompProfile profile = parse_seccomp_profile(text, origin);
    if (!allows_execve(profile)) {
      throw Error("seccomp profile " + origin + " denies execve: no command could ever start",
                  EPERM,
                  "allow it in the profile, e.g. {\"names\": [\"execve\", \"execveat\"], "
                  "\"action\": \"SCMP_ACT_ALLOW\"}");
    }
    plan.seccomp = compile_seccomp(profile, target);
    store_cached_seccomp(cache_dir, key, *plan.seccomp, log);
  }
  plan.seccomp_origin = origin;
  if (!plan.seccomp->unknown_syscalls.empty()) {
    std::string names;
    for (const auto& n : plan.seccomp->unknown_syscalls) names += (names.empty() ? "" : ", ") + n;
    std::string message = "seccomp profile " + origin + ": skipping " +
                          std::to_string(plan.seccomp->unknown_syscalls.size()) +
                          " syscall(s) this libseccomp does not know: " + names;
    // The built-in profile names syscalls of newer kernels on purpose; only a user's
    // profile deserves a warning on every run.
    if (mode == SeccompMode::file) {
      log.warn(message);
    } else {
      log.debug(message);
    }
  }
  log.debug("seccomp: " + origin + ", " + std::to_string(plan.seccomp->rules_added) + " rules, " +
            std::to_string(plan.seccomp->program.size()) + " BPF instructions, x32 syscalls " +
            (target.x32_syscalls ? "filtered" : "left out (ENOSYS, as the kernel)"));
  return plan;
}

void confine_before_user_switch(const SecurityPlan& plan) {
  drop_bounding_set(plan.caps, plan.last_cap);
  if (!plan.root_user) keep_capabilities_across_setuid();
}

void confine_after_user_switch(const SecurityPlan& plan) {
  CapMask extra = plan.keep_sys_admin_until_seccomp() ? cap_bit(CAP_SYS_ADMIN) : 0;
  set_process_capabilities(applicable_caps(plan), extra);
  if (plan.no_new_privileges && ::prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) {
    throw_errno("set no_new_privs");
  }
}

void load_seccomp_last(const SecurityPlan& plan,
                       const std::function<void(UniqueFd)>& hand_over_listener) {
  if (!plan.seccomp) return;
  UniqueFd listener = load_seccomp_program(*plan.seccomp);
  if (listener) {
    if (!hand_over_listener) {
      throw Error("the seccomp filter made a notification listener that has nowhere to go", EPROTO);
    }
    hand_over_listener(std::move(listener));
  }
  if (plan.keep_sys_admin_until_seccomp() && (plan.caps.permitted & cap_bit(CAP_SYS_ADMIN)) == 0) {
    // Runs under the filter already: the profile must allow capset (the default does).
    set_process_capabilities(applicable_caps(plan));
  }
}

void confine_reaper(const SecurityPlan& plan) {
  // PID 1 is already non-dumpable (container_init.cpp sets it before the fork):
  // /proc/1/mem and ptrace need CAP_SYS_PTRACE over it, which the command does not hold
  // by default. The filter below covers the case where it does (--cap-add SYS_PTRACE):
  // code injected into PID 1 can do no more than the command itself.
  CapabilityPlan reaper;
  reaper.bounding = reaper.effective = reaper.permitted = cap_bit(CAP_KILL);
  drop_bounding_set(reaper, plan.last_cap);
  set_process_capabilities(reaper);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) != 0) throw_errno("set no_new_privs for --init");
  // The command's own filter, loaded by PID 1 too (no_new_privs is set, so no
  // CAP_SYS_ADMIN is needed): the reaper only reads a signalfd, kills and waits.
  if (plan.seccomp) load_seccomp_program_without_listener(*plan.seccomp);
}

}  // namespace mrun::security
