// The CDI specs on this host, and their application to a container's configuration.
// Reads the directories the CDI library (and so podman) scans, in its priority order:
// /etc/cdi, then /var/run/cdi (a device in a later directory wins). Only *.json files
// are read: mrun has no YAML parser, so a *.yaml spec is skipped (said under --debug).
#pragma once

#include <string>
#include <vector>

#include "base/log.hpp"
#include "cdi/cdi_spec.hpp"
#include "oci/run_config.hpp"

namespace mrun::cdi {

std::vector<std::string> default_spec_dirs();

// Every spec in `dirs` (in order; files sorted by name within a directory). A missing
// directory is skipped; a malformed spec throws (125) naming the file and the field.
std::vector<Spec> load_specs(const std::vector<std::string>& dirs, const Logger& log);

// Applies the edits the names stand for, the way --device, -v and -e do: device nodes
// become --device nodes (host path = hostPath or path; a node whose major:minor in the
// spec differs from the host's is refused as stale), bind mounts become volumes
// (read-only with "ro"), env entries replace or add variables. Before the request
// becomes a config (oci/run_config.hpp).
void apply_edits(const ContainerEdits& edits, oci::RunRequest& config);

// --device CDI names: the specs of SPEC_DIRS (empty: default_spec_dirs()) loaded, the
// names resolved and their edits applied to CONFIG. Throws (125) naming an unknown name.
void apply_devices(const std::vector<QualifiedName>& names,
                   const std::vector<std::string>& spec_dirs, oci::RunRequest& config,
                   const Logger& log);

}  // namespace mrun::cdi
