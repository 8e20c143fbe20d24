// mrun kill [--all] NAME [SIGNAL]   -- see mrun(1), mrun-oci(1)
#include <cerrno>

#include "base/error.hpp"
#include "cli/command.hpp"
#include "cli/signal_names.hpp"
#include "lifecycle/lifecycle.hpp"

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
    if (!sig) {
      throw Error("unknown signal \"" + signal_ + "\"", EINVAL,
                  "use a name like TERM or KILL, or a number");
    }
    runtime::kill_container(runtime::make_context(global), name_, *sig, all_);
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
