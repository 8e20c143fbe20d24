#include "lifecycle/processes.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/v1_freezer.hpp"
#include "cgroup/v1_group.hpp"
#include "sys/fs.hpp"

namespace mrun::runtime {

std::vector<pid_t> processes_in_pid_namespace(const std::string& proc, const struct stat& ns) {
  std::vector<pid_t> pids;
  DIR* dir = ::opendir(proc.c_str());
  if (dir == nullptr) throw_errno("list " + proc);
  while (struct dirent* entry = ::readdir(dir)) {
    auto pid = parse_u64(entry->d_name);
    if (!pid) continue;
    struct stat st {};
    // Another user's process: EACCES, and not ours to list anyway.
    if (::stat((proc + "/" + entry->d_name + "/ns/pid").c_str(), &st) != 0) continue;
    if (sys::same_inode(st, ns)) pids.push_back(static_cast<pid_t>(*pid));
  }
  ::closedir(dir);
  std::sort(pids.begin(), pids.end());
  return pids;
}

namespace {

// The directory whose cgroup.procs lists the container's processes: its v2 leaf, or on
// cgroup v1 its group in one hierarchy (they all hold the same processes); "" for none.
std::string procs_dir(const ContainerState& state) {
  if (!state.cgroup.empty()) return state.cgroup;
  for (const char* controller : {"freezer", "pids", "memory"}) {
    if (auto dir = cgroup::v1_dir(state.cgroup_v1, controller); !dir.empty()) return dir;
  }
  return state.cgroup_v1.empty() ? std::string() : state.cgroup_v1.begin()->second;
}

}  // namespace

std::vector<pid_t> container_processes(const ContainerState& state) {
  if (effective_status(state) == Status::stopped) return {};
  if (const std::string dir = procs_dir(state); !dir.empty()) {
    std::vector<pid_t> pids;
    for (const auto& line : split(sys::read_file(dir + "/cgroup.procs").value_or(""), '\n')) {
      if (auto pid = parse_u64(trim(line))) pids.push_back(static_cast<pid_t>(*pid));
    }
    std::sort(pids.begin(), pids.end());
    return pids;
  }
  struct stat st {};
  std::string ns = "/proc/" + std::to_string(state.pid) + "/ns/pid";
  if (::stat(ns.c_str(), &st) != 0) throw_errno("read the pid namespace of " + state.name);
  return processes_in_pid_namespace("/proc", st);
}

namespace {
// The v1 group's freezer directory, "" when it has none.
std::string v1_freezer(const ContainerState& state) {
  return cgroup::v1_dir(state.cgroup_v1, "freezer");
}

void require_leaf(const ContainerState& state, const std::string& verb) {
  if (state.cgroup.empty() && v1_freezer(state).empty()) {
    throw Error("cannot " + verb + " container " + state.name +
                    ": it has no cgroup v2 leaf (nor, rootful on cgroup v1, a v1 group), and "
                    "the freezer (cgroup.freeze, or freezer.state on v1) needs one",
                0,
                "run it where mrun can make a cgroup: as root, or rootless on cgroup v2 "
                "with a delegated subtree (see mrun-run(1), RESOURCE LIMITS)");
  }
}
}  // namespace

void set_frozen(const ContainerState& state, bool frozen) {
  require_leaf(state, frozen ? "pause" : "resume");
  if (state.cgroup.empty()) {
    cgroup::set_v1_frozen(v1_freezer(state), frozen, state.name);
    return;
  }
  sys::write_file(state.cgroup + "/cgroup.freeze", frozen ? "1" : "0");
  // The kernel freezes asynchronously; cgroup.events says when it is done.
  using namespace std::chrono;
  auto deadline = steady_clock::now() + seconds(5);
  const std::string want = frozen ? "frozen 1" : "frozen 0";
  while (steady_clock::now() < deadline) {
    auto events = sys::read_file(state.cgroup + "/cgroup.events").value_or("");
    if (events.find(want) != std::string::npos) return;
    std::this_thread::sleep_for(milliseconds(5));
  }
  throw Error("container " + state.name + " did not " + (frozen ? "freeze" : "thaw") + " within 5s",
              ETIMEDOUT);
}

bool is_frozen(const ContainerState& state) {
  if (state.cgroup.empty()) {
    const std::string dir = v1_freezer(state);
    return !dir.empty() && cgroup::v1_frozen(dir);
  }
  auto text = sys::read_file(state.cgroup + "/cgroup.freeze");
  return text && trim(*text) == "1";
}

void thaw_after_kill(const ContainerState& state) noexcept {
  // A SIGKILLed task of a frozen v1 group dies only once thawed (runc thaws too); v2's
  // freezer lets a fatal signal through.
  try {
    if (const std::string dir = v1_freezer(state); !dir.empty() && cgroup::v1_frozen(dir)) {
      cgroup::set_v1_frozen(dir, false, state.name);
    }
  } catch (const Error&) {
    // The group is gone: nothing left to thaw.
  }
}

}  // namespace mrun::runtime
