// `mrun gpu ps`: who holds the GPU - every process with a descriptor of a fakegpu
// node, the container mrun started it in, and per context the memory, jobs and fault
// the driver reports in the descriptor's fdinfo (fakegpu(4), PER-CONTEXT
// INFORMATION). What `lsof /dev/nvidia*` and nvidia-smi's process list answer.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mrun::gpucheck {

// One descriptor of a fakegpu node in one process.
struct GpuHolder {
  pid_t pid = 0;         // host pid namespace
  pid_t pid_inside = 0;  // in its own pid namespace (NSpid), == pid when not nested
  uid_t uid = 0;         // the process's owner
  std::string comm;
  int fd = -1;
  unsigned minor = 0;     // 255: the control node, which has no context
  std::string container;  // the mrun container it runs in; empty: none known
  // From fdinfo; absent on the control node (or a driver without fdinfo).
  std::optional<std::uint32_t> ctx;
  std::uint64_t memory = 0;
  std::uint64_t handles = 0;
  std::uint64_t jobs_in_flight = 0;
  unsigned xid = 0;         // the Xid that poisoned the context
  unsigned device_xid = 0;  // 79 while the device is lost
};

// A container mrun knows, by the pid of its init (host pid namespace).
struct ContainerRef {
  std::string name;
  pid_t init_pid = 0;
};

struct GpuPs {
  bool module_loaded = false;
  std::vector<GpuHolder> holders;  // by pid, then fd
  // Processes whose descriptors the caller may not read (other users' when rootless).
  unsigned unreadable = 0;
};

// Scans /proc (`proc`: another root for the unit tests).
GpuPs gather_gpu_ps(const std::vector<ContainerRef>& containers, const std::string& proc = "/proc");

// "fakegpu0", or "fakegpuctl" for minor 255.
std::string node_name(unsigned minor);
// The table `mrun gpu ps` prints; a line saying nobody holds the GPU when empty.
std::string render_gpu_ps(const GpuPs& ps);
nlohmann::json gpu_ps_json(const GpuPs& ps);

}  // namespace mrun::gpucheck
