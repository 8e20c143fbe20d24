// The OCI verbs' shared step: an OCI bundle -> runtime::ContainerConfig, so `mrun run
// --bundle`, `mrun create` and `mrun run`'s flags all reach the same launcher.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "runtime/config.hpp"
#include "runtime/context.hpp"
#include "state/state.hpp"

namespace mrun::cli {

// Loads <bundle>/config.json (validated), converts it, and applies its rlimits to this
// process (the container inherits them across clone). Throws mrun::Error (125).
runtime::ContainerConfig config_from_bundle(const std::string& bundle, const std::string& id,
                                            const runtime::Context& ctx);

// How create/run wire the container's process (mrun-oci(1)).
struct ProcessOptions {
  std::string console_socket;
  int preserve_fds = 0;
  bool no_pivot = false;
  bool no_new_keyring = false;
};
void add_process_options(CLI::App* app, ProcessOptions& options);
// Into `config`, with runc's checks: a terminal in a detached container needs
// --console-socket, and --console-socket needs a terminal. LISTEN_FDS (systemd socket
// activation of mrun, LISTEN_PID ours) preserves that many fds too and tells the
// container (LISTEN_FDS=N, LISTEN_PID=1).
void apply_process_options(const ProcessOptions& options, runtime::ContainerConfig& config,
                           bool detached);

}  // namespace mrun::cli
