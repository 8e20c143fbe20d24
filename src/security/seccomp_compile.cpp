#include "security/seccomp_compile.hpp"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "base/unique_fd.hpp"

namespace mrun::security {

namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using FilterCtx = std::unique_ptr<void, CtxDeleter>;

uint32_t to_scmp_action(SeccompAction action, std::optional<std::uint32_t> errno_ret,
                        std::uint32_t fallback_errno) {
  switch (action) {
    case SeccompAction::kill_thread: return SCMP_ACT_KILL_THREAD;
    case SeccompAction::kill_process: return SCMP_ACT_KILL_PROCESS;
    case SeccompAction::trap: return SCMP_ACT_TRAP;
    case SeccompAction::errno_ret: return SCMP_ACT_ERRNO(errno_ret.value_or(fallback_errno));
    case SeccompAction::trace: return SCMP_ACT_TRACE(errno_ret.value_or(fallback_errno));
    case SeccompAction::allow: return SCMP_ACT_ALLOW;
    case SeccompAction::log: return SCMP_ACT_LOG;
    case SeccompAction::notify: return SCMP_ACT_NOTIFY;
  }
  return SCMP_ACT_KILL_PROCESS;
}

scmp_compare to_scmp_op(SeccompOp op) {
  switch (op) {
    case SeccompOp::ne: return SCMP_CMP_NE;
    case SeccompOp::lt: return SCMP_CMP_LT;
    case SeccompOp::le: return SCMP_CMP_LE;
    case SeccompOp::eq: return SCMP_CMP_EQ;
    case SeccompOp::ge: return SCMP_CMP_GE;
    case SeccompOp::gt: return SCMP_CMP_GT;
    case SeccompOp::masked_eq: return SCMP_CMP_MASKED_EQ;
  }
  return SCMP_CMP_EQ;
}

// SCMP_ARCH_X86_64 -> libseccomp's token; 0 when this libseccomp does not know it.
uint32_t resolve_arch(const std::string& name) {
  std::string token = name.rfind("SCMP_ARCH_", 0) == 0 ? name.substr(10) : name;
  for (char& c : token) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return seccomp_arch_resolve_name(token.c_str());
}

std::string arch_name(uint32_t token) {
  switch (token) {
    case SCMP_ARCH_X86_64: return "x86_64";
    case SCMP_ARCH_X86: return "x86";
    case SCMP_ARCH_X32: return "x32";
    case SCMP_ARCH_AARCH64: return "aarch64";
    case SCMP_ARCH_ARM: return "arm";
    default: return "arch-" + std::to_string(token);
  }
}

bool has_cap(const SeccompTarget& target, const std::string& name) {
  auto cap = capability_from_name(name);
  return cap && (target.capabilities & cap_bit(*cap)) != 0;
}

// podman's semantics (containers/common seccomp): includes must all match, excludes
// must all not match; arches are compared with the native Go arch only.
bool applies(const SeccompRule& rule, const SeccompTarget& target, const std::string& go_arch) {
  const auto& inc = rule.includes;
  const auto& exc = rule.excludes;
  if (!inc.arches.empty() &&
      std::find(inc.arches.begin(), inc.arches.end(), go_arch) == inc.arches.end()) {
    return false;
  }
  for (const auto& cap : inc.caps) {
    if (!has_cap(target, cap)) return false;
  }
  if (!inc.min_kernel.empty() && !kernel_at_least(target.kernel_release, inc.min_kernel)) {
    return false;
  }
  if (std::find(exc.arches.begin(), exc.arches.end(), go_arch) != exc.arches.end()) return false;
  for (const auto& cap : exc.caps) {
    if (has_cap(target, cap)) return false;
  }
  if (!exc.min_kernel.empty() && kernel_at_least(target.kernel_release, exc.min_kernel)) {
    return false;
  }
  return true;
}

std::vector<scmp_arg_cmp> to_conditions(const std::vector<SeccompArg>& args) {
  std::vector<scmp_arg_cmp> out;
  for (const auto& a : args) {
    scmp_arg_cmp c{};
    c.arg = a.index;
    c.op = to_scmp_op(a.op);
    c.datum_a = a.value;
    c.datum_b = a.value_two;
    out.push_back(c);
  }
  return out;
}

std::vector<sock_filter> export_program(void* ctx) {
  // libseccomp 2.5 only exports to an fd; a memfd keeps it off the filesystem.
  UniqueFd fd(::memfd_create("mrun-seccomp", MFD_CLOEXEC));
  if (!fd) throw_errno("memfd_create for the seccomp program");
  int rc = seccomp_export_bpf(ctx, fd.get());
  if (rc != 0) throw_errno(-rc, "export the seccomp program (libseccomp)");
  off_t size = ::lseek(fd.get(), 0, SEEK_END);
  if (size < 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    throw Error("libseccomp exported a BPF program of odd size " + std::to_string(size));
  }
  std::vector<sock_filter> program(static_cast<std::size_t>(size) / sizeof(sock_filter));
  std::size_t done = 0, want = static_cast<std::size_t>(size);
  auto* bytes = reinterpret_cast<char*>(program.data());
  while (done < want) {
    ssize_t n = ::pread(fd.get(), bytes + done, want - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("read back the seccomp program");
    done += static_cast<std::size_t>(n);
  }
  return program;
}

}  // namespace

bool kernel_at_least(const std::string& release, const std::string& minimum) {
  if (release.empty()) return true;
  auto numbers = [](const std::string& text) {
    std::vector<unsigned long> out;
    std::size_t i = 0;
    while (i < text.size() && out.size() < 3) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) break;
      unsigned long n = 0;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        n = n * 10 + static_cast<unsigned long>(text[i++] - '0');
      }
      out.push_back(n);
      if (i < text.size() && text[i] == '.') ++i;
    }
    out.resize(3, 0);
    return out;
  };
  return numbers(release) >= numbers(minimum);
}

