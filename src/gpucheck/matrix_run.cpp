#include "gpucheck/matrix_run.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>

#include "base/error.hpp"
#include "base/scope_guard.hpp"
#include "base/unique_fd.hpp"
#include "gpucheck/host_facts.hpp"
#include "mount/busybox_rootfs.hpp"
#include "mount/devices.hpp"
#include "sys/fs.hpp"
#include "sys/kernel.hpp"
#include "sys/processes.hpp"
#include "sys/spawn.hpp"
#include "sys/user_db.hpp"
#include "userns/subid.hpp"

namespace mrun::gpucheck {

namespace {

constexpr const char* default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// A run that takes longer is stuck (the slowest, on an emulated VM, takes seconds).
constexpr const char* run_timeout_s = "180";

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) {
  interrupted = true;
}

// SIGINT/SIGTERM/SIGHUP end the matrix after the current run, through the normal path
// that restores the nodes (the run itself gets the terminal's SIGINT and ends).
class InterruptGuard {
 public:
  InterruptGuard() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) ::sigaction(signals_[i], &sa, &old_[i]);
  }
  ~InterruptGuard() {
    for (int i = 0; i < 3; ++i) ::sigaction(signals_[i], &old_[i], nullptr);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  int signals_[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3]{};
};

struct SavedNode {
  std::string path;
  uid_t uid;
  gid_t gid;
  mode_t mode;
};

std::vector<SavedNode> save_nodes() {
  std::vector<SavedNode> saved;
  for (const auto& name : mount::list_fakegpu_nodes("/dev")) {
    struct stat st {};
    std::string path = "/dev/" + name;
    if (::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode))
      saved.push_back({path, st.st_uid, st.st_gid, st.st_mode & 07777});
  }
  return saved;
}

void set_node(const std::string& path, uid_t uid, gid_t gid, mode_t mode) {
  if (::chown(path.c_str(), uid, gid) != 0) throw_errno("chown " + path);
  if (::chmod(path.c_str(), mode) != 0) throw_errno("chmod " + path);
}

void apply_node_setup(NodeSetup setup, const std::vector<SavedNode>& nodes) {
  if (setup == NodeSetup::unchanged) return;
  gid_t gid = 0;
  mode_t mode = 0600;
  if (setup == NodeSetup::group_0660) {
    auto group = sys::group_by_name("fakegpu");
    if (!group) throw Error("no group fakegpu", ENOENT, "groupadd --system fakegpu");
    gid = group->gid;
    mode = 0660;
  }
  for (const auto& n : nodes) set_node(n.path, 0, gid, mode);
}

void copy_file(const std::string& from, const std::string& to, mode_t mode) {
  auto content = sys::read_file(from);
  if (!content) throw_errno("read " + from);
  sys::write_file_atomic(to, *content, mode);
}

std::string self_exe() {
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) throw_errno("find the mrun binary (/proc/self/exe)");
  return std::string(exe, static_cast<std::size_t>(n));
}

