// What this kernel and this libseccomp can honour of a seccomp profile, asked of them
// rather than assumed from version numbers: `mrun features` lists it, and
// prepare_security_plan hands it to compile_seccomp (SeccompTarget), which refuses a
// flag or an action that the kernel lacks by name, before anything starts, instead of
// letting seccomp(2) fail with a bare EINVAL in the container's last step.
//
// mrun loads the program itself (load_seccomp_program): libseccomp only builds the BPF,
// so filter flags are the kernel's business alone. That is why
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV works with libseccomp 2.5.4, which has no
// SCMP_FLTATR_CTL_WAITKILL (2.6 added it; runc needs it there, mrun does not).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "security/seccomp_profile.hpp"

namespace mrun::security {

// The SECCOMP_FILTER_FLAG_* value of a runtime-spec flag name; 0 for any other name.
unsigned int seccomp_flag_value(const std::string& name);

// Whether seccomp(2) takes these filter flags. Probed with a null program: the kernel
// checks the flags first (EINVAL) and only then reads the program (EFAULT), so nothing
// is ever loaded and no privilege is needed.
bool kernel_accepts_seccomp_flags(unsigned int flags);

// Bit sets over SeccompAction values, for SeccompTarget.
using SeccompActionSet = std::uint32_t;
constexpr SeccompActionSet action_bit(SeccompAction action) {
  return SeccompActionSet{1} << static_cast<unsigned>(action);
}
inline constexpr SeccompActionSet all_seccomp_actions = ~SeccompActionSet{0};

// The actions this kernel has (SECCOMP_GET_ACTION_AVAIL) and libseccomp can build
// (SCMP_ACT_NOTIFY needs its API level 5).
SeccompActionSet available_seccomp_actions();
// The flags of known_seccomp_flags() this kernel takes (SECCOMP_FILTER_FLAG_* bits).
unsigned int available_seccomp_flags();

// For `mrun features`: the names of the above, and the SCMP_ARCH_* names of the runtime
// spec that this libseccomp can put in a filter for the native architecture (not those
// of the other byte order: x86_64 takes no MIPS, PPC, S390 or PARISC).
std::vector<std::string> supported_seccomp_actions();
std::vector<std::string> supported_seccomp_flags();
std::vector<std::string> known_seccomp_archs();
// "2.5.4": the libseccomp mrun builds its programs with (linked statically).
std::string libseccomp_version();

}  // namespace mrun::security
