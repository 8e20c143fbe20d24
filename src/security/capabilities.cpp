#include "security/capabilities.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <iterator>

#include "base/error.hpp"
#include "base/strings.hpp"

namespace mrun::security {

namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_all(const std::string& name) {
  return upper(name) == "ALL";
}

// Resolves one user-given name or throws the error the CLI shows (exit 125).
int require_capability(const std::string& name, CapMask all, const std::string& where) {
  auto cap = capability_from_name(name);
  if (!cap) {
    throw Error(where + ": unknown capability \"" + name + "\"", EINVAL,
                "use a name from capabilities(7), such as NET_ADMIN or CAP_NET_ADMIN, or ALL");
  }
  if ((all & cap_bit(*cap)) == 0) {
    throw Error(
        where + ": capability " + capability_name(*cap) + " is not supported by this kernel",
        EINVAL, "see /proc/sys/kernel/cap_last_cap");
  }
  return *cap;
}

// The kernel's capability names, by number: each entry is a <linux/capability.h> macro
// and its own spelling, so that a name and its number cannot drift apart.
struct NamedCapability {
  int value;
  std::string_view name;
};
constexpr NamedCapability named(int value, std::string_view name) {
  return {value, name};
}
#define MRUN_NAMED_CAP(cap) named(cap, #cap)
constexpr NamedCapability kCapabilityNames[] = {
    MRUN_NAMED_CAP(CAP_CHOWN),
    MRUN_NAMED_CAP(CAP_DAC_OVERRIDE),
    MRUN_NAMED_CAP(CAP_DAC_READ_SEARCH),
    MRUN_NAMED_CAP(CAP_FOWNER),
    MRUN_NAMED_CAP(CAP_FSETID),
    MRUN_NAMED_CAP(CAP_KILL),
    MRUN_NAMED_CAP(CAP_SETGID),
    MRUN_NAMED_CAP(CAP_SETUID),
    MRUN_NAMED_CAP(CAP_SETPCAP),
    MRUN_NAMED_CAP(CAP_LINUX_IMMUTABLE),
    MRUN_NAMED_CAP(CAP_NET_BIND_SERVICE),
    MRUN_NAMED_CAP(CAP_NET_BROADCAST),
    MRUN_NAMED_CAP(CAP_NET_ADMIN),
    MRUN_NAMED_CAP(CAP_NET_RAW),
    MRUN_NAMED_CAP(CAP_IPC_LOCK),
    MRUN_NAMED_CAP(CAP_IPC_OWNER),
    MRUN_NAMED_CAP(CAP_SYS_MODULE),
    MRUN_NAMED_CAP(CAP_SYS_RAWIO),
    MRUN_NAMED_CAP(CAP_SYS_CHROOT),
    MRUN_NAMED_CAP(CAP_SYS_PTRACE),
    MRUN_NAMED_CAP(CAP_SYS_PACCT),
    MRUN_NAMED_CAP(CAP_SYS_ADMIN),
    MRUN_NAMED_CAP(CAP_SYS_BOOT),
    MRUN_NAMED_CAP(CAP_SYS_NICE),
    MRUN_NAMED_CAP(CAP_SYS_RESOURCE),
    MRUN_NAMED_CAP(CAP_SYS_TIME),
    MRUN_NAMED_CAP(CAP_SYS_TTY_CONFIG),
    MRUN_NAMED_CAP(CAP_MKNOD),
    MRUN_NAMED_CAP(CAP_LEASE),
    MRUN_NAMED_CAP(CAP_AUDIT_WRITE),
    MRUN_NAMED_CAP(CAP_AUDIT_CONTROL),
    MRUN_NAMED_CAP(CAP_SETFCAP),
    MRUN_NAMED_CAP(CAP_MAC_OVERRIDE),
    MRUN_NAMED_CAP(CAP_MAC_ADMIN),
    MRUN_NAMED_CAP(CAP_SYSLOG),
    MRUN_NAMED_CAP(CAP_WAKE_ALARM),
    MRUN_NAMED_CAP(CAP_BLOCK_SUSPEND),
    MRUN_NAMED_CAP(CAP_AUDIT_READ),
    MRUN_NAMED_CAP(CAP_PERFMON),
    MRUN_NAMED_CAP(CAP_BPF),
    MRUN_NAMED_CAP(CAP_CHECKPOINT_RESTORE),
};
#undef MRUN_NAMED_CAP
constexpr bool numbered_in_order() {
  for (std::size_t i = 0; i < std::size(kCapabilityNames); ++i) {
    if (kCapabilityNames[i].value != static_cast<int>(i)) return false;
  }
  return true;
}
static_assert(numbered_in_order(), "kCapabilityNames[N] must be capability N");
// A newer <linux/capability.h> names more: add them above.
static_assert(std::size(kCapabilityNames) == CAP_LAST_CAP + 1, "a capability has no name here");

// capget/capset, version 3: each set is 64 bits in two 32-bit words.
struct ProcessCapabilities {
  CapMask effective = 0, permitted = 0, inheritable = 0;
};

bool read_capabilities(ProcessCapabilities& out) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  auto join = [](std::uint32_t low, std::uint32_t high) { return CapMask{high} << 32 | low; };
  out.effective = join(data[0].effective, data[1].effective);
  out.permitted = join(data[0].permitted, data[1].permitted);
  out.inheritable = join(data[0].inheritable, data[1].inheritable);
  return true;
}

