// The container's isolation, decided in the parent before clone: capability sets,
// no_new_privs and the compiled seccomp program. The child only applies it, in the
// order below, so that every privileged step happens while it still holds the
// capability it needs, and the filter goes on last, right before execve:
//
//   drop_bounding_set ─ keep caps across setuid (non-root --user) ─ setresgid/setresuid
//   ─ set_process_capabilities ─ no_new_privs ─ (reset signals, die with parent)
//   ─ load_seccomp_last (─ its notification listener handed to the monitor) ─ execve
//
// init/become_command.hpp is that sequence, one for the container's command and for
// `mrun exec`.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "base/log.hpp"
#include "security/capabilities.hpp"
#include "security/seccomp_compile.hpp"
#include "security/security_options.hpp"

namespace mrun::security {

// Where the default policy comes from: $MRUN_POLICY_DIR/{seccomp/default.json,caps.conf}
// when that variable is set (an administrator's or a test's override), else the copies
// of policy/ compiled into the binary, so the default never depends on a file.
struct PolicyText {
  std::string profile_json;
  std::string profile_origin;  // path, or "built-in default.json"
  std::string caps_conf;
  std::string caps_origin;
};
PolicyText default_policy();

struct SecurityPlan {
  CapabilityPlan caps;
  int last_cap = 40;
  bool root_user = true;
  bool no_new_privileges = true;
  // --privileged: "every capability" means every one the setup process holds (a rootful
  // mrun may itself run with a reduced bounding set), so the sets are cut to those.
  bool privileged = false;
  std::optional<CompiledSeccomp> seccomp;  // nullopt: unconfined
  std::string seccomp_origin;              // "built-in default.json", a path, "unconfined"
  // Without no_new_privs the kernel only lets a holder of CAP_SYS_ADMIN load a filter,
  // so the setup process keeps it until the filter is loaded, then drops it.
  bool keep_sys_admin_until_seccomp() const { return seccomp && !no_new_privileges; }
};

// Parses and compiles everything; throws mrun::Error (exit 125) on a bad profile, an
// unknown capability or an unreadable file. `host_capabilities`: the container's
// capabilities count in the host's user namespace (rootful without --userns single).
// `cache_dir`: where compiled programs are cached (seccomp_cache.hpp); "" for none.
SecurityPlan prepare_security_plan(const SecurityOptions& options, uid_t container_uid,
                                   bool host_capabilities, const Logger& log,
                                   const std::string& cache_dir = {});
SecurityPlan prepare_security_plan(const SecurityOptions& options, uid_t container_uid,
                                   bool host_capabilities, const Logger& log,
                                   const PolicyText& policy, const std::string& cache_dir);

// ---- applied in the container ---------------------------------------------------------
// Before the uid/gid switch: bounding set, and PR_SET_KEEPCAPS for a non-root user.
void confine_before_user_switch(const SecurityPlan& plan);
// After it: effective/permitted/inheritable/ambient sets, then no_new_privs.
void confine_after_user_switch(const SecurityPlan& plan);
// The last step before execve: the seccomp filter; its notification listener, when the
// profile has SCMP_ACT_NOTIFY rules, goes to `hand_over_listener` at once, before any
// other syscall the filter might notify (hand_over_listener returns once the agent holds
// it, or throws); then, without no_new_privs, the CAP_SYS_ADMIN kept for loading the
// filter is dropped. A listener without a hand_over_listener is an error, not a process
// left to wait for an agent that never hears of it.
void load_seccomp_last(const SecurityPlan& plan,
                       const std::function<void(UniqueFd)>& hand_over_listener = {});
// --init: mrun's PID 1 (made non-dumpable by its caller, so that the command cannot
// ptrace it or write its memory) keeps only CAP_KILL (to forward signals to a non-root command),
// sets no_new_privs and loads the command's seccomp filter: what the command could make it do is
// never more than the command may do itself. The filter makes no listener there: a syscall
// the profile notifies fails with ENOSYS in PID 1 (the agent hears of the command alone).
void confine_reaper(const SecurityPlan& plan);

}  // namespace mrun::security
