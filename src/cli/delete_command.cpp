// mrun delete [-f] NAME...   -- see mrun(1)
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "base/error.hpp"
#include "base/log.hpp"
#include "cli/command.hpp"
#include "runtime/hooks.hpp"
#include "runtime/launcher.hpp"
#include "runtime/state.hpp"
#include "sys/fs.hpp"
#include "sys/syscalls.hpp"

namespace mrun::cli {

namespace {

class DeleteCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* del = app.add_subcommand("delete", "remove containers (state and storage)");
    del->alias("rm");
    del->add_option("NAME", names_, "container names")->required();
    del->add_flag("-f,--force", force_, "kill a running container first");
    return del;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    int status = 0;
    for (const auto& name : names_) {
      try {
        remove_one(ctx, name);
      } catch (const Error& e) {
        ctx.log.error(e.what());
        status = exit_code::runtime_error;
      }
    }
    return status;
  }

 private:
  void remove_one(const runtime::Context& ctx, const std::string& name) {
    runtime::StateStore store(ctx.state_root);
    auto state = store.read(name);
    if (!state && !sys::exists(store.dir_of(name))) {
      if (force_) return;  // as runc: --force deletes what exists, and nothing is fine
      throw Error("container does not exist: " + name, ENOENT, "see `mrun list`");
    }
    auto status = state ? runtime::effective_status(*state) : runtime::Status::stopped;
    // As runc: a created container (its process never ran) is deleted without --force.
    if (state && status != runtime::Status::stopped) {
      if (!force_ && status != runtime::Status::created) {
        throw Error("cannot delete container " + name +
                        " that is not stopped: " + runtime::to_string(status),
                    EBUSY, "stop it with `mrun kill " + name + "` or use `mrun delete -f`");
      }
      kill(*state);
    }
    // Also when it is stopped: an OCI-created container is reaped by the engine, which
    // may delete it while mrun's monitor still cleans up after it.
    if (state) wait_for_monitor(*state);
    // poststop hooks, from the state dir, after the container is gone (the spec).
    auto hooks_json = sys::read_file(store.dir_of(name) + "/hooks.json");
    std::string state_json;
    if (state) state_json = runtime::oci_state_json(*state, runtime::Status::stopped);
    {
      runtime::StateLock lock(store.root());
      // Another delete may have won the race while we waited for the lock.
      if (!sys::exists(store.dir_of(name))) {
        if (force_) return;
        throw Error("container does not exist: " + name, ENOENT);
      }
      runtime::remove_container(ctx, name);
    }
    if (hooks_json) {
      try {
        runtime::run_hooks(runtime::hooks_from_json(*hooks_json).poststop, "poststop", state_json);
      } catch (const Error& e) {
        ctx.log.warn(e.what());  // the spec: a poststop failure is a warning
      }
    }
  }

  static void kill(const runtime::ContainerState& state) {
    if (runtime::process_alive(state.pid, state.pid_start)) {
      UniqueFd pidfd = sys::pidfd_open(state.pid);
      sys::pidfd_send_signal(pidfd.get(), SIGKILL);
    }
  }

  // Gives its monitor a moment to record the exit and clean up, so we do not race it
  // for the state directory.
  static void wait_for_monitor(const runtime::ContainerState& state) {
    for (int i = 0; i < 500 && runtime::process_alive(state.monitor_pid, state.monitor_start);
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::vector<std::string> names_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<Command> make_delete_command() {
  return std::make_unique<DeleteCommand>();
}

}  // namespace mrun::cli