std::string native_go_arch() {
  switch (seccomp_arch_native()) {
    case SCMP_ARCH_X86_64: return "amd64";
    case SCMP_ARCH_X86: return "x86";
    case SCMP_ARCH_X32: return "x32";
    case SCMP_ARCH_AARCH64: return "arm64";
    case SCMP_ARCH_ARM: return "arm";
    case SCMP_ARCH_PPC64LE: return "ppc64le";
    case SCMP_ARCH_S390X: return "s390x";
    case SCMP_ARCH_RISCV64: return "riscv64";
    default: return "unknown";
  }
}

namespace {

std::string kernel_name(const SeccompTarget& target) {
  return target.kernel_release.empty() ? "this kernel"
                                       : "this kernel (" + target.kernel_release + ")";
}

// An action or a flag the kernel lacks fails here, by name, rather than as a bare
// EINVAL from seccomp(2) in the container's last step.
void check_action(const SeccompProfile& profile, const SeccompTarget& target, SeccompAction action,
                  const std::string& where) {
  if ((target.kernel_actions & action_bit(action)) != 0) return;
  throw Error("seccomp profile " + profile.origin + ": " + where + ": " + to_string(action) +
                  " is not supported by " + kernel_name(target) + " or this libseccomp",
              ENOTSUP, "give another action, or run on a newer kernel");
}

void check_flags(const SeccompProfile& profile, const SeccompTarget& target) {
  const std::string kernel = kernel_name(target);
  for (std::size_t i = 0; i < profile.flags.size(); ++i) {
    if ((target.kernel_flags & seccomp_flag_value(profile.flags[i])) != 0) continue;
    throw Error("seccomp profile " + profile.origin + ": flags[" + std::to_string(i) +
                    "]: " + profile.flags[i] + " is not supported by " + kernel,
                ENOTSUP, "drop the flag, or run on a newer kernel");
  }
}

// The flags for seccomp(2). NEW_LISTENER comes with the first notify rule in the
// program (a notify rule that does not apply here makes no listener), and the kernel
// takes the others only in company: TSYNC with NEW_LISTENER needs TSYNC_ESRCH (mrun's
// process is single-threaded by then, so it changes nothing), WAIT_KILLABLE_RECV needs
// a listener to mean anything.
unsigned int filter_flags(const SeccompProfile& profile, bool notify_rules) {
  unsigned int flags = 0;
  for (const auto& flag : profile.flags) flags |= seccomp_flag_value(flag);
  if (notify_rules) flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
  if ((flags & SECCOMP_FILTER_FLAG_TSYNC) != 0 && notify_rules) {
    flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
  }
  if ((flags & SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) != 0 && !notify_rules) {
    throw Error("seccomp profile " + profile.origin +
                    ": SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV without a SCMP_ACT_NOTIFY rule "
                    "that applies here: the kernel takes it only with a notification listener",
                EINVAL, "drop the flag, or add the notify rule it is meant for");
  }
  return flags;
}

}  // namespace

