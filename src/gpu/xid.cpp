#include "xid.hpp"

#include <array>

namespace fakegpu {

namespace {

// The table of fakegpu(4), XID EVENTS; keep the two in step.
constexpr std::array<XidInfo, 5> kXids{{
    {8, "GPU stopped processing", false,
     "a job ran past the driver's job_timeout_ms and the watchdog stopped it (a hang)",
     "fix or split the job, or raise job_timeout_ms; restart the application"},
    {13, "graphics engine exception", false,
     "the engine faulted while running one of the context's jobs",
     "restart the application; on many contexts at once, suspect the device"},
    {31, "MMU fault", false,
     "a job named a buffer its context does not have: freed too early (a use after free), or "
     "another context's handle",
     "fix the application's buffer lifetime, then restart it"},
    {48, "double-bit ECC error", false,
     "an uncorrectable error in device memory: the buffers of the contexts holding memory are lost",
     "restart the affected applications; if it repeats, drain the node and replace the GPU"},
    {79, "GPU has fallen off the bus", true,
     "the device stopped answering: every context of it fails with ENODEV until a RESET",
     "reset the device as root (fakegpu-client --check reset), then restart the applications; if "
     "it repeats, drain the node"},
}};

}  // namespace

std::span<const XidInfo> xid_table() noexcept {
  return kXids;
}

const XidInfo* find_xid(unsigned code) noexcept {
  for (const XidInfo& x : kXids)
    if (x.code == code) return &x;
  return nullptr;
}

std::string xid_label(unsigned code) {
  std::string label = "Xid " + std::to_string(code);
  if (const XidInfo* x = find_xid(code)) label += " (" + std::string(x->name) + ")";
  return label;
}

}  // namespace fakegpu
