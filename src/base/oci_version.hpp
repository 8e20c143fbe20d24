// The runtime-spec version mrun implements: the ociVersion of the configs `mrun spec`
// writes and of the state `mrun state` and the hooks are given. Here, below both the
// spec conversion (oci/) and the runtime, so that neither depends on the other for it.
#pragma once

namespace mrun {

inline constexpr const char* oci_version = "1.0.2";

}  // namespace mrun
