// mrun ps [--format table|json] ID [PS-ARGS...]   -- see mrun-oci(1)
#include <sys/types.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "lifecycle/lifecycle.hpp"
#include "lifecycle/processes.hpp"
#include "state/state.hpp"
#include "sys/fs.hpp"

namespace mrun::cli {

namespace {

std::string command_of(pid_t pid) {
  auto text = sys::read_file("/proc/" + std::to_string(pid) + "/cmdline").value_or("");
  for (auto& c : text) {
    if (c == '\0') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

class PsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* ps = app.add_subcommand("ps", "list the processes of a container (host pids)");
    ps->add_option("-f,--format", format_, "table|json (json: runc's array of pids)")
        ->check(CLI::IsMember({"table", "json"}));
    ps->add_option("ID", id_, "container id")->required();
    return ps;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    auto state = runtime::existing_container(store, id_);
    auto pids = runtime::container_processes(state);
    if (format_ == "json") {
      std::cout << nlohmann::json(pids).dump() << std::endl;
      return 0;
    }
    std::printf("%-8s %s\n", "PID", "CMD");
    for (pid_t pid : pids) std::printf("%-8d %s\n", pid, command_of(pid).c_str());
    return 0;
  }

 private:
  std::string format_ = "table";
  std::string id_;
};

class FreezeCommand : public Command {
 public:
  explicit FreezeCommand(bool freeze) : freeze_(freeze) {}
  CLI::App* add_to(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        freeze_ ? "pause" : "resume",
        freeze_ ? "freeze every process of a container (cgroup v2, or v1 freezer)"
                : "thaw a paused container");
    cmd->add_option("ID", id_, "container id")->required();
    return cmd;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    runtime::StateLock lock(store.root());
    auto state = runtime::existing_container(store, id_);
    if (runtime::effective_status(state) != runtime::Status::running) {
      throw Error("container " + id_ + " is not running", 0);
    }
    if (!freeze_ && !runtime::is_frozen(state)) throw Error("container " + id_ + " is not paused");
    runtime::set_frozen(state, freeze_);
    return 0;
  }

 private:
  bool freeze_;
  std::string id_;
};

}  // namespace

std::unique_ptr<Command> make_ps_command() {
  return std::make_unique<PsCommand>();
}
std::unique_ptr<Command> make_pause_command() {
  return std::make_unique<FreezeCommand>(true);
}
std::unique_ptr<Command> make_resume_command() {
  return std::make_unique<FreezeCommand>(false);
}

}  // namespace mrun::cli
