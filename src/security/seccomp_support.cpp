#include "security/seccomp_support.hpp"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

namespace mrun::security {

namespace {

constexpr std::pair<const char*, unsigned int> flag_values[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", SECCOMP_FILTER_FLAG_TSYNC},
    {"SECCOMP_FILTER_FLAG_LOG", SECCOMP_FILTER_FLAG_LOG},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SECCOMP_FILTER_FLAG_SPEC_ALLOW},
    {"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV},
};

// The runtime spec's list (config-linux.md, as of libseccomp 2.6).
constexpr const char* spec_archs[] = {
    "SCMP_ARCH_X86",     "SCMP_ARCH_X86_64",   "SCMP_ARCH_X32",         "SCMP_ARCH_ARM",
    "SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS",     "SCMP_ARCH_MIPS64",      "SCMP_ARCH_MIPS64N32",
    "SCMP_ARCH_MIPSEL",  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",   "SCMP_ARCH_PPC64LE",  "SCMP_ARCH_S390",        "SCMP_ARCH_S390X",
    "SCMP_ARCH_PARISC",  "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64",     "SCMP_ARCH_LOONGARCH64",
    "SCMP_ARCH_M68K",    "SCMP_ARCH_SH",       "SCMP_ARCH_SHEB",
};

std::uint32_t kernel_return_value(SeccompAction action) {
  switch (action) {
    case SeccompAction::kill_thread: return SECCOMP_RET_KILL_THREAD;
    case SeccompAction::kill_process: return SECCOMP_RET_KILL_PROCESS;
    case SeccompAction::trap: return SECCOMP_RET_TRAP;
    case SeccompAction::errno_ret: return SECCOMP_RET_ERRNO;
    case SeccompAction::trace: return SECCOMP_RET_TRACE;
    case SeccompAction::allow: return SECCOMP_RET_ALLOW;
    case SeccompAction::log: return SECCOMP_RET_LOG;
    case SeccompAction::notify: return SECCOMP_RET_USER_NOTIF;
  }
  return SECCOMP_RET_KILL_PROCESS;
}

// A flag probed alone where the kernel takes it only with another: the listener's
// wait mode means nothing without a listener.
unsigned int probe_flags(unsigned int flag) {
  if (flag == SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) flag |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
  return flag;
}

// What libseccomp's API level 5 (user notification) stands for, without asking
// libseccomp: seccomp_api_get() probes the kernel a dozen times more on every start,
// and runs code no cached start needs. The library must be 2.5 or later; the kernel
// must take a listener and say the size of its messages.
bool libseccomp_can_notify() {
  const scmp_version* v = seccomp_version();
  if (v->major < 2 || (v->major == 2 && v->minor < 5)) return false;
  if (!kernel_accepts_seccomp_flags(SECCOMP_FILTER_FLAG_NEW_LISTENER)) return false;
  struct seccomp_notif_sizes sizes {};
  return ::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0;
}

}  // namespace

unsigned int seccomp_flag_value(const std::string& name) {
  for (const auto& [text, value] : flag_values) {
    if (name == text) return value;
  }
  return 0;
}

bool kernel_accepts_seccomp_flags(unsigned int flags) {
  long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, nullptr);
  return rc < 0 && errno == EFAULT;
}

SeccompActionSet available_seccomp_actions() {
  SeccompActionSet out = 0;
  for (unsigned a = 0; a <= static_cast<unsigned>(SeccompAction::notify); ++a) {
    auto action = static_cast<SeccompAction>(a);
    std::uint32_t value = kernel_return_value(action);
    if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &value) != 0) continue;
    if (action == SeccompAction::notify && !libseccomp_can_notify()) continue;
    out |= action_bit(action);
  }
  return out;
}

unsigned int available_seccomp_flags() {
  unsigned int out = 0;
  for (const auto& [text, value] : flag_values) {
    if (kernel_accepts_seccomp_flags(probe_flags(value))) out |= value;
  }
  return out;
}

std::vector<std::string> supported_seccomp_actions() {
  const SeccompActionSet available = available_seccomp_actions();
  std::vector<std::string> out;
  for (const auto& name : known_seccomp_actions()) {
    auto action = seccomp_action_from_name(name);
    if (action && (available & action_bit(*action)) != 0) out.push_back(name);
  }
  return out;
}

std::vector<std::string> supported_seccomp_flags() {
  const unsigned int available = available_seccomp_flags();
  std::vector<std::string> out;
  for (const auto& name : known_seccomp_flags()) {
    if ((available & seccomp_flag_value(name)) != 0) out.push_back(name);
  }
  return out;
}

std::vector<std::string> known_seccomp_archs() {
  std::vector<std::string> out;
  for (const char* name : spec_archs) {
    std::string token = std::string(name).substr(10);  // after "SCMP_ARCH_"
    for (char& c : token) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::uint32_t arch = seccomp_arch_resolve_name(token.c_str());
    if (arch == 0) continue;
    // Whether a filter for the native architecture takes it (one filter holds one byte
    // order): what compile_seccomp does with it.
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr) continue;
    int rc = seccomp_arch_add(ctx, arch);
    seccomp_release(ctx);
    if (rc == 0 || rc == -EEXIST) out.emplace_back(name);
  }
  return out;
}

std::string libseccomp_version() {
  const scmp_version* v = seccomp_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->micro);
}

}  // namespace mrun::security
