#include "gpucheck/host_facts.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "cgroup/cgroup.hpp"
#include "gpu/version.hpp"
#include "gpupolicy/gpu_policy.h"
#include "gpupolicy/gpu_policy_load.h"
#include "mount/devices.hpp"
#include "state/state.hpp"
#include "sys/fs.hpp"
#include "sys/user_db.hpp"
#include "userns/subid.hpp"

namespace mrun::gpucheck {

namespace {

UserInfo from_passwd(const sys::UserEntry& entry) {
  return UserInfo{entry, sys::groups_of_user(entry.name, entry.gid)};
}

std::string group_of(gid_t gid) {
  auto group = sys::group_by_gid(gid);
  return group ? group->name : std::to_string(gid);
}

int group_gid(const char* name, gid_t* gid) {
  auto group = sys::group_by_name(name);
  if (!group) return -1;
  *gid = group->gid;
  return 0;
}

std::optional<std::pair<unsigned, unsigned>> sysfs_dev(const std::string& name) {
  auto text = sys::read_file("/sys/class/fakegpu/" + name + "/dev");
  if (!text) return std::nullopt;
  unsigned major = 0, minor = 0;
  char colon = 0;
  std::istringstream in(*text);
  if (!(in >> major >> colon >> minor) || colon != ':') return std::nullopt;
  return std::pair{major, minor};
}

}  // namespace

UserInfo lookup_user(const std::string& name) {
  auto pw = sys::user_by_name(name);
  if (!pw)
    throw Error("no user named \"" + name + "\"", 0,
                "name an existing unprivileged user with --rootless-user USER");
  return from_passwd(*pw);
}

UserInfo lookup_uid(uid_t uid) {
  auto pw = sys::user_by_uid(uid);
  if (!pw) return UserInfo{{std::to_string(uid), uid, ::getgid(), {}}, {}};
  return from_passwd(*pw);
}

std::optional<unsigned> fakegpu_major() {
  auto text = sys::read_file("/proc/devices");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string line;
  bool character = false;
  while (std::getline(in, line)) {
    if (line == "Character devices:") character = true;
    if (line == "Block devices:") character = false;
    std::istringstream words(line);
    unsigned major = 0;
    std::string name;
    if (character && (words >> major >> name) && name == "fakegpu") return major;
  }
  return std::nullopt;
}

std::vector<NodeFact> fakegpu_nodes() {
  std::vector<NodeFact> nodes;
  for (const auto& name : mount::list_fakegpu_nodes("/dev")) {
    NodeFact n;
    n.path = "/dev/" + name;
    struct stat st {};
    if (::lstat(n.path.c_str(), &st) != 0) continue;
    n.exists = true;
    n.is_char = S_ISCHR(st.st_mode);
    n.major = major(st.st_rdev);
    n.minor = minor(st.st_rdev);
    n.owner = sys::user_name_or_id(st.st_uid);
    n.group = group_of(st.st_gid);
    n.mode = st.st_mode & 07777;
    n.sysfs_dev = sysfs_dev(name);
    // access(2) checks with the real ids: the caller's, also under sudo's euid... sudo
    // sets both, so this is the user doctor runs as.
    n.caller_can_open = ::access(n.path.c_str(), R_OK | W_OK) == 0;
    nodes.push_back(n);
  }
  // The GPUs first, in order, then the control node: the fix names the first GPU.
  std::sort(nodes.begin(), nodes.end(), [](const NodeFact& a, const NodeFact& b) {
    bool a_ctl = a.path == "/dev/fakegpuctl", b_ctl = b.path == "/dev/fakegpuctl";
    if (a_ctl != b_ctl) return b_ctl;
    return a.path.size() != b.path.size() ? a.path.size() < b.path.size() : a.path < b.path;
  });
  return nodes;
}

std::string helper_path() {
  // As mrun run finds it: an absolute $MRUN_GPU_HELPER, else the installed one.
  if (const char* env = std::getenv("MRUN_GPU_HELPER"); env && env[0] == '/') return env;
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::vector<std::string> candidates;
  if (n > 0) {
    std::string dir(exe, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    candidates.push_back(dir + "/../libexec/mrun/mrun-gpu-helper");
  }
#ifdef MRUN_GPU_HELPER_PATH
  candidates.push_back(MRUN_GPU_HELPER_PATH);  // the configured install path, as mrun run
#endif
  candidates.push_back("/usr/local/libexec/mrun/mrun-gpu-helper");
  candidates.push_back("/usr/libexec/mrun/mrun-gpu-helper");
  for (const auto& c : candidates)
    if (sys::exists(c)) return c;
  return {};
}

HelperFact inspect_helper(const std::string& path, const UserInfo& user,
                          const std::vector<std::string>& nodes, const std::string& policy_file) {
  HelperFact h;
  h.path = path;
  if (!path.empty()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      h.setuid_root = st.st_uid == 0 && (st.st_mode & S_ISUID) && (st.st_mode & S_IXOTH);
      struct statvfs vfs {};
      h.nosuid_mount = ::statvfs(path.c_str(), &vfs) == 0 && (vfs.f_flag & ST_NOSUID);
    } else {
      h.path.clear();
    }
  }
  // The helper's own loader (src/gpupolicy/): the same trust checks on the file and its
  // directory, the same parser, the same reason. Only the ids differ: the helper reads
  // its policy with root's, the doctor with the caller's.
  h.policy_path = policy_file;
  auto policy = std::make_unique<struct policy>();
  char err[1024] = "";
  int status = policy_load(policy_file.c_str(), policy.get(), err, sizeof err);
  int load_errno = errno;
  h.policy_present = status != POLICY_LOAD_ABSENT;
  if (status == POLICY_LOAD_ABSENT) return h;
  if (status != POLICY_LOAD_OK) {
    h.policy_error = err;
    if (load_errno == EACCES && ::geteuid() != 0) {
      h.policy_error += " (the helper reads it as root; " + user.name +
                        " cannot, so doctor cannot check it: chmod a+r " + policy_file + ")";
    }
    return h;
  }
  struct policy_caller caller {};
  caller.uid = user.uid;
  caller.user_name = user.name.c_str();
  std::vector<gid_t> gids = user.db_groups;
  gids.insert(gids.begin(), user.gid);
  caller.gids = gids.data();
  caller.ngids = static_cast<int>(gids.size());
  caller.group_gid = group_gid;
  h.policy_allows = true;
  for (const auto& node : nodes) {
    if (!policy_allows(policy.get(), node.c_str(), &caller)) {
      h.policy_allows = false;
      h.not_allowed = node;
      break;
    }
  }
  return h;
}

bool in_cgroup_delegated_to(uid_t uid) {
  auto mountinfo = sys::read_file("/proc/self/mountinfo");
  auto own = sys::read_file("/proc/self/cgroup");
  if (!mountinfo || !own) return false;
  auto mount_point = cgroup::cgroup2_mount_from(*mountinfo);
  auto path = cgroup::own_cgroup_from(*own);
  if (!mount_point || !path) return false;
  std::string dir = *mount_point + (*path == "/" ? "" : *path);
  while (dir.size() > mount_point->size()) {
    if (cgroup::delegated_to(dir, uid)) return true;
    dir = dir.substr(0, dir.rfind('/'));
  }
  return false;
}

namespace {

std::vector<gid_t> status_groups(pid_t pid) {
  std::vector<gid_t> groups;
  auto text = sys::read_file("/proc/" + std::to_string(pid) + "/status");
  if (!text) return groups;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (!starts_with(line, "Groups:")) continue;
    std::istringstream words(line.substr(7));
    gid_t g = 0;
    while (words >> g) groups.push_back(g);
  }
  return groups;
}

// The libfakegpu.so.1 the container's loader would find first: its init's
// LD_LIBRARY_PATH, then the standard directories (ld.so.conf's on Debian), and the
// version in the file's marker (src/gpu/version.hpp).
void find_container_library(ContainerFact& c, const std::string& proc) {
  const std::string root = proc + "/root";
  if (::access((root + "/").c_str(), X_OK) != 0) {
    c.library_readable = false;
    return;
  }
  std::vector<std::string> dirs;
  if (auto environ = sys::read_file(proc + "/environ")) {
    for (const auto& entry : split(*environ, '\0'))
      if (starts_with(entry, "LD_LIBRARY_PATH="))
        for (const auto& d : split(entry.substr(16), ':'))
          if (!d.empty()) dirs.push_back(d);
  }
  for (const char* d :
       {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib", "/usr/local/lib"})
    dirs.push_back(d);
  for (const auto& d : dirs) {
    const std::string path = d + "/libfakegpu.so.1";
    auto bytes = sys::read_file(root + path);
    if (!bytes) continue;
    c.library = path;
    c.library_version = fakegpu::version_from_marker(*bytes);
    return;
  }
}

ContainerFact inspect_container(const std::string& name, const std::string& state_root,
                                const std::vector<NodeFact>& host_nodes) {
  ContainerFact c;
  c.name = name;
  runtime::StateStore store(state_root);
  auto state = store.read(name);
  if (!state)
    throw Error("container does not exist: " + name + " (in " + state_root + ")", ENOENT,
                "see `mrun list` (as the user that started it)");
  c.rootless = state->rootless;
  c.running = runtime::effective_status(*state) == runtime::Status::running;
  c.pid = state->pid;
  // device_filter is written by the device-filter code; read it from the raw state so
  // doctor works whether or not this build's ContainerState knows the field.
  if (auto raw = sys::read_file(store.dir_of(name) + "/state.json")) {
    auto j = nlohmann::json::parse(*raw, nullptr, false);
    if (j.is_object() && j.contains("device_filter") && j["device_filter"].is_string())
      c.device_filter = j["device_filter"].get<std::string>();
  }
  if (!c.running) return c;
  // /proc/PID/root needs ptrace access, which a rootless container's owner may lack
  // (its init runs an image binary owned by an id unmapped in its namespace); its
  // mountinfo does not, and rootless nodes and the injected libraries are bind mounts.
  const std::string proc = "/proc/" + std::to_string(c.pid);
  const std::string root = proc + "/root";
  std::set<std::string> mount_points;
  if (auto mountinfo = sys::read_file(proc + "/mountinfo")) {
    std::istringstream in(*mountinfo);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string id, parent, devno, source, point;
      if (words >> id >> parent >> devno >> source >> point) mount_points.insert(point);
    }
  }
  const NodeFact* first_visible = nullptr;
  for (const auto& n : host_nodes) {
    struct stat st {};
    bool seen = (::stat((root + n.path).c_str(), &st) == 0 && S_ISCHR(st.st_mode)) ||
                mount_points.count(n.path) > 0;
    (seen ? c.nodes_visible : c.nodes_missing).push_back(n.path);
    if (seen && !first_visible && n.path != "/dev/fakegpuctl") first_visible = &n;
  }
  struct stat node {};
  if (first_visible && ::stat((root + first_visible->path).c_str(), &node) == 0) {
    c.node_uid = node.st_uid;
    c.node_gid = node.st_gid;
    c.node_mode = node.st_mode & 07777;
  } else if (first_visible && ::stat(first_visible->path.c_str(), &node) == 0) {
    // Bound from the host: the same inode (a node the helper made is the caller's own,
    // which we cannot tell from here; the groups rung then asks for --keep-groups).
    c.node_uid = node.st_uid;
    c.node_gid = node.st_gid;
    c.node_mode = node.st_mode & 07777;
  }
  struct stat st {};
  if (::stat(proc.c_str(), &st) == 0) c.uid = st.st_uid;
  c.groups = status_groups(c.pid);
  c.libs_injected = sys::exists(root + "/opt/fakegpu/lib/libfakegpu.so.1") ||
                    mount_points.count("/opt/fakegpu/lib/libfakegpu.so.1") > 0;
  find_container_library(c, proc);
  return c;
}

// The kernel log through /dev/kmsg (all records, without waiting): EPERM under
// kernel.dmesg_restrict for all but root.
void read_kernel_log_xids(DoctorFacts& f) {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    f.kernel_log_readable = false;
    return;
  }
  std::string log;
  char rec[8192];
  for (;;) {
    const ssize_t n = ::read(fd, rec, sizeof rec);
    if (n < 0 && errno == EPIPE) continue;  // overwritten records: go on
    if (n <= 0) break;
    std::string r(rec, static_cast<std::size_t>(n));
    const auto semi = r.find(';');  // "prio,seq,time,flags;message\n"
    log += semi == std::string::npos ? r : r.substr(semi + 1);
    if (log.back() != '\n') log += '\n';
  }
  ::close(fd);
  f.xids = parse_xid_events(log);
}

}  // namespace

