#include "cgroup/cgroup.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iterator>
#include <thread>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/v1_limits.hpp"
#include "sys/fs.hpp"

namespace mrun::cgroup {

namespace {

std::string join(const std::string& mount, const std::string& relative) {
  if (relative.empty() || relative == "/") return mount;
  return mount + (relative[0] == '/' ? "" : "/") + relative;
}

std::string dirname_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

bool has_word(const std::string& text, const std::string& word) {
  for (const auto& w : split(trim(text), ' ')) {
    if (w == word) return true;
  }
  return false;
}

std::string read_trimmed(const std::string& path) {
  return std::string(trim(sys::read_file(path).value_or("")));
}

// "key value" lines (memory.events, cpu.stat, pids.events).
std::optional<std::uint64_t> keyed_value(const std::string& path, const std::string& key) {
  auto text = sys::read_file(path);
  if (!text) return std::nullopt;
  for (const auto& line : split(*text, '\n')) {
    auto fields = split(line, ' ');
    if (fields.size() == 2 && fields[0] == key) return parse_u64(fields[1]);
  }
  return std::nullopt;
}

std::optional<std::uint64_t> number_file(const std::string& path) {
  auto text = sys::read_file(path);
  if (!text) return std::nullopt;
  return parse_u64(trim(*text));
}

std::string user_label(uid_t uid) {
  return "uid " + std::to_string(uid);
}

std::string read_mountinfo(const Paths& paths) {
  return sys::read_file(paths.mountinfo).value_or("");
}

// How to get a delegated subtree: the two ways that exist.
std::string delegation_hint(uid_t uid, const std::string& mount) {
  std::string dir = mount + "/user-" + std::to_string(uid);
  return "run mrun in a systemd scope with Delegate=yes (`systemd-run --user --scope -p "
         "Delegate=yes mrun run ...`), or have root delegate a subtree: `mkdir -p " +
         dir + "/shell && chown " + std::to_string(uid) + " " + dir + " " + dir + "/cgroup.procs " +
         dir + "/cgroup.subtree_control " + dir + "/cgroup.threads && chown -R " +
         std::to_string(uid) + " " + dir + "/shell` and move your shell into it (`echo $$ > " +
         dir + "/shell/cgroup.procs`); or run without limits";
}

// The leaf's name (an engine's, or mrun-<name>), refusing one that is not a single
// directory and a parent that leaves the tree.
std::string checked_leaf_name(const Request& request) {
  const std::string leaf_name =
      request.leaf_name.empty() ? "mrun-" + request.name : request.leaf_name;
  if (leaf_name == "." || leaf_name == ".." || leaf_name.find('/') != std::string::npos) {
    throw Error("linux.cgroupsPath: the cgroup name \"" + leaf_name + "\" is not one directory",
                EINVAL, "give a path whose last part is a plain name");
  }
  for (const auto& part : split(request.parent, '/')) {
    if (part == "..") {
      throw Error("--cgroup-parent " + request.parent + " leaves the cgroup tree", EINVAL,
                  "give a path below the cgroup root, without \"..\"");
    }
  }
  return leaf_name;
}

// Rootful with the controllers on cgroup v1: the group at the same path below every
// hierarchy's root as a v2 leaf would have below the cgroup2 root (runc's fs manager).
// The devices hierarchy is devices_v1.hpp's. nullopt when no v1 controller is mounted.
std::optional<V1Plan> plan_v1_group(const Request& request, const std::string& mountinfo) {
  V1Plan plan;
  for (auto& h : v1_hierarchies_from(mountinfo)) {
    const bool devices =
        std::find(h.controllers.begin(), h.controllers.end(), "devices") != h.controllers.end();
    if (!devices) plan.hierarchies.push_back(std::move(h));
  }
  auto real = [](const V1Hierarchy& h) { return !starts_with(h.controllers[0], "name="); };
  if (std::none_of(plan.hierarchies.begin(), plan.hierarchies.end(), real)) return std::nullopt;
  plan.writes = plan_v1_files(request.resources);  // throws naming a bad field
  std::string parent = request.parent;
  while (!parent.empty() && parent.back() == '/') parent.pop_back();
  if (!parent.empty() && parent[0] != '/') parent = "/" + parent;
  plan.relative = parent + "/" + checked_leaf_name(request);
  plan.engine_named = !request.leaf_name.empty();
  check_v1_plan(plan);
  return plan;
}

}  // namespace

std::optional<std::string> cgroup2_mount_from(const std::string& mountinfo_text) {
  for (const auto& line : split(mountinfo_text, '\n')) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto after = split(line.substr(dash + 3), ' ');
    if (after.empty() || after[0] != "cgroup2") continue;
    auto fields = split(line.substr(0, dash), ' ');
    if (fields.size() > 4) return fields[4];
  }
  return std::nullopt;
}

