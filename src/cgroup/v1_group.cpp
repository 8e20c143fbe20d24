#include "cgroup/v1_group.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/v1_stats.hpp"
#include "sys/fs.hpp"

namespace mrun::cgroup {

namespace {

bool carries(const V1Hierarchy& h, const std::string& controller) {
  return std::find(h.controllers.begin(), h.controllers.end(), controller) != h.controllers.end();
}

std::string trimmed(const std::string& path) {
  return std::string(trim(sys::read_file(path).value_or("")));
}

// A fresh cpuset directory has empty cpuset.cpus and cpuset.mems, and the kernel refuses
// to move a task into it (ENOSPC): each level below the root takes its parent's, from
// the top down, as runc's cpuset ensureParent does.
void fill_cpuset(const std::string& mount, const std::string& dir) {
  std::string at = mount;
  for (const auto& part : split(dir.substr(mount.size()), '/')) {
    if (part.empty()) continue;
    const std::string parent = at;
    at += "/" + part;
    for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
      if (!trimmed(at + "/" + file).empty()) continue;
      try {
        sys::write_file(at + "/" + file, trimmed(parent + "/" + file));
      } catch (const Error& e) {
        throw e.wrap(std::string("fill ") + at + "/" + file + " from its parent");
      }
    }
  }
}

// Makes DIR (and its parents). An existing one is a leftover of a killed mrun (removed
// and made again), or an engine's own (taken when empty, as runc does).
void make_group_dir(const std::string& dir, bool engine_named) {
  if (!sys::make_dirs(dir)) {
    if (engine_named) {
      if (!trimmed(dir + "/cgroup.procs").empty()) {
        throw Error("linux.cgroupsPath: cgroup " + dir + " already holds processes", EBUSY,
                    "give the container a cgroupsPath of its own");
      }
      return;
    }
    remove_v1_dirs({{"", dir}});
    if (::mkdir(dir.c_str(), 0755) != 0) throw_errno("create cgroup " + dir);
  }
}

}  // namespace

// Each write into its hierarchy's directory, in the plan's order within it.
void write_into(const V1Dirs& dirs, const std::vector<FileWrite>& writes, const Logger& log) {
  for (const auto& dir : v1_unique_dirs(dirs)) {
    std::vector<FileWrite> here;
    for (const auto& w : writes) {
      if (v1_dir(dirs, controller_of(w.file)) == dir) here.push_back(w);
    }
    apply_writes(dir, here, log);
  }
}

std::string v1_dir(const V1Dirs& dirs, const std::string& controller) {
  auto it = dirs.find(controller);
  return it == dirs.end() ? std::string() : it->second;
}

std::vector<std::string> v1_unique_dirs(const V1Dirs& dirs) {
  std::vector<std::string> out;
  for (const auto& [controller, dir] : dirs) {
    if (std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
  }
  return out;
}

void check_v1_plan(const V1Plan& plan) {
  for (const auto& w : plan.writes) {
    const std::string controller = controller_of(w.file);
    auto has = [&](const V1Hierarchy& h) { return carries(h, controller); };
    if (w.skip_if_absent || std::any_of(plan.hierarchies.begin(), plan.hierarchies.end(), has)) {
      continue;
    }
    throw Error(w.field + ": this host has no cgroup v1 " + controller + " hierarchy for " + w.file,
                ENOTSUP,
                "mount it (`mount -t cgroup -o " + controller + " cgroup /sys/fs/cgroup/" +
                    controller + "`), or remove the limit");
  }
}

V1Group::~V1Group() {
  remove();
}

V1Group V1Group::create(const V1Plan& plan, const Logger& log) {
  // mrun's own name in use by a live container of another state root (the same name
  // under two --root): this one gets a name of its own rather than sharing a group.
  std::string relative = plan.relative;
  auto busy = [&](const V1Hierarchy& h) {
    return !trimmed(h.mount + relative + "/cgroup.procs").empty();
  };
  if (!plan.engine_named && std::any_of(plan.hierarchies.begin(), plan.hierarchies.end(), busy)) {
    relative += "-" + std::to_string(::getpid());
  }
  V1Group group;
  group.relative_ = relative;
  for (const auto& h : plan.hierarchies) {
    const std::string dir = h.mount + relative;
    make_group_dir(dir, plan.engine_named);
    for (const auto& c : h.controllers) group.dirs_[c] = dir;
    if (carries(h, "cpuset")) fill_cpuset(h.mount, dir);
  }
  write_into(group.dirs_, plan.writes, log);
  log.debug("cgroup v1: created " + relative + " in " + std::to_string(plan.hierarchies.size()) +
            " hierarchies");
  return group;
}

void V1Group::add_process(pid_t pid) const {
  for (const auto& dir : v1_unique_dirs(dirs_)) {
    try {
      sys::write_file(dir + "/cgroup.procs", std::to_string(pid));
    } catch (const Error& e) {
      throw e.wrap("move the container into its cgroup " + dir);
    }
  }
}

std::uint64_t V1Group::oom_kills() const {
  return v1_oom_kills(dirs_);
}

bool V1Group::remove() noexcept {
  if (dirs_.empty()) return true;
  bool gone = remove_v1_dirs(dirs_);
  dirs_.clear();
  return gone;
}

bool remove_v1_dirs(const V1Dirs& dirs) noexcept {
  bool all = true;
  for (const auto& dir : v1_unique_dirs(dirs)) {
    // The container's processes are gone by now; a zombie not yet reaped keeps the
    // directory busy for a moment.
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
      if (!gone && errno != EBUSY) break;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    all = all && gone;
  }
  return all;
}

void update_v1_group(const V1Dirs& dirs, const Resources& asked, const Logger& log) {
  const std::string cpu = v1_dir(dirs, "cpu");
  const std::string memory = v1_dir(dirs, "memory");
  for (const auto& dir : v1_unique_dirs(dirs)) {
    if (!sys::is_dir(dir)) {
      throw Error("cgroup " + dir + " does not exist", ENOENT,
                  "the container's cgroup was removed; it has exited or was deleted");
    }
  }
  auto file = [](const std::string& dir, const char* name) -> std::optional<std::string> {
    if (dir.empty()) return std::nullopt;
    return sys::read_file(dir + "/" + name);
  };
  auto usage = file(memory, "memory.usage_in_bytes");
  const LeafValues now = v1_leaf_values(
      file(cpu, "cpu.cfs_quota_us"), file(cpu, "cpu.cfs_period_us"),
      file(memory, "memory.limit_in_bytes"), file(memory, "memory.memsw.limit_in_bytes"),
      usage ? parse_u64(trim(*usage)) : std::nullopt);
  V1Now v1_now;
  if (auto limit = file(memory, "memory.limit_in_bytes")) {
    v1_now.memory_limit = v1_limit_value(*limit);
  }
  V1Plan plan;
  plan.writes = plan_v1_files(complete_update(asked, now), v1_now);
  for (const auto& [controller, dir] : dirs) plan.hierarchies.push_back({dir, {controller}});
  check_v1_plan(plan);
  write_into(dirs, plan.writes, log);
}

}  // namespace mrun::cgroup
