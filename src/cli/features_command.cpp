// mrun features   -- see mrun-oci(1)
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "mount/config_mounts.hpp"
#include "oci/spec.hpp"
#include "runtime/hooks.hpp"
#include "security/capabilities.hpp"

namespace mrun::cli {

namespace {

class FeaturesCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    return app.add_subcommand("features", "print what this mrun supports, as runc features does");
  }

  // Honest about today's subset (see mrun-oci(1)): every hook stage is run, the mount
  // options mount/config_mounts takes, no idmapped mounts, no apparmor or selinux,
  // cgroup v2 only.
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
          {"cgroup",
           {{"v1", false},
            {"v2", true},
            {"systemd", false},
            {"systemdUser", false},
            {"rdma", true}}},
          {"seccomp", {{"enabled", true}}},
          // idmap and ridmap are refused (125) today.
          {"mountExtensions", {{"idmap", {{"enabled", false}}}}},
          {"apparmor", {{"enabled", false}}},
          {"selinux", {{"enabled", false}}}}},
        {"annotations", {{"io.github.mrun.version", MRUN_VERSION}}},
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