bool hybrid_layout_from(const std::string& mountinfo_text) {
  for (const auto& line : split(mountinfo_text, '\n')) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    auto after = split(line.substr(dash + 3), ' ');
    if (!after.empty() && after[0] == "cgroup") return true;
  }
  return false;
}

std::optional<std::string> own_cgroup_from(const std::string& proc_cgroup_text) {
  for (const auto& line : split(proc_cgroup_text, '\n')) {
    if (starts_with(line, "0::")) return line.substr(3);
  }
  return std::nullopt;
}

bool delegated_to(const std::string& dir, uid_t uid) {
  for (const std::string& path : {dir, dir + "/cgroup.procs", dir + "/cgroup.subtree_control"}) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    if (st.st_uid != uid || (st.st_mode & S_IWUSR) == 0) return false;
  }
  return true;
}

Plan plan_cgroup(const Request& request, const Paths& paths) {
  Plan plan;
  if (request.enabled && request.rootful && hybrid_layout_from(read_mountinfo(paths))) {
    plan.v1 = plan_v1_group(request, read_mountinfo(paths));
    if (plan.v1) {
      plan.why_not = "the controllers are on cgroup v1: a v1 group at " + plan.v1->relative;
      return plan;
    }
  }
  plan.writes = plan_resource_files(request.resources);  // throws for a bad combination
  // Per field: only writes that ask for something need a cgroup; a fresh cgroup's
  // defaults (ctr's and CRI's cpu.shares 1024) are met without one.
  const std::string asked = describe_requests(plan.writes);
  // Throws when something was asked for; otherwise records why mrun goes without.
  auto without = [&](const std::string& why, const std::string& hint) -> Plan {
    if (!asked.empty()) throw Error(asked + " needs a cgroup, but " + why, 0, hint);
    plan.use = false;
    plan.why_not = why;
    if (!plan.writes.empty()) {
      plan.defaults_note = describe_defaults(plan.writes) +
                           ": a fresh cgroup's default, accepted without a cgroup (" + why + ")";
    }
    plan.writes.clear();
    return plan;
  };
  if (!request.enabled) {
    if (!asked.empty()) {
      throw Error(asked + " needs a cgroup, but --cgroups=disabled", EINVAL,
                  "drop --cgroups=disabled or the limits");
    }
    return without("--cgroups=disabled", {});
  }
  const std::string mountinfo = read_mountinfo(paths);
  std::string mount =
      paths.mount.empty() ? cgroup2_mount_from(mountinfo).value_or("") : paths.mount;
  if (mount.empty()) {
    return without("no cgroup2 filesystem is mounted",
                   "mount cgroup v2 (boot with systemd.unified_cgroup_hierarchy=1)");
  }
  plan.mount = mount;
  // A hybrid layout (controllers on v1, an empty v2 at /sys/fs/cgroup/unified): a v2
  // leaf would carry neither limits nor counters, and mrun does not manage v1.
  const std::string root_controllers = read_trimmed(mount + "/cgroup.controllers");
  if (root_controllers.empty() || hybrid_layout_from(mountinfo)) {
    return without(
        "cgroup v2 at " + mount +
            (root_controllers.empty() ? " has no controllers" : " lacks the controllers") +
            " (a hybrid cgroup v1/v2 layout: memory, pids and cpu are on cgroup v1, "
            "which mrun does not use)",
        "boot with a pure cgroup v2 (systemd.unified_cgroup_hierarchy=1 "
        "cgroup_no_v1=all)");
  }
  const std::string leaf_name = checked_leaf_name(request);

  if (request.rootful) {
    // Root may write anywhere: the parent is created (default: the privilege model's
    // root-owned mrun parent), and controllers are enabled on the way down.
    plan.parent = join(mount, request.parent);
    plan.leaf = plan.parent + "/" + leaf_name;
    plan.use = true;
    return plan;
  }

  auto own = own_cgroup_from(sys::read_file(paths.self_cgroup).value_or(""));
  if (!own) {
    return without(
        "mrun's own cgroup v2 path is unknown (no 0:: line in " + paths.self_cgroup + ")",
        delegation_hint(request.uid, mount));
  }
  if (!request.parent.empty()) {
    std::string parent = join(mount, request.parent);
    std::string own_abs = join(mount, *own);
    if (!delegated_to(parent, request.uid)) {
      return without("--cgroup-parent " + parent + " is not delegated to " +
                         user_label(request.uid) +
                         " (it and its cgroup.procs and cgroup.subtree_control must be yours)",
                     delegation_hint(request.uid, mount));
    }
    if (!starts_with(own_abs + "/", parent + "/") || own_abs == parent) {
      return without("mrun's cgroup " + own_abs + " is not below --cgroup-parent " + parent +
                         ": the kernel lets an unprivileged user move processes only inside "
                         "a subtree delegated to it",
                     "run mrun from a cgroup below " + parent);
    }
    plan.parent = parent;
  } else {
    // The nearest ancestor of mrun's own cgroup that is ours. Not mrun's cgroup itself:
    // it holds processes, and the kernel refuses controllers in the subtree_control of
    // a cgroup with processes ("no internal processes").
    for (std::string dir = dirname_of(*own);; dir = dirname_of(dir)) {
      if (dir != "/" && delegated_to(join(mount, dir), request.uid)) {
        plan.parent = join(mount, dir);
        break;
      }
      if (dir == "/") break;
    }
    if (plan.parent.empty()) {
      return without("no cgroup v2 subtree is delegated to " + user_label(request.uid) +
                         " above mrun's cgroup " + join(mount, *own),
                     delegation_hint(request.uid, mount));
    }
  }
  plan.leaf = plan.parent + "/" + leaf_name;
  plan.use = true;
  return plan;
}