bool write_capabilities(const ProcessCapabilities& caps) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  for (int word = 0; word < _LINUX_CAPABILITY_U32S_3; ++word) {
    const int shift = 32 * word;
    data[word].effective = static_cast<std::uint32_t>(caps.effective >> shift);
    data[word].permitted = static_cast<std::uint32_t>(caps.permitted >> shift);
    data[word].inheritable = static_cast<std::uint32_t>(caps.inheritable >> shift);
  }
  return ::syscall(SYS_capset, &header, data) == 0;
}

}  // namespace

int kernel_last_capability() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int last = -1;
  if (in >> last && last >= 0 && last < 64) return last;
  // No /proc (unit tests in odd sandboxes): ask the kernel, which answers EINVAL for a
  // capability it does not know.
  last = 0;
  while (last < 63 &&
         ::prctl(PR_CAPBSET_READ, static_cast<unsigned long>(last + 1), 0L, 0L, 0L) >= 0) {
    ++last;
  }
  return last;
}

CapMask all_capabilities(int last) {
  return last >= 63 ? ~CapMask{0} : (cap_bit(last + 1) - 1);
}

std::optional<int> capability_from_name(std::string_view name) {
  std::string text = upper(name);
  if (text.empty()) return std::nullopt;
  // Names only: a number is not a name a user should have to know ("12", "CAP_12").
  if (text.rfind("CAP_", 0) != 0) text = "CAP_" + text;
  for (const auto& known : kCapabilityNames) {
    if (known.name == text) return known.value;
  }
  return std::nullopt;
}

std::string capability_name(int cap) {
  if (cap >= 0 && static_cast<std::size_t>(cap) < std::size(kCapabilityNames)) {
    return std::string(kCapabilityNames[cap].name);
  }
  return "CAP_" + std::to_string(cap);  // newer than this build's kernel headers
}

std::string capability_list(CapMask mask) {
  std::string out;
  for (int cap = 0; cap < 64; ++cap) {
    if ((mask & cap_bit(cap)) == 0) continue;
    if (!out.empty()) out += ',';
    out += capability_name(cap);
  }
  return out;
}

CapMask parse_caps_conf(const std::string& text, const std::string& origin) {
  CapMask mask = 0;
  int number = 0;
  for (const auto& raw : split(text, '\n')) {
    ++number;
    std::string line = raw.substr(0, raw.find('#'));
    line = std::string(trim(line));
    if (line.empty()) continue;
    auto cap = capability_from_name(line);
    if (!cap) {
      throw Error(origin + ":" + std::to_string(number) + ": unknown capability \"" + line + "\"",
                  EINVAL, "one capability name per line, as in capabilities(7)");
    }
    mask |= cap_bit(*cap);
  }
  return mask;
}

CapabilityPlan plan_capabilities(const CapabilityRequest& request) {
  CapMask add = 0, drop = 0;
  bool add_all = false, drop_all = false;
  for (const auto& name : request.add) {
    if (is_all(name)) {
      add_all = true;
    } else {
      add |= cap_bit(require_capability(name, request.all, "--cap-add"));
    }
  }
  for (const auto& name : request.drop) {
    if (is_all(name)) {
      drop_all = true;
    } else {
      drop |= cap_bit(require_capability(name, request.all, "--cap-drop"));
    }
  }
  if (add & drop) {
    throw Error("capability " + capability_list(add & drop) + " is both added and dropped", EINVAL,
                "give it to --cap-add or to --cap-drop, not both");
  }
  if (add_all) add = request.all;

  CapMask bounding = request.privileged ? request.all : (request.defaults & request.all);
  // podman's order: --cap-drop ALL empties the set first, then --cap-add adds to it.
  if (drop_all) bounding = 0;
  bounding = (bounding | add) & ~drop;

  CapabilityPlan plan;
  plan.bounding = bounding;
  if (request.root_user) {
    plan.effective = plan.permitted = bounding;
  } else {
    // A non-root user gets only what was asked for by name, and keeps it across
    // execve through the ambient set (which needs it in inheritable too).
    CapMask given = add & bounding;
    plan.effective = plan.permitted = plan.inheritable = plan.ambient = given;
  }
  return plan;
}

