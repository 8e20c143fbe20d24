#include "cgroup/devices_v1.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/v1_limits.hpp"
#include "sys/fs.hpp"

namespace mrun::cgroup {

std::string find_devices_v1_mount(const std::string& mountinfo) {
  for (const auto& h : v1_hierarchies_from(mountinfo)) {
    if (std::find(h.controllers.begin(), h.controllers.end(), "devices") != h.controllers.end()) {
      return h.mount;
    }
  }
  return {};
}

std::string own_devices_v1_group(const std::string& proc_self_cgroup) {
  for (const auto& line : split(proc_self_cgroup, '\n')) {
    auto first = line.find(':');
    auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    for (const auto& controller : split(line.substr(first + 1, second - first - 1), ',')) {
      if (controller == "devices") return line.substr(second + 1);
    }
  }
  return "/";
}

std::vector<std::pair<std::string, std::string>> devices_v1_writes(
    const std::vector<DeviceRule>& rules) {
  std::vector<std::pair<std::string, std::string>> writes;
  for (const auto& rule : rules) {
    writes.emplace_back(rule.deny ? "devices.deny" : "devices.allow", to_string(rule));
  }
  return writes;
}

namespace {

constexpr const char* kOffHint =
    "the cgroup v1 devices controller restricts a rootful container here; pass "
    "--device-filter=off to run without any device restriction";

// The group at PATH, beside the container's groups of the other hierarchies: made with
// its parents, or, where it is there already, taken when no process is in it (an
// engine's, or one the other hierarchies' group made at the same path when co-mounted).
void make_beside_v1_group(const std::string& path) {
  if (sys::make_dirs(path)) return;
  auto procs = sys::read_file(path + "/cgroup.procs");
  if (!procs) throw_errno("create device cgroup " + path, kOffHint);
  if (!trim(*procs).empty()) {
    throw Error("device cgroup " + path + " already holds processes", EBUSY,
                "give the container a cgroupsPath of its own");
  }
}

std::string devices_v1_mount() {
  auto mountinfo = sys::read_file("/proc/self/mountinfo");
  return mountinfo ? find_devices_v1_mount(*mountinfo) : std::string();
}
}  // namespace

bool devices_v1_available() {
  return !devices_v1_mount().empty();
}

std::optional<DevicesV1Group> DevicesV1Group::create(const std::string& relative,
                                                     const std::string& name,
                                                     const std::vector<DeviceRule>& rules) {
  const std::string mount = devices_v1_mount();
  if (mount.empty()) return std::nullopt;
  std::string path;
  if (!relative.empty()) {
    path = mount + relative;
    make_beside_v1_group(path);
  } else {
    auto own = sys::read_file("/proc/self/cgroup");
    std::string parent = mount + own_devices_v1_group(own.value_or(""));
    while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
    path = parent + "/" + name;
    if (::mkdir(path.c_str(), 0755) != 0) throw_errno("create device cgroup " + path, kOffHint);
  }
  DevicesV1Group group(path);
  // Deny everything first (a new group inherits its parent's), then the list in order.
  try {
    sys::write_file(path + "/devices.deny", "a");
    for (const auto& [file, line] : devices_v1_writes(rules)) {
      sys::write_file(path + "/" + file, line);
    }
  } catch (const Error& e) {
    throw e.wrap("device cgroup " + path);
  }
  return group;
}

void DevicesV1Group::add_process(pid_t pid) const {
  try {
    sys::write_file(path_ + "/cgroup.procs", std::to_string(pid));
  } catch (const Error& e) {
    throw e.wrap("move the container into its device cgroup");
  }
}

DevicesV1Group::~DevicesV1Group() {
  if (!path_.empty()) remove_devices_v1_group(path_);
}

void remove_devices_v1_group(const std::string& path) noexcept {
  // The container's processes are gone by now (the PID namespace died with its init);
  // a zombie not yet reaped keeps the group busy for a moment.
  for (int i = 0; i < 50; ++i) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) return;
    ::usleep(2000);
  }
}

}  // namespace mrun::cgroup
