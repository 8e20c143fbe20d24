// mrun state ID   -- see mrun-oci(1)
#include <iostream>

#include "cli/command.hpp"
#include "cli/oci_bundle.hpp"
#include "lifecycle/lifecycle.hpp"
#include "state/state.hpp"

namespace mrun::cli {

namespace {

class StateCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    auto* state =
        app.add_subcommand("state", "print a container's state as the OCI spec defines it");
    state->add_option("ID", id_, "container id")->required();
    return state;
  }

  int execute(const runtime::GlobalOptions& global) override {
    auto ctx = runtime::make_context(global);
    runtime::StateStore store(ctx.state_root);
    auto state = runtime::existing_container(store, id_);
    std::cout << runtime::oci_state_json(state, runtime::effective_status(state), 2) << std::endl;
    return 0;
  }

 private:
  std::string id_;
};

}  // namespace

std::unique_ptr<Command> make_state_command() {
  return std::make_unique<StateCommand>();
}

}  // namespace mrun::cli