std::string base_name(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// The work directory: everything in it readable by the rootless user (0755 dirs, 0755
// or 0644 files), owned by root so the user cannot change what root runs.
struct Work {
  std::string dir;
  std::string mrun;
  std::string gpu_dir;  // MRUN_FAKEGPU_LIBDIR for the runs
  std::string home;     // the rootless user's HOME
  MatrixPaths paths;
};

Work prepare_work(const std::string& dir, const UserInfo& user, std::optional<unsigned> major) {
  Work w;
  w.dir = dir;
  sys::make_dirs(dir + "/bin", 0755);
  w.mrun = dir + "/bin/mrun";
  const std::string exe = self_exe();
  copy_file(exe, w.mrun, 0755);

  w.gpu_dir = dir + "/gpu";
  sys::make_dirs(w.gpu_dir, 0755);
  auto userspace = mount::find_gpu_userspace(exe, std::getenv("MRUN_FAKEGPU_LIBDIR"));
  for (std::size_t i = 0; i < userspace.libraries.size(); ++i)
    copy_file(userspace.libraries[i], w.gpu_dir + "/" + userspace.library_names[i], 0644);
  for (const auto& program : userspace.programs)
    copy_file(program, w.gpu_dir + "/" + base_name(program), 0755);
  // Row 13's library built for a newer driver, beside the host's (fakegpu-skew/).
  if (!userspace.libraries.empty()) {
    const std::string& lib = userspace.libraries[0];
    const std::string skew = lib.substr(0, lib.rfind('/')) + "/fakegpu-skew/libfakegpu.so.1";
    if (sys::exists(skew)) {
      sys::make_dirs(w.gpu_dir + "/skew", 0755);
      w.paths.skew_library = w.gpu_dir + "/skew/libfakegpu.so.1";
      copy_file(skew, w.paths.skew_library, 0644);
    }
  }
  w.paths.client_static = w.gpu_dir + "/fakegpu-client-static";
  if (!sys::exists(w.paths.client_static))
    throw Error("fakegpu-client-static is not installed next to libfakegpu", 0,
                "build it (meson compile) or set MRUN_FAKEGPU_LIBDIR to its directory");
  // The dynamic client alone in its directory: its $ORIGIN rpath finds no libfakegpu.
  sys::make_dirs(dir + "/dyn", 0755);
  w.paths.client_dynamic = dir + "/dyn/fakegpu-client";
  if (sys::exists(w.gpu_dir + "/fakegpu-client"))
    copy_file(w.gpu_dir + "/fakegpu-client", w.paths.client_dynamic, 0755);

  const std::string busybox = mount::find_static_busybox();
  w.paths.rootfs = dir + "/rootfs";
  mount::make_busybox_rootfs(w.paths.rootfs, busybox);
  // Row 7's image: a node made by root in the image, open to everyone (0666), so only
  // the nodev of the user namespace's overlay can refuse it.
  w.paths.image_rootfs = dir + "/image";
  mount::make_busybox_rootfs(w.paths.image_rootfs, busybox);
  sys::make_dirs(w.paths.image_rootfs + "/gpu", 0755);
  w.paths.major = major.value_or(0);
  if (major) {
    const std::string node = w.paths.image_rootfs + "/gpu/fakegpu0";
    if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(*major, 0)) != 0)
      throw_errno("mknod " + node);
    if (::chmod(node.c_str(), 0666) != 0) throw_errno("chmod " + node);
  }
  for (const auto& d : {dir, w.paths.rootfs, w.paths.image_rootfs})
    if (::chmod(d.c_str(), 0755) != 0) throw_errno("chmod " + d);

  w.home = dir + "/home";
  sys::make_dirs(w.home, 0700);
  if (::chown(w.home.c_str(), user.uid, user.gid) != 0) throw_errno("chown " + w.home);
  return w;
}

RunResult do_run(const Run& run, const Work& work, const UserInfo& user, const HostFacts& facts,
                 const std::string& helper, const std::vector<Need>& extra_needs,
                 const MatrixOptions& options) {
  RunResult r;
  r.mode = run.mode;
  r.label = run.label;
  r.expect_step = run.expect_step;
  r.expect_errno = run.expect_errno;
  std::vector<std::string> argv = {work.mrun};
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  r.command = display_command(argv, work.dir);
  r.command.replace(0, r.command.find(' '), "mrun");

  std::vector<Need> needs = run.needs;
  needs.insert(needs.end(), extra_needs.begin(), extra_needs.end());
  if (auto why = missing_precondition(needs, facts)) {
    r.skipped = *why;
    return r;
  }
  if (options.progress) options.progress(to_string(run.mode) + ": " + r.command);

  const bool rootless = run.mode == Mode::rootless;
  std::vector<std::string> env = {
      "PATH=" + std::string(default_path),
      "HOME=" + (rootless ? work.home : std::string("/root")),
      "LANG=C.UTF-8",
      "USER=" + (rootless ? user.name : std::string("root")),
      "LOGNAME=" + (rootless ? user.name : std::string("root")),
      "MRUN_FAKEGPU_LIBDIR=" + work.gpu_dir,
      "MRUN_GPU_HELPER=" + (run.use_helper ? helper : std::string(no_helper)),
  };
  std::vector<std::string> timed = {"timeout", "--kill-after=10", run_timeout_s};
  timed.insert(timed.end(), argv.begin(), argv.end());

  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  sys::SpawnOptions spawn;
  spawn.env = env;
  spawn.stdin_fd = null.get();
  spawn.death_signal = SIGKILL;
  const std::string dir = work.dir;
  spawn.before_exec = [&, rootless, dir] {
    if (::chdir(dir.c_str()) != 0) throw_errno("chdir " + dir);
    if (rootless) sys::become_user(user.name, user.uid, user.gid);
  };
  auto result = sys::run_program(timed, spawn);
  r.output = result.output;
  r.outcome = parse_outcome(result.output, result.status);
  return r;
}