ExactCapabilityPlan plan_exact_capabilities(const ExactCapabilityRequest& request) {
  ExactCapabilityPlan out;
  auto mask_of = [&](const std::vector<std::string>& names, const std::string& set) {
    CapMask mask = 0;
    for (const auto& name : names) {
      auto cap = capability_from_name(name);
      if (!cap) {
        throw Error("process.capabilities." + set + ": unknown capability \"" + name + "\"", EINVAL,
                    "use names from capabilities(7), such as CAP_NET_ADMIN");
      }
      if ((request.all & cap_bit(*cap)) == 0) {
        std::string known = capability_name(*cap);
        if (std::find(out.unavailable.begin(), out.unavailable.end(), known) ==
            out.unavailable.end()) {
          out.unavailable.push_back(known);
        }
        continue;
      }
      mask |= cap_bit(*cap);
    }
    return mask;
  };
  CapabilityPlan& plan = out.plan;
  plan.bounding = mask_of(request.sets.bounding, "bounding");
  plan.effective = mask_of(request.sets.effective, "effective");
  plan.permitted = mask_of(request.sets.permitted, "permitted");
  plan.inheritable = mask_of(request.sets.inheritable, "inheritable");
  plan.ambient = mask_of(request.sets.ambient, "ambient");
  CapMask add = 0;
  for (const auto& name : request.add) {
    add |= is_all(name) ? request.all : cap_bit(require_capability(name, request.all, "--cap"));
  }
  plan.bounding |= add;
  plan.effective |= add;
  plan.permitted |= add;
  if (!request.root_user) {
    plan.inheritable |= add;
    plan.ambient |= add;
  }

  auto refuse = [](const std::string& set, CapMask outside, const std::string& rule) {
    throw Error("process.capabilities." + set + ": " + capability_list(outside) + " " + rule,
                EINVAL, "the kernel refuses this combination; add them there, or drop them here");
  };
  if (CapMask outside = plan.effective & ~plan.permitted) {
    refuse("effective", outside, "not in the permitted set");
  }
  if (CapMask outside = plan.inheritable & ~plan.bounding) {
    refuse("inheritable", outside, "not in the bounding set");
  }
  out.ambient_not_raised = plan.ambient & ~(plan.permitted & plan.inheritable);
  plan.ambient &= ~out.ambient_not_raised;
  return out;
}

void drop_bounding_set(const CapabilityPlan& plan, int last_cap) {
  for (int cap = 0; cap <= last_cap; ++cap) {
    if (plan.bounding & cap_bit(cap)) continue;
    if (::prctl(PR_CAPBSET_DROP, static_cast<unsigned long>(cap), 0L, 0L, 0L) != 0) {
      int err = errno;
      throw_errno(err, "drop " + capability_name(cap) + " from the bounding set",
                  "the container's setup process must hold CAP_SETPCAP");
    }
  }
}

void keep_capabilities_across_setuid() {
  if (::prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) != 0) throw_errno("prctl(PR_SET_KEEPCAPS)");
}

CapMask permitted_capabilities() {
  ProcessCapabilities caps;
  if (!read_capabilities(caps)) throw_errno("read the process's capabilities");
  return caps.permitted;
}

void set_process_capabilities(const CapabilityPlan& plan, CapMask extra) {
  ProcessCapabilities caps;
  caps.effective = plan.effective | extra;
  caps.permitted = plan.permitted | extra;
  caps.inheritable = plan.inheritable;
  if (!write_capabilities(caps)) {
    int err = errno;  // before the message's strings are built
    throw_errno(
        err,
        "set the container's capabilities (capset) to " + capability_list(plan.effective | extra),
        "mrun can only give what it holds itself: compare with the CapPrm of its "
        "own /proc/self/status (rootful), or drop the --cap-add");
  }
  // The ambient set survives execve for non-setuid programs: start from empty (one
  // PR_CAP_AMBIENT_CLEAR_ALL; EINVAL: a kernel without ambient capabilities), then raise
  // only what the plan gives (a non-root user's --cap-add).
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0L, 0L, 0L) != 0 && errno != EINVAL) {
    throw_errno("clear the ambient capability set");
  }
  for (int cap = 0; cap < 64; ++cap) {
    if ((plan.ambient & cap_bit(cap)) == 0) continue;
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, static_cast<unsigned long>(cap), 0L, 0L) !=
        0) {
      int err = errno;
      throw_errno(err, "raise " + capability_name(cap) + " in the ambient set");
    }
  }
  if (::prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) != 0) throw_errno("prctl(PR_SET_KEEPCAPS, 0)");
}

}  // namespace mrun::security
