// What a container's config asks of the host, checked before anything is made: the
// spec conversion (oci/) reads only the config, so whether this machine can honour a
// field (an LSM label, an SELinux mount label) is decided here, at the start.
#pragma once

#include "runtime/config.hpp"

namespace mrun::runtime {

// Throws a 125 naming the field and the fix when the host cannot honour it: an
// AppArmor profile or SELinux label where that module is not enabled (as runc
// refuses), an SELinux mount label where SELinux is enabled (mrun applies none).
void check_host_supports(const ContainerConfig& config);

}  // namespace mrun::runtime