std::vector<Need> node_needs(NodeSetup setup) {
  if (setup == NodeSetup::group_0660) return {Need::group_fakegpu};
  return {};
}

}  // namespace

MatrixReport run_matrix(const MatrixOptions& options) {
  MatrixReport report;
  report.kernel = sys::kernel_version();
  UserInfo user = lookup_user(options.rootless_user);
  report.rootless_user = user.name;
  if (user.uid == 0)
    throw Error("--rootless-user " + user.name + " is root", 0,
                "name an unprivileged user: the rootless rows run as it");
  if (userns::read_subid_file("/etc/subuid", user.name, user.uid).empty() ||
      userns::read_subid_file("/etc/subgid", user.name, user.uid).empty())
    throw Error(user.name + " has no /etc/subuid or /etc/subgid entry", 0,
                userns::add_subids_command(user.name));

  HostFacts facts;
  facts.user = user.name;
  auto major = fakegpu_major();
  facts.module = major && sys::exists("/dev/fakegpu0") && sys::exists("/dev/fakegpuctl");
  facts.two_devices = facts.module && sys::exists("/dev/fakegpu1");
  if (auto group = sys::group_by_name("fakegpu")) {
    facts.group_fakegpu = true;
    gid_t gid = group->gid;
    facts.user_in_group =
        std::find(user.db_groups.begin(), user.db_groups.end(), gid) != user.db_groups.end();
  }
  const std::string helper = helper_path();
  std::vector<std::string> helper_nodes = {"/dev/fakegpu0", "/dev/fakegpuctl"};
  if (facts.two_devices) helper_nodes.push_back("/dev/fakegpu1");
  HelperFact h = inspect_helper(helper, user, helper_nodes);
  facts.helper = !h.path.empty() && h.setuid_root && !h.nosuid_mount && h.policy_present &&
                 h.policy_error.empty() && h.policy_allows;
  if (h.path.empty())
    facts.helper_problem =
        "mrun-gpu-helper is not installed: meson install (mode 4755), or "
        "MRUN_GPU_HELPER=a setuid-root copy";
  else if (!h.setuid_root || h.nosuid_mount)
    facts.helper_problem = h.path + " is not setuid root on a suid mount: chown root:root " +
                           h.path + "; chmod 4755 " + h.path;
  else if (!h.policy_present)
    facts.helper_problem = "no /etc/mrun/gpu-helper.conf: allow " + user.name +
                           " the fakegpu nodes (mrun-gpu-helper(8))";
  else if (!h.policy_error.empty())
    facts.helper_problem = "/etc/mrun/gpu-helper.conf: " + h.policy_error;
  else if (!h.policy_allows)
    facts.helper_problem = "/etc/mrun/gpu-helper.conf does not allow " + user.name + " " +
                           h.not_allowed + ": add user:" + user.name + " to its rule";
  facts.delegated_cgroup = in_cgroup_delegated_to(user.uid);

  InterruptGuard interrupt_guard;
  char tmpl[] = "/tmp/mrun-gpu-matrix.XXXXXX";
  if (!::mkdtemp(tmpl)) throw_errno("make a work directory in /tmp");
  const std::string dir = tmpl;
  ScopeGuard remove_work([&] { sys::remove_tree(dir); });

  // From here on the nodes are put back however the matrix ends.
  const auto saved = save_nodes();
  ScopeGuard restore_nodes([&] {
    for (const auto& n : saved) {
      try {
        set_node(n.path, n.uid, n.gid, n.mode);
      } catch (...) {
        // The node may be gone (module unloaded meanwhile): nothing to restore.
      }
    }
  });

  Work work = prepare_work(dir, user, major);
  facts.skew_library = !work.paths.skew_library.empty();
  for (const auto& spec : matrix_rows(work.paths)) {
    if (interrupted) throw Error("interrupted", 0, "the nodes were restored");
    RowResult row;
    row.spec = spec;
    const auto extra = node_needs(spec.nodes);
    if (!missing_precondition(extra, facts) && facts.module) apply_node_setup(spec.nodes, saved);
    row.run = do_run(spec.run, work, user, facts, helper, extra, options);
    if (spec.fix) row.fix = do_run(*spec.fix, work, user, facts, helper, extra, options);
    report.rows.push_back(std::move(row));
  }
  if (interrupted) throw Error("interrupted", 0, "the nodes were restored");
  return report;
}

}  // namespace mrun::gpucheck
