// mrun kill [--all] NAME [SIGNAL]   -- see mrun(1), mrun-oci(1)
#include <cerrno>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "cli/signal_names.hpp"
#include "runtime/processes.hpp"
#include "runtime/state.hpp"
#include "sys/syscalls.hpp"

namespace mrun::cli {

namespace {

class KillCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* kill = app.add_subcommand("kill", "send a signal to a container's init process");
    kill->add_option("NAME", name_, "container name")->required();
    kill->add_option("SIGNAL", signal_, "signal name or number (default: TERM)");
    kill->add_flag("-a,--all", all_, "signal every process of the container, not only its init");
    return kill;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto sig = parse_signal(signal_);
    if (!sig)
      throw Error("unknown signal \"" + signal_ + "\"", EINVAL,
                  "use a name like TERM or KILL, or a number");
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    auto state = store.read(name_);
    if (!state) throw Error("container does not exist: " + name_, ENOENT, "see `mrun list`");
    // As runc: a created container (held before exec) can be signalled too.
    auto status = runtime::effective_status(*state);
    if (status != runtime::Status::running && status != runtime::Status::created) {
      throw Error("container \"" + name_ + "\" is not running (container not running)", ESRCH);
    }
    if (all_) {
      // Each through its own pidfd: one that exits meanwhile is skipped, never a reused pid.
      for (pid_t pid : runtime::container_processes(*state)) {
        try {
          UniqueFd fd = sys::pidfd_open(pid);
          sys::pidfd_send_signal(fd.get(), *sig);
        } catch (const Error&) {
          // gone already
        }
      }
      return 0;
    }
    // pidfd + start time: never signal a process that merely reused the pid.
    UniqueFd pidfd = sys::pidfd_open(state->pid);
    if (!runtime::process_alive(state->pid, state->pid_start) ||
        !sys::pidfd_send_signal(pidfd.get(), *sig)) {
      throw Error("container \"" + name_ + "\" is not running", ESRCH);
    }
    return 0;
  }

 private:
  std::string name_;
  std::string signal_ = "TERM";
  bool all_ = false;
};

}  // namespace

std::unique_ptr<Command> make_kill_command() {
  return std::make_unique<KillCommand>();
}

}  // namespace mrun::cli
