// `mrun gpu doctor`: the debugging ladder of a GPU in a container as rungs over facts
// gathered from the host (and from a running container). Each rung is ok or says the
// exact fix; the ladder stops at the first failing rung, whose exit status is doctor's.
// Pure: doctor_facts.cpp gathers the facts.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mrun::gpucheck {

// A host node as stat(2) saw it.
struct NodeFact {
  std::string path;
  bool exists = false;
  bool is_char = false;
  unsigned major = 0, minor = 0;
  std::optional<std::pair<unsigned, unsigned>> sysfs_dev;  // /sys/class/.../dev: the driver's
  std::string owner, group;                                // names (numbers when unknown)
  unsigned mode = 0;                                       // permission bits
  bool caller_can_open = false;                            // access(R_OK|W_OK) as the caller
};

struct HelperFact {
  std::string path;  // empty: not installed
  bool setuid_root = false;
  bool nosuid_mount = false;
  std::string policy_path;  // the helper's policy file
  bool policy_present = false;
  std::string policy_error;    // the helper's own refusal: unsafe file or directory, bad line
  bool policy_allows = false;  // every node allowed for the caller
  std::string not_allowed;     // the first node it does not allow
};

struct ContainerFact {
  std::string name;
  bool running = false;
  pid_t pid = 0;
  bool rootless = true;
  std::vector<std::string> nodes_visible;  // fakegpu nodes seen in its /dev
  std::vector<std::string> nodes_missing;  // host nodes it does not see
  std::vector<gid_t> groups;               // Groups: of its init (host ids)
  gid_t node_gid = 0;                      // group of its /dev/fakegpu0
  unsigned node_mode = 0;
  uid_t uid = 0;  // its init's uid on the host
  uid_t node_uid = 0;
  std::string device_filter;   // the state's field ("bpf", "helper", "none: ...")
  bool libs_injected = false;  // /opt/fakegpu/lib/libfakegpu.so.1 in it
  // The libfakegpu.so.1 its dynamic loader finds first (its init's LD_LIBRARY_PATH,
  // then the standard directories), as a path inside it; empty: none found.
  std::string library;
  bool library_readable = true;  // false: /proc/PID/root was not ours to read
  // From the library's version marker; nothing: a library without one (1.0).
  std::optional<std::uint32_t> library_version;
};

// One Xid line of the kernel log (fakegpu(4), XID EVENTS).
struct XidEvent {
  unsigned xid = 0;
  pid_t pid = 0;
  std::string comm;
  unsigned ctx = 0;
  std::string text;  // "fakegpu0: MMU fault: ..."
};

struct DoctorFacts {
  std::string user;  // the caller
  uid_t uid = 0;
  std::vector<gid_t> groups;  // the caller's current groups
  bool in_group_db = false;   // listed in group fakegpu in /etc/group
  bool module_loaded = false;
  std::optional<unsigned> major;  // /proc/devices
  std::vector<NodeFact> nodes;    // /dev/fakegpu* (ctl included)
  HelperFact helper;
  bool subuid = false, subgid = false;
  // The fix for missing ranges, with a block free in both files (userns/subid.hpp).
  std::string add_subids_command;
  bool newuidmap = false;
  // /sys/module/fakegpu/version; nothing: a driver before 1.1 (or none loaded).
  std::optional<std::uint32_t> driver_version;
  // Xid events in the kernel log since the module was last loaded.
  bool kernel_log_readable = true;
  std::vector<XidEvent> xids;
  std::optional<ContainerFact> container;
};

// The Xid events in kernel-log text (one message per line, /dev/kmsg's or dmesg's),
// those after the last load of fakegpu only.
std::vector<XidEvent> parse_xid_events(const std::string& log);

struct Rung {
  int exit_status;  // doctor's exit status when this rung fails
  std::string name;
  bool ok = false;
  std::string detail;  // ok: what was seen; failed: the fix
};

// Exit statuses, documented in mrun-gpu(1).
namespace doctor_exit {
inline constexpr int module = 10;
inline constexpr int nodes = 11;
inline constexpr int access = 12;
inline constexpr int helper = 13;
inline constexpr int subids = 14;
inline constexpr int xid = 15;
inline constexpr int container_running = 20;
inline constexpr int node_visible = 21;
inline constexpr int groups_kept = 22;
inline constexpr int device_filter = 23;
inline constexpr int libs = 24;
inline constexpr int library_version = 25;
}  // namespace doctor_exit

// The rungs up to and including the first that fails.
std::vector<Rung> climb(const DoctorFacts& facts);
// 0, or the failing rung's exit status.
int doctor_status(const std::vector<Rung>& rungs);
// "ok   module: ..." / "FAIL module: ...\n     fix: ..."
std::string render_rungs(const std::vector<Rung>& rungs);

}  // namespace mrun::gpucheck
