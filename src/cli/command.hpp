// A subcommand: registers its options on CLI11, then runs after parsing. One file per
// subcommand; none of them touches the system except through src/runtime.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <vector>

#include "runtime/context.hpp"

namespace mrun::cli {

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its options to `app`.
  virtual CLI::App* add_to(CLI::App& app) = 0;
  // Before parsing: takes the words after the subcommand name that CLI11 must not see
  // (run's ROOTFS and command, whose options belong to the command) out of `args`.
  virtual void take_trailing(std::vector<std::string>& /*args*/) {}
  // --preserve-fds N after parsing: main keeps fds 3..3+N-1 for the caller's own
  // before mrun opens any descriptor of its own (sys::hold_fd_slots).
  virtual int preserved_fds() const { return 0; }
  // Runs it; returns mrun's exit status.
  virtual int execute(const runtime::GlobalOptions& global) = 0;
};

std::unique_ptr<Command> make_run_command();
std::unique_ptr<Command> make_rootfs_command();
std::unique_ptr<Command> make_list_command();
std::unique_ptr<Command> make_kill_command();
std::unique_ptr<Command> make_delete_command();
std::unique_ptr<Command> make_stats_command();
// mrun userns [--stop]: the shared user namespace's holder (mrun(1)).
std::unique_ptr<Command> make_userns_command();
// mrun gpu matrix|doctor (mrun-gpu(1)).
std::unique_ptr<Command> make_gpu_command();
// mrun cdi generate|list (mrun-cdi(1)).
std::unique_ptr<Command> make_cdi_command();
// The OCI runtime verbs (mrun-oci(1)).
std::unique_ptr<Command> make_spec_command();
std::unique_ptr<Command> make_create_command();
std::unique_ptr<Command> make_start_command();
std::unique_ptr<Command> make_state_command();
std::unique_ptr<Command> make_features_command();
std::unique_ptr<Command> make_exec_command();
std::unique_ptr<Command> make_ps_command();
std::unique_ptr<Command> make_pause_command();
std::unique_ptr<Command> make_resume_command();
// mrun update: new resource limits for a running container (runc's update).
std::unique_ptr<Command> make_update_command();
// mrun events [--stats]: the container's stats and OOM events as runc prints them.
std::unique_ptr<Command> make_events_command();

}  // namespace mrun::cli