Leaf::~Leaf() {
  remove();
}

void enable_controllers(const std::string& mount, const std::string& parent, bool rootful,
                        std::vector<FileWrite>& writes, const Logger& log) {
  // The directories whose subtree_control must list the controllers: rootful, every
  // level from the root down to the parent (created as needed); rootless, only the
  // delegated parent (its own parent was set up by whoever delegated it).
  std::vector<std::string> levels;
  if (rootful) {
    std::string rel = parent.substr(mount.size());
    std::string dir = mount;
    levels.push_back(dir);
    for (const auto& part : split(rel, '/')) {
      if (part.empty()) continue;
      dir += "/" + part;
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw_errno("create cgroup " + dir);
      levels.push_back(dir);
    }
    levels.pop_back();  // the parent's own subtree_control is written below, like rootless
  }
  levels.push_back(parent);
  for (const auto& controller : controllers_for(writes)) {
    auto of_controller = [&](const FileWrite& w) { return controller_of(w.file) == controller; };
    std::vector<FileWrite> needing;  // this controller's writes, for messages
    std::copy_if(writes.begin(), writes.end(), std::back_inserter(needing), of_controller);
    const std::string asked = describe_requests(needing);
    const bool defaults_only = asked.empty();
    for (const auto& dir : levels) {
      const std::string available = read_trimmed(dir + "/cgroup.controllers");
      const std::string enabled = read_trimmed(dir + "/cgroup.subtree_control");
      if (has_word(enabled, controller)) continue;
      if (!has_word(available, controller)) {
        if (defaults_only) {
          log.debug("cgroup: no " + controller + " controller in " + dir + "; " +
                    describe_defaults(needing) + " left at the default");
          std::erase_if(writes, of_controller);
          break;
        }
        throw Error(asked + ": the " + controller + " controller is not available in " + dir +
                        " (cgroup.controllers: \"" + available + "\")",
                    0,
                    dir == mount
                        ? "this kernel has no " + controller + " controller on cgroup v2"
                        : "whoever delegated the subtree must enable it in the parent: `echo +" +
                              controller + " > " + dirname_of(dir) + "/cgroup.subtree_control`");
      }
      try {
        sys::write_file(dir + "/cgroup.subtree_control", "+" + controller);
      } catch (const Error& e) {
        std::string hint = "the delegated cgroup must be writable by you";
        if (e.errno_value() == EBUSY) {
          hint = dir +
                 " holds processes itself; the kernel enables controllers only for cgroups "
                 "without processes: move them into a child cgroup";
        } else if (e.errno_value() == EPERM && controller == "cpuset") {
          // Enabling cpuset moves every process below into a new cpuset, which the
          // kernel allows only for processes the writer may reschedule.
          hint = "the kernel enables cpuset only when every process below " + dir +
                 " is yours (one of another user, such as a root-owned su or runuser, "
                 "stops it); or have whoever delegated the subtree enable cpuset in it";
        }
        throw e.wrap(defaults_only ? describe_defaults(needing) : asked).with_hint(hint);
      }
      log.debug("cgroup: enabled " + controller + " in " + dir);
    }
  }
}

