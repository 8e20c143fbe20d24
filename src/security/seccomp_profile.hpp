// The OCI / containers seccomp profile format (podman's /usr/share/containers/
// seccomp.json, Docker's profile, the "linux.seccomp" object of an OCI config.json), as
// typed data. Pure: parsing needs no libseccomp, so unit tests check every error message.
//
// Accepted keys: defaultAction, defaultErrnoRet, defaultErrno, architectures, archMap
// [{architecture, subArchitectures}], flags, syscalls [{names | name, action, errnoRet,
// errno, args [{index, value, valueTwo, op}], includes / excludes {arches, caps,
// minKernel}, comment}]. Unknown keys are ignored (newer profiles add some); a known key
// with a wrong type or value is an error naming its path, e.g. "syscalls[3].args[0].op".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mrun::security {

enum class SeccompAction { kill_thread, kill_process, trap, errno_ret, trace, allow, log };
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
  SeccompAction default_action = SeccompAction::allow;
  std::optional<std::uint32_t> default_errno;
  std::vector<std::string> architectures;  // SCMP_ARCH_* (Docker/OCI style)
  std::vector<SeccompArchMap> arch_map;    // podman style
  std::vector<std::string> flags;          // SECCOMP_FILTER_FLAG_*
  std::vector<SeccompRule> syscalls;
};

// Throws mrun::Error (exit 125): "seccomp profile ORIGIN: line L, column C: ..." for bad
// JSON, "seccomp profile ORIGIN: syscalls[3].action: ..." for a bad value.
SeccompProfile parse_seccomp_profile(const std::string& text, const std::string& origin);

// Whether a process under the profile can execve at all (the default action, or a rule
// naming execve, allows or only logs it): one that cannot would fail the command's
// exec with the error-reporting calls denied too, looking like a crash of the command.
bool allows_execve(const SeccompProfile& profile);

std::string to_string(SeccompAction action);
// "EPERM" -> 1; nullopt if unknown.
std::optional<std::uint32_t> errno_from_name(const std::string& name);

}  // namespace mrun::security
