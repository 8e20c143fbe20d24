// mrun exec [options] ID COMMAND [ARG...]   -- see mrun-oci(1)
#include <cerrno>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "exec/cloned_binary.hpp"
#include "exec/exec.hpp"
#include "lifecycle/lifecycle.hpp"
#include "oci/spec.hpp"
#include "security/lsm.hpp"
#include "state/state.hpp"
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
    // CVE-2019-5736 (exec/cloned_binary.hpp): run from a sealed copy of mrun where
    // the container could write this binary, before reading anything that cannot be
    // read twice (--process /dev/stdin); the state was read, and is read again.
    runtime::protect_binary_before_joining(state.pid);
    auto defaults = runtime::read_exec_defaults(store, id);

    runtime::ExecRequest request;
    runtime::ProcessSpec& process = request.process;
    process = defaults.process;
    if (!process_file_.empty()) {
      if (!command.empty()) {
        throw Error("exec: give either --process FILE or a command, not both", EINVAL);
      }
      auto text = sys::read_file(process_file_);
      if (!text) throw_errno("read --process " + process_file_);
      // runc: the process JSON is the whole process; the container's security still
      // applies where it says nothing (seccomp is the container's), and so do its cwd,
      // rlimits, umask, oomScoreAdj and labels when the file has none.
      try {
        oci::overlay_process(oci::parse_process_text(*text), process);
      } catch (const Error& e) {
        std::string what = e.what_failed();
        if (what.rfind("config.json", 0) == 0) what.replace(0, 11, "process.json");
        throw Error(what, e.errno_value(), e.hint());
      }
      security::check_lsm_labels(process.apparmor_profile, process.selinux_label);
    } else {
      process.args = command;
    }
    process.terminal = process.terminal || tty_;
    process.env = runtime::merge_env(process.env, env_);
    if (!cwd_.empty()) process.cwd = cwd_;
    if (!user_.empty()) process.user = runtime::parse_exec_user(user_, process.user);
    // As runc: added to the process's groups (the container's, or the file's).
    for (gid_t gid : additional_gids_) process.user.additional_gids.push_back(gid);
    for (const auto& cap : caps_) process.security.cap_add.push_back(cap);
    if (no_new_privs_) process.security.no_new_privileges = true;
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
