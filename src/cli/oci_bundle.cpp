#include "cli/oci_bundle.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/error.hpp"
#include "exec/cloned_binary.hpp"
#include "oci/spec.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

runtime::ContainerConfig config_from_bundle(const std::string& bundle, const std::string& id,
                                            const runtime::Context& ctx) {
  if (!runtime::valid_container_name(id)) {
    throw Error("invalid container id \"" + id + "\"", EINVAL,
                "use letters, digits, '_', '.' and '-', starting with a letter or digit");
  }
  const auto resolved = sys::real_path(bundle);
  if (!resolved) {
    throw_errno("bundle " + bundle, "give the directory holding config.json with --bundle");
  }
  oci::Spec spec = oci::load_bundle(*resolved);
  auto config = oci::to_container_config(spec, *resolved, id, ::getuid(), ::getgid(), ctx.log);
  if (ctx.cgroups_disabled) config.run.cgroups = runtime::CgroupsMode::disabled;
  runtime::validate(config);
  // CVE-2019-5736 (exec/cloned_binary.hpp): a container that joins a PID namespace by
  // path (a pod's shareProcessNamespace) is seen, while mrun sets it up, by every process
  // already there, which may reach this binary through /proc/PID/exe once the setup has
  // dropped to the container's capabilities and is about to exec. As for `mrun exec`:
  // from here on this runs from a sealed copy. First thing, before anything is made: the
  // copy starts this verb again (create's monitor forks later, in the copy).
  if (config.namespaces.pid.source == runtime::NamespaceSource::joined) {
    runtime::reexec_from_sealed_copy();
  }
  return config;
}

void add_process_options(CLI::App* app, ProcessOptions& options) {
  app->add_option("--console-socket", options.console_socket,
                  "send the pty master to the unix socket PATH (process.terminal)");
  app->add_option("--preserve-fds", options.preserve_fds,
                  "pass fds 3..3+N-1 on to the container process")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--no-pivot", options.no_pivot,
                "MS_MOVE and chroot instead of pivot_root (less safe; see mrun-oci(1))");
  app->add_flag("--no-new-keyring", options.no_new_keyring,
                "keep the caller's session keyring instead of a new one");
}

void apply_process_options(const ProcessOptions& options, runtime::ContainerConfig& config,
                           bool detached) {
  if (config.process.terminal && detached && options.console_socket.empty()) {
    throw Error("cannot allocate tty if mrun will detach without setting console socket", EINVAL,
                "give --console-socket PATH, or set process.terminal to false");
  }
  if (!config.process.terminal && !options.console_socket.empty()) {
    throw Error("cannot use console socket if mrun will not allocate tty", EINVAL,
                "set process.terminal to true in config.json");
  }
  if (!options.console_socket.empty()) {
    // Made absolute now: the monitor changes nothing, but the socket path is the caller's.
    config.console_socket = sys::real_path(options.console_socket).value_or(options.console_socket);
  }
  config.preserve_fds = options.preserve_fds;
  const char* listen_fds = std::getenv("LISTEN_FDS");
  const char* listen_pid = std::getenv("LISTEN_PID");
  if (listen_fds && listen_pid && std::atoi(listen_pid) == ::getpid()) {
    int n = std::atoi(listen_fds);
    if (n > 0) {
      // Socket activation passes them from fd 3, as --preserve-fds counts.
      config.preserve_fds = std::max(config.preserve_fds, n);
      config.process.env.push_back("LISTEN_FDS=" + std::to_string(n));
      config.process.env.push_back("LISTEN_PID=1");
    }
  }
  config.no_pivot = options.no_pivot;
  config.new_keyring = !options.no_new_keyring;
}

}  // namespace mrun::cli