void apply_writes(const std::string& leaf, const std::vector<FileWrite>& writes,
                  const Logger& log) {
  std::vector<const FileWrite*> retry;
  auto write_one = [&](const FileWrite& w, bool last_try) {
    std::string file = w.file;
    std::string value = w.value;
    if (!sys::exists(leaf + "/" + file)) {
      if (!w.fallback_file.empty() && sys::exists(leaf + "/" + w.fallback_file)) {
        file = w.fallback_file;
        value = w.fallback_value;
      } else if (w.skip_if_absent) {
        log.debug("cgroup: no " + file + " in this kernel; " + w.field + " " + value +
                  " needs none");
        return;
      } else {
        throw Error(w.field + ": " + leaf + "/" + file + " does not exist", ENOENT,
                    "this kernel's cgroup has no such file (is the controller of " + file +
                        " enabled, and the name right?)");
      }
    }
    try {
      sys::write_file(leaf + "/" + file, value);
    } catch (const Error& e) {
      if (e.errno_value() == EINVAL && !last_try) {
        retry.push_back(&w);
        return;
      }
      throw e.wrap(w.field + ": set " + file + " to \"" + value + "\"");
    }
    log.debug("cgroup: " + file + " = " + value);
  };
  for (const auto& w : writes) write_one(w, false);
  for (const auto* w : retry) write_one(*w, true);
}

