// Capabilities: names, the planned sets (pure), and applying them (capset, prctl: the
// kernel's calls themselves, each made once, with no library probing around them).
//
// The plan follows podman: the bounding set is the default set (policy/caps.conf) plus
// --cap-add minus --cap-drop; container root gets it as effective and permitted set
// (execve by uid 0 recomputes permitted from the bounding set anyway); a non-root
// --user gets only what was explicitly added, in every set including ambient (so it
// survives execve), and nothing otherwise. Inheritable is empty for root: a non-empty
// inheritable set lets a binary with file inheritable caps gain them
// (CVE-2022-27649, fixed the same way in podman and moby).
//
// An OCI config (and `mrun exec --process`) gives all five sets itself: those are used
// exactly as given (plan_exact_capabilities), the spec's process.capabilities being
// the container's whole capability state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "security/security_options.hpp"

namespace mrun::security {

using CapMask = std::uint64_t;  // bit N set = capability N (CAP_CHOWN is 0)

inline constexpr CapMask cap_bit(int cap) {
  return CapMask{1} << cap;
}

// The highest capability this kernel knows (/proc/sys/kernel/cap_last_cap).
int kernel_last_capability();
// Every capability up to and including `last`.
CapMask all_capabilities(int last);

// "CHOWN", "CAP_CHOWN", "cap_chown" -> 0; nullopt for anything <linux/capability.h>
// does not name (numbers are not names and are refused too).
std::optional<int> capability_from_name(std::string_view name);
// "CAP_CHOWN"; "CAP_N" for a number this build's kernel headers have no name for.
std::string capability_name(int cap);
// "CAP_CHOWN,CAP_KILL" in bit order; "" for an empty mask.
std::string capability_list(CapMask mask);

// caps.conf: one capability name per line, '#' starts a comment. Throws mrun::Error
// naming origin:line and the name on an unknown capability.
CapMask parse_caps_conf(const std::string& text, const std::string& origin);

struct CapabilityRequest {
  CapMask defaults = 0;           // from caps.conf
  CapMask all = 0;                // every capability of this kernel
  std::vector<std::string> add;   // --cap-add names, or "ALL"
  std::vector<std::string> drop;  // --cap-drop names, or "ALL"
  bool privileged = false;        // --privileged: start from `all`
  bool root_user = true;          // the command runs as uid 0 in the container
};

struct CapabilityPlan {
  CapMask bounding = 0;
  CapMask effective = 0;
  CapMask permitted = 0;
  CapMask inheritable = 0;
  CapMask ambient = 0;
};

// Pure. Throws mrun::Error (exit 125) naming an unknown capability or one that is both
// added and dropped.
CapabilityPlan plan_capabilities(const CapabilityRequest& request);

// The five sets of an OCI config (process.capabilities), exactly as given. `add` (`mrun
// exec --cap`) goes into bounding, effective and permitted, and for a non-root user
// into inheritable and ambient too, so that it survives execve (as --cap-add does).
struct ExactCapabilityRequest {
  CapabilitySets sets;
  std::vector<std::string> add;
  CapMask all = 0;  // every capability of this kernel
  bool root_user = true;
};
struct ExactCapabilityPlan {
  CapabilityPlan plan;
  // Named but unknown to this kernel: left out, as runc does (it warns).
  std::vector<std::string> unavailable;
  // Ambient capabilities outside permitted or inheritable, which the kernel never
  // raises (PR_CAP_AMBIENT_RAISE: EPERM): left out, as runc and crun do (`runc spec`
  // and `crun spec` write such an ambient set for root, where it changes nothing).
  CapMask ambient_not_raised = 0;
};
// Pure. Throws mrun::Error (exit 125) naming the set for a name mrun does not know and
// for what capset(2) always refuses: effective outside permitted, inheritable outside
// bounding.
ExactCapabilityPlan plan_exact_capabilities(const ExactCapabilityRequest& request);

// ---- applied in the container, in this order ----------------------------------------

// Drops every capability outside plan.bounding from the bounding set (needs
// CAP_SETPCAP, which the setup process still has).
void drop_bounding_set(const CapabilityPlan& plan, int last_cap);
// Before setresuid to a non-root uid: keep the permitted set across the uid change
// (PR_SET_KEEPCAPS), so that the capabilities a non-root user was given can be set.
void keep_capabilities_across_setuid();
// The calling process's permitted set.
CapMask permitted_capabilities();
// Sets effective, permitted and inheritable to the plan (plus `extra` in effective and
// permitted), clears the ambient set and raises plan.ambient.
void set_process_capabilities(const CapabilityPlan& plan, CapMask extra = 0);

}  // namespace mrun::security
