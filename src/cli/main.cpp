// mrun: a rootless, user-namespace-first container runtime. See mrun(1).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "base/error.hpp"
#include "base/log.hpp"
#include "base/phase_trace.hpp"
#include "cli/command.hpp"
#include "sys/fd_slots.hpp"
#include "sys/inherited_state.hpp"
#include "userns/userns_holder.hpp"

namespace {

// The logger errors are reported through, once --log and --log-format are parsed.
mrun::Logger& main_logger() {
  static mrun::Logger logger;
  return logger;
}

// Global options that take a separate value word: skipped when looking for the verb.
bool takes_value(const std::string& word) {
  return word == "--root" || word == "--log" || word == "--log-format" ||
         word == "--cgroup-manager";
}

// Socket activation of mrun itself (LISTEN_PID ours): that many fds from 3 are the
// caller's too (oci_bundle.cpp hands them to the container).
int socket_activated_fds() {
  const char* fds = std::getenv("LISTEN_FDS");
  const char* pid = std::getenv("LISTEN_PID");
  if (fds == nullptr || pid == nullptr || std::atoi(pid) != ::getpid()) return 0;
  return std::max(0, std::atoi(fds));
}

// --log FILE (runc's option, which conmon reads errors from): opened once, appended to,
// inherited by the monitor and the container's setup (closed on the command's exec).
void open_log(const mrun::runtime::GlobalOptions& global) {
  using namespace mrun;
  auto format = global.log_format == "json" ? LogFormat::json : LogFormat::text;
  if (global.log_file.empty()) return;
  int fd = ::open(global.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("open log file " + global.log_file, "give a writable --log path");
  main_logger().set_log_file(fd, format);
}

// Every verb, in the order `mrun --help` lists them, with its names (the first is the
// one its command registers; the others are its aliases).
struct Verb {
  std::vector<std::string> names;
  std::unique_ptr<mrun::cli::Command> (*make)();
};
const std::vector<Verb> verbs = {
    {{"run"}, mrun::cli::make_run_command},
    {{"rootfs"}, mrun::cli::make_rootfs_command},
    {{"list"}, mrun::cli::make_list_command},
    {{"kill"}, mrun::cli::make_kill_command},
    {{"delete", "rm"}, mrun::cli::make_delete_command},
    {{"stats"}, mrun::cli::make_stats_command},
    {{"cdi"}, mrun::cli::make_cdi_command},
    {{"userns"}, mrun::cli::make_userns_command},
    {{"spec"}, mrun::cli::make_spec_command},
    {{"create"}, mrun::cli::make_create_command},
    {{"start"}, mrun::cli::make_start_command},
    {{"state"}, mrun::cli::make_state_command},
    {{"features"}, mrun::cli::make_features_command},
    {{"exec"}, mrun::cli::make_exec_command},
    {{"ps"}, mrun::cli::make_ps_command},
    {{"pause"}, mrun::cli::make_pause_command},
    {{"resume"}, mrun::cli::make_resume_command},
    {{"update"}, mrun::cli::make_update_command},
    {{"events"}, mrun::cli::make_events_command},
    {{"gpu"}, mrun::cli::make_gpu_command},
};

const Verb* find_verb(const std::string& word) {
  for (const Verb& v : verbs) {
    if (std::find(v.names.begin(), v.names.end(), word) != v.names.end()) return &v;
  }
  return nullptr;
}

int run_cli(int argc, char** argv) {
  using namespace mrun;
  CLI::App app{"mrun: rootless containers, user namespace first", "mrun"};
  app.require_subcommand(1);
  app.fallthrough();  // global options are accepted after the subcommand too
  app.set_version_flag("--version", "mrun " MRUN_VERSION);
  runtime::GlobalOptions global;
  app.add_option(
      "--root", global.state_root,
      "state directory (default: $XDG_RUNTIME_DIR/mrun, /tmp/mrun-UID, root: /run/mrun)");
  app.add_flag("--debug", global.debug, "print what mrun decides and why");
  app.add_option("--log", global.log_file, "also write diagnostics to FILE (as runc's --log)");
  app.add_option("--log-format", global.log_format, "text|json: the format of --log FILE")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--systemd-cgroup", global.systemd_cgroup,
               "accepted for engines; linux.cgroupsPath slice:prefix:name is read as a "
               "cgroupfs path (see mrun-oci(1))");
  app.add_option("--cgroup-manager", global.cgroup_manager,
                 "cgroupfs|systemd|disabled (as crun; disabled: no cgroup for the container)")
      ->check(CLI::IsMember({"cgroupfs", "systemd", "disabled"}));

  // The verb is found first (skipping global options), and only its command is built:
  // building all of them, options and checks, is a quarter of a millisecond of every
  // start. Without a verb (mrun --help, --version, nothing) all are, for the listing.
  std::vector<std::string> args(argv + 1, argv + argc);
  const Verb* verb = nullptr;
  std::size_t verb_at = args.size();
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (takes_value(args[i])) {
      ++i;
      continue;
    }
    if (!args[i].empty() && args[i][0] == '-') continue;
    verb = find_verb(args[i]);
    if (verb == nullptr) {
      main_logger().error("unknown command \"" + args[i] +
                          "\" (see mrun --help for the list: run, create, exec, ...)");
      return exit_code::runtime_error;
    }
    verb_at = i;
    break;
  }
  std::vector<std::unique_ptr<cli::Command>> commands;
  for (const Verb& v : verbs) {
    if (verb == nullptr || verb == &v) commands.push_back(v.make());
  }
  std::vector<std::pair<CLI::App*, cli::Command*>> registered;
  for (auto& command : commands) registered.emplace_back(command->add_to(app), command.get());
  // The verb takes its trailing words before CLI11 parses the rest.
  if (verb != nullptr) {
    std::vector<std::string> tail(args.begin() + static_cast<std::ptrdiff_t>(verb_at) + 1,
                                  args.end());
    commands.front()->take_trailing(tail);
    args.resize(verb_at + 1);
    args.insert(args.end(), tail.begin(), tail.end());
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector

  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    main_logger().error(std::string(e.what()) + " (see mrun --help)");
    return exit_code::runtime_error;
  }
  main_logger().set_debug(global.debug);
  // Before the first descriptor of mrun's own (the --log file, the setup socket, the
  // pidfds): those must never take a number the container is handed.
  for (auto& [sub, command] : registered) {
    if (sub->parsed())
      sys::hold_fd_slots(std::max(command->preserved_fds(), socket_activated_fds()));
  }
  open_log(global);
  global.log_fd = main_logger().log_file();
  MRUN_PHASE("main:parsed");
  for (auto& [sub, command] : registered) {
    if (sub->parsed()) return command->execute(global);
  }
  return exit_code::runtime_error;
}

}  // namespace

int main(int argc, char** argv) {
  // This binary re-executed as a shared user namespace's holder (userns_holder.hpp).
  const std::string_view argv0 = argc > 0 ? argv[0] : "";
  if (argv0.substr(argv0.rfind('/') + 1) == mrun::userns::kHolderProgramName) {
    return mrun::userns::holder_program_main(argc, argv);
  }
  // First of all: what the caller left (an ignored SIGCHLD, a closed stdout, a umask)
  // must not change what mrun's own system calls mean.
  mrun::sys::reset_inherited_state();
  MRUN_PHASE("main");
  try {
    int status = run_cli(argc, argv);
    MRUN_PHASE("main:return");
    return status;
  } catch (const mrun::Error& e) {
    main_logger().error(e.what());
    return e.exit_status();
  } catch (const std::exception& e) {
    main_logger().error(e.what());
    return mrun::exit_code::runtime_error;
  }
}