Leaf Leaf::create(const Plan& plan, const Request& request, const Logger& log) {
  std::vector<FileWrite> writes = plan.writes;
  enable_controllers(plan.mount, plan.parent, request.rootful, writes, log);
  if (::mkdir(plan.leaf.c_str(), 0755) != 0) {
    if (errno != EEXIST) throw_errno("create cgroup " + plan.leaf);
    if (!request.leaf_name.empty()) {
      // The engine's own name: an empty cgroup by that name is taken as it is (runc
      // joins it too); one with processes belongs to someone else.
      if (!read_trimmed(plan.leaf + "/cgroup.procs").empty()) {
        throw Error("linux.cgroupsPath: cgroup " + plan.leaf + " already holds processes", EBUSY,
                    "give the container a cgroupsPath of its own");
      }
    } else {
      // A leftover of a killed mrun (its name was just claimed, so nothing uses it).
      remove_leaf(plan.leaf);
      if (::mkdir(plan.leaf.c_str(), 0755) != 0) throw_errno("create cgroup " + plan.leaf);
    }
  }
  Leaf leaf;
  leaf.path_ = plan.leaf;
  apply_writes(plan.leaf, writes, log);
  log.debug("cgroup: created " + plan.leaf);
  return leaf;
}

LeafValues read_leaf_values(const std::string& leaf) {
  LeafValues v;
  auto text = [&](const char* file) -> std::optional<std::string> {
    auto t = sys::read_file(leaf + "/" + file);
    if (!t) return std::nullopt;
    return std::string(trim(*t));
  };
  v.cpu_max = text("cpu.max");
  v.memory_max = text("memory.max");
  v.memory_swap_max = text("memory.swap.max");
  v.memory_current = number_file(leaf + "/memory.current");
  return v;
}

void update_leaf(const std::string& leaf, bool rootful, const Resources& asked, const Logger& log,
                 const Paths& paths) {
  if (!sys::is_dir(leaf)) {
    throw Error("cgroup " + leaf + " does not exist", ENOENT,
                "the container's cgroup was removed; it has exited or was deleted");
  }
  auto writes = plan_resource_files(complete_update(asked, read_leaf_values(leaf)));
  if (writes.empty()) return;
  std::string mount =
      paths.mount.empty()
          ? cgroup2_mount_from(sys::read_file(paths.mountinfo).value_or("")).value_or("")
          : paths.mount;
  if (mount.empty() || !starts_with(leaf, mount + "/")) {
    throw Error("cgroup " + leaf + " is not below the cgroup2 mount" +
                    (mount.empty() ? std::string() : " " + mount),
                0, "update the container from the mount namespace that created it");
  }
  enable_controllers(mount, dirname_of(leaf), rootful, writes, log);
  apply_writes(leaf, writes, log);
}

void Leaf::add_process(pid_t pid) const {
  try {
    sys::write_file(path_ + "/cgroup.procs", std::to_string(pid));
  } catch (const Error& e) {
    throw e.with_hint(
        "an unprivileged user may move processes only within a subtree delegated to it");
  }
}

std::uint64_t Leaf::oom_kills() const {
  return keyed_value(path_ + "/memory.events", "oom_kill").value_or(0);
}

void remove_leaf(const std::string& path) noexcept {
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return;
  // cgroup.kill (5.14+) SIGKILLs everything left, even processes that escaped the
  // container's PID namespace teardown; rmdir then waits for them to be reaped.
  try {
    sys::write_file(path + "/cgroup.kill", "1");
  } catch (...) {
    // Older kernels: the PID namespace teardown already killed them.
  }
  for (int i = 0; i < 200; ++i) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool Leaf::remove() noexcept {
  if (path_.empty()) return true;
  remove_leaf(path_);
  bool gone = !sys::exists(path_);
  path_.clear();
  return gone;
}

Stats read_stats(const std::string& leaf) {
  Stats s;
  s.memory_current = number_file(leaf + "/memory.current");
  s.memory_max = number_file(leaf + "/memory.max");
  s.pids_current = number_file(leaf + "/pids.current");
  s.pids_max = number_file(leaf + "/pids.max");
  s.cpu_usage_usec = keyed_value(leaf + "/cpu.stat", "usage_usec");
  if (auto text = sys::read_file(leaf + "/cpu.max")) s.cpu_max = std::string(trim(*text));
  s.oom_kills = keyed_value(leaf + "/memory.events", "oom_kill");
  return s;
}

}  // namespace mrun::cgroup
