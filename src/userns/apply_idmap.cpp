#include "userns/apply_idmap.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"
#include "sys/spawn.hpp"

namespace mrun::userns {

namespace {
std::string find_helper(const std::string& program) {
  std::string found = sys::find_program(program);
  if (found.empty()) {
    throw Error(program + " not found in PATH", ENOENT,
                "install the uidmap package, or run with --userns=single");
  }
  return found;
}

void check_helper(const sys::ProgramResult& result, const std::string& program, const char* file) {
  if (result.status == 0) return;
  std::string output(trim(result.output));
  throw Error(program + " failed to write the " + file + " range: " + output, 0,
              std::string("check the caller's entry in /etc/") + file +
                  " and that newuidmap/newgidmap are setuid root, or run with --userns=single");
}
}  // namespace

void apply_id_maps(pid_t pid, const IdMapPlan& plan) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (plan.kind == MapKind::joined) return;
  if (plan.kind == MapKind::direct) {
    // Root of the parent user namespace writes any map of ids it has itself; setgroups
    // stays allowed.
    try {
      sys::write_file(proc + "/uid_map", format_map(plan.uids));
      sys::write_file(proc + "/gid_map", format_map(plan.gids));
    } catch (const Error& e) {
      throw Error("write linux.uidMappings/gidMappings: " + std::string(e.what()), e.errno_value(),
                  "map only ids this user namespace has itself (see /proc/self/uid_map)");
    }
    return;
  }
  if (plan.kind == MapKind::subordinate) {
    // The two maps are independent files: write them concurrently.
    auto results = sys::run_programs({helper_argv(find_helper("newuidmap"), pid, plan.uids),
                                      helper_argv(find_helper("newgidmap"), pid, plan.gids)});
    check_helper(results[0], "newuidmap", "subuid");
    check_helper(results[1], "newgidmap", "subgid");
    return;
  }
  try {
    sys::write_file(proc + "/setgroups", "deny");
  } catch (const Error& e) {
    // Root writing a map for its own child may keep setgroups; anyone else must deny.
    if (e.errno_value() != EPERM) throw;
  }
  sys::write_file(proc + "/uid_map", format_map(plan.uids));
  sys::write_file(proc + "/gid_map", format_map(plan.gids));
}

UniqueFd user_namespace_with_maps(const std::vector<IdMapEntry>& uids,
                                  const std::vector<IdMapEntry>& gids, const std::string& what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("create a pipe");
  UniqueFd hold_read(fds[0]), hold_write(fds[1]);
  auto child = sys::clone_with_pidfd(CLONE_NEWUSER, SIGCHLD);
  if (child.pid == 0) {
    hold_write.reset();
    char byte;
    // Lives until the parent closes its end: end-of-file, or the parent's death.
    while (::read(hold_read.get(), &byte, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  hold_read.reset();
  UniqueFd ns;
  try {
    const std::string proc = "/proc/" + std::to_string(child.pid);
    sys::write_file(proc + "/uid_map", format_map(uids));
    sys::write_file(proc + "/gid_map", format_map(gids));
    ns.reset(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns) throw_errno("open " + proc + "/ns/user");
  } catch (const Error& e) {
    hold_write.reset();
    sys::wait_pidfd(child.pidfd.get());
    throw e.wrap(what);
  }
  hold_write.reset();
  sys::wait_pidfd(child.pidfd.get());
  return ns;
}

}  // namespace mrun::userns
