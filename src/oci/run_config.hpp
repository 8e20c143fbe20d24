// `mrun run`'s flags as a runtime-spec config: one model for every way in. What the spec
// has a field for is written there, as podman writes it for the same flags (process,
// root, hostname, mounts, namespaces, capabilities, noNewPrivileges, resources, masked
// and read-only paths); what is mrun's own (the overlay over an image directory, the
// network helper, the GPU, --init, --rm, ...) travels beside it in
// runtime::RunAdditions. The result goes through oci::to_container_config like any
// bundle's config.json: `mrun run`, `mrun run --bundle` and `mrun create` share one path
// from the spec to the launcher, and `mrun run --print-config` shows the config.
//
// Pure: the policy (caps.conf, this kernel's capabilities) comes in as data, so unit
// tests check every flag's entry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgroup/resources.hpp"
#include "oci/spec.hpp"
#include "runtime/config.hpp"
#include "security/capabilities.hpp"
#include "security/security_options.hpp"

namespace mrun::oci {

// mrun run's flags, parsed and checked (cli/run_command.cpp), with CDI edits applied.
struct RunRequest {
  std::string name;
  std::string rootfs;             // absolute: the image directory
  std::vector<std::string> args;  // the command
  std::vector<std::string> env;   // KEY=VALUE, final
  std::string workdir = "/";
  runtime::UserSpec user;  // -u, --group-add (gid_from_image: -u UID alone)
  std::string hostname;    // empty: the name
  std::vector<runtime::Volume> volumes;
  bool read_only = false;
  bool tty = false;
  runtime::NetworkMode network = runtime::NetworkMode::none;
  // --security-opt, --cap-add, --cap-drop, --privileged
  security::SecurityOptions security;
  bool keep_groups = false;
  // --memory, --memory-swap, --pids-limit, --cpus (cgroup::to_resources)
  cgroup::Resources resources;
  // The rest: mrun's own (overlay, userns, helper's ports, --init, --rm, -d, cgroups,
  // --device, --gpu, --device-filter).
  runtime::RunAdditions additions;
};

// What the config's capability sets are made from.
struct RunPolicy {
  security::CapMask default_caps = 0;  // policy/caps.conf (podman's 11)
  security::CapMask all_caps = 0;      // every capability of this kernel
  // Rootful (uid 0 in the initial user namespace): no user namespace in the config.
  bool rootful = false;
};

struct RunConfig {
  Spec spec;
  runtime::RunAdditions additions;
};

// Throws mrun::Error naming the flag (an unknown capability, one both added and
// dropped, a volume over /proc).
RunConfig build_run_config(const RunRequest& request, const RunPolicy& policy);

// The mounts every `mrun run` container gets, in order (/proc, /dev, /dev/pts,
// /dev/shm, /dev/mqueue, /sys, /sys/fs/cgroup), then the volumes: as config.json
// entries.
std::vector<Mount> run_default_mounts();

}  // namespace mrun::oci
