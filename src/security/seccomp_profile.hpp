// The OCI / containers seccomp profile format (podman's /usr/share/containers/
// seccomp.json, Docker's profile, the "linux.seccomp" object of an OCI config.json), as
// typed data. Pure: parsing needs no libseccomp, so unit tests check every error message.
//
// Accepted keys: defaultAction, defaultErrnoRet, defaultErrno, architectures, archMap
// [{architecture, subArchitectures}], flags, listenerPath, listenerMetadata, syscalls
// [{names | name, action, errnoRet, errno, args [{index, value, valueTwo, op}], includes /
// excludes {arches, caps, minKernel}, comment}]. Unknown keys are ignored (newer profiles
// add some); a known key with a wrong type or value is an error naming its path, e.g.
// "syscalls[3].args[0].op".
//
// What the runtime spec (config-linux.md, "Seccomp") and runc ask beyond the syntax is
// checked here too, so that a profile mrun cannot honour fails before anything starts:
// an errno (errnoRet, errno, defaultErrnoRet) only for SCMP_ACT_ERRNO and SCMP_ACT_TRACE;
// SCMP_ACT_NOTIFY only with a listenerPath, never as the default action and never for
// sendmsg (see seccomp_notify_handover_syscall); listenerMetadata only with a listenerPath.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mrun::security {

enum class SeccompAction { kill_thread, kill_process, trap, errno_ret, trace, allow, log, notify };
enum class SeccompOp { ne, lt, le, eq, ge, gt, masked_eq };

struct SeccompArg {
  unsigned index = 0;  // 0..5
  std::uint64_t value = 0;
  std::uint64_t value_two = 0;  // the mask of SCMP_CMP_MASKED_EQ
  SeccompOp op = SeccompOp::eq;
};

// includes / excludes: a rule applies when every include matches and no exclude does.
struct SeccompFilterCondition {
  std::vector<std::string> arches;  // Go names, as podman writes them: amd64, x86, x32, ...
  std::vector<std::string> caps;    // CAP_SYS_ADMIN, ...
  std::string min_kernel;           // "4.8"
  bool empty() const { return arches.empty() && caps.empty() && min_kernel.empty(); }
};

struct SeccompRule {
  std::vector<std::string> names;
  SeccompAction action = SeccompAction::allow;
  std::optional<std::uint32_t> errno_ret;  // errno for SCMP_ACT_ERRNO, data for TRACE
  std::vector<SeccompArg> args;
  SeccompFilterCondition includes;
  SeccompFilterCondition excludes;
  std::string where;  // "syscalls[3]", for messages
};

struct SeccompArchMap {
  std::string architecture;  // SCMP_ARCH_X86_64
  std::vector<std::string> sub_architectures;
};

struct SeccompProfile {
  std::string origin;  // the file, or "config.json linux.seccomp", for messages
  SeccompAction default_action = SeccompAction::allow;
  std::optional<std::uint32_t> default_errno;
  std::vector<std::string> architectures;  // SCMP_ARCH_* (Docker/OCI style)
  std::vector<SeccompArchMap> arch_map;    // podman style
  std::vector<std::string> flags;          // SECCOMP_FILTER_FLAG_*, as given
  // SCMP_ACT_NOTIFY: the unix socket of the agent the listener goes to (absolute), and
  // the opaque text handed to it as "metadata".
  std::string listener_path;
  std::string listener_metadata;
  std::vector<SeccompRule> syscalls;
};

// Throws mrun::Error (exit 125): "seccomp profile ORIGIN: line L, column C: ..." for bad
// JSON, "seccomp profile ORIGIN: syscalls[3].action: ..." for a bad value.
SeccompProfile parse_seccomp_profile(const std::string& text, const std::string& origin);

// Whether a process under the profile can execve at all (the default action, or a rule
// naming execve, allows it, only logs it or leaves it to the agent): one that cannot would fail the
// command's exec with the error-reporting calls denied too, looking like a crash of the command.
bool allows_execve(const SeccompProfile& profile);

std::string to_string(SeccompAction action);

// The names this parser accepts, in the order `mrun features` lists them (runc lists
// the same: the runtime spec's actions, operators and flags).
std::vector<std::string> known_seccomp_actions();
std::vector<std::string> known_seccomp_operators();
std::vector<std::string> known_seccomp_flags();
// "SCMP_ACT_KILL" -> kill_thread (libseccomp's alias); nullopt for an unknown name.
std::optional<SeccompAction> seccomp_action_from_name(const std::string& name);

// The one syscall the container's process makes between loading a filter with
// SCMP_ACT_NOTIFY rules and its agent holding the listener: the sendmsg(2) that hands
// the listener to mrun. A notify rule for it could never be answered (runc refuses
// SCMP_ACT_NOTIFY on write(2), its own hand-over call, for the same reason).
inline constexpr const char* seccomp_notify_handover_syscall = "sendmsg";
// "EPERM" -> 1; nullopt if unknown.
std::optional<std::uint32_t> errno_from_name(const std::string& name);

}  // namespace mrun::security
