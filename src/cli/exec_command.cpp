// mrun exec [options] ID COMMAND [ARG...]   -- see mrun-oci(1)
#include <cerrno>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "oci/spec.hpp"
#include "runtime/cloned_binary.hpp"
#include "runtime/exec.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/state.hpp"
#include "security/lsm.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

class ExecCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* exec = app.add_subcommand("exec", "run a process in a running container");
    exec_ = exec;
    exec->add_option("-p,--process", process_file_,
                     "the process as OCI process JSON (runc's process.json); no COMMAND then");
    exec->add_flag("-t,--tty", tty_, "allocate a pseudo-terminal");
    exec->add_flag("-d,--detach", detach_, "return once the process runs");
    exec->add_option("--pid-file", pid_file_, "write the process's pid to FILE");
    exec->add_option("--console-socket", console_socket_,
                     "send the pty master to the unix socket PATH (with --tty)");
    exec->add_option("-e,--env", env_, "set KEY=VALUE")->take_all();
    exec->add_option("--cwd", cwd_, "working directory (default: the container's)");
    exec->add_option("-u,--user", user_, "UID[:GID] (default: the container's user)");
    exec->add_option("-g,--additional-gids", additional_gids_,
                     "an extra supplementary group GID for the process (repeatable)")
        ->take_all();
    exec->add_option("-c,--cap", caps_, "add a capability (e.g. CAP_NET_ADMIN)")->take_all();
    exec->add_flag("--no-new-privs", no_new_privs_, "set no_new_privs for the process");
    exec->add_option("--preserve-fds", preserve_fds_, "pass fds 3..3+N-1 on to the process")
        ->check(CLI::NonNegativeNumber);
    return exec;
  }

  // ID COMMAND [ARG...]: from the first word that is not an option of ours on; the
  // command's own options never reach CLI11.
  void take_trailing(std::vector<std::string>& args) override {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& word = args[i];
      if (word == "--") {
        trailing_.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
        args.resize(i);
        return;
      }
      if (word.empty() || word[0] != '-') {
        trailing_.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        args.resize(i);
        return;
      }
      if (word.find('=') != std::string::npos && word.rfind("--", 0) == 0) continue;
      std::string name = word.rfind("--", 0) == 0 ? word : word.substr(0, 2);
      const CLI::Option* option = exec_->get_option_no_throw(name);
      bool takes_value = option != nullptr && option->get_expected_max() != 0;
      if (takes_value && (word.rfind("--", 0) == 0 || word.size() == 2)) ++i;
    }
  }

  int preserved_fds() const override { return preserve_fds_; }

  int execute(const runtime::GlobalOptions& global) override {
    if (trailing_.empty()) throw Error("exec: no container id given", EINVAL, "mrun exec ID CMD");
    const std::string id = trailing_[0];
    std::vector<std::string> command(trailing_.begin() + 1, trailing_.end());
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    auto state = runtime::existing_container(store, id);
    // CVE-2019-5736 (runtime/cloned_binary.hpp): run from a sealed copy of mrun where
    // the container could write this binary, before reading anything that cannot be
    // read twice (--process /dev/stdin); the state was read, and is read again.
    runtime::protect_binary_before_joining(state.pid);
    auto defaults = runtime::read_exec_defaults(store, id);

    runtime::ExecRequest request;
    request.env = defaults.env;
    request.cwd = defaults.cwd;
    request.user = defaults.user;
    request.security = defaults.security;
    request.keep_groups = defaults.keep_groups;
    request.umask = defaults.umask;
    request.rlimits = defaults.rlimits;
    request.oom_score_adj = defaults.oom_score_adj;
    request.personality = defaults.personality;
    request.memory_policy = defaults.memory_policy;
    request.apparmor_profile = defaults.apparmor_profile;
    request.selinux_label = defaults.selinux_label;
    if (!process_file_.empty()) {
      if (!command.empty()) {
        throw Error("exec: give either --process FILE or a command, not both", EINVAL);
      }
      auto text = sys::read_file(process_file_);
      if (!text) throw_errno("read --process " + process_file_);
      auto process = oci::parse_process_text(*text);
      // runc: the process JSON is the whole process; the container's security still
      // applies where it says nothing (seccomp is the container's), and so do its
      // rlimits, umask and oomScoreAdj when the file has none.
      request.args = process.args;
      request.env = process.env;
      if (!process.cwd.empty()) request.cwd = process.cwd;
      oci::ProcessSettings settings;
      try {
        settings = oci::convert_process_settings(process);
      } catch (const Error& e) {
        std::string what = e.what_failed();
        if (what.rfind("config.json", 0) == 0) what.replace(0, 11, "process.json");
        throw Error(what, e.errno_value(), e.hint());
      }
      request.user = settings.user;
      if (settings.umask) request.umask = settings.umask;
      if (!settings.rlimits.empty()) request.rlimits = settings.rlimits;
      if (settings.oom_score_adj) request.oom_score_adj = settings.oom_score_adj;
      request.tty = process.terminal.value_or(false);
      oci::convert_process_security(process, request.security);
      if (process.apparmor_profile) request.apparmor_profile = *process.apparmor_profile;
      if (process.selinux_label) request.selinux_label = *process.selinux_label;
      security::check_lsm_labels(request.apparmor_profile, request.selinux_label);
    } else {
      request.args = command;
    }
    request.tty = request.tty || tty_;
    request.env = runtime::merge_env(request.env, env_);
    if (!cwd_.empty()) request.cwd = cwd_;
    if (!user_.empty()) request.user = runtime::parse_exec_user(user_, request.user);
    // As runc: added to the process's groups (the container's, or the file's).
    for (gid_t gid : additional_gids_) request.user.additional_gids.push_back(gid);
    for (const auto& cap : caps_) request.security.cap_add.push_back(cap);
    if (no_new_privs_) request.security.no_new_privileges = true;
    request.detach = detach_;
    request.pid_file = pid_file_;
    request.console_socket = console_socket_;
    request.preserve_fds = preserve_fds_;
    return runtime::exec_in_container(state, request, defaults, ctx);
  }

 private:
  CLI::App* exec_ = nullptr;
  std::string process_file_;
  bool tty_ = false;
  bool detach_ = false;
  std::string pid_file_;
  std::string console_socket_;
  std::vector<std::string> env_;
  std::string cwd_;
  std::string user_;
  std::vector<gid_t> additional_gids_;
  std::vector<std::string> caps_;
  bool no_new_privs_ = false;
  int preserve_fds_ = 0;
  std::vector<std::string> trailing_;
};

}  // namespace

std::unique_ptr<Command> make_exec_command() {
  return std::make_unique<ExecCommand>();
}

}  // namespace mrun::cli
