#include "launch/host_support.hpp"

#include <cerrno>

#include "base/error.hpp"
#include "security/lsm.hpp"

namespace mrun::runtime {

void check_host_supports(const ContainerConfig& config) {
  security::check_lsm_labels(config.process.apparmor_profile, config.process.selinux_label);
  // Where SELinux is not enabled a mount label means nothing, and runc and crun ignore
  // it there too; where it is, mrun cannot apply it yet.
  if (!config.mount_label.empty() && security::selinux_enabled()) {
    throw Error("config.json: linux.mountLabel: mrun does not apply SELinux labels", ENOTSUP,
                "mrun does not honour this yet; remove it from config.json");
  }
}

}  // namespace mrun::runtime
