// mrun start ID   -- see mrun-oci(1)
#include "cli/command.hpp"
#include "lifecycle/lifecycle.hpp"

namespace mrun::cli {

namespace {

class StartCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* start = app.add_subcommand("start", "start the process of a created container");
    start->add_option("ID", id_, "container id")->required();
    return start;
  }

  int execute(const runtime::GlobalOptions& global) override {
    runtime::start_container(runtime::make_context(global), id_);
    return 0;
  }

 private:
  std::string id_;
};

}  // namespace

std::unique_ptr<Command> make_start_command() {
  return std::make_unique<StartCommand>();
}

}  // namespace mrun::cli
