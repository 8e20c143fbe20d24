// mrun features   -- see mrun-oci(1)
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "mount/config_mounts.hpp"
#include "oci/spec.hpp"
#include "runtime/hooks.hpp"
#include "security/capabilities.hpp"
#include "security/lsm.hpp"
#include "security/seccomp_profile.hpp"
#include "security/seccomp_support.hpp"

namespace mrun::cli {

namespace {

class FeaturesCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    return app.add_subcommand("features", "print what this mrun supports, as runc features does");
  }

  // Honest about what is honoured (see mrun-oci(1)): every hook stage is run, the mount
  // options mount/config_mounts takes, idmapped mounts rootful, apparmor and selinux as
  // this host has them, cgroup v2, and cgroup v1 rootful.
  int execute(const runtime::GlobalOptions& /*global*/) override {
    nlohmann::json caps = nlohmann::json::array();
    for (int cap = 0; cap <= security::kernel_last_capability(); ++cap) {
      caps.push_back(security::capability_name(cap));
    }
    nlohmann::json j = {
        {"ociVersionMin", "1.0.0"},
        {"ociVersionMax", oci::spec_version},
        {"hooks", runtime::hook_stage_names()},
        {"mountOptions", mount::known_mount_options()},
        {"linux",
         {{"namespaces", {"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"}},
          {"capabilities", caps},
          // runc's keys, and the spec's rdma. v1: rootful on a v1 or hybrid host mrun
          // makes the container's v1 groups and writes its limits there; rootless there
          // is no v1 delegation to use, and a limit asked for is refused.
          {"cgroup",
           {{"v1", ::getuid() == 0},
            {"v2", true},
            {"systemd", false},
            {"systemdUser", false},
            {"rdma", true}}},
          // What the profile parser accepts and this kernel and libseccomp can do, asked
          // of them (security/seccomp_support.hpp): knownFlags are the runtime spec's,
          // supportedFlags those the kernel takes.
          {"seccomp",
           {{"enabled", true},
            {"actions", security::supported_seccomp_actions()},
            {"operators", security::known_seccomp_operators()},
            {"archs", security::known_seccomp_archs()},
            {"knownFlags", security::known_seccomp_flags()},
            {"supportedFlags", security::supported_seccomp_flags()}}},
          // idmap and ridmap binds: rootful (the monitor needs CAP_SYS_ADMIN over the host's
          // filesystem); rootless they are a clear 125.
          {"mountExtensions", {{"idmap", {{"enabled", ::getuid() == 0}}}}},
          {"apparmor", {{"enabled", security::apparmor_enabled()}}},
          {"selinux", {{"enabled", security::selinux_enabled()}}}}},
        // runc's key for the libseccomp version.
        {"annotations",
         {{"io.github.mrun.version", MRUN_VERSION},
          {"io.github.seccomp.libseccomp.version", security::libseccomp_version()}}},
    };
    std::cout << j.dump(2) << std::endl;
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_features_command() {
  return std::make_unique<FeaturesCommand>();
}

}  // namespace mrun::cli