bool CompiledSeccomp::has_listener() const noexcept {
  return (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) != 0;
}

CompiledSeccomp compile_seccomp(const SeccompProfile& profile, const SeccompTarget& target,
                                SeccompLayout layout) {
  check_action(profile, target, profile.default_action, "defaultAction");
  check_flags(profile, target);
  const std::uint32_t default_errno = profile.default_errno.value_or(EPERM);
  const uint32_t default_action =
      to_scmp_action(profile.default_action, profile.default_errno, EPERM);
  FilterCtx ctx(seccomp_init(default_action));
  if (!ctx) throw Error("libseccomp could not create a filter (seccomp_init)", ENOMEM);
  if (layout == SeccompLayout::binary_tree) {
    int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc != 0) throw_errno(-rc, "ask libseccomp for a binary tree of syscalls (optimize=2)");
  }

  CompiledSeccomp out;
  // Architectures: the native one always; for podman's archMap the sub-architectures of
  // the native entry (x86_64: i386 and x32), so a process cannot dodge the filter by
  // switching ABIs; Docker's "architectures" list as given.
  const uint32_t native = seccomp_arch_native();
  out.architectures.push_back(arch_name(native));
  auto add_arch = [&](const std::string& name, const std::string& where) {
    uint32_t token = resolve_arch(name);
    if (token == 0) {
      // Never dropped in silence: the filter would not cover what the profile names.
      throw Error("seccomp profile " + profile.origin + ": " + where + ": architecture \"" + name +
                      "\" is unknown to this libseccomp (" + libseccomp_version() + ")",
                  EINVAL, "drop it, or give one that `mrun features` lists in linux.seccomp.archs");
    }
    if (token == native) return;
    if (token == SCMP_ARCH_X32 && !target.x32_syscalls) {
      // What the kernel answers itself (libseccomp's bad-arch default would kill): a
      // program probing for x32, as mrun does, sees ENOSYS as it would unfiltered.
      int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
      if (rc != 0) throw_errno(-rc, "set the filter's action for x32 syscalls");
      return;
    }
    int rc = seccomp_arch_add(ctx.get(), token);
    if (rc == 0) out.architectures.push_back(arch_name(token));
    if (rc != 0 && rc != -EEXIST) {
      // EDOM: another byte order than the native one, which one filter cannot mix.
      throw Error("seccomp profile " + profile.origin + ": " + where + ": libseccomp cannot add " +
                      name + " to a filter for " + arch_name(native),
                  -rc, "drop it, or give one that `mrun features` lists in linux.seccomp.archs");
    }
  };
  for (std::size_t i = 0; i < profile.arch_map.size(); ++i) {
    const auto& entry = profile.arch_map[i];
    if (resolve_arch(entry.architecture) != native) continue;
    for (std::size_t j = 0; j < entry.sub_architectures.size(); ++j) {
      add_arch(entry.sub_architectures[j],
               "archMap[" + std::to_string(i) + "].subArchitectures[" + std::to_string(j) + "]");
    }
  }
  for (std::size_t i = 0; i < profile.architectures.size(); ++i) {
    add_arch(profile.architectures[i], "architectures[" + std::to_string(i) + "]");
  }

  const std::string go_arch = native_go_arch();
  bool notify_rules = false;
  for (const auto& rule : profile.syscalls) {
    if (!applies(rule, target, go_arch)) continue;
    check_action(profile, target, rule.action, rule.where + ".action");
    const uint32_t action = to_scmp_action(rule.action, rule.errno_ret, default_errno);
    // libseccomp refuses a rule whose action is the default one (EACCES); it would be a
    // no-op anyway.
    if (action == default_action) continue;
    auto conditions = to_conditions(rule.args);
    // Two conditions on the same argument cannot be ANDed by libseccomp; the OCI
    // runtimes (runc, crun) then add one rule per condition (OR). Do the same, so that
    // profiles written for them mean the same here.
    bool repeated = false;
    for (std::size_t i = 0; i < conditions.size(); ++i) {
      for (std::size_t j = i + 1; j < conditions.size(); ++j) {
        if (conditions[i].arg == conditions[j].arg) repeated = true;
      }
    }
    for (const auto& name : rule.names) {
      int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) {
        if (std::find(out.unknown_syscalls.begin(), out.unknown_syscalls.end(), name) ==
            out.unknown_syscalls.end()) {
          out.unknown_syscalls.push_back(name);
        }
        continue;
      }
      auto add = [&](unsigned count, const scmp_arg_cmp* conds) {
        int rc = seccomp_rule_add_array(ctx.get(), action, nr, count, conds);
        if (rc != 0) {
          throw Error("seccomp profile rule " + rule.where + " (" + name + ", " +
                          to_string(rule.action) +
                          "): libseccomp refused it: " + std::strerror(-rc),
                      -rc, "check the rule's args and action");
        }
        ++out.rules_added;
        if (rule.action == SeccompAction::notify) notify_rules = true;
      };
      if (repeated) {
        for (const auto& c : conditions) add(1, &c);
      } else {
        add(static_cast<unsigned>(conditions.size()), conditions.data());
      }
    }
  }
  out.flags = filter_flags(profile, notify_rules);
  if (notify_rules) {
    out.listener_path = profile.listener_path;
    out.listener_metadata = profile.listener_metadata;
  }
  out.program = export_program(ctx.get());
  if (out.program.size() > BPF_MAXINSNS) {
    throw Error("the seccomp profile compiles to " + std::to_string(out.program.size()) +
                    " BPF instructions, more than the kernel's limit of " +
                    std::to_string(BPF_MAXINSNS),
                E2BIG, "merge rules or drop argument conditions");
  }
  return out;
}

namespace {

long load_with_flags(const CompiledSeccomp& filter, unsigned int flags) {
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(filter.program.size());
  prog.filter = const_cast<sock_filter*>(filter.program.data());
  long rc = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (rc < 0) {
    throw_errno("load the seccomp filter",
                "the kernel needs CONFIG_SECCOMP_FILTER; without no-new-privileges the setup "
                "process must hold CAP_SYS_ADMIN");
  }
  return rc;
}

}  // namespace

UniqueFd load_seccomp_program(const CompiledSeccomp& filter) {
  long rc = load_with_flags(filter, filter.flags);
  return filter.has_listener() ? UniqueFd(static_cast<int>(rc)) : UniqueFd();
}

void load_seccomp_program_without_listener(const CompiledSeccomp& filter) {
  load_with_flags(filter, filter.flags & ~(SECCOMP_FILTER_FLAG_NEW_LISTENER |
                                           SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV |
                                           SECCOMP_FILTER_FLAG_TSYNC_ESRCH));
}

}  // namespace mrun::security