DoctorFacts gather_doctor_facts(const std::string& container, const std::string& state_root) {
  DoctorFacts f;
  f.uid = ::getuid();
  UserInfo user = lookup_uid(f.uid);
  f.user = user.name;
  int n = ::getgroups(0, nullptr);
  f.groups.resize(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0) ::getgroups(n, f.groups.data());
  if (auto group = sys::group_by_name("fakegpu")) {
    f.in_group_db =
        std::find(user.db_groups.begin(), user.db_groups.end(), group->gid) != user.db_groups.end();
  }
  f.major = fakegpu_major();
  f.module_loaded = f.major.has_value() || sys::exists("/sys/module/fakegpu");
  f.nodes = fakegpu_nodes();
  std::vector<std::string> paths;
  for (const auto& node : f.nodes) paths.push_back(node.path);
  if (paths.empty()) paths = {"/dev/fakegpu0", "/dev/fakegpuctl"};
  f.helper = inspect_helper(helper_path(), user, paths);
  f.subuid = !userns::read_subid_file("/etc/subuid", user.name, user.uid).empty();
  f.add_subids_command = userns::add_subids_command(user.name);
  f.subgid = !userns::read_subid_file("/etc/subgid", user.name, user.uid).empty();
  f.newuidmap = !sys::find_program("newuidmap").empty() && !sys::find_program("newgidmap").empty();
  if (auto v = sys::read_file("/sys/module/fakegpu/version"))
    f.driver_version = fakegpu::parse_version(std::string(trim(*v)));
  read_kernel_log_xids(f);
  if (!container.empty()) f.container = inspect_container(container, state_root, f.nodes);
  return f;
}

}  // namespace mrun::gpucheck
