// Options that apply to every command (mrun --root, --debug) and what follows from who
// is calling. Passed explicitly; there is no global state.
#pragma once

#include <string>

#include "base/log.hpp"

namespace mrun::runtime {

struct GlobalOptions {
  std::string state_root;  // --root; empty: the default for the caller
  bool debug = false;
  std::string log_file;             // --log FILE
  std::string log_format = "text";  // --log-format text|json
  int log_fd = -1;                  // FILE, opened by main; -1: none
  bool systemd_cgroup = false;      // --systemd-cgroup: accepted (mrun-oci(1))
  // --cgroup-manager cgroupfs|systemd|disabled (crun's option; podman passes
  // "disabled" with --cgroups=disabled): disabled means no cgroup for the container.
  std::string cgroup_manager;
};

struct Context {
  Logger log;
  std::string state_root;  // resolved
  std::string data_root;   // container storage and the default rootfs
  std::string subuid_file = "/etc/subuid";
  std::string subgid_file = "/etc/subgid";
  bool cgroups_disabled = false;  // --cgroup-manager disabled
};

// Resolves defaults from the caller's uid and environment. MRUN_SUBUID_FILE and
// MRUN_SUBGID_FILE override where mrun *plans* from (tests use them to simulate a user
// without entries); newuidmap always checks the real /etc files.
Context make_context(const GlobalOptions& options);

}  // namespace mrun::runtime
