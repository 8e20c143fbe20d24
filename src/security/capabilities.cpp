#include "security/capabilities.hpp"

#include <sys/capability.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>

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

}  // namespace

int kernel_last_capability() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int last = -1;
  if (in >> last && last >= 0 && last < 64) return last;
  // No /proc (unit tests in odd sandboxes): libcap's own probe of the kernel.
  return static_cast<int>(cap_max_bits()) - 1;
}

CapMask all_capabilities(int last) {
  return last >= 63 ? ~CapMask{0} : (cap_bit(last + 1) - 1);
}

std::optional<int> capability_from_name(std::string_view name) {
  std::string text = upper(name);
  if (text.empty()) return std::nullopt;
  // libcap also parses numbers; a number is not a name a user should have to know.
  if (std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(c) != 0; })) {
    return std::nullopt;
  }
  if (text.rfind("CAP_", 0) != 0) text = "CAP_" + text;
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  cap_value_t value = 0;
  if (cap_from_name(lower.c_str(), &value) != 0 || value < 0 || value > 63) return std::nullopt;
  return static_cast<int>(value);
}

std::string capability_name(int cap) {
  char* text = cap_to_name(static_cast<cap_value_t>(cap));
  std::string name = text != nullptr ? upper(text) : "CAP_" + std::to_string(cap);
  cap_free(text);
  // libcap prints unnamed capabilities as bare numbers.
  if (name.rfind("CAP_", 0) != 0) name = "CAP_" + name;
  return name;
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
    if (cap_drop_bound(static_cast<cap_value_t>(cap)) != 0) {
      throw_errno("drop " + capability_name(cap) + " from the bounding set",
                  "the container's setup process must hold CAP_SETPCAP");
    }
  }
}

void keep_capabilities_across_setuid() {
  if (::prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) != 0) throw_errno("prctl(PR_SET_KEEPCAPS)");
}

CapMask permitted_capabilities() {
  cap_t caps = cap_get_proc();
  if (caps == nullptr) throw_errno("read the process's capabilities");
  CapMask mask = 0;
  for (int cap = 0; cap < 64 && CAP_IS_SUPPORTED(cap); ++cap) {
    cap_flag_value_t value = CAP_CLEAR;
    if (cap_get_flag(caps, static_cast<cap_value_t>(cap), CAP_PERMITTED, &value) == 0 &&
        value == CAP_SET) {
      mask |= cap_bit(cap);
    }
  }
  cap_free(caps);
  return mask;
}

void set_process_capabilities(const CapabilityPlan& plan, CapMask extra) {
  cap_t caps = cap_init();  // all clear
  if (caps == nullptr) throw_errno("cap_init");
  auto set = [&](cap_flag_t flag, CapMask mask) {
    for (int cap = 0; cap < 64; ++cap) {
      if ((mask & cap_bit(cap)) == 0) continue;
      cap_value_t value = static_cast<cap_value_t>(cap);
      if (cap_set_flag(caps, flag, 1, &value, CAP_SET) != 0) {
        int err = errno;
        cap_free(caps);
        throw_errno(err, "set " + capability_name(cap) + " in the capability plan");
      }
    }
  };
  set(CAP_EFFECTIVE, plan.effective | extra);
  set(CAP_PERMITTED, plan.permitted | extra);
  set(CAP_INHERITABLE, plan.inheritable);
  int rc = cap_set_proc(caps);
  int err = errno;
  cap_free(caps);
  if (rc != 0) {
    throw_errno(
        err,
        "set the container's capabilities (capset) to " + capability_list(plan.effective | extra),
        "mrun can only give what it holds itself: compare with the CapPrm of its "
        "own /proc/self/status (rootful), or drop the --cap-add");
  }
  // The ambient set survives execve for non-setuid programs: start from empty, then
  // raise only what the plan gives (a non-root user's --cap-add).
  if (cap_reset_ambient() != 0 && errno != EINVAL) throw_errno("clear the ambient capability set");
  for (int cap = 0; cap < 64; ++cap) {
    if ((plan.ambient & cap_bit(cap)) == 0) continue;
    if (cap_set_ambient(static_cast<cap_value_t>(cap), CAP_SET) != 0) {
      throw_errno("raise " + capability_name(cap) + " in the ambient set");
    }
  }
  if (::prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) != 0) throw_errno("prctl(PR_SET_KEEPCAPS, 0)");
}

}  // namespace mrun::security
