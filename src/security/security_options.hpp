// What the user asked for about isolation (--security-opt, --cap-add, --cap-drop,
// --privileged), as typed data in ContainerConfig. Deliberately free of libseccomp
// types: the CLI and the config reader fill it, security_plan.cpp turns it into a
// SecurityPlan in the parent before clone.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mrun::security {

enum class SeccompMode {
  automatic,   // the default profile, or none under --privileged
  unconfined,  // seccomp=unconfined: no filter at all
  file,        // seccomp=PATH: the user's own profile (OCI / containers JSON)
};

// An OCI config's process.capabilities: the five sets exactly as given, by name.
struct CapabilitySets {
  std::vector<std::string> bounding, effective, permitted, inheritable, ambient;
  bool operator==(const CapabilitySets&) const = default;
};

struct SecurityOptions {
  SeccompMode seccomp = SeccompMode::automatic;
  std::string seccomp_profile;  // PATH when seccomp == file
  // An OCI config's linux.seccomp (seccomp == file), kept as text rather than written
  // to a file keyed by the container id: two state roots must never share one.
  std::string seccomp_profile_json;
  // Default true, unlike podman: a setuid binary in an image must not gain privilege
  // unless the user asks for it (no-new-privileges=false).
  bool no_new_privileges = true;
  std::vector<std::string> cap_add;   // names as typed ("NET_ADMIN", "cap_net_admin", "ALL")
  std::vector<std::string> cap_drop;  // names as typed, or "ALL"
  bool privileged = false;
  // Set (OCI bundles, `mrun exec --process`): these sets exactly, instead of the
  // default set with cap_add/cap_drop; cap_add then adds to them (`mrun exec --cap`).
  std::optional<CapabilitySets> capability_sets;
  bool operator==(const SecurityOptions&) const = default;
};

// Applies one --security-opt VALUE ("seccomp=PATH", "seccomp=unconfined",
// "no-new-privileges", "no-new-privileges=true|false"). Throws mrun::Error naming the
// value and the accepted forms.
void apply_security_opt(SecurityOptions& options, const std::string& value);

}  // namespace mrun::security
