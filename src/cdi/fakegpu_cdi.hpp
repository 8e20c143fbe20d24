// `mrun cdi generate`: the CDI spec for the fakegpu devices of this host, listing what
// `mrun run --gpu` injects (the nodes, the user-space driver bound read-only under
// /opt/fakegpu, PATH and LD_LIBRARY_PATH), so that an engine (podman --device
// fakegpu.example/gpu=0) and `mrun run --device fakegpu.example/gpu=0` inject the same.
#pragma once

#include <vector>

#include "cdi/cdi_spec.hpp"
#include "mount/devices.hpp"

namespace mrun::cdi {

inline constexpr const char* fakegpu_kind = "fakegpu.example/gpu";

// Pure: `nodes` are the host's /dev/fakegpuN and /dev/fakegpuctl as stat(2) saw them.
// Devices "0", "1", ... one per /dev/fakegpuN, and "all"; /dev/fakegpuctl, the
// libraries, programs and environment are the spec's common edits. Throws (125) when
// there is no /dev/fakegpuN or no /dev/fakegpuctl.
Spec fakegpu_spec(const std::vector<mount::HostDevice>& nodes,
                  const mount::GpuUserspace& userspace);

// The host's fakegpu nodes (/dev/fakegpu*), inspected. Throws (125, "load the driver")
// when there is no /dev/fakegpuN or no /dev/fakegpuctl.
std::vector<mount::HostDevice> host_fakegpu_nodes(const std::string& dev_dir = "/dev");

}  // namespace mrun::cdi
