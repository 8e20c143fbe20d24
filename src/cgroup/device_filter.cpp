#include "cgroup/device_filter.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <memory>
#include <optional>
#include <type_traits>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "base/unique_fd.hpp"
#include "device_filter.skel.h"  // generated: bpftool gen skeleton of device_filter.bpf.c
#include "sys/fs.hpp"

namespace mrun::cgroup {

// The map's values are FilterMapEntry as it is: device_filter_rule.h's struct.
static_assert(sizeof(FilterMapEntry) == 16 && std::is_standard_layout_v<FilterMapEntry>);

namespace {

// libbpf prints its own diagnostics to stderr by default; mrun reports one line itself.
int quiet(enum libbpf_print_level, const char*, va_list) {
  return 0;
}

struct SkeletonDeleter {
  void operator()(device_filter* skel) const { device_filter__destroy(skel); }
};

// Why a bpf(2) step fails with EPERM: the sysctl for an unprivileged caller, else the
// capability the kernel asks for (bpf_capable() in the initial user namespace).
std::string eperm_cause() {
  if (::geteuid() != 0) {
    std::string value(
        trim(sys::read_file("/proc/sys/kernel/unprivileged_bpf_disabled").value_or("")));
    if (!value.empty() && value != "0") {
      return "unprivileged BPF is disabled: kernel.unprivileged_bpf_disabled=" + value;
    }
  }
  return "a cgroup device program needs CAP_BPF and CAP_NET_ADMIN in the initial user namespace";
}

FilterFailure failure(std::string step, int err) {
  return {std::move(step), err, err == EPERM ? eperm_cause() : std::string{}};
}

}  // namespace

std::string FilterFailure::describe() const {
  std::string text = step + ": " + errno_name(err);
  if (!why.empty()) text += " (" + why + ")";
  return text;
}

std::optional<FilterFailure> attach_device_filter(const std::string& leaf,
                                                  const std::vector<DeviceRule>& rules) {
  if (rules.size() > max_device_rules) return FilterFailure{"plan", E2BIG, "too many rules"};
  UniqueFd cgroup;
  if (!leaf.empty()) {
    cgroup.reset(::open(leaf.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cgroup) return failure("open " + leaf, errno);
  }
  libbpf_set_print(quiet);
  std::unique_ptr<device_filter, SkeletonDeleter> skel(device_filter__open());
  if (!skel) return failure("BPF_PROG_LOAD", errno != 0 ? errno : EINVAL);
  // Creates the map and loads the program (libbpf probes with a tiny BPF_PROG_LOAD
  // first); one step for the report, as either fails the same way without privilege.
  if (int err = device_filter__load(skel.get()); err != 0) return failure("BPF_PROG_LOAD", -err);
  const int map = bpf_map__fd(skel->maps.rules);
  const std::vector<FilterMapEntry> entries = filter_map_entries(rules);
  for (std::uint32_t i = 0; i < entries.size(); ++i) {
    if (bpf_map_update_elem(map, &i, &entries[i], BPF_ANY) != 0) {
      return failure("BPF_MAP_UPDATE_ELEM", errno);
    }
  }
  // Read-only from user space from now on: nobody can widen a running container's
  // list through the map (the program still reads it).
  if (bpf_map_freeze(map) != 0) return failure("BPF_MAP_FREEZE", errno);
  if (leaf.empty()) return std::nullopt;  // a probe: loading works
  // BPF_PROG_ATTACH, not a bpf_link: the attachment then belongs to the cgroup and
  // outlives this process (a detached container's monitor may exit before it).
  if (bpf_prog_attach(bpf_program__fd(skel->progs.device_filter), cgroup.get(), BPF_CGROUP_DEVICE,
                      BPF_F_ALLOW_MULTI) != 0) {
    return failure("BPF_PROG_ATTACH", errno);
  }
  return std::nullopt;
}

}  // namespace mrun::cgroup
